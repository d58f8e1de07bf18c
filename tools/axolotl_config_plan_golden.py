"""Write fixtures/batch-plan/axolotl-0.19.0-config-plan.json: the file rows axolotl 0.19.0's own dataset preparation
hands its trainer, in order, for the preflight example config (fixtures/preflight/axolotl/config_fixed.yml: its 24
chat rows through axolotl's chat_template strategy and the fixture's Qwen2.5 tokenizer) under a few settings, to hold
``inspect-data --config --step`` (mldebug's row encoding, then ``frameworks.axolotl.prepare``) to axolotl end to end.

Runs in the venv of ``tools/axolotl_batch_plan_goldens.py``:

    nice -n 10 /work/venvs/axolotl-sampler/bin/python tools/axolotl_config_plan_golden.py

What runs is ``axolotl.utils.config.validate_config`` and ``axolotl.utils.data.sft.prepare_datasets`` on the config
with each variant's keys. A prepared row is named by its file row: the row whose ids axolotl gives with
``shuffle_merged_datasets: false`` at ``sequence_len`` 1024 (every row kept, in file order). ``posthog`` (axolotl's
telemetry client, not in the venv) is an empty module.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import types
from importlib.metadata import version
from pathlib import Path

import yaml

FIXTURE = Path("fixtures/preflight/axolotl")
VARIANTS = [
    {"seed": 3},
    {"seed": 3, "sequence_len": 64, "sample_packing": True},
    {"seed": 11, "val_set_size": 0.25, "sequence_len": 300},
    {"seed": 3, "shuffle_merged_datasets": False, "sequence_len": 1024},  # the file order: names the rows
]


def prepared(keys: dict, workdir: Path, tokenizer) -> list[list[int]]:
    from axolotl.utils.config import validate_config
    from axolotl.utils.data.sft import prepare_datasets
    from axolotl.utils.dict import DictDefault

    config = yaml.safe_load((FIXTURE / "config_fixed.yml").read_text())
    config.update(keys)
    config["base_model"] = str(Path("fixtures/tokenizers/qwen2.5-instruct").resolve())
    config["datasets"][0]["path"] = str((FIXTURE / "train_fixed.jsonl").resolve())
    config["dataset_prepared_path"] = str(workdir / f"prepared-{len(list(workdir.iterdir()))}")
    config["output_dir"] = str(workdir / "out")
    config["learning_rate"] = float(config["learning_rate"])
    cfg = validate_config(DictDefault(config))
    cfg.batch_size = cfg.micro_batch_size * cfg.gradient_accumulation_steps  # normalize_config's, one process
    cfg.dataset_num_proc, cfg.is_preprocess = 1, False
    train, _, _, _ = prepare_datasets(cfg, tokenizer)
    return [list(ids) for ids in train["input_ids"]]


def main() -> None:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    sys.modules.setdefault("posthog", types.ModuleType("posthog"))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("fixtures/tokenizers/qwen2.5-instruct")
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        orders = [prepared(keys, workdir, tokenizer) for keys in VARIANTS]
    row_of = {tuple(ids): row for row, ids in enumerate(orders[-1])}
    assert len(row_of) == len(orders[-1]), "two file rows with the same ids: rows cannot be named"
    out = {"versions": {name: version(name) for name in ("axolotl", "transformers", "datasets", "numpy")},
           "made_by": "tools/axolotl_config_plan_golden.py",
           "variants": [{"keys": keys, "prepared_rows": [row_of[tuple(ids)] for ids in order],
                         "lengths": [len(ids) for ids in order]} for keys, order in zip(VARIANTS, orders)]}
    Path("fixtures/batch-plan/axolotl-0.19.0-config-plan.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
