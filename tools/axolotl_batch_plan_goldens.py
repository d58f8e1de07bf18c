"""Write fixtures/batch-plan/axolotl-0.19.0.jsonl: the rows axolotl 0.19.0's own trainer trains in each optimizer
step, on configs generated with hypothesis, to test ``mldebug_cli.schedule.batch_plan`` / ``schedule.multipack``.

Runs in a venv with axolotl 0.19.0 (``--no-deps``) and the pins of its wheel's METADATA (torch 2.13.0 CPU,
transformers 5.16.1, accelerate 1.13.0, datasets 4.8.4, trl 1.9.0, peft 0.20.0, numba):

    python -m venv /work/venvs/axolotl-sampler
    /work/venvs/axolotl-sampler/bin/pip install torch==2.13.0 transformers==5.16.1 accelerate==1.13.0 \\
        datasets==4.8.4 trl==1.9.0 peft==0.20.0 tokenizers==0.23.1 huggingface_hub==1.17.0 'numba>=0.63.1,<1.0' \\
        hypothesis pydantic==2.12.5 PyYAML==6.0.3 addict fire einops colorama pillow
    /work/venvs/axolotl-sampler/bin/pip install --no-deps axolotl==0.19.0
    nice -n 15 /work/venvs/axolotl-sampler/bin/python tools/axolotl_batch_plan_goldens.py --configs 240 --more 90 --more-seed 35
(``--resume`` keeps the configs already recorded in the file and runs only the rest.)

Each config is the trainer's prepared dataset (what axolotl hands ``AxolotlTrainer`` after tokenizing, merging,
shuffling and dropping long rows): row ``i`` carries ``length`` tokens all equal to ``i``, so the ids a micro-batch
holds are its rows. What runs is axolotl's own code:
- the run length: ``axolotl.utils.trainer.calculate_total_num_steps`` (the builder passes ``max_steps or`` it);
- world size 1: the real ``AxolotlTrainer.train()`` (its ``_get_train_sampler``: the Trainer's seeded random
  sampler, ``curriculum_sampling``'s sequential one, or ``MultipackBatchSampler`` for ``sample_packing``; its
  ``_get_dataloader``; accelerate's prepared loader; the Trainer's epoch loop, accumulation windows and
  ``max_steps``), ``training_step`` replaced by a recorder of ``state.global_step + 1`` and the rows;
- world size W > 1 (no process group on CPU): the sampler ``AxolotlTrainer._get_train_sampler`` makes (with
  ``WORLD_SIZE=W`` and the same global RNG state on every rank, as on W real processes) goes through accelerate's
  ``prepare_data_loader`` per rank with the flags the trainer's Accelerator has (``even_batches`` off for packing:
  ``_get_dataloader`` sets it), each epoch iterated after ``set_epoch``, grouped into optimizer steps by the
  Trainer's rule (a step ends every ``gradient_accumulation_steps`` micro-batches or at the loader's length).
The first line holds the versions; then one line per config: its settings, ``lengths``, ``max_steps_passed`` (what
axolotl gave the Trainer), ``epoch_batches`` (the sampler's length for the run, packing only) and ``steps``: per
optimizer step, per rank, the micro-batches' rows.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

RECORDED = ("axolotl", "torch", "transformers", "accelerate", "datasets", "numba", "numpy", "hypothesis")
MAX_STEPS_RECORDED = 40


@functools.cache
def config_strategy():
    """One config: its prepared rows' lengths and the keys that decide axolotl's batches."""
    from hypothesis import strategies as st

    @st.composite
    def config(draw) -> dict:
        sequence_len = draw(st.sampled_from([16, 32, 64, 128]))
        rows = draw(st.integers(1, 120))
        shape = draw(st.sampled_from(["mixed", "short", "long", "equal", "full"]))
        if shape == "short":
            lengths = draw(st.lists(st.integers(1, max(2, sequence_len // 8)), min_size=rows, max_size=rows))
        elif shape == "long":
            lengths = draw(st.lists(st.integers(sequence_len // 2, sequence_len), min_size=rows, max_size=rows))
        elif shape == "equal":
            lengths = [draw(st.integers(1, sequence_len))] * rows
        elif shape == "full":
            lengths = [sequence_len] * rows
        else:
            lengths = draw(st.lists(st.integers(1, sequence_len), min_size=rows, max_size=rows))
        packing = draw(st.sampled_from([True, True, False]))
        return {
            "rows": rows, "lengths": lengths, "sequence_len": sequence_len,
            "micro_batch_size": draw(st.integers(1, 6)), "gradient_accumulation_steps": draw(st.integers(1, 4)),
            "world_size": draw(st.sampled_from([1, 1, 1, 2, 3, 4])),
            "seed": draw(st.one_of(st.none(), st.integers(0, 2**31 - 1), st.integers(0, 100))),
            "sample_packing": packing,
            "multipack_real_batches": packing and draw(st.booleans()),
            "sample_packing_sequentially": packing and draw(st.sampled_from([False, False, True])),
            "sample_packing_bin_size": draw(st.sampled_from([200, 200, 2, 3, 5])),
            "sample_packing_group_size": draw(st.sampled_from([100_000, 100_000, 7, 20])),
            "curriculum_sampling": draw(st.sampled_from([False, False, False, True])),
            "dataloader_drop_last": draw(st.sampled_from([None, None, True, False])),
            "num_epochs": draw(st.sampled_from([1, 1, 2, 3, 1.5])),
            "max_steps": draw(st.one_of(st.none(), st.none(), st.integers(1, 30))),
        }

    return config()


def configs(count: int) -> list[dict]:
    """The first ``count`` configs of the derandomized draw (its seed is the digest of ``collect``'s text: keep it)."""
    from hypothesis import HealthCheck, given, settings

    found: list[dict] = []
    config = config_strategy

    @settings(max_examples=count * 4, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(config())
    def collect(c: dict) -> None:
        if len(found) < count and c not in found:
            found.append(c)

    collect()
    return found[:count]


def more_configs(count: int, draw_seed: int, taken: list[dict]) -> list[dict]:
    """``count`` further configs by the same rules, from the draw seeded ``draw_seed``, none already in ``taken``."""
    from hypothesis import HealthCheck, given, seed, settings

    found: list[dict] = []

    @seed(draw_seed)
    @settings(max_examples=count * 4, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(config_strategy())
    def collect_more(c: dict) -> None:
        if len(found) < count and c not in found and c not in taken:
            found.append(c)

    collect_more()
    return found[:count]


def dataset_of(c: dict):
    from datasets import Dataset

    ids = [[i] * n for i, n in enumerate(c["lengths"])]
    return Dataset.from_dict({"input_ids": ids, "labels": ids, "attention_mask": [[1] * n for n in c["lengths"]],
                              "position_ids": [list(range(n)) for n in c["lengths"]], "length": c["lengths"]})


def axolotl_cfg(c: dict):
    from axolotl.utils.dict import DictDefault

    world = c["world_size"]
    return DictDefault({
        "sample_packing": c["sample_packing"], "micro_batch_size": c["micro_batch_size"],
        "gradient_accumulation_steps": c["gradient_accumulation_steps"],
        # normalize_config: micro × accumulation, × world size under DDP
        "batch_size": c["micro_batch_size"] * c["gradient_accumulation_steps"] * world,
        "num_epochs": c["num_epochs"], "sequence_len": c["sequence_len"], "curriculum_sampling": c["curriculum_sampling"],
        "sample_packing_group_size": c["sample_packing_group_size"], "sample_packing_bin_size": c["sample_packing_bin_size"],
        "sample_packing_sequentially": c["sample_packing_sequentially"], "dataloader_drop_last": c["dataloader_drop_last"],
        "multipack_real_batches": c["multipack_real_batches"], "attn_supports_packing": not c["multipack_real_batches"],
        "model_config_type": "gpt2",
    })


def _no_full_gc() -> None:
    """``MultipackBatchSampler.generate_batches`` ends with ``gc.collect()``: ~2 s a call on a loaded machine with
    torch in memory, 5 to 12 calls a config. It frees memory and decides nothing about the batches, so the sampler's
    module gets a ``gc`` whose ``collect`` does nothing."""
    import types

    from axolotl.utils.samplers import multipack

    multipack.gc = types.SimpleNamespace(collect=lambda *args: 0)  # type: ignore[attr-defined]


@contextmanager
def world_size_env(world_size: int) -> Iterator[None]:
    """``WORLD_SIZE`` as W launched processes see it, only while axolotl's samplers read it (it picks how many
    packings size an epoch); set for longer it would make the CPU TrainingArguments ask for a process group."""
    os.environ["WORLD_SIZE"] = str(world_size)
    try:
        yield
    finally:
        os.environ.pop("WORLD_SIZE", None)


def collate(features: list) -> dict:
    """The rows of a micro-batch: a feature is one row, or (multipack, through axolotl's patched fetcher) a bin: a
    list of rows."""
    import torch

    rows: list[int] = []
    for feature in features:
        for row in feature if isinstance(feature, list) else [feature]:
            rows.append(row["input_ids"][0])
    return {"input_ids": torch.tensor([[r] for r in rows], dtype=torch.long)}


def run_config(c: dict, workdir: str) -> dict:
    import torch
    from axolotl.core.training_args import AxolotlTrainingArguments
    from axolotl.monkeypatch.data.batch_dataset_fetcher import apply_multipack_dataloader_patch
    from axolotl.utils.trainer import calculate_total_num_steps
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.set_num_threads(1)
    apply_multipack_dataloader_patch()  # what axolotl.common.datasets applies on import
    _no_full_gc()
    seed = 42 if c["seed"] is None else c["seed"]  # axolotl's validation sets seed 42 when none is given
    torch.manual_seed(seed)
    data = dataset_of(c)
    with world_size_env(c["world_size"]):
        total = calculate_total_num_steps(axolotl_cfg(c), data)
    max_steps = c["max_steps"] or total or -1
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=1, n_embd=4, n_positions=max(c["lengths"]) * 8 + 8,
                                       vocab_size=c["rows"] + 1))
    kwargs = dict(
        output_dir=workdir, per_device_train_batch_size=c["micro_batch_size"],
        gradient_accumulation_steps=c["gradient_accumulation_steps"], seed=seed, num_train_epochs=c["num_epochs"],
        max_steps=max_steps, learning_rate=1e-9, max_grad_norm=0.0, report_to=[], save_strategy="no",
        logging_strategy="no", use_cpu=True, disable_tqdm=True, sample_packing=c["sample_packing"],
        multipack_real_batches=c["multipack_real_batches"], max_seq_length=c["sequence_len"],
        sample_packing_bin_size=c["sample_packing_bin_size"], sample_packing_group_size=c["sample_packing_group_size"],
        sample_packing_sequentially=c["sample_packing_sequentially"], curriculum_sampling=c["curriculum_sampling"],
        sample_packing_efficiency=1.0, remove_unused_columns=True)
    # causal builder: dataloader_drop_last when set; with packing and eval_sample_packing false it is True
    if c["dataloader_drop_last"] is not None:
        kwargs["dataloader_drop_last"] = c["dataloader_drop_last"]
    args = AxolotlTrainingArguments(**kwargs)
    if c["world_size"] == 1:
        steps, epoch_batches = _train(model, args, data)
    else:
        steps, epoch_batches = _sharded(model, args, data, c["world_size"])
    return {"max_steps_passed": max_steps, "epoch_batches": epoch_batches, "steps": steps}


def _trainer_class():
    import torch
    from axolotl.core.trainers.base import AxolotlTrainer

    class Observed(AxolotlTrainer):
        recorded: dict[int, list] = {}
        samplers: list = []

        def _get_train_sampler(self, train_dataset=None):
            sampler = super()._get_train_sampler(train_dataset)
            self.samplers.append(sampler)
            return sampler

        def training_step(self, model, inputs, num_items_in_batch=None):
            # the rows are what is recorded; forward/backward would not change which rows come next
            self.recorded.setdefault(self.state.global_step + 1, []).append(inputs["input_ids"][:, 0].tolist())
            return torch.zeros(())

    return Observed


def _train(model, args, data) -> tuple[list, int | None]:
    from transformers import TrainerCallback

    class StopEarly(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = control.should_training_stop or state.global_step >= MAX_STEPS_RECORDED

    from torch.utils.data import BatchSampler

    observed = _trainer_class()
    observed.recorded, observed.samplers = {}, []
    trainer = observed(model=model, args=args, train_dataset=data, data_collator=collate, callbacks=[StopEarly()])
    trainer.train()
    packed = [s for s in observed.samplers if isinstance(s, BatchSampler)]
    epoch_batches = len(packed[0]) if packed else None  # fixed when the sampler was made (its first len())
    steps = [[observed.recorded[s]] for s in sorted(observed.recorded)][:MAX_STEPS_RECORDED]
    return steps, epoch_batches


def _sharded(model, args, data, world_size: int) -> tuple[list, int | None]:
    import torch
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import BatchSampler, DataLoader

    trainer = _trainer_class()(model=model, args=args, train_dataset=data, data_collator=collate)
    dataset = data
    if not args.sample_packing:
        dataset = trainer._remove_unused_columns(data, description="training")
    if "length" in dataset.column_names:
        dataset = dataset.remove_columns(["length"])  # _get_dataloader drops it after the sampler read it
    state = torch.random.get_rng_state()
    ranks = []
    epoch_batches = None
    for rank in range(world_size):
        torch.random.set_rng_state(state)  # every process holds the same global RNG state
        with world_size_env(world_size):
            sampler = trainer._get_train_sampler(data)
        if isinstance(sampler, BatchSampler):
            epoch_batches = len(sampler)
            loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)
        else:
            loader = DataLoader(dataset, batch_size=args.per_device_train_batch_size, sampler=sampler,
                                drop_last=args.dataloader_drop_last, collate_fn=collate)
        config = trainer.args.accelerator_config
        ranks.append(prepare_data_loader(loader, num_processes=world_size, process_index=rank, put_on_device=False,
                                         split_batches=config.split_batches,
                                         even_batches=False if args.sample_packing else config.even_batches,
                                         use_seedable_sampler=config.use_seedable_sampler, data_seed=args.data_seed))
    length = len(ranks[0])
    ga = args.gradient_accumulation_steps
    per_epoch = max(length // ga + int(length % ga > 0), 1)
    total = args.max_steps if args.max_steps > 0 else math.ceil(args.num_train_epochs * per_epoch)
    steps: list = []
    epoch = 0
    pending: list = [[] for _ in ranks]
    while len(steps) < min(total, MAX_STEPS_RECORDED) and length:
        batches = []
        for loader in ranks:
            loader.set_epoch(epoch)
            batches.append([b["input_ids"][:, 0].tolist() for b in loader])
        # the Trainer's rule: an optimizer step after every ga-th micro-batch or the loader's last (its length)
        for index in range(len(batches[0])):
            for rank, rank_batches in enumerate(batches):
                pending[rank].append(rank_batches[index])
            if (index + 1) % ga == 0 or index + 1 == length:
                steps.append(pending)
                pending = [[] for _ in ranks]
                if len(steps) >= min(total, MAX_STEPS_RECORDED):
                    break
        epoch += 1
        if epoch > 1000:
            break
    return steps, epoch_batches


RESULTS = ("max_steps_passed", "epoch_batches", "steps")


def recorded(out: Path, chosen: list[dict]) -> list[str]:
    """The lines already in ``out`` whose configs are the first of ``chosen``, in order (for ``--resume``)."""
    if not out.exists():
        return []
    kept = []
    for line, c in zip(out.read_text().splitlines()[1:], chosen):
        if {k: v for k, v in json.loads(line).items() if k not in RESULTS} != c:
            break
        kept.append(line)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=240)
    parser.add_argument("--more", type=int, default=0, help="further configs by the same rules, from a seeded draw")
    parser.add_argument("--more-seed", type=int, default=35)
    parser.add_argument("--resume", action="store_true", help="keep the configs already recorded in --out")
    parser.add_argument("--out", default="fixtures/batch-plan/axolotl-0.19.0.jsonl")
    options = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    chosen = configs(options.configs)
    if options.more:
        chosen += more_configs(options.more, options.more_seed, chosen)
    kept = recorded(out, chosen) if options.resume else []
    header = {"versions": {name: version(name) for name in RECORDED}, "made_by": "tools/axolotl_batch_plan_goldens.py",
              "configs": len(chosen)}
    if options.more:
        header["more_seed"] = options.more_seed
    with tempfile.TemporaryDirectory() as workdir, out.open("w") as handle:
        handle.write(json.dumps(header) + "\n")
        handle.writelines(line + "\n" for line in kept)
        for number, c in enumerate(chosen[len(kept):], start=len(kept)):
            found = run_config(c, workdir)
            handle.write(json.dumps({**c, **found}, separators=(",", ":")) + "\n")
            handle.flush()
            print(f"{number + 1}/{len(chosen)} rows={c['rows']} packing={c['sample_packing']} "
                  f"w={c['world_size']} -> {len(found['steps'])} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
