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

from mldebug_cli.frameworks import hf, schema, versions
from mldebug_cli.sources.config_file import ConfigFile

STORED_KEYS = "llamafactory-0.9.5.json"
DATACLASSES = {"ModelArguments": "model_args", "DataArguments": "data_args", "TrainingArguments": "training_args",
               "FinetuningArguments": "finetuning_args", "GeneratingArguments": "generating_args"}
ON_UNKNOWN = ("HfArgumentParser rejects the file (ValueError: Some keys are not used by the HfArgumentParser) "
              "unless ALLOW_EXTRA_ARGS=1 is set")


def key_schema(config: ConfigFile, targets: versions.TargetVersions) -> schema.KeySchema:
    own, source = _own_keys(targets)
    base = hf.training_arguments_schema(targets, seq2seq=True)
    lf = schema.KeySchema("llama-factory", source, own, ON_UNKNOWN)  # OmegaConf reads 5e-5 as a number
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

