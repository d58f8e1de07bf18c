"""Store axolotl's named chat templates (``chat_template: chatml``, ``llama3``, ``qwen3`` ...) for mldebug.

    python tools/axolotl_chat_templates.py 0.19.0

The wheel of that exact version is fetched with ``pip download --no-deps`` (installing axolotl would replace
the transformers mldebug runs on); every ``axolotl/utils/chat_templates/templates/*.jinja`` in it is stored,
by name, with the wheel's sha256. mldebug reads the installed axolotl's templates when axolotl is installed,
and this file otherwise. Output: mldebug_cli/frameworks/keys/axolotl-<version>-chat-templates.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "axolotl/utils/chat_templates/templates/"


def main(version: str, wheel: Path | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                            f"axolotl=={version}"], check=True)
            wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            templates = {Path(name).stem: archive.read(name).decode("utf-8") for name in sorted(archive.namelist())
                         if name.startswith(FOLDER) and name.endswith(".jinja")}
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    out = ROOT / "mldebug_cli" / "frameworks" / "keys" / f"axolotl-{version}-chat-templates.json"
    doc = {"generated_by": "tools/axolotl_chat_templates.py", "package": "axolotl", "version": version,
           "wheel": f"{wheel.name} (PyPI), sha256 {digest}", "folder": FOLDER, "licence": "Apache-2.0",
           "templates": templates}
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {len(templates)} templates")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version")
    parser.add_argument("--wheel", type=Path, help="an axolotl wheel already downloaded (else pip download fetches it)")
    args = parser.parse_args()
    main(args.version, args.wheel)
