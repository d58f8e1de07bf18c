"""Write fixtures/step-plan/llamafactory-0.9.5-max-samples.jsonl: how many rows LLaMA-Factory 0.9.5's own dataset
loader hands its trainer, and how many optimizer steps its trainer plans over them, on multi-dataset configs
generated with hypothesis, to test the one step plan (``lr-plot``, ``preflight``, ``memory``, ``probe``) against it.

Runs in the venv that holds LLaMA-Factory 0.9.5 with its transformers (``/work/venvs/lf-vision``: transformers 5.6.0):

    nice -n 15 /work/venvs/lf-vision/bin/python tools/llamafactory_max_samples_goldens.py --configs 60

Each config names 1-3 datasets (alpaca or ShareGPT files, 1-30 rows, some ShareGPT rows its converter or processor
drops: an odd turn count, a user turn alone, a system turn alone, turns out of order) and maybe ``max_samples``.
What runs is LLaMA-Factory's own code: ``get_train_args`` on the config (as ``llamafactory-cli train`` parses it),
``load_tokenizer``, ``get_template_and_fix_tokenizer`` and ``get_dataset`` (``_load_single_dataset`` caps each
dataset at ``max_samples`` before the converter and the processor drop rows); the rows are ``len`` of its train
dataset. The steps are ``state.max_steps`` of its ``CustomSeq2SeqTrainer`` (tools/llamafactory_batch_plan_goldens.py
builds it) over that many rows, stopped after its first step. The first line holds the versions; then one line per
config: the files, the config and what LLaMA-Factory made of them.

``--kind order`` writes fixtures/step-plan/llamafactory-0.9.5-loader-order.jsonl instead: the same loader on configs
that also draw what LLaMA-Factory does between its cap and its processor, in its order: datasets whose first rows
its converter or processor drops (so a cap can keep only those), ``mix_strategy`` (concat, interleave_under/over/once)
with or without ``interleave_probs``, and ``val_size`` (a share or a count, split off the merged rows before the
processor drops any). A config LLaMA-Factory stops on is recorded with its error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "step-plan" / "llamafactory-0.9.5-max-samples.jsonl"
OUT_ORDER = ROOT / "fixtures" / "step-plan" / "llamafactory-0.9.5-loader-order.jsonl"
TOKENIZER = "fixtures/tokenizers/qwen2.5-instruct"  # repo-relative: the replay writes it for its own checkout
RECORDED = ("llamafactory", "transformers", "datasets", "accelerate", "torch", "hypothesis")
PROBS = {1: ["1.0"], 2: ["0.5,0.5", "0.25,0.75", "0.8,0.2"], 3: ["0.5,0.25,0.25", "0.2,0.3,0.5"]}  # each adds up to 1
WORDS = ("brake", "chain", "gear", "saddle", "spoke", "的", "自行车", "🚲")


def configs(count: int, seed: int, kind: str = "max-samples") -> list[dict]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    def text(low: int, high: int):
        return st.lists(st.sampled_from(WORDS), min_size=low, max_size=high).map(" ".join)

    turn_pair = st.tuples(text(1, 8), text(1, 20)).map(
        lambda p: [{"from": "human", "value": p[0]}, {"from": "gpt", "value": p[1]}])
    dropped = st.one_of(
        text(1, 8).map(lambda t: [{"from": "human", "value": t}]),  # a user turn alone: an odd count
        text(1, 8).map(lambda t: [{"from": "system", "value": t}]),  # a system turn alone: no turn after it
        st.tuples(text(1, 8), text(1, 8)).map(  # out of order
            lambda p: [{"from": "gpt", "value": p[0]}, {"from": "human", "value": p[1]}]),
    )
    sharegpt_row = st.one_of(st.lists(turn_pair, min_size=1, max_size=2).map(lambda ts: [t for p in ts for t in p]),
                             st.lists(turn_pair, min_size=1, max_size=2).map(lambda ts: [t for p in ts for t in p]),
                             dropped).map(lambda turns: {"conversations": turns})
    alpaca_row = st.tuples(text(1, 8), text(1, 20)).map(
        lambda p: {"instruction": p[0], "input": "", "output": p[1]})
    dataset = st.sampled_from(["alpaca", "sharegpt"]).flatmap(
        lambda kind: st.tuples(st.just(kind), st.lists(alpaca_row if kind == "alpaca" else sharegpt_row,
                                                       min_size=3, max_size=30)))
    common = {
        "per_device_train_batch_size": st.integers(1, 4),
        "gradient_accumulation_steps": st.integers(1, 4),
        "num_train_epochs": st.sampled_from([1.0, 2.0, 3.0]),
        "seed": st.integers(0, 99),
    }
    config = st.fixed_dictionaries({
        "datasets": st.lists(dataset, min_size=1, max_size=3),
        "max_samples": st.one_of(st.none(), st.integers(1, 25)),
        **common,
    })
    if kind == "order":
        # ShareGPT files whose first rows are dropped (1-4 of them), then any rows: a small cap keeps only dropped rows
        front_dropped = st.tuples(st.lists(dropped.map(lambda turns: {"conversations": turns}), min_size=1, max_size=4),
                                  st.lists(sharegpt_row, min_size=0, max_size=20)).map(
            lambda parts: ("sharegpt", parts[0] + parts[1]))
        ordered = st.one_of(dataset, front_dropped)
        config = st.one_of(st.lists(ordered, min_size=1, max_size=3), st.lists(ordered, min_size=2, max_size=3)).flatmap(lambda sets: st.fixed_dictionaries({
            "datasets": st.just(sets),
            "max_samples": st.one_of(st.none(), st.integers(1, 4), st.integers(1, 25)),
            "mix_strategy": st.sampled_from(["concat", "interleave_under", "interleave_over", "interleave_once"]),
            "interleave_probs": st.one_of(st.none(), st.sampled_from(PROBS[len(sets)])),
            "val_size": st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.25, 0.5]), st.integers(1, 3)),
            **common,
        }))
    found: list[dict] = []
    seen: set[str] = set()

    @hypothesis_seed(seed)
    @settings(max_examples=count * (1 if kind == "max-samples" else 4), database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(config)
    def collect(c: dict) -> None:
        key = json.dumps(c, sort_keys=True)
        if kind == "max-samples" or key not in seen:  # order: hypothesis repeats a draw while it explores; keep one
            seen.add(key)
            found.append(c)

    collect()
    return found[:count]


def layout(c: dict) -> tuple[dict, dict[str, object]]:
    """(the LLaMA-Factory config, the files beside it: data/<name>.json and data/dataset_info.json)."""
    files: dict[str, object] = {}
    info: dict[str, dict] = {}
    names = []
    for n, (kind, rows) in enumerate(c["datasets"]):
        name = f"set{n}"
        names.append(name)
        files[f"data/{name}.json"] = rows
        info[name] = {"file_name": f"{name}.json"} if kind == "alpaca" else {
            "file_name": f"{name}.json", "formatting": "sharegpt", "columns": {"messages": "conversations"}}
    files["data/dataset_info.json"] = info
    config = {"model_name_or_path": TOKENIZER, "stage": "sft", "do_train": True, "finetuning_type": "lora",
              "dataset": ",".join(names), "dataset_dir": "data", "template": "qwen", "cutoff_len": 512,
              "output_dir": "out", "overwrite_output_dir": True, "report_to": "none",
              "per_device_train_batch_size": c["per_device_train_batch_size"],
              "gradient_accumulation_steps": c["gradient_accumulation_steps"],
              "num_train_epochs": c["num_train_epochs"], "learning_rate": 1e-4, "lr_scheduler_type": "cosine",
              "seed": c["seed"]}
    if c["max_samples"] is not None:
        config["max_samples"] = c["max_samples"]
    if c.get("mix_strategy", "concat") != "concat":
        config["mix_strategy"] = c["mix_strategy"]
        if c.get("interleave_probs"):
            config["interleave_probs"] = c["interleave_probs"]
    if c.get("val_size") is not None:
        config["val_size"] = c["val_size"]
    return config, files


def write(folder: Path, config: dict, files: dict[str, object], root: Path) -> Path:
    """The files and ``config.yaml`` under ``folder`` (the tokenizer path made absolute under ``root``)."""
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({**config, "model_name_or_path": str(root / config["model_name_or_path"])},
                                   allow_unicode=True), encoding="utf-8")
    return path


_TOKENIZERS: dict = {}


def llama_factory_rows(config_path: Path) -> int:
    """``len`` of the train dataset LLaMA-Factory's ``get_dataset`` builds for the config (its tokenizer loaded once:
    every config names the same one)."""
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.hparams import get_train_args
    from llamafactory.model import load_tokenizer

    raw = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    model_args, data_args, training_args, _, _ = get_train_args(raw)
    if model_args.model_name_or_path not in _TOKENIZERS:
        _TOKENIZERS[model_args.model_name_or_path] = load_tokenizer(model_args)
    tokenizer_module = _TOKENIZERS[model_args.model_name_or_path]
    template = get_template_and_fix_tokenizer(tokenizer_module["tokenizer"], data_args)
    module = get_dataset(template, model_args, data_args, training_args, stage="sft", **tokenizer_module)
    return len(module["train_dataset"])


def trainer_steps(rows: int, c: dict, workdir: str) -> int:
    """The optimizer steps LLaMA-Factory's CustomSeq2SeqTrainer plans for ``rows`` rows (``state.max_steps``)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import llamafactory_batch_plan_goldens as plan
    from transformers import TrainerCallback

    class StopAtOnce(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = True

    settings = {"stage": "sft", "rows": rows, "micro_batch_size": c["per_device_train_batch_size"],
                "gradient_accumulation_steps": c["gradient_accumulation_steps"], "seed": c["seed"], "data_seed": None,
                "disable_shuffling": False, "drop_last": False, "epochs": c["num_train_epochs"], "max_steps": -1}
    trainer, _, _ = plan.trainer_of(settings, workdir, [StopAtOnce()])
    trainer.train()
    return trainer.state.max_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--kind", choices=("max-samples", "order"), default="max-samples")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT / "tools"))
    import differential_trl_sft
    import llamafactory_batch_plan_goldens as plan

    plan._no_torchaudio()
    differential_trl_sft.quick_fingerprints()  # datasets' cache names only: hashing the tokenizer costs seconds a map
    lines = [json.dumps({"versions": {name: version(name) for name in RECORDED}, "seed": args.seed,
                         "command": f"python tools/llamafactory_max_samples_goldens.py --configs {args.configs} "
                                    f"--seed {args.seed}" + (" --kind order" if args.kind == "order" else "")})]
    for n, c in enumerate(configs(args.configs, args.seed, args.kind)):
        config, files = layout(c)
        with tempfile.TemporaryDirectory() as tmp:
            path = write(Path(tmp), config, files, ROOT)
            cwd = Path.cwd()
            os.chdir(tmp)  # dataset_dir and output_dir are relative to where llamafactory-cli runs
            try:
                rows = llama_factory_rows(path)
                found: dict = {"rows": rows, "steps": trainer_steps(rows, c, str(Path(tmp) / "trainer"))}
            except (RuntimeError, ValueError) as exc:  # the run stops: no row left to train ("Cannot find valid
                # samples"), or a dataset whose every row was dropped cannot be merged with the others (features)
                found = {"refused": f"{type(exc).__name__}: {str(exc)[:200]}"}
            finally:
                os.chdir(cwd)
        lines.append(json.dumps({"id": n, "config": config, "files": files, **found}, ensure_ascii=False))
        print(f"config {n}: {len(c['datasets'])} datasets, max_samples {c['max_samples']}: {found}", file=sys.stderr)
    out = OUT_ORDER if args.kind == "order" else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
