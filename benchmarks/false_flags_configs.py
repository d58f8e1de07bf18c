"""Benchmark: what the stability checks (CF004-CF012, LR017) say about published and clean training configs.

    python benchmarks/false_flags_configs.py [--json OUT]

The configs are ``fixtures/configs``: written by the project in the shape each framework's users write them
(fixtures/configs/README.md: an axolotl Llama-3 LoRA run, a LLaMA-Factory Llama-3 LoRA SFT, open-r1-style TRL
recipes, the ``*_clean`` validation configs, the preference configs), each checked as ``lr-plot`` checks it (its
framework detected, 1,000 rows). Configs planted with typos or hostile shapes are left out. For every config it
prints the new checks' findings with their severity; a warning or error is a flag the user would be asked to act
on, an info is advice. The counts go in the report; none of these configs is known to be broken in these settings,
so every warning or error here is a false flag unless the line says why it is true.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONFIGS = ROOT / "fixtures" / "configs"
NEW = ("CF004", "CF005", "CF006", "CF007", "CF008", "CF009", "CF010", "CF011", "CF012", "LR017")
LEFT_OUT = ("typos", "missing_lr", "torchtune")  # planted defects; torchtune's trainer settings are not read


def configs() -> list[Path]:
    found = sorted(p for p in CONFIGS.rglob("*") if p.suffix in (".yaml", ".yml"))
    return [p for p in found if not any(word in p.name for word in LEFT_OUT)]


def main() -> None:
    from mldebug_cli.core.errors import MldebugError
    from mldebug_cli.pipelines.schedule import build_report

    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    flags: Counter[str] = Counter()
    advice: Counter[str] = Counter()
    out = []
    for path in configs():
        try:
            report = build_report(str(path), num_rows=1000, select=NEW)
        except MldebugError as exc:
            print(f"{path.relative_to(ROOT)}: not checked ({exc})")
            continue
        for f in report.findings:
            (flags if f.severity.value in ("warning", "error") else advice)[f.code] += 1
            out.append({"config": str(path.relative_to(ROOT)), "code": f.code, "severity": f.severity.value,
                        "message": f.message})
            print(f"{path.relative_to(ROOT)}: {f.severity.value} {f.code} {f.message}")
    print(f"\n{len(configs())} configs; warnings/errors: {dict(flags) or 0}; infos: {dict(advice) or 0}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
