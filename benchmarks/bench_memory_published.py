"""`mldebug memory` against published measured peak GPU memory (benchmarks/memory_published.json).

Each case is a fine-tuning run a public source measured (model, method, batch, length, checkpointing, optimizer,
GPUs), with its source URL. The estimator is given the same setup (the model's shape from its config, every
sequence at the stated length: the sources pad or fill every row to it) and its per-GPU figure (allocated peak, the
allocator's reserve and the CUDA context) is compared with the measurement, read as GiB.

Cases carry ``split``: ``fit`` cases may be used to choose a rule, ``score`` cases only measure it. The script
reports the median |error| and the largest error on each split and on all. ``--candidate`` applies the rule chosen
on the fit split (``candidate_loss``); it is adopted only if the score split gets better with it (it did not).

Usage:
    python benchmarks/bench_memory_published.py            # table + summary
    python benchmarks/bench_memory_published.py --json     # one JSON object per case
    python benchmarks/bench_memory_published.py --candidate  # with the candidate rule chosen on the fit split
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from mldebug_cli.memory.batches import uniform_batch
from mldebug_cli.memory.estimate import GIB, estimate
from mldebug_cli.memory.setup import MemorySetup, PeftSetup
from mldebug_cli.memory.shapes import shape_from_config

CASES = Path(__file__).with_name("memory_published.json")
LOSS = {"full": "full", "remote-code-bf16": "compute-dtype", "liger": "liger", "fused-chunks": "fused-chunks"}


def setup_of(case: dict, candidate: bool = False) -> MemorySetup:
    lora = case.get("lora")
    peft = None
    if lora:
        peft = PeftSetup("dora" if lora.get("dora") else "lora", int(lora["r"]), lora["targets"],
                         tuple(lora.get("modules_to_save", ())))
    version = tuple(int(x) for x in str(case.get("transformers_version", "5.24")).split(".")[:2])
    return MemorySetup(
        framework=case.get("framework_key", "transformers"), task=case.get("task", "sft"),
        micro_batch_size=int(case["batch"]), world_size=int(case.get("gpus", 1)),
        gradient_checkpointing=bool(case.get("gradient_checkpointing")), compute_dtype=case.get("compute_dtype", "bf16"),
        weights_dtype=case.get("weights_dtype", "bf16"), quantization=case.get("quantization"),
        double_quant=bool(case.get("double_quant", case.get("quantization") is not None)),
        optimizer=case.get("optimizer", "adamw_torch"), peft=peft, attention=case.get("attention", "sdpa"),
        loss_kernel=LOSS[case.get("candidate_loss", "full")] if candidate else "full", max_length=int(case["seq"]),
        gradient_accumulation_steps=int(case.get("gradient_accumulation_steps", 1)),
        zero_stage=int(case.get("zero_stage", 0)), transformers_version=version,
    )


def score(case: dict, candidate: bool = False) -> dict:
    shape = shape_from_config(dict(case["model"]))
    setup = setup_of(case, candidate)
    batch = uniform_batch(setup.micro_batch_size, int(case["seq"]))
    e = estimate(shape, setup, batch)
    estimated = e.per_gpu / GIB
    measured = float(case["measured_gib"])
    return {"id": case["id"], "split": case.get("split", "score"), "measured_gib": measured,
            "estimated_gib": round(estimated, 2), "error": round((estimated - measured) / measured, 4),
            "largest": e.largest.name, "peak_moment": e.peak_moment}


def summary(rows: list[dict]) -> dict:
    errors = [abs(r["error"]) for r in rows]
    if not errors:
        return {"cases": 0}
    return {"cases": len(rows), "median_abs_error": round(statistics.median(errors), 4),
            "max_abs_error": round(max(errors), 4), "within_10pct": sum(e <= 0.10 for e in errors),
            "over_15pct": sum(e > 0.15 for e in errors), "below": sum(r["error"] < 0 for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--candidate", action="store_true", help="with the candidate rule chosen on the fit split")
    args = parser.parse_args()
    cases = json.loads(CASES.read_text())["cases"]
    rows = [score(c, args.candidate) for c in cases]
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(f"{'case':34} {'split':5} {'measured':>8} {'estimate':>8} {'error':>7}  largest term")
        for r in rows:
            print(f"{r['id']:34} {r['split']:5} {r['measured_gib']:8.1f} {r['estimated_gib']:8.2f} "
                  f"{r['error']:+7.1%}  {r['largest']}")
    result = {name: summary([r for r in rows if name == "all" or r["split"] == name]) for name in ("fit", "score", "all")}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
