"""Write fixtures/tokenizer-resolution/goldens.json: what real transformers releases load from tokenizer folders.

    nice -n 10 python tools/tokenizer_resolution_goldens.py [--versions 5.6.0 5.22.2 ...] [--corpus]

For each transformers release in ``VERSIONS`` (three on each side of each change in how ``AutoTokenizer`` builds
a tokenizer: 4.57 -> 5.0, where the declared class started to rebuild its pipeline from its own defaults, and
5.21 -> 5.22, where a declared ``LlamaTokenizer`` over a ByteLevel tokenizer.json started to load as
``TokenizersBackend``), a venv ``/work/venvs/tf-<version>`` is made beside the shared environment
(``--system-site-packages``; ``pip install transformers==<version>`` brings the hub and tokenizers it needs), and
``AutoTokenizer.from_pretrained`` runs there, offline, on the folders ``CASES`` names: the npm tokenizers of
fixtures/tokenizers/ as they are, and the same files with a ``tokenizer_class`` (and ``legacy`` /
``add_prefix_space``) written over theirs, the disagreement DeepSeek-V3 ships (tests/differential/strategies.py
``declared_class_folder`` writes the same variants). Each records the class transformers chose, its
pre-tokenizer and decoder, and for texts drawn by hypothesis (seeded, messy: whitespace runs, newlines, tabs, CJK,
emoji, digits) the ids without special tokens and their decoding. tests/frameworks/test_tokenizer_resolution.py
replays them: mldebug's emulation (mldebug_cli/frameworks/hf/tokenizer_resolution.py, with the installed
``tokenizers``) must give the same ids for every release.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.differential.strategies import DECLARED_CLASS_VARIANTS, declared_class_folder, tokenizer_texts  # noqa: E402

OUT = ROOT / "fixtures" / "tokenizer-resolution" / "goldens.json"
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus")
# declared-class variants of the shared corpus's tokenizers (--corpus): name -> (folder under the corpus, the
# tokenizer_config.json keys written over its own). Phi-3's Metaspace file declared as Qwen2Tokenizer, which every
# 5.x release rebuilds ByteLevel: a mismatch other than Llama over byte-level
CORPUS_VARIANTS: dict[str, tuple[str, dict]] = {
    "phi3-as-qwen2": ("tokenizers/phi-3-mini-instruct", {"tokenizer_class": "Qwen2Tokenizer"}),
}
VENVS = Path("/work/venvs")
WHEELS = VENVS / "wheels"  # tools/version_facts.py's downloads, used before the index
VERSIONS = ("4.55.4", "4.56.2", "4.57.1", "5.0.0", "5.3.0", "5.6.0", "5.20.2", "5.21.0", "5.21.1", "5.22.2",
            "5.23.0", "5.24.0")
WORKER = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import transformers
from transformers import AutoTokenizer
folders, texts = json.loads(sys.stdin.read())
out = {"transformers": transformers.__version__, "cases": {}}
for name, folder in folders.items():
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except Exception as exc:  # the release refuses the folder: recorded as it says it
        out["cases"][name] = {"class": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
        continue
    backend = tok.backend_tokenizer
    rows = []
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        rows.append({"text": text, "ids": ids, "decoded": tok.decode(ids)})
    out["cases"][name] = {"class": type(tok).__name__, "pre_tokenizer": type(backend.pre_tokenizer).__name__
                          if backend.pre_tokenizer else None, "decoder": str(backend.decoder), "rows": rows}
print(json.dumps(out))
"""


def venv_for(version: str) -> Path:
    """/work/venvs/tf-<version>: the shared packages, and transformers at ``version``. Its dependencies (the hub
    client, tokenizers) come from the first venv of the same major made with them, when there is one (a
    ``deps.pth`` after the venv's own packages, so its own transformers wins), else pip resolves them."""
    folder = VENVS / f"tf-{version}"
    python = folder / "bin" / "python"
    if python.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)], check=True)
    wheels = ["--find-links", str(WHEELS)] if WHEELS.is_dir() else []
    # 5.0-5.19 share one set (tokenizers 0.22); from 5.20 the shared environment's tokenizers 0.23 serves; each
    # 4.x minor pins its own tokenizers, so pip resolves them
    donor = None if not (5, 0) <= _key(version) < (5, 20) else next((v for v in VERSIONS if v != version
                                                                     and (5, 0) <= _key(v) < (5, 20)
                  and (VENVS / f"tf-{v}" / "bin" / "python").exists()
                  and not (_site(VENVS / f"tf-{v}") / "deps.pth").exists()), None)
    no_deps = ["--no-deps"] if donor else []
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *wheels, *no_deps,
                    f"transformers=={version}"], check=True)
    if donor:
        (_site(folder) / "deps.pth").write_text(str(_site(VENVS / f"tf-{donor}")) + "\n", encoding="utf-8")
    return python


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version.split(".")[:3])


def _site(folder: Path) -> Path:
    return next((folder / "lib").glob("python3*/site-packages"))


def corpus_folders(scratch: Path) -> dict[str, str]:
    """CORPUS_VARIANTS made in ``scratch`` from the shared corpus (its files read in place, copied only there)."""
    import shutil

    out = {}
    for name, (source, overrides) in CORPUS_VARIANTS.items():
        origin, folder = CORPUS / source, scratch / name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin / "tokenizer.json", folder / "tokenizer.json")
        config = json.loads((origin / "tokenizer_config.json").read_text(encoding="utf-8"))
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, **overrides}), encoding="utf-8")
        out[name] = str(folder)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", nargs="*", default=list(VERSIONS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--corpus", action="store_true", help="the corpus variants (CORPUS_VARIANTS) into "
                        "corpus-goldens.json beside --out's folder, instead of the repository's tokenizers")
    args = parser.parse_args()
    texts = tokenizer_texts(seed=39, count=40)
    variants = CORPUS_VARIANTS if args.corpus else DECLARED_CLASS_VARIANTS
    if args.corpus:
        args.out = args.out.parent / "corpus-goldens.json"
    record = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {"releases": {}}
    record.update(generated_by="tools/tokenizer_resolution_goldens.py" + (" --corpus" if args.corpus else ""),
                  texts=texts, variants=dict(variants.items()))
    with tempfile.TemporaryDirectory() as scratch:
        folders = corpus_folders(Path(scratch)) if args.corpus else {
            name: str(declared_class_folder(name, Path(scratch))) for name in DECLARED_CLASS_VARIANTS}
        for version in args.versions:
            python = venv_for(version)
            done = subprocess.run([str(python), "-c", WORKER], input=json.dumps([folders, texts]), text=True,
                                  capture_output=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
                                                            "TOKENIZERS_PARALLELISM": "false"})
            if done.returncode != 0:
                raise SystemExit(f"transformers {version}: {done.stderr[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            record["releases"][result["transformers"]] = result["cases"]
            print(f"transformers {version}: " + ", ".join(f"{n} {c['class']}/{c.get('pre_tokenizer')}"
                                                        for n, c in result["cases"].items()), file=sys.stderr)
            args.out.parent.mkdir(parents=True, exist_ok=True)  # written after each release: a long run keeps its part
            args.out.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
