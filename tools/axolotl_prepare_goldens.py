"""Write fixtures/batch-plan/axolotl-0.19.0-prepare.jsonl: the rows axolotl 0.19.0's own dataset preparation hands
its trainer, in order, on configs and datasets generated with hypothesis, to test
``mldebug_cli.frameworks.axolotl.prepare``.

Runs in the venv of ``tools/axolotl_batch_plan_goldens.py`` (axolotl 0.19.0 and its wheel's pins):

    nice -n 10 /work/venvs/axolotl-sampler/bin/python tools/axolotl_prepare_goldens.py --configs 200

(``--first N`` keeps the first N configs of the draw; ``--resume`` keeps the configs already recorded in the file and
runs only the rest: the stored file was written in two sessions, the first 102 configs, then the rest with
``--first 200 --resume``).

What runs is axolotl's own code, end to end: ``axolotl.utils.config.validate_config`` on the config, then
``axolotl.utils.data.sft.prepare_datasets`` (each dataset loaded from a local JSON-lines file, merged with
``shuffle_merged_datasets`` / ``shuffle_before_merging_datasets`` / ``curriculum_sampling``, rows outside
``[min_sample_len, sequence_len]`` dropped or truncated by ``excess_length_strategy``, rows with no trained token
dropped under ``sample_packing``, ``dataset_exact_deduplication``, the ``val_set_size`` split). The rows are
pre-tokenized (axolotl keeps a dataset with ``input_ids``, ``attention_mask`` and ``labels`` as it is), so no model
or template is needed: row ``r`` of dataset ``d`` holds ``uid`` tokens only (``uid = 1000 × (d + 1) + r``), and a
planted duplicate repeats another row of the same dataset whole. The tokenizer is a local folder from fixtures/
(its name only enters axolotl's cache hash). ``posthog`` (axolotl's telemetry client, not in the venv) is an empty
module.

The draw is followed by ``SEEDLESS``: configs without a seed over many rows. A config without ``seed`` is prepared
twice in the process: axolotl then shuffles with numpy's global generator
(``Dataset.shuffle(seed=None)``; the schema's default-seed validator does not run on an absent key), so the two
orders may differ; ``undecided`` records whether they did.

The first line holds the versions; then one line per config: its settings, ``datasets`` (per dataset, per row:
``[uid, length, trained]``), ``train`` (the uids of the prepared training rows, in order) and ``eval`` (of the
``val_set_size`` split), or ``error`` (axolotl's exception, one line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import types
from importlib.metadata import version
from pathlib import Path

RECORDED = ("axolotl", "transformers", "datasets", "numpy", "hypothesis")
TOKENIZER = "fixtures/tokenizers/qwen2.5-instruct"


def configs(count: int) -> list[dict]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    found: list[dict] = []

    @st.composite
    def config(draw) -> dict:
        sequence_len = draw(st.sampled_from([8, 16, 32]))
        datasets = []
        for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
            rows = []
            for _ in range(draw(st.integers(1, 30))):
                if rows and draw(st.integers(0, 9)) == 0:
                    rows.append(["duplicate", draw(st.integers(0, len(rows) - 1))])  # repeats an earlier row whole
                    continue
                length = draw(st.one_of(st.integers(0, 3), st.integers(1, sequence_len),
                                        st.integers(sequence_len, sequence_len * 2)))
                rows.append([length, draw(st.sampled_from([True, True, True, False]))])
            datasets.append(rows)
        optional = {
            "seed": st.one_of(st.integers(0, 2**31 - 1), st.integers(0, 100)),
            "shuffle_merged_datasets": st.booleans(), "shuffle_before_merging_datasets": st.booleans(),
            "curriculum_sampling": st.booleans(), "sample_packing": st.booleans(),
            "min_sample_len": st.sampled_from([1, 2, 3, 5]), "val_set_size": st.sampled_from([0.1, 0.25, 2, 0.0]),
            "excess_length_strategy": st.sampled_from(["drop", "truncate"]),
            "dataset_exact_deduplication": st.booleans(),
        }
        chosen = {key: draw(value) for key, value in optional.items() if draw(st.integers(0, 2)) > 0 or key == "seed"
                  and draw(st.integers(0, 3)) > 0}
        return {"sequence_len": sequence_len, "datasets": datasets, **chosen}

    @settings(max_examples=count * 3, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(config())
    def collect(c: dict) -> None:
        if len(found) < count and c not in found:
            found.append(c)

    collect()
    return found[:count]


# configs without a seed whose shuffle has many rows to order (the draw gives seedless configs few rows): axolotl
# shuffles them with numpy's global generator, so two preparations in one process should differ
SEEDLESS = [
    {"sequence_len": 16, "datasets": [[[4, True]] * 30]},
    {"sequence_len": 16, "datasets": [[[5, True]] * 20, [[6, True]] * 10]},
    {"sequence_len": 16, "datasets": [[[5, True]] * 12, [[6, True]] * 12], "shuffle_merged_datasets": False,
     "shuffle_before_merging_datasets": True},
    {"sequence_len": 16, "datasets": [[[7, True]] * 25], "curriculum_sampling": True},  # not shuffled: decided
]


def write_rows(c: dict, folder: Path) -> None:
    """Each dataset as a JSON-lines file of pre-tokenized rows (``c``'s rows are ``[uid, length, trained]``)."""
    for d, rows in enumerate(c["datasets"]):
        lines = []
        for uid, length, trained in rows:
            ids = [uid] * length
            lines.append(json.dumps({"input_ids": ids, "attention_mask": [1] * length,
                                     "labels": ids if trained else [-100] * length}))
        (folder / f"d{d}.jsonl").write_text("\n".join(lines) + "\n")


def with_uids(c: dict) -> dict:
    """Each row as ``[uid, length, trained]``; a planted duplicate takes the uid, length and mask of the row it
    repeats."""
    datasets = []
    for d, rows in enumerate(c["datasets"]):
        done: list[list] = []
        for r, row in enumerate(rows):
            done.append(list(done[row[1]]) if row[0] == "duplicate" else [1000 * (d + 1) + r, *row])
        datasets.append(done)
    return {**c, "datasets": datasets}


def prepare(c: dict, folder: Path, tokenizer) -> tuple[list[int], list[int]]:
    from axolotl.utils.config import validate_config
    from axolotl.utils.data.sft import prepare_datasets
    from axolotl.utils.dict import DictDefault

    settings = {k: v for k, v in c.items() if k != "datasets"}
    cfg = DictDefault({
        "base_model": str(Path(TOKENIZER).resolve()),
        "datasets": [{"path": str(folder / f"d{d}.jsonl"), "ds_type": "json", "type": "alpaca"}
                     for d in range(len(c["datasets"]))],
        "micro_batch_size": 1, "gradient_accumulation_steps": 1, "num_epochs": 1, "learning_rate": 1e-5,
        "output_dir": str(folder / "out"), "dataset_prepared_path": str(folder / "prepared"),
        **settings,
    })
    cfg = validate_config(cfg)
    cfg.batch_size, cfg.dataset_num_proc, cfg.is_preprocess = 1, 1, False  # normalize_config's, one process
    train, evaluation, _, _ = prepare_datasets(cfg, tokenizer)
    uids = [ids[0] if ids else None for ids in train["input_ids"]]
    held = [ids[0] if ids else None for ids in evaluation["input_ids"]] if evaluation is not None else []
    return uids, held


def run_config(c: dict, workdir: str, tokenizer) -> dict:
    import shutil

    found: dict = {}
    for attempt in range(2 if "seed" not in c else 1):
        folder = Path(workdir) / f"c{attempt}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        write_rows(c, folder)
        try:
            train, held = prepare(c, folder, tokenizer)
        except Exception as error:  # axolotl refuses the config or the rows: recorded, one line
            return {"error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}
        if attempt:
            found["undecided"] = train != found["train"]
        else:
            found = {"train": train, "eval": held}
    return found


RESULTS = ("train", "eval", "undecided", "error")


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
    parser.add_argument("--configs", type=int, default=200)
    parser.add_argument("--first", type=int, default=None, help="keep only the first N configs of the draw")
    parser.add_argument("--resume", action="store_true", help="keep the configs already recorded in --out")
    parser.add_argument("--out", default="fixtures/batch-plan/axolotl-0.19.0-prepare.jsonl")
    options = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    sys.modules.setdefault("posthog", types.ModuleType("posthog"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    out = Path(options.out)
    chosen = [with_uids(c) for c in configs(options.configs)[:options.first] + SEEDLESS]
    kept = recorded(out, chosen) if options.resume else []
    with tempfile.TemporaryDirectory() as workdir, out.open("w") as handle:
        handle.write(json.dumps({"versions": {name: version(name) for name in RECORDED},
                                 "made_by": "tools/axolotl_prepare_goldens.py", "configs": len(chosen)}) + "\n")
        handle.writelines(line + "\n" for line in kept)
        for number, c in enumerate(chosen[len(kept):], start=len(kept)):
            found = run_config(c, workdir, tokenizer)
            handle.write(json.dumps({**c, **found}, separators=(",", ":")) + "\n")
            handle.flush()
            print(f"{number + 1}/{len(chosen)} -> {found.get('error') or len(found['train'])}", file=sys.stderr)


if __name__ == "__main__":
    main()
