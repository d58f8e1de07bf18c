"""Benchmark: each command's time on a bundled input beside its floor (what the same libraries need for the same work).

    python benchmarks/bench_floors.py [--repeat 3] [--commands inspect-data lr-plot check-run preflight render ...]

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
  preflight     fixtures/preflight/trl/config.yaml (24 conversations, qwen2.5-instruct, its chat_template_path): parse
                the YAML, load the tokenizer, render every row with the config's template, one batched tokenize, and
                transformers' get_scheduler stepped once per optimizer step (as lr-plot's floor)
  render        the demo's first conversation with qwen2.5-instruct: load the tokenizer, apply_chat_template, tokenize
  check-template  qwen3 against fixtures/deploy/qwen3-chatml-no-stop.Modelfile: load the tokenizer, render and tokenize
                the 8 probe conversations on the training side, read the Modelfile (the deploy side's Go template has
                no Python library: rendering it is mldebug's own work, outside the floor)
  memory        fixtures/memory/sft_long_row.yaml with the qwen2.5-0.5b config: parse the YAML, AutoConfig of the model,
                load the tokenizer, read the 41 text rows, one batched tokenize, and the step plan (the config's
                batches in order, each batch's longest row; the estimate's arithmetic is not a floor)
  probe         a TRL SFT config on 8 demo conversations and a tiny Qwen2 model (2 layers, hidden 64, the qwen2.5
                tokenizer's vocabulary; random weights, seeded, written once by main() under build/bench-floors/):
                load the tokenizer and the model, render and tokenize the 8 rows, one forward and backward with torch
                (what probe measures its gradients on; its own checks, hooks and the trainer's setup are its work)
``--imports`` instead runs each command once under ``python -X importtime`` and prints its start-up: the time its
imports took (every top-level import's cumulative time, summed) and the heavy libraries among them, each with its
cumulative import time (none of them should be imported by a command that does not use it).
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
QWEN25 = ROOT / "fixtures/tokenizers/qwen2.5-instruct"
QWEN3 = ROOT / "fixtures/tokenizers/qwen3"
PREFLIGHT = ROOT / "fixtures/preflight/trl/config.yaml"
MODELFILE = ROOT / "fixtures/deploy/qwen3-chatml-no-stop.Modelfile"
MEMORY = ROOT / "fixtures/memory/sft_long_row.yaml"
MEMORY_MODEL = ROOT / "fixtures/memory-models/qwen2.5-0.5b"
MESSAGES = ROOT / "build/bench-floors/messages.json"  # the demo's first conversation, written by main()
PROBE_MODEL = ROOT / "build/bench-floors/probe-model"  # a tiny random Qwen2 model, written once by main()
PROBE_CONFIG = ROOT / "build/bench-floors/probe-sft.yaml"
PROBE_ROWS = 8
PROBES = [  # the shapes of check-template's probe conversations (user, system+user, multi-turn, assistant-last, ...)
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    [{"role": "user", "content": "  Hi \n"}],
    [{"role": "user", "content": "<|im_end|> Hi"}],
    [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]}],
]

COMMANDS = {
    "inspect-data": ["inspect-data", str(DEMO), "-t", str(LLAMA3), "--framework", "axolotl", "--max-length", "512",
                     "--all", "-f", "json", "--exit-zero"],
    "lr-plot": ["lr-plot", "--config", str(TRAINING_ARGS), "--num-rows", str(LR_ROWS), "-f", "json", "--exit-zero"],
    "check-run": ["check-run", str(RUN), "-f", "json", "--exit-zero"],
    "preflight": ["preflight", str(PREFLIGHT), "-f", "json", "--exit-zero"],
    "render": ["render", "--tokenizer", str(QWEN25), "--messages", str(MESSAGES)],
    "check-template": ["check-template", "--train", str(QWEN3), "--deploy", str(MODELFILE), "-f", "json", "--exit-zero"],
    "memory": ["memory", str(MEMORY), "--model", str(MEMORY_MODEL), "--gpu", "L4-24GB", "-f", "json", "--exit-zero"],
    "probe": ["probe", str(PROBE_CONFIG), "--model", str(PROBE_MODEL), "--rows", f"0-{PROBE_ROWS - 1}",
              "--allow-outside-paths", "-f", "json", "--exit-zero"],
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
    "preflight": f"""
import json
import math
from pathlib import Path
import torch
import yaml
from transformers import AutoTokenizer, get_scheduler
path = Path({str(PREFLIGHT)!r})
config = yaml.safe_load(path.read_text(encoding="utf-8"))
tok = AutoTokenizer.from_pretrained(path.parent / config["model_name_or_path"])
template = (path.parent / config["chat_template_path"]).read_text(encoding="utf-8")
rows = [json.loads(line) for line in open(path.parent / config["dataset_name"], encoding="utf-8") if line.strip()]
texts = [tok.apply_chat_template(row["messages"], chat_template=template, tokenize=False) for row in rows]
print(sum(len(e.ids) for e in tok.backend_tokenizer.encode_batch(texts, add_special_tokens=False)))
steps = math.ceil(len(rows) / config["per_device_train_batch_size"] / config["gradient_accumulation_steps"])
optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config["learning_rate"])
scheduler = get_scheduler(config["lr_scheduler_type"], optimizer, num_warmup_steps=0, num_training_steps=steps)
for _ in range(steps):
    optimizer.step()
    scheduler.step()
""",
    "render": f"""
import json
import sys
sys.modules["torch"] = None
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(QWEN25)!r})
messages = json.load(open({str(MESSAGES)!r}, encoding="utf-8"))
text = tok.apply_chat_template(messages, tokenize=False)
print(text, len(tok(text, add_special_tokens=False)["input_ids"]))
""",
    "check-template": f"""
