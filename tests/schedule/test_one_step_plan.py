"""One step plan (issue 34 item 4): ``lr-plot``, ``preflight``, ``memory`` and ``probe`` print the same
optimizer-step count for the same config and data, on generated configs (probe run for real, on one row, with a tiny
random model of the configs' tokenizer: tools/make_probe_cases.py's base model): TRL SFT, LLaMA-Factory with several
datasets under ``max_samples`` (applied to each dataset), axolotl with and without sample packing (the packed
sequences counted from the rows' real token lengths). lr-plot reads the config's own datasets when no
``--num-rows``/``--dataset`` is given."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
TOKENIZER = REPO / "fixtures" / "tokenizers" / "qwen2.5-instruct"
MODEL = REPO / "fixtures" / "memory-models" / "qwen2.5-0.5b"
WORDS = ("brake", "chain", "gear", "saddle", "spoke", "tyre", "valve", "pedal", "的", "自行车", "链条", "🚲")


def _cli(*args: str):
    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, [*args, "-f", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _text(draw, low: int, high: int) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=low, max_size=high)))


@st.composite
def chats(draw, rows: int) -> list[dict]:
    out = []
    for _ in range(rows):
        turns = draw(st.integers(1, 3))
        messages = []
        for _ in range(turns):
            messages += [{"role": "user", "content": _text(draw, 1, 12)},
                         {"role": "assistant", "content": _text(draw, 1, 60)}]
        out.append({"messages": messages})
    return out


def _trainer_keys(draw) -> dict:
    return {"learning_rate": 1e-4, "lr_scheduler_type": "cosine", "warmup_ratio": 0.1,
            "gradient_accumulation_steps": draw(st.integers(1, 4)), "seed": draw(st.integers(0, 99))}


@st.composite
def trl_configs(draw) -> tuple[dict, dict[str, object]]:
    rows = draw(chats(draw(st.integers(1, 30))))
    config = {"model_name_or_path": str(TOKENIZER), "dataset_name": "train.jsonl", "dataset_train_split": "train",
              "max_length": draw(st.sampled_from([64, 256, 1024])), "packing": False, "output_dir": "out",
              "per_device_train_batch_size": draw(st.integers(1, 4)), "num_train_epochs": draw(st.integers(1, 3)),
              **_trainer_keys(draw)}
    return config, {"train.jsonl": rows}


@st.composite
def llama_factory_configs(draw) -> tuple[dict, dict[str, object]]:
    """Several alpaca datasets, ``max_samples`` below some of them: it caps each dataset on its own."""
    names = [f"set{i}" for i in range(draw(st.integers(1, 3)))]
    files: dict[str, object] = {}
    info = {}
    for name in names:
        files[f"data/{name}.json"] = [{"instruction": _text(draw, 1, 10), "input": "", "output": _text(draw, 1, 40)}
                                      for _ in range(draw(st.integers(1, 25)))]
        info[name] = {"file_name": f"{name}.json"}
    files["data/dataset_info.json"] = info
    config = {"model_name_or_path": str(TOKENIZER), "stage": "sft", "do_train": True, "finetuning_type": "lora",
              "dataset": ",".join(names), "dataset_dir": "data", "template": "qwen",
              "cutoff_len": draw(st.sampled_from([32, 512])), "output_dir": "out",
              "per_device_train_batch_size": draw(st.integers(1, 4)), "num_train_epochs": draw(st.integers(1, 3)),
              **_trainer_keys(draw)}
    cap = draw(st.none() | st.integers(1, 20))
    if cap is not None:
        config["max_samples"] = cap
    return config, files


@st.composite
def axolotl_configs(draw) -> tuple[dict, dict[str, object]]:
    rows = draw(chats(draw(st.integers(1, 30))))
    config = {"base_model": str(TOKENIZER), "chat_template": "tokenizer_default",
              "datasets": [{"path": "train.jsonl", "type": "chat_template", "field_messages": "messages"}],
              "output_dir": "out", "sequence_len": draw(st.sampled_from([128, 512])),
              "sample_packing": draw(st.booleans()), "micro_batch_size": draw(st.integers(1, 4)),
              "gradient_accumulation_steps": draw(st.integers(1, 4)), "num_epochs": draw(st.integers(1, 3)),
              "learning_rate": 2e-4, "lr_scheduler": "cosine", "warmup_steps": 1, "val_set_size": 0.0,
              "optimizer": "adamw_torch", "seed": draw(st.integers(0, 99))}
    return config, {"train.jsonl": rows}


def _write(folder: Path, config: dict, files: dict[str, object]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in content), encoding="utf-8")
        else:
            path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def _leading_count(line: str) -> int:
    found = re.match(r"([\d,]+) \(", line)
    assert found, line
    return int(found.group(1).replace(",", ""))


def counts(config: Path, probe_model: Path) -> dict[str, int]:
    """Each command's optimizer-step count for ``config``, and the rows lr-plot counted (key ``rows``)."""
    path = str(config)
    flags = ("--allow-outside-paths", "--transformers-version", "5.6.0")
    lr_plot = _cli("lr-plot", "-c", path, *flags)
    preflight = _cli("preflight", path, "--model", str(MODEL), *flags)
    schedule = next(p for p in preflight["sections"] if p["command"] == "lr-plot")
    memory_part = next(p for p in preflight["sections"] if p["command"] == "memory")
    memory = _cli("memory", path, "--model", str(MODEL), "--allow-outside-paths", "--transformers-version", "5.6.0")
    probe = _cli("probe", path, "--model", str(probe_model), "--allow-outside-paths", "--sample", "1")
    return {"rows": lr_plot["train_rows"], "lr-plot": lr_plot["total_optimizer_steps"],
            "preflight": schedule["summary"]["total_optimizer_steps"],
            "preflight memory": _leading_count(memory_part["context"]["optimizer steps"]),
            "memory": _leading_count(memory["context"]["optimizer steps"]),
            "probe": _leading_count(probe["context"]["optimizer steps"])}


