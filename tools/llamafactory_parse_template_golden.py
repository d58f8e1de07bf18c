"""Write fixtures/llamafactory-0.9.5/more/parse-template.json: whether LLaMA-Factory 0.9.5, given no ``template``, can parse
each tokenizer's chat template (``get_template_and_fix_tokenizer`` -> ``parse_template``), or the error it stops on.

tests/frameworks/test_trust_claims.py checks that mldebug's ``--framework llama-factory`` without ``--template``
accepts the same tokenizers and stops (exit 2, naming the error) on the others.

Usage, with LLaMA-Factory 0.9.5 in its own venv (see tools/llamafactory_goldens.py):

    HF_HUB_OFFLINE=1 /path/to/venv/bin/python tools/llamafactory_parse_template_golden.py [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import sys
import types
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "llamafactory-0.9.5" / "more" / "parse-template.json"
NPM = ("qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct")
CORPUS = ("phi-3-mini-instruct",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
    if version("llamafactory") != "0.9.5":
        sys.exit(f"llamafactory {version('llamafactory')} is installed; these goldens are for 0.9.5")
    audio = types.ModuleType("torchaudio")  # mm_plugin imports it; parsing a template never uses it
    audio.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", audio)
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    folders = {n: ("npm", ROOT / "fixtures" / "tokenizers" / n) for n in NPM}
    folders |= {n: ("corpus", args.corpus / "tokenizers" / n) for n in CORPUS if (args.corpus / "tokenizers" / n).is_dir()}
    out = {"versions": {p: version(p) for p in ("llamafactory", "transformers", "tokenizers")}, "tokenizers": {}}
    for name, (origin, folder) in folders.items():
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(folder)))["tokenizer"]
        try:
            get_template_and_fix_tokenizer(tokenizer, DataArguments(template=None))
            outcome = {"origin": origin, "parsed": True}
        except ValueError as exc:
            outcome = {"origin": origin, "parsed": False, "error": f"{type(exc).__name__}: {exc}"}
        out["tokenizers"][name] = outcome
        print(name, outcome)
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
