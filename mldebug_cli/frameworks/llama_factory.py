"""LLaMA-Factory: the keys of its argument dataclasses, and how it counts training rows.

``llamafactory-cli train`` passes the whole YAML to ``HfArgumentParser`` over ModelArguments,
DataArguments, its TrainingArguments (Seq2SeqTrainingArguments plus its own), FinetuningArguments and
GeneratingArguments; a key none of them has stops the run unless ``ALLOW_EXTRA_ARGS`` is set. Its own
fields come from the installed package, else from the stored list of llamafactory 0.9.5; the
Seq2SeqTrainingArguments part from the target transformers.

Rows: ``max_samples`` caps each dataset on its own (``_load_single_dataset`` in ``data/loader.py``
selects the first ``min(max_samples, len(dataset))`` rows of each one before they are merged), then
``val_size`` is split off the merged rows; ``schedule.arithmetic.rows_after_max_samples`` counts them
from the per-dataset sizes preflight measures.
"""

from __future__ import annotations

import json
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks import hf, schema, versions
from mldebug_cli.frameworks.rows import RowProfile
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, Setting, TrainingPlan, at, resolve_dir, set_key

STORED_KEYS = "llamafactory-0.9.5.json"
DATACLASSES = {"ModelArguments": "model_args", "DataArguments": "data_args", "TrainingArguments": "training_args",
               "FinetuningArguments": "finetuning_args", "GeneratingArguments": "generating_args"}
# DataArguments.__post_init__ (hparams/data_args.py) raises on these
CONFLICTS = ((("mask_history", "train_on_prompt"), "LLaMA-Factory refuses the file: `mask_history` is incompatible "
              "with `train_on_prompt` (DataArguments)"),)
ON_UNKNOWN = ("HfArgumentParser rejects the file (ValueError: Some keys are not used by the HfArgumentParser) "
              "unless ALLOW_EXTRA_ARGS=1 is set")


def key_schema(config: ConfigFile, targets: versions.TargetVersions) -> schema.KeySchema:
    own, source = _own_keys(targets)
    base = hf.training_arguments_schema(targets, seq2seq=True)
    lf = schema.KeySchema("llama-factory", source, own, ON_UNKNOWN, conflicts=CONFLICTS)  # OmegaConf reads 5e-5 as a number
    return lf.merged(base, source=f"{source} over {base.source}")


def _own_keys(targets: versions.TargetVersions) -> tuple[dict[str, schema.KeyType], str]:
    installed = versions.installed("llamafactory")
    target = targets.get("llamafactory")
    if installed and target.version in (None, installed):
        try:
            import importlib

            module = importlib.import_module("llamafactory.hparams")
            return schema.dataclass_keys(getattr(module, n) for n in DATACLASSES), f"llamafactory {installed} (installed)"
        except ImportError:
            pass
    table = schema.stored(STORED_KEYS)
    wanted = "" if target.version in (None, table["version"]) else f", standing in for {target.describe()}"
    return schema.stored_keys(table["schemas"]["config"]), f"llamafactory {table['version']} (stored key list{wanted})"


FORMATS = {"alpaca": "alpaca", "sharegpt": "sharegpt"}
def read_plan(config: ConfigFile) -> TrainingPlan:
    """Datasets from ``dataset_dir/dataset_info.json``, masking and cutoff_len (default 2048) of a LLaMA-Factory config."""
    names = config.get("dataset")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise InputError(f"{config.path}: no dataset key: LLaMA-Factory configs name their datasets in `dataset`")
    dataset_dir = str(config.get("dataset_dir", "data"))
    folder = resolve_dir(config, dataset_dir)
    info_path = folder / "dataset_info.json"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{at(config, 'dataset')}: {info_path} not found (dataset_dir is {dataset_dir!r})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{info_path}: not readable JSON ({exc})") from None
    datasets = []
    for name in names:
        entry = info.get(name)
        if not isinstance(entry, dict):
            raise InputError(f"{at(config, 'dataset')}: dataset {name!r} is not in {info_path}")
        if entry.get("file_name"):
            spec = str(folder / entry["file_name"])
        else:
            spec = entry.get("hf_hub_url") or entry.get("ms_hub_url") or entry.get("script_url") or name
        fmt = FORMATS.get(entry.get("formatting", "alpaca"))
        datasets.append(DatasetPlan(spec, "dataset", fmt, entry.get("split"), name=name))
    if config.get("train_on_prompt") is True:
        train_on = Setting("all", "train_on_prompt")
    elif config.get("mask_history") is True:
        train_on = Setting("last", "mask_history")
    else:
        train_on = Setting("assistant", set_key(config, "train_on_prompt"))
    notes = []
    if config.has("template"):
        notes.append(f"template {config.get('template')!r} is LLaMA-Factory's own; mldebug renders with the tokenizer's chat template")
    max_length = Setting(int(config.get("cutoff_len", hf.LLAMA_FACTORY_DEFAULT_CUTOFF)), set_key(config, "cutoff_len"))
    return TrainingPlan("llama-factory", Setting(config.get("model_name_or_path"), "model_name_or_path"), Setting(None),
                        tuple(datasets), train_on, max_length, tuple(notes))


class Rows(RowProfile):
    """LLaMA-Factory's supervised processor: prompts masked, EOS appended to text, each prompt/response pair
    given a share of cutoff_len (infer_seqlen); its collators pad labels by position."""

    framework = "llama-factory"
    default_train_on = "assistant"
    truncation = "pairs"
    appends_eos = True


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    return Rows()
