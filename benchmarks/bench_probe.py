"""`mldebug probe` on a 0.5B-parameter model: wall time and peak memory of one run.

    python benchmarks/bench_probe.py [--device cpu|cuda] [--rows 8] [--work DIR]

The model is Qwen2.5-0.5B's architecture written from its published config.json (24 layers, hidden 896,
intermediate 4864, 14 heads, 2 key/value heads, vocabulary 151,936, tied embeddings) with random weights
(seeded) and the fixture Qwen2.5 tokenizer; the config is a TRL SFT recipe with LoRA r=16 on the attention
projections, gradient checkpointing and max_length 512; the rows are 8 of fixtures/datasets/demo/support_chat.jsonl.
The probe runs in a child process (`python -m mldebug_cli probe ... -f json`); its wall time, CPU time (user +
system: on a shared machine the steadier number) and peak RSS (and, on cuda, the peak GPU memory torch reports in
the child) are printed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
ROWS = ROOT / "fixtures" / "datasets" / "demo" / "support_chat.jsonl"

# Qwen/Qwen2.5-0.5B config.json (the published numbers)
QWEN25_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0,
                  rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu", bos_token_id=151643,
                  eos_token_id=151643)


def make_model(folder: Path) -> int:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    if not (folder / "config.json").exists():
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(Qwen2Config(**QWEN25_05B))
        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(TOKENIZER).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    return config["num_hidden_layers"]


def write_config(folder: Path, model: Path) -> Path:
    config = folder / "sft.yaml"
    config.write_text(
        f"model_name_or_path: {model}\ndataset_name: {ROWS}\nmax_length: 512\nlearning_rate: 2.0e-4\n"
        "per_device_train_batch_size: 4\nuse_peft: true\nlora_r: 16\nlora_alpha: 32\nlora_dropout: 0.0\n"
        "lora_target_modules: [q_proj, k_proj, v_proj, o_proj]\ngradient_checkpointing: true\n"
        "assistant_only_loss: false\noutput_dir: out\n")
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-probe-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    make_model(work / "qwen2.5-0.5b-random")
    print(f"model written in {time.monotonic() - started:.0f} s", file=sys.stderr)
    config = write_config(work, work / "qwen2.5-0.5b-random")
    peak_gpu = ("import torch, runpy, sys; sys.argv = sys.argv[1:]\n"
                "try:\n    runpy.run_module('mldebug_cli', run_name='__main__')\nfinally:\n"
                "    if torch.cuda.is_available():\n"
                "        print(f'peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB', file=sys.stderr)\n")
    command = [sys.executable, "-c", peak_gpu, "mldebug", "probe", str(config), "--model",
               str(work / "qwen2.5-0.5b-random"), "--sample", str(args.rows), "--device", args.device,
               "--allow-outside-paths", "-f", "json", "--exit-zero"]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    sys.stderr.write(result.stderr[-2000:])
    if result.returncode != 0:
        print(f"probe failed with exit {result.returncode}")
        return 1
    doc = json.loads(result.stdout)
    print(f"mldebug probe, Qwen2.5-0.5B architecture (random weights), {doc['summary']['rows']} rows, "
          f"{args.device}: wall {wall:.1f} s, CPU {cpu:.0f} s (probe's own measurement {doc['summary']['seconds']} s), "
          f"peak RSS {peak:.0f} MiB, findings {[f['code'] for f in doc['findings']]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