def _one_count(tmp_path_factory, probe_case, case) -> dict[str, int]:
    config, files = case
    found = counts(_write(tmp_path_factory.mktemp("plan"), config, files), probe_case("base-model"))
    rows = found.pop("rows")
    assert len(set(found.values())) == 1, found
    return {"rows": rows, "steps": found["lr-plot"]}


def _trainer_steps(rows: int, config: dict, batch_key: str, epochs_key: str) -> int:
    """The HF Trainer's count, from the batch plan its goldens hold (fixtures/batch-plan/)."""
    from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

    return BatchPlan(SamplerSettings(samples=rows, micro_batch_size=config[batch_key],
                                     gradient_accumulation_steps=config["gradient_accumulation_steps"],
                                     epochs=config[epochs_key])).total_steps


SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(case=trl_configs())
def test_trl_configs_one_count(tmp_path_factory, probe_case, case):
    found = _one_count(tmp_path_factory, probe_case, case)
    config, files = case
    assert found["rows"] == len(files["train.jsonl"])  # SFTTrainer truncates, it drops no row
    assert found["steps"] == _trainer_steps(found["rows"], config, "per_device_train_batch_size", "num_train_epochs")


@pytest.mark.slow
@SETTINGS
@given(case=llama_factory_configs())
def test_llama_factory_max_samples_per_dataset_one_count(tmp_path_factory, probe_case, case):
    found = _one_count(tmp_path_factory, probe_case, case)
    config, files = case
    cap = config.get("max_samples")
    sizes = [len(rows) for name, rows in files.items() if name != "data/dataset_info.json"]
    assert found["rows"] == sum(n if cap is None else min(n, cap) for n in sizes)  # each dataset capped alone
    assert found["steps"] == _trainer_steps(found["rows"], config, "per_device_train_batch_size", "num_train_epochs")


@pytest.mark.slow
@SETTINGS
@given(case=axolotl_configs())
def test_axolotl_packing_one_count(tmp_path_factory, probe_case, case):
    _one_count(tmp_path_factory, probe_case, case)


def test_a_num_rows_total_under_a_per_dataset_max_samples_says_it_is_capped_as_one(monkeypatch):
    """The issue's 375-vs-489: --num-rows 1300 is one total, capped at max_samples 1000 as one dataset; lr-plot says
    so (leave it out to count each dataset), and says nothing when the total is within the cap."""
    config = REPO / "fixtures" / "preflight" / "llama-factory" / "config.yaml"
    monkeypatch.chdir(config.parent)
    over = _cli("lr-plot", "-c", str(config), "--num-rows", "1300", "--transformers-version", "5.6.0")
    assert over["train_rows"] == 1000 and "caps each of the config's datasets on its own" in over["context"]["dataset"]
    within = _cli("lr-plot", "-c", str(config), "--num-rows", "50", "--transformers-version", "5.6.0")
    assert within["context"]["dataset"] == "50 rows (--num-rows)"


def _order_cases(count: int) -> list:
    """LLaMA-Factory configs its own loader ran (fixtures/step-plan/llamafactory-0.9.5-loader-order.jsonl): several
    datasets merged by interleave or split by val_size, first ones drawn."""
    lines = (REPO / "fixtures" / "step-plan" / "llamafactory-0.9.5-loader-order.jsonl").read_text(
        encoding="utf-8").splitlines()[1:]
    cases = [json.loads(line) for line in lines]
    merged = [c for c in cases if "rows" in c and "," in c["config"]["dataset"]
              and (c["config"].get("mix_strategy") or c["config"].get("val_size"))]
    return [pytest.param(c, id=f"order-{c['id']}") for c in merged[:count]]


@pytest.mark.slow
@pytest.mark.parametrize("golden", _order_cases(4))
def test_llama_factory_interleave_and_val_size_one_count(tmp_path, monkeypatch, probe_case, golden):
    """Every command prints the count LLaMA-Factory 0.9.5's loader and trainer gave on the config (interleave,
    probabilities, val_size split before the drops)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lf_goldens", REPO / "tools" / "llamafactory_max_samples_goldens.py")
    assert spec is not None and spec.loader is not None
    goldens = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(goldens)
    path = goldens.write(tmp_path, golden["config"], golden["files"], REPO)
    monkeypatch.chdir(tmp_path)  # dataset_dir is relative to where llamafactory-cli runs
    found = counts(path, probe_case("base-model"))
    assert found.pop("rows") == golden["rows"]
    assert set(found.values()) == {golden["steps"]}, found
