"""Benchmark: each command's time on a bundled input beside its floor (what the same libraries need for the same work).

    python benchmarks/bench_floors.py [--repeat 3] [--commands inspect-data lr-plot check-run]

Every run is a fresh process, as a user runs the command (interpreter start and imports included on both sides), and
the runs are interleaved ``--repeat`` times (command, floor, next command, ...) so that a busy machine slows both
sides alike. Prints a Markdown table: the median wall seconds of each with its range, the median CPU seconds, and
command/floor of both (on a busy machine read the CPU columns: its wall times are mostly waiting for a core).
The floors:
  inspect-data  the README demo (21 conversations, llama3-instruct, --all): load the tokenizer, read the JSON Lines,
                render every conversation with apply_chat_template(tokenize=False), one batched tokenize
  lr-plot       fixtures/configs/hf_training_args.yaml on 20,000 rows: parse the YAML, transformers' get_scheduler on
                a one-parameter optimizer, stepped once per optimizer step with its learning rate read
  check-run     fixtures/runs/sft-all-labels-masked: json.load of the trainer_state.json and a pass over its log_history
Not part of the test run. On a shared machine timings vary by 10-30% from run to run: read the medians.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures/datasets/demo/support_chat.jsonl"
LLAMA3 = ROOT / "fixtures/tokenizers/llama3-instruct"
TRAINING_ARGS = ROOT / "fixtures/configs/hf_training_args.yaml"
LR_ROWS = 20_000
RUN = ROOT / "fixtures/runs/sft-all-labels-masked"

COMMANDS = {
    "inspect-data": ["inspect-data", str(DEMO), "-t", str(LLAMA3), "--framework", "axolotl", "--max-length", "512",
                     "--all", "-f", "json", "--exit-zero"],
    "lr-plot": ["lr-plot", "--config", str(TRAINING_ARGS), "--num-rows", str(LR_ROWS), "-f", "json", "--exit-zero"],
    "check-run": ["check-run", str(RUN), "-f", "json", "--exit-zero"],
}

FLOORS = {
    "inspect-data": f"""
import json
import sys
sys.modules["torch"] = None  # the floor imports nothing it does not use (mldebug keeps torch out of inspect-data too)
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(LLAMA3)!r})
rows = [json.loads(line) for line in open({str(DEMO)!r}, encoding="utf-8") if line.strip()]
texts = [tok.apply_chat_template(row["messages"], tokenize=False) for row in rows]
print(sum(len(e.ids) for e in tok.backend_tokenizer.encode_batch(texts, add_special_tokens=False)))
""",
    "lr-plot": f"""
import math
import torch
import yaml
from transformers import get_scheduler
config = yaml.safe_load(open({str(TRAINING_ARGS)!r}, encoding="utf-8"))
steps = math.ceil({LR_ROWS} / config["per_device_train_batch_size"]) * int(config["num_train_epochs"])
warmup = config["warmup_steps"]
warmup = math.ceil(warmup * steps) if warmup < 1 else int(warmup)
optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config["learning_rate"])
scheduler = get_scheduler(config["lr_scheduler_type"], optimizer, num_warmup_steps=warmup, num_training_steps=steps)
lrs = []
for _ in range(steps):
    lrs.append(scheduler.get_last_lr()[0])
    optimizer.step()
    scheduler.step()
print(len(lrs))
""",
    "check-run": f"""
import json
state = json.load(open({str(RUN / "trainer_state.json")!r}, encoding="utf-8"))
print(sum(1 for entry in state["log_history"] if "loss" in entry or "train_loss" in entry))
""",
}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    args = parser.parse_args()
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.repeat):
        for name in args.commands:
            for side, argv in (("command", [sys.executable, "-m", "mldebug_cli", *COMMANDS[name]]),
                               ("floor", [sys.executable, "-c", FLOORS[name]])):
                wall, cpu = timed(argv)
                runs.setdefault((name, side), []).append((wall, cpu))
                print(f"round {round_ + 1} {name:12} {side:7} {wall:6.2f} s wall {cpu:6.2f} s CPU", file=sys.stderr, flush=True)
    print("| command | input | wall s (median, range) | floor wall s | command / floor, wall | CPU s | floor CPU s "
          "| command / floor, CPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.commands:
        cmd, flo = runs[(name, "command")], runs[(name, "floor")]
        walls = {side: [w for w, _ in r] for side, r in (("command", cmd), ("floor", flo))}
        median = {side: statistics.median(w) for side, w in walls.items()}
        cpu = {side: statistics.median(c for _, c in r) for side, r in (("command", cmd), ("floor", flo))}
        shown = f"{TRAINING_ARGS.name}, {LR_ROWS:,} rows" if name == "lr-plot" else COMMANDS[name][1]
        print(f"| {name} | {shown.replace(str(ROOT) + '/', '')} | {median['command']:.2f} ({min(walls['command']):.2f}-"
              f"{max(walls['command']):.2f}) | {median['floor']:.2f} ({min(walls['floor']):.2f}-{max(walls['floor']):.2f}) "
              f"| {median['command'] / median['floor']:.2f}x | {cpu['command']:.2f} | {cpu['floor']:.2f} "
              f"| {cpu['command'] / cpu['floor']:.2f}x |")
    print(json.dumps({f"{n} {s}": r for (n, s), r in runs.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