import sys
sys.modules["torch"] = None
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(QWEN3)!r})
modelfile = open({str(MODELFILE)!r}, encoding="utf-8").read()
texts = [tok.apply_chat_template(m, tokenize=False) for m in {PROBES!r}]
print(len(modelfile), sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts))
""",
    "memory": f"""
import json
from pathlib import Path
import yaml
from transformers import AutoConfig, AutoTokenizer
path = Path({str(MEMORY)!r})
config = yaml.safe_load(path.read_text(encoding="utf-8"))
model = AutoConfig.from_pretrained({str(MEMORY_MODEL)!r})
tok = AutoTokenizer.from_pretrained(path.parent / config["model_name_or_path"])
rows = [json.loads(line)["text"] for line in open(path.parent / config["dataset_name"], encoding="utf-8") if line.strip()]
lengths = [len(e.ids) for e in tok.backend_tokenizer.encode_batch(rows, add_special_tokens=False)]
batch = config["per_device_train_batch_size"] * config.get("gradient_accumulation_steps", 1)
plan = [max(lengths[i:i + batch]) for i in range(0, len(lengths), batch)] * int(config.get("num_train_epochs", 1))
print(model.hidden_size, len(plan), max(plan))
""",
    "probe": f"""
import json
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(PROBE_MODEL)!r})
model = AutoModelForCausalLM.from_pretrained({str(PROBE_MODEL)!r}, dtype=torch.float32)
rows = [json.loads(line) for line in open({str(DEMO)!r}, encoding="utf-8") if line.strip()][:{PROBE_ROWS}]
texts = [tok.apply_chat_template(row["messages"], tokenize=False) for row in rows]
batch = tok(texts, add_special_tokens=False, padding=True, truncation=True, max_length=512, return_tensors="pt")
labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
loss = model(**batch, labels=labels).loss
loss.backward()
print(float(loss), sum(p.grad is not None for p in model.parameters()))
""",
}


INPUTS = {"lr-plot": f"{TRAINING_ARGS.name}, {LR_ROWS:,} rows", "render": "the demo's first conversation, qwen2.5-instruct",
          "check-template": "qwen3 vs qwen3-chatml-no-stop.Modelfile", "memory": "sft_long_row.yaml, qwen2.5-0.5b",
          "probe": f"TRL SFT, {PROBE_ROWS} demo rows, tiny Qwen2 (2 layers, hidden 64)"}


def make_probe_input() -> None:
    """The probe's tiny model (random weights, seeded; the qwen2.5 tokenizer saved beside it) and its SFT config."""
    if not (PROBE_MODEL / "config.json").exists():
        import torch
        from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

        tok = AutoTokenizer.from_pretrained(QWEN25)
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                             tie_word_embeddings=True))
        model.save_pretrained(PROBE_MODEL)
        tok.save_pretrained(PROBE_MODEL)
    PROBE_CONFIG.write_text(
        f"model_name_or_path: {PROBE_MODEL}\ndataset_name: {DEMO}\nmax_length: 512\nlearning_rate: 2.0e-5\n"
        "per_device_train_batch_size: 8\nassistant_only_loss: false\noutput_dir: out\n", encoding="utf-8")


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


HEAVY = ("torch", "transformers", "tokenizers", "datasets", "pyarrow", "jinja2", "peft", "trl", "ray", "matplotlib",
         "numpy", "yaml", "rich", "typer")


def imports(name: str) -> tuple[float, dict[str, float]]:
    """(seconds of imports, {heavy library: its cumulative import seconds}) of one run under -X importtime."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "mldebug_cli", *COMMANDS[name]], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {out.returncode}: {out.stderr.splitlines()[-1:]}")
    total, heavy = 0, {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, module = line[len("import time:"):].split("|")
        top = module.rstrip()
        if not top.startswith("  "):  # a top-level import (its cumulative time holds every import below it)
            total += int(cumulative)
        package = top.strip()
        if package in HEAVY and package not in heavy:
            heavy[package] = int(cumulative) / 1e6
    return total / 1e6, heavy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    parser.add_argument("--imports", action="store_true", help="each command's import time and heavy imports")
    args = parser.parse_args()
    MESSAGES.parent.mkdir(parents=True, exist_ok=True)
    first = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[0])
    MESSAGES.write_text(json.dumps(first["messages"]), encoding="utf-8")
    if "probe" in args.commands:
        make_probe_input()
    if args.imports:
        print("| command | imports s | heavy libraries imported (cumulative s) |")
        print("|---|---:|---|")
        for name in args.commands:
            total, heavy = imports(name)
            listed = ", ".join(f"{k} {v:.2f}" for k, v in sorted(heavy.items(), key=lambda kv: -kv[1]))
            print(f"| {name} | {total:.2f} | {listed} |", flush=True)
        return
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
        shown = INPUTS.get(name) or COMMANDS[name][1]
        print(f"| {name} | {shown.replace(str(ROOT) + '/', '')} | {median['command']:.2f} ({min(walls['command']):.2f}-"
              f"{max(walls['command']):.2f}) | {median['floor']:.2f} ({min(walls['floor']):.2f}-{max(walls['floor']):.2f}) "
              f"| {median['command'] / median['floor']:.2f}x | {cpu['command']:.2f} | {cpu['floor']:.2f} "
              f"| {cpu['command'] / cpu['floor']:.2f}x |")
    print(json.dumps({f"{n} {s}": r for (n, s), r in runs.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
