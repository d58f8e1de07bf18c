"""LLaMA-Factory's ``max_samples`` held to its own loader (issue 34), not to a rule:
fixtures/step-plan/llamafactory-0.9.5-max-samples.jsonl holds, for multi-dataset configs generated with hypothesis
(alpaca and ShareGPT files, rows its converter or processor drops, ``max_samples`` or none), how many rows
LLaMA-Factory 0.9.5's ``get_dataset`` hands its trainer and how many optimizer steps its ``CustomSeq2SeqTrainer``
plans over them (tools/llamafactory_max_samples_goldens.py, run in LLaMA-Factory's venv). ``lr-plot`` on the same
config, reading the config's own datasets, prints the same rows and steps (and so do preflight, memory and probe:
tests/schedule/test_one_step_plan.py holds them to lr-plot's count).

fixtures/step-plan/llamafactory-0.9.5-loader-order.jsonl (the tool's ``--kind order``) holds the same loader on configs
that also draw what it does between the cap and the processor: files whose first rows it drops (a cap keeping only
those), ``mix_strategy`` with and without ``interleave_probs``, and ``val_size``; where LLaMA-Factory raised, lr-plot
must stop saying the run will not start.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from support import FIXTURES, ROOT

GOLDEN = FIXTURES / "step-plan" / "llamafactory-0.9.5-max-samples.jsonl"
_spec = importlib.util.spec_from_file_location("llamafactory_max_samples_goldens",
                                               ROOT / "tools" / "llamafactory_max_samples_goldens.py")
assert _spec is not None and _spec.loader is not None
goldens = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goldens)

_LINES = GOLDEN.read_text(encoding="utf-8").splitlines()
HEADER = json.loads(_LINES[0])
CASES = [json.loads(line) for line in _LINES[1:]]
TRAINED = [pytest.param(c, id=f"config-{c['id']}") for c in CASES if "rows" in c]


def test_the_goldens_record_versions_and_cover_several_datasets_under_max_samples():
    assert HEADER["versions"]["llamafactory"] == "0.9.5" and HEADER["versions"]["transformers"] == "5.6.0"
    assert HEADER["command"].startswith("python tools/llamafactory_max_samples_goldens.py")
    several = [c for c in CASES if "rows" in c and len(c["config"]["dataset"].split(",")) > 1]
    capped = [c for c in several if "max_samples" in c["config"]]
    assert len(several) >= 5 and len(capped) >= 3


ORDER = FIXTURES / "step-plan" / "llamafactory-0.9.5-loader-order.jsonl"
_ORDER_LINES = ORDER.read_text(encoding="utf-8").splitlines()
ORDER_HEADER = json.loads(_ORDER_LINES[0])
ORDER_CASES = [json.loads(line) for line in _ORDER_LINES[1:]]
ORDER_TRAINED = [pytest.param(c, id=f"order-{c['id']}") for c in ORDER_CASES if "rows" in c]
ORDER_REFUSED = [pytest.param(c, id=f"order-{c['id']}") for c in ORDER_CASES if "refused" in c]


def test_the_order_goldens_draw_every_merge_and_split():
    """The drawn configs meet each strategy on several datasets, probabilities, val_size as a share and as a count,
    caps that keep only dropped rows, and both outcomes."""
    assert ORDER_HEADER["versions"]["llamafactory"] == "0.9.5" and "--kind order" in ORDER_HEADER["command"]
    several = [c["config"] for c in ORDER_CASES if "," in c["config"]["dataset"]]
    for strategy in ("interleave_under", "interleave_over", "interleave_once"):
        assert any(c.get("mix_strategy") == strategy for c in several), strategy
    assert any("interleave_probs" in c for c in several)
    assert any(isinstance(c.get("val_size"), int) for c in several) and any(
        isinstance(c.get("val_size"), float) for c in several)
    assert len(ORDER_TRAINED) >= 30 and len(ORDER_REFUSED) >= 10
    assert any("features can't be aligned" in c["refused"] for c in ORDER_CASES if "refused" in c)


@pytest.mark.replay(keep=1)  # each case reads its datasets with the real tokenizer: ~2 CPU s
@pytest.mark.parametrize("case", TRAINED + ORDER_TRAINED)
def test_lr_plot_counts_the_rows_and_steps_llama_factorys_loader_gives(case, tmp_path, monkeypatch):
    from mldebug_cli.cli import app

    path = goldens.write(tmp_path, case["config"], case["files"], ROOT)
    monkeypatch.chdir(tmp_path)  # dataset_dir is relative to where llamafactory-cli runs
    result = CliRunner().invoke(app, ["lr-plot", "-c", str(path), "--allow-outside-paths", "-f", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["train_rows"], doc["total_optimizer_steps"]) == (case["rows"], case["steps"])


REFUSED = [pytest.param(c, id=f"config-{c['id']}") for c in CASES if "refused" in c]


@pytest.mark.replay(keep=1)
@pytest.mark.parametrize("case", ORDER_REFUSED)
def test_lr_plot_says_the_run_will_not_start_where_llama_factorys_loader_raises(case, tmp_path, monkeypatch):
    """LLaMA-Factory raised on these (a dataset left empty beside others, no valid row in the train or eval split,
    a val_size train_test_split refuses, interleave_once): lr-plot stops with one line saying so."""
    from mldebug_cli.cli import app

    path = goldens.write(tmp_path, case["config"], case["files"], ROOT)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["lr-plot", "-c", str(path), "--allow-outside-paths", "-f", "json", "--exit-zero"])
    assert result.exit_code != 0 and "will not start" in result.output, (case["refused"], result.output)
    assert "Traceback" not in result.output
    said = " ".join(result.output.split())
    assert next(words for error, words in SAYS.items() if error in case["refused"]) in said, (case["refused"], said)


SAYS = {  # LLaMA-Factory's error -> what mldebug's one line must say of it
    "features can't be aligned": "cannot be merged with the others",
    "Cannot find valid samples": "Cannot find valid samples",
    "all_exhausted_without_replacement is not supported": "interleave_once",
    "test_size=": "train_test_split raises",
}


@pytest.mark.slow  # each dataset of the config read with the real tokenizer: ~3 CPU s
@pytest.mark.parametrize("case", REFUSED)
def test_a_dataset_llama_factory_drops_whole_is_said_to_stop_the_run(case, tmp_path):
    """LLaMA-Factory's loader raised on these configs (a dataset whose every row its converter dropped cannot be
    merged with the others): mldebug says the run will not start, on that dataset."""
    from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    goldens.write(tmp_path, case["config"], case["files"], ROOT)
    info = case["files"]["data/dataset_info.json"]
    said = []
    for name in case["config"]["dataset"].split(","):
        report = build_report(InspectOptions(
            dataset=str(tmp_path / "data" / info[name]["file_name"]), tokenizer=str(ROOT / goldens.TOKENIZER),
            framework="llama-factory", data_format=info[name].get("formatting", "alpaca"),
            framework_options=LlamaFactoryOptions(template="qwen")))
        said += [f.message for f in report.findings if f.location.row is None and "will not start" in f.message]
    assert REFUSED and said, case["refused"]


def _sampled_case() -> dict:
    """300 ShareGPT rows (more than the 200 preflight samples by default), the first 3 a user turn alone, and
    max_samples 5. LLaMA-Factory 0.9.5's ``get_dataset`` (run on this config in its venv with the tool's
    ``layout``/``llama_factory_rows``) hands its trainer 2 rows: it keeps rows 0-4, then drops 0-2. The old rule
    (rows that train, then the cap) said 5."""
    rows = [{"conversations": [{"from": "human", "value": f"question {i}"}]} for i in range(3)]
    rows += [{"conversations": [{"from": "human", "value": f"question {i}"}, {"from": "gpt", "value": f"answer {i}"}]}
             for i in range(3, 300)]
    return {"datasets": [("sharegpt", rows)], "max_samples": 5, "per_device_train_batch_size": 1,
            "gradient_accumulation_steps": 1, "num_train_epochs": 1.0, "seed": 0}


@pytest.mark.parametrize("sampling", [[], ["--sample", "3"], ["--all"]], ids=["default-sample", "sample-3", "all"])
def test_a_sampled_dataset_is_capped_before_its_rows_are_dropped(sampling, tmp_path, monkeypatch):
    """Sampled or whole, the rows checked are the first max_samples ones (the only rows that can train), so every
    path counts the loader's 2 rows; the rest of the file is never read."""
    from mldebug_cli.cli import app

    config, files = goldens.layout(_sampled_case())
    path = goldens.write(tmp_path, config, files, ROOT)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["preflight", str(path), "--allow-outside-paths", "-f", "json",
                                      "--exit-zero", *sampling])
    assert result.exit_code == 0, result.output
    data, schedule = json.loads(result.stdout)["sections"][:2]
    assert (schedule["train_rows"], schedule["summary"]["total_optimizer_steps"]) == (2, 2), schedule["summary"]
    assert "max_samples 5 keeps the first 5 of the 300 rows" in data["context"]["rows_checked"]


