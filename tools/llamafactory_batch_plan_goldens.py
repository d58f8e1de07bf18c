"""Write fixtures/batch-plan/llamafactory-0.9.5.jsonl: the rows LLaMA-Factory 0.9.5's own trainers train in each
optimizer step, on configs generated with hypothesis, to test ``mldebug_cli.schedule.batch_plan``.

Runs in the venv that holds LLaMA-Factory 0.9.5 with its transformers (``/work/venvs/lf-vision``: transformers 5.6.0,
accelerate 1.11.0, torch 2.13.0 CPU):

    nice -n 15 /work/venvs/lf-vision/bin/python tools/llamafactory_batch_plan_goldens.py --configs 240

Each config is the trainer's dataset (what LLaMA-Factory hands its trainer after tokenizing and, with ``packing`` or
``neat_packing``, packing rows into sequences before the sampler): row ``i`` is the token id ``i``, so the ids a
micro-batch holds are its rows. What runs is LLaMA-Factory's own trainer: ``CustomSeq2SeqTrainer`` (``stage: sft``)
or ``CustomTrainer`` (``stage: pt``) with its ``FinetuningArguments`` (``disable_shuffling``: its
``_get_train_sampler`` returns a ``SequentialSampler``; else the Trainer's seeded random sampler) and its
``TrainingArguments``:
- world size 1: the real ``train()``, ``training_step`` replaced by a recorder of ``state.global_step + 1`` and the
  rows (the forward/backward cannot change which rows come next);
- world size W > 1 (no process group on CPU): the trainer's own sampler and collator through accelerate's
  ``prepare_data_loader`` once per rank with the flags the trainer's Accelerator passes, each epoch iterated after
  ``set_epoch``, grouped into optimizer steps by the Trainer's rule.
The first line holds the versions; then one line per config: its settings and ``steps``: per optimizer step, per
rank, the micro-batches' rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

RECORDED = ("llamafactory", "torch", "transformers", "accelerate", "datasets", "hypothesis")
MAX_STEPS_RECORDED = 40


def configs(count: int) -> list[dict]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    found: list[dict] = []
    config = st.fixed_dictionaries({
        "stage": st.sampled_from(["sft", "sft", "pt"]),
        "rows": st.integers(1, 150),
        "micro_batch_size": st.integers(1, 8),
        "gradient_accumulation_steps": st.integers(1, 5),
        "world_size": st.sampled_from([1, 1, 1, 2, 3, 4, 8]),
        "seed": st.one_of(st.just(42), st.integers(0, 2**32 - 1), st.integers(0, 100)),
        "data_seed": st.one_of(st.none(), st.none(), st.integers(0, 2**31)),
        "disable_shuffling": st.sampled_from([False, False, False, True]),
        "drop_last": st.booleans(),
        "epochs": st.sampled_from([3.0, 1.0, 2.0, 0.5, 1.5]),
        "max_steps": st.one_of(st.just(-1), st.just(-1), st.integers(1, 40)),
    })

    @settings(max_examples=count * 3, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(config)
    def collect(c: dict) -> None:
        if len(found) >= count or c["drop_last"] and c["rows"] < c["micro_batch_size"] * c["world_size"]:
            return  # no micro-batch at all: the Trainer has nothing to train (mldebug refuses it, tested elsewhere)
        if c not in found:
            found.append(c)

    collect()
    return found[:count]


def collate(features: list) -> dict:
    import torch

    return {"input_ids": torch.tensor([[f["input_ids"][0]] for f in features], dtype=torch.long)}


def _no_torchaudio() -> None:
    """mm_plugin imports torchaudio at module level; no torchaudio build matches torch 2.13, and the sampler never
    uses it (as tools/llamafactory_goldens.py does)."""
    import importlib.machinery
    import types

    module = types.ModuleType("torchaudio")
    module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", module)


def trainer_of(c: dict, workdir: str, callbacks: list):
    import torch

    _no_torchaudio()
    from datasets import Dataset
    from llamafactory.hparams import FinetuningArguments, TrainingArguments
    from llamafactory.train.pt.trainer import CustomTrainer
    from llamafactory.train.sft.trainer import CustomSeq2SeqTrainer
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=4, n_positions=4, vocab_size=c["rows"] + 1))
    data = Dataset.from_dict({"input_ids": [[i] for i in range(c["rows"])], "labels": [[i] for i in range(c["rows"])]})
    args = TrainingArguments(
        output_dir=workdir, per_device_train_batch_size=c["micro_batch_size"],
        gradient_accumulation_steps=c["gradient_accumulation_steps"], seed=c["seed"], data_seed=c["data_seed"],
        dataloader_drop_last=c["drop_last"], num_train_epochs=c["epochs"], max_steps=c["max_steps"],
        learning_rate=1e-9, max_grad_norm=0.0, report_to=[], save_strategy="no", logging_strategy="no",
        use_cpu=True, disable_tqdm=True)
    finetuning = FinetuningArguments(stage=c["stage"], finetuning_type="full", disable_shuffling=c["disable_shuffling"])
    cls = CustomSeq2SeqTrainer if c["stage"] == "sft" else CustomTrainer
    recorded: dict[int, list] = {}

    class Observed(cls):  # type: ignore[misc, valid-type]
        def training_step(self, model, inputs, num_items_in_batch=None):
            recorded.setdefault(self.state.global_step + 1, []).append(inputs["input_ids"][:, 0].tolist())
            return torch.zeros(())

    trainer = Observed(model=model, args=args, train_dataset=data, data_collator=collate, finetuning_args=finetuning,
                       processor=None, tokenizer=None, callbacks=callbacks)
    return trainer, data, recorded


def run_config(c: dict, workdir: str) -> list:
    from transformers import TrainerCallback

    class StopEarly(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = control.should_training_stop or state.global_step >= MAX_STEPS_RECORDED

    trainer, data, recorded = trainer_of(c, workdir, [StopEarly()])
    if c["world_size"] == 1:
        trainer.train()
        return [[recorded[s]] for s in sorted(recorded)][:MAX_STEPS_RECORDED]
    return _sharded(trainer, data, c["world_size"])


def _sharded(trainer, data, world_size: int) -> list:
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import DataLoader

    args = trainer.args
    dataset = trainer._remove_unused_columns(data, description="Training")
    config = args.accelerator_config
    ranks = []
    for rank in range(world_size):
        loader = DataLoader(dataset, batch_size=args.per_device_train_batch_size,
                            sampler=trainer._get_train_sampler(dataset), drop_last=args.dataloader_drop_last,
                            collate_fn=trainer.data_collator)
        ranks.append(prepare_data_loader(loader, num_processes=world_size, process_index=rank, put_on_device=False,
                                         split_batches=config.split_batches, even_batches=config.even_batches,
                                         use_seedable_sampler=config.use_seedable_sampler, data_seed=args.data_seed))
    length = len(ranks[0])
    ga = args.gradient_accumulation_steps
    per_epoch = max(length // ga + int(length % ga > 0), 1)
    total = args.max_steps if args.max_steps > 0 else math.ceil(args.num_train_epochs * per_epoch)
    steps: list = []
    epoch = 0
    while len(steps) < min(total, MAX_STEPS_RECORDED) and length:
        batches = []
        for loader in ranks:
            loader.set_epoch(epoch)
            batches.append([b["input_ids"][:, 0].tolist() for b in loader])
        for first in range(0, per_epoch * ga, ga):
            if len(steps) >= min(total, MAX_STEPS_RECORDED):
                break
            steps.append([rank[first:first + ga] for rank in batches])
        epoch += 1
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=240)
    parser.add_argument("--out", default="fixtures/batch-plan/llamafactory-0.9.5.jsonl")
    options = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = configs(options.configs)
    with tempfile.TemporaryDirectory() as workdir, out.open("w") as handle:
        handle.write(json.dumps({"versions": {name: version(name) for name in RECORDED},
                                 "made_by": "tools/llamafactory_batch_plan_goldens.py", "configs": len(chosen)}) + "\n")
        for number, c in enumerate(chosen):
            steps = run_config(c, workdir)
            handle.write(json.dumps({**c, "steps": steps}, separators=(",", ":")) + "\n")
            handle.flush()
            print(f"{number + 1}/{len(chosen)} {c} -> {len(steps)} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
