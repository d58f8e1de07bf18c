"""Write fixtures/batch-plan/hf-trainer.jsonl: the rows the real transformers ``Trainer`` trains in each optimizer
step, on configs generated with hypothesis, to test ``mldebug_cli.schedule.batch_plan`` against.

Usage (offline, CPU, a few minutes):

    nice -n 10 python tools/batch_plan_goldens.py --configs 240 --out fixtures/batch-plan/hf-trainer.jsonl

Each config builds a tiny random-init GPT-2 (``from_config``) and a ``datasets.Dataset`` whose row ``i`` is the
single token id ``i``, so the ids a batch carries are its dataset rows.
- world size 1: the real ``Trainer.train()``; ``training_step`` is replaced by a recorder of
  ``state.global_step + 1`` and the rows of each micro-batch (returning a zero loss: the model's forward and
  backward cannot change which rows come next), stopped after 48 steps by a callback. What runs is the
  Trainer's own sampler, accelerate's prepared data loader, its epoch loop, gradient accumulation windows and
  ``max_steps`` cut.
- world size W > 1 (no process group on CPU): the Trainer's own unprepared train DataLoader (its
  ``_get_train_sampler``, ``dataloader_drop_last``, collator) goes through accelerate's ``prepare_data_loader``
  once per rank with ``num_processes=W, process_index=rank`` and the flags the Trainer's Accelerator passes
  (``use_seedable_sampler``, ``data_seed``, ``even_batches``); each epoch is iterated after ``set_epoch`` as the
  Trainer does, and micro-batches are grouped into optimizer steps by the Trainer's own
  ``set_initial_training_values`` arithmetic (steps per epoch, max steps).
The first line holds the versions; then one line per config: its settings and ``steps``: per optimizer step,
per rank, the micro-batches' rows.
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

RECORDED = ("torch", "transformers", "accelerate", "datasets", "trl", "hypothesis")
MAX_STEPS_RECORDED = 48  # keeps a config (and the golden file) small


def configs(count: int, seed: int) -> list[dict]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    found: list[dict] = []
    config = st.fixed_dictionaries({
        "rows": st.integers(1, 160),
        "micro_batch_size": st.integers(1, 9),
        "gradient_accumulation_steps": st.integers(1, 5),
        "world_size": st.sampled_from([1, 1, 1, 2, 3, 4, 8]),
        "seed": st.one_of(st.just(42), st.integers(0, 2**32 - 1), st.integers(0, 100)),
        "data_seed": st.one_of(st.none(), st.none(), st.integers(0, 2**31)),
        "shuffle": st.sampled_from([True, True, True, False]),
        "drop_last": st.booleans(),
        "epochs": st.sampled_from([1.0, 1.0, 2.0, 3.0, 0.5, 1.5, 2.5]),
        "max_steps": st.one_of(st.just(-1), st.just(-1), st.integers(1, 40)),
    })

    @settings(max_examples=count * 3, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(config)
    def collect(c: dict) -> None:
        if len(found) >= count or c["drop_last"] and c["rows"] < c["micro_batch_size"] * c["world_size"]:
            return  # a run with no micro-batch at all: the Trainer refuses it (no steps), tested elsewhere
        if c not in found:
            found.append(c)

    collect()
    return found[:count]


def run_config(c: dict, workdir: str) -> list:
    import torch
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, TrainingArguments

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=4, n_positions=4, vocab_size=c["rows"] + 1))
    data = Dataset.from_dict({"input_ids": [[i] for i in range(c["rows"])], "labels": [[i] for i in range(c["rows"])]})
    args = TrainingArguments(
        output_dir=workdir, per_device_train_batch_size=c["micro_batch_size"],
        gradient_accumulation_steps=c["gradient_accumulation_steps"], seed=c["seed"], data_seed=c["data_seed"],
        train_sampling_strategy="random" if c["shuffle"] else "sequential", dataloader_drop_last=c["drop_last"],
        num_train_epochs=c["epochs"], max_steps=c["max_steps"], learning_rate=1e-9, max_grad_norm=0.0, report_to=[],
        save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True)
    if c["world_size"] == 1:
        return _train(model, args, data)
    return _sharded(model, args, data, c["world_size"])


def _train(model, args, data) -> list:
    import torch
    from transformers import Trainer, TrainerCallback

    steps: dict[int, list] = {}

    class Observed(Trainer):
        def training_step(self, model, inputs, num_items_in_batch=None):
            # the rows are what is recorded; the forward/backward would not change them, so it is skipped
            steps.setdefault(self.state.global_step + 1, []).append(inputs["input_ids"][:, 0].tolist())
            return torch.zeros(())

    class StopEarly(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = control.should_training_stop or state.global_step >= MAX_STEPS_RECORDED

    Observed(model=model, args=args, train_dataset=data, callbacks=[StopEarly()]).train()
    return [[steps[s]] for s in sorted(steps)][:MAX_STEPS_RECORDED]


def _sharded(model, args, data, world_size: int) -> list:
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import DataLoader
    from transformers import Trainer

    trainer = Trainer(model=model, args=args, train_dataset=data)
    dataset = trainer._remove_unused_columns(data, description="Training")
    config = trainer.args.accelerator_config
    ranks = []
    for rank in range(world_size):
        loader = DataLoader(dataset, batch_size=args.per_device_train_batch_size, sampler=trainer._get_train_sampler(dataset),
                            drop_last=args.dataloader_drop_last, collate_fn=trainer.data_collator)
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fixtures/batch-plan/hf-trainer.jsonl")
    options = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = configs(options.configs, options.seed)
    with tempfile.TemporaryDirectory() as workdir, out.open("w") as handle:
        handle.write(json.dumps({"versions": {name: version(name) for name in RECORDED},
                                 "made_by": "tools/batch_plan_goldens.py", "configs": len(chosen)}) + "\n")
        for number, c in enumerate(chosen):
            steps = run_config(c, workdir)
            handle.write(json.dumps({**c, "steps": steps}, separators=(",", ":")) + "\n")
            print(f"{number + 1}/{len(chosen)} {c} -> {len(steps)} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