def test_the_merge_counts_dropped_rows_where_the_loader_draws_them():
    """Without a tokenizer: round-robin interleave_under stops when the 2-row dataset runs out (4 rows drawn, the
    first a dropped one), and an unknown strategy is LLaMA-Factory's own ValueError, said as the run not starting."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.schedule.dataset_size import DatasetSize
    from mldebug_cli.schedule.merging import merged_rows
    from mldebug_cli.schedule.model import DatasetMerge

    size = DatasetSize(rows=5, source="x", per_dataset=(3, 2), loaded=(4, 2), kept_rows=((1, 2, 3), (0, 1)))
    assert merged_rows(DatasetMerge(), size).train == 5
    under = merged_rows(DatasetMerge(strategy="interleave_under", seed=1), size)
    assert (under.drawn, under.train) == (4, 3)
    with pytest.raises(InputError, match="Unknown mixing strategy: mixed"):
        merged_rows(DatasetMerge(strategy="mixed"), size)


def test_a_cap_that_keeps_only_dropped_rows_is_said_to_stop_the_run(tmp_path, monkeypatch):
    """One ShareGPT file whose first 2 rows LLaMA-Factory drops, under max_samples 2: its loader finds no valid
    sample (the order goldens hold such configs). preflight says so on the dataset, naming the cap, and its schedule
    part is not simulated (DS070 names the loader's error)."""
    from mldebug_cli.cli import app

    rows = [{"conversations": [{"from": "human", "value": "no reply"}]}] * 2 + [
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}] * 3
    config, files = goldens.layout({"datasets": [("sharegpt", rows)], "max_samples": 2, "per_device_train_batch_size": 1,
                                    "gradient_accumulation_steps": 1, "num_train_epochs": 1.0, "seed": 0})
    path = goldens.write(tmp_path, config, files, ROOT)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["preflight", str(path), "--allow-outside-paths", "-f", "json"])
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    dataset_level = [f["message"] for f in findings if f["code"] == "DS010" and f["location"].get("row") is None]
    assert any("max_samples 2 keeps the first 2 rows of the 5" in m for m in dataset_level), dataset_level
    assert any(f["code"] == "DS070" and "Cannot find valid samples" in f["message"] for f in findings), findings
