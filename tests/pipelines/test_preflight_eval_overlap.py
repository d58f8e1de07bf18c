"""preflight compares the eval sets a config names with its training rows (DS053, DS054): axolotl's test_datasets,
LLaMA-Factory's eval_dataset, TRL's dataset_test_split; a share the framework splits off itself (val_set_size,
val_size, TRL's unseeded test_split_size) is said to be not comparable, never guessed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mldebug_cli.frameworks.selector import read_plan
from mldebug_cli.sources.config_file import load_config
from support import FIXTURES, write_jsonl

AXOLOTL = FIXTURES / "preflight" / "axolotl"
LLAMA_FACTORY = FIXTURES / "preflight" / "llama-factory"
TRL = FIXTURES / "preflight" / "trl"


def _config(tmp: Path, source: Path, framework: str, **keys) -> tuple[Path, object]:
    """The fixture config ``source`` with ``keys`` set (None: removed), in a copy of its folder, and its plan."""
    folder = tmp / source.parent.name
    if not folder.exists():
        shutil.copytree(source.parent, folder)
    lines = [line for line in source.read_text().splitlines() if line.split(":")[0] not in keys]
    lines += [f"{k}: {json.dumps(v)}" for k, v in keys.items() if v is not None]
    path = folder / source.name
    path.write_text("\n".join(lines) + "\n")
    return path, read_plan(load_config(str(path)), framework, allow_outside=True)


def test_axolotl_test_datasets_and_val_set_size(tmp_path):
    _, plan = _config(tmp_path, AXOLOTL / "config.yml", "axolotl",
                      test_datasets=[{"path": "train_fixed.jsonl", "type": "chat_template", "field_messages": "messages"}])
    (eval_set,) = plan.eval_datasets
    assert (Path(eval_set.spec).name, eval_set.key, eval_set.data_format) == ("train_fixed.jsonl", "test_datasets.0.path",
                                                                              "messages")
    assert plan.eval_not_compared == ()
    _, plan = _config(tmp_path, AXOLOTL / "config.yml", "axolotl", val_set_size=0.05)
    assert plan.eval_datasets == () and plan.eval_not_compared[0].startswith("val_set_size: 0.05 is split off")
    _, plan = _config(tmp_path, AXOLOTL / "config.yml", "axolotl")  # the fixture's val_set_size: 0.0
    assert plan.eval_datasets == () and plan.eval_not_compared == ()


def test_llama_factory_eval_dataset_and_val_size(tmp_path):
    _, plan = _config(tmp_path, LLAMA_FACTORY / "config.yaml", "llama-factory", eval_dataset="shop_identity")
    (eval_set,) = plan.eval_datasets
    assert (Path(eval_set.spec).name, eval_set.key, eval_set.name) == ("shop_identity.json", "eval_dataset", "shop_identity")
    _, plan = _config(tmp_path, LLAMA_FACTORY / "config.yaml", "llama-factory", val_size=0.1)
    assert plan.eval_datasets == () and plan.eval_not_compared[0].startswith("val_size: 0.1 is split off")
    from mldebug_cli.core.errors import InputError

    with pytest.raises(InputError, match="dataset 'nowhere' is not in"):
        _config(tmp_path, LLAMA_FACTORY / "config.yaml", "llama-factory", eval_dataset="nowhere")


def test_trl_evaluates_on_the_test_split_only_with_an_eval_strategy(tmp_path):
    _, plan = _config(tmp_path, TRL / "config.yaml", "trl")  # eval_strategy: no (TrainingArguments' default)
    assert plan.eval_datasets == ()
    _, plan = _config(tmp_path, TRL / "config.yaml", "trl", eval_strategy="steps", dataset_test_split="validation")
    (eval_set,) = plan.eval_datasets
    assert (Path(eval_set.spec).name, eval_set.split, eval_set.key) == ("train.jsonl", "validation", "dataset_test_split")
    _, plan = _config(tmp_path, TRL / "config.yaml", "trl", eval_strategy="steps", dataset_name=None,
                      dataset_train_split=None, datasets=[{"path": "train.jsonl"}], test_split_size=0.1)
    assert plan.eval_datasets == () and "no seed" in plan.eval_not_compared[0]


@pytest.mark.slow  # a whole preflight (tokenizer, rows, schedule, memory)
def test_preflight_flags_the_config_eval_rows_found_in_training(tmp_path):
    from mldebug_cli.pipelines.preflight import PreflightOptions, build_report

    folder = tmp_path / "axolotl"
    shutil.copytree(AXOLOTL, folder)
    shutil.copytree(FIXTURES / "tokenizers" / "qwen2.5-instruct", tmp_path / "tokenizer")
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines() if line.strip()]
    write_jsonl(folder / "eval.jsonl", [rows[1], {"messages": [{"role": "user", "content": "A question nobody asked"},
                                                               {"role": "assistant", "content": "An answer."}]}])
    config = (folder / "config.yml").read_text().replace("../../tokenizers/qwen2.5-instruct", "../tokenizer")
    config = config.replace("val_set_size: 0.0", "test_datasets:\n  - path: eval.jsonl\n    type: chat_template")
    (folder / "config.yml").write_text(config)
    report = build_report(PreflightOptions(config=str(folder / "config.yml"), select=("DS053", "DS054"),
                                           allow_outside_paths=True))
    assert [(f.code, f.location.row) for f in report.findings] == [("DS053", 0)], [f.message for f in report.findings]
    assert "training row 1 of" in report.findings[0].message
    assert report.context["eval_sets"].endswith("eval.jsonl (test_datasets.0.path)")
