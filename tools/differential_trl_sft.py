"""The TRL SFT side of the differential harness (tools/differential.py ``frame trl-sft``): TRL 1.16.0's own
``SFTTrainer`` prepares every group's rows; nothing here decides an id or a label.

One ``SFTTrainer`` is built per (tokenizer, setting, the two things its constructor reads from the dataset's first
row): ``SFTTrainer.__init__`` reads the first row only to raise for ``assistant_only_loss`` on a dataset that is not
conversational (``is_conversational``) and to decide ``completion_only_loss=None`` (a ``prompt`` and a ``completion``
column); everything else it sets up (the training chat template, the collator, the padding-free checks) depends on the
settings and the tokenizer alone. The first group with a key builds the trainer on its own rows (its
``train_dataset`` is the result, or the constructor raises: a refusal); every later group with the same key goes
through that trainer's ``_prepare_dataset``, the method the constructor calls on ``train_dataset``, with the
trainer's own arguments. Each prepared row then goes through the trainer's own data collator, as a training batch
would.

Packing: ``pack_dataset`` (called by ``_prepare_dataset``) is wrapped to observe the rows it is given (their ids and
labels before packing, in the dataset's order); the packed sequences it returns are collated by the trainer, then
each packed segment is traced back to its row: ``bfd`` keeps each row (cut to ``max_length``) as one segment of a
packed sequence (``seq_lengths``), found by its ids and labels; ``bfd_split`` makes each ``max_length`` piece of a row
a segment; ``wrapped`` concatenates the rows and cuts the stream into
``max_length`` chunks, so each row is its span of the concatenated collated chunks.

Two things make the runs fast and do not change what TRL computes: ``datasets``' fingerprints (which pickle the
tokenizer for every ``map`` to name cache files, seconds per call) are random ones, and caching is off.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

IGNORE = -100
_TRAINERS: dict[tuple, Any] = {}
_SEEN: list = []  # what pack_dataset was given, the latest call last


def quick_fingerprints() -> None:
    """Random dataset fingerprints instead of hashing the tokenizer on every map (only cache file names change)."""
    import datasets
    from datasets import arrow_dataset, fingerprint

    datasets.disable_caching()
    for module in (fingerprint, arrow_dataset):
        module.update_fingerprint = lambda *args, **kwargs: fingerprint.generate_random_fingerprint()


def _observe_packing() -> None:
    from trl.trainer import sft_trainer

    if getattr(sft_trainer.pack_dataset, "observed", False):
        return
    real = sft_trainer.pack_dataset

    def pack_dataset(dataset, *args, **kwargs):
        _SEEN.append([{"input_ids": list(r["input_ids"]), "labels": list(r["labels"])} for r in dataset])
        return real(dataset, *args, **kwargs)

    pack_dataset.observed = True
    sft_trainer.pack_dataset = pack_dataset


def prepare(tokenizer_dir: Path, setting: str, config: dict, rows: list[dict], numbers: list[int]) -> dict:
    """{"rows": [{"row", "ids", "labels"} or {"row", "dropped": True}]} for ``rows`` (their group numbers ``numbers``);
    raises what SFTTrainer raises."""
    import trl_goldens
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer
    from trl.data_utils import is_conversational

    quick_fingerprints()
    _observe_packing()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.json"
        path.write_text(json.dumps(rows), encoding="utf-8")
        dataset = load_dataset("json", data_files=str(path), split="train", cache_dir=tmp)
        dataset = dataset.add_column("mldebug_row", list(range(len(dataset))))
        first = next(iter(dataset))
        key = (str(tokenizer_dir), json.dumps(config, sort_keys=True), is_conversational(first), "prompt" in first and "completion" in first,
               "image" in first or "images" in first)
        _SEEN.clear()
        trainer = _TRAINERS.get(key)
        if trainer is None:
            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
            args = SFTConfig(output_dir=tempfile.mkdtemp(prefix="mldebug-diff-sft-"), report_to="none", use_cpu=True,
                             remove_unused_columns=False, **config)
            trainer = SFTTrainer(model=trl_goldens.tiny_model(tokenizer), args=args, train_dataset=dataset,
                                 processing_class=tokenizer)
            _TRAINERS[key] = trainer
            prepared = trainer.train_dataset
        else:
            prepared = trainer._prepare_dataset(dataset, trainer.processing_class, trainer.args, trainer.args.packing,
                                                None, "train")
        if trainer.args.packing:
            return {"rows": _unpacked(trainer, prepared, _SEEN[-1], numbers)}
        out = []
        for example in prepared:
            batch = trainer.data_collator([{"input_ids": example["input_ids"], "labels": example["labels"]}])
            out.append({"row": numbers[example["mldebug_row"]], "ids": batch["input_ids"][0].tolist(),
                        "labels": batch["labels"][0].tolist()})
        kept = {r["row"] for r in out}
        return {"rows": out + [{"row": n, "dropped": True} for n in numbers if n not in kept]}


def _unpacked(trainer, packed, before: list[dict], numbers: list[int]) -> list[dict]:
    """Each row's part of the collated packed sequences (see the module docstring)."""
    collated = []
    for example in packed:
        item = {"input_ids": example["input_ids"], "labels": example["labels"]}
        if "seq_lengths" in example:
            item["seq_lengths"] = example["seq_lengths"]
        batch = trainer.data_collator([item])
        collated.append((batch["input_ids"][0].tolist(), batch["labels"][0].tolist(), example.get("seq_lengths")))
    if trainer.args.packing_strategy == "wrapped":
        ids = [t for chunk, _, _ in collated for t in chunk]
        labels = [t for _, chunk, _ in collated for t in chunk]
        out, at = [], 0
        for n, row in zip(numbers, before):
            size = len(row["input_ids"])
            out.append({"row": n, "ids": ids[at:at + size], "labels": labels[at:at + size]})
            at += size
        assert at == len(ids), "the wrapped chunks are not the rows' concatenation"
        return out
    segments = []
    for ids, labels, lengths in collated:
        at = 0
        for size in lengths:
            segments.append((ids[at:at + size], labels[at:at + size]))
            at += size
    size = trainer.args.max_length
    split = trainer.args.packing_strategy == "bfd_split"
    out = []
    free = list(range(len(segments)))
    for n, row in zip(numbers, before):
        ids, labels, found = [], [], True
        ends = range(0, len(row["input_ids"]), size) if split else range(0, min(1, len(row["input_ids"])))
        for start in ends:  # bfd: the row's first max_length tokens; bfd_split: each max_length piece
            want = row["input_ids"][start:start + size], row["labels"][start + 1:start + size]
            match = next((s for s in free if (segments[s][0], segments[s][1][1:]) == want), None)
            if match is None:
                found = False
                break
            free.remove(match)
            ids += segments[match][0]
            labels += segments[match][1]
        out.append({"row": n, "ids": ids, "labels": labels} if found and ids else {"row": n, "dropped": True})
    assert not free, "a packed segment matches no row"
    return out
