"""CF001-CF003: training configs checked against each framework's real schema, at the target versions."""

from __future__ import annotations

import json
import shutil

import pytest

from support import FIXTURES

VALIDATION = FIXTURES / "configs" / "validation"


def config_findings(path, **kwargs):
    from mldebug_cli.pipelines.schedule import build_report

    report = build_report(config=str(path), num_rows=1000, **kwargs)
    return report, [f for f in report.findings if f.code.startswith("CF")]


def by_code(findings, code):
    return {f.location.key: f for f in findings if f.code == code}


@pytest.mark.parametrize(
    "name,unknown,invalid,versioned",
    [
        ("axolotl_typos.yml",
         {"lr_schedular": (15, "lr_scheduler"), "warmup_ration": (16, "warmup_ratio")},
         {"datasets.0.train_on_eos": 9, "sample_packing": 17}, {"evaluation_strategy"}),
        ("axolotl_missing_lr.yml", {"learning_rat": (9, "learning_rate")}, {"lr_scheduler": 10}, set()),
        ("hf_typos.yaml", {"lr_scheduler_typ": (4, "lr_scheduler_type")}, {"num_train_epochs": 6, "bf16": 7},
         {"warmup_ratio"}),
        ("trl_typos.yaml", {"max_lenght": (7, "max_length"), "max_seq_length": (8, "max_length")},
         {"lr_scheduler_type": 5}, {"warmup_steps"}),
        ("llama_factory_typos.yaml", {"max_sample": (10, "max_samples"), "train_on_promt": (11, "train_on_prompt")},
         {"stage": 3, "train_on_prompt": 20}, {"warmup_ratio"}),  # mask_history with train_on_prompt: refused
    ],
)
def test_typos_are_cf001_with_line_and_suggestion_and_bad_values_cf002(name, unknown, invalid, versioned):
    _, findings = config_findings(VALIDATION / name)
    found = by_code(findings, "CF001")
    assert set(found) == set(unknown)
    for key, (line, suggestion) in unknown.items():
        finding = found[key]
        assert finding.location.line == line and f"line {line}" in finding.message
        assert f"did you mean {suggestion!r}" in finding.message
        assert ("drops it" in finding.message) if name.startswith("axolotl") else ("rejects the file" in finding.message)
    assert {k: f.location.line for k, f in by_code(findings, "CF002").items()} == invalid
    assert set(by_code(findings, "CF003")) == versioned
    assert all(f.severity.value == "info" for f in by_code(findings, "CF003").values())


@pytest.mark.parametrize("name", ["axolotl_clean.yml", "hf_clean.yaml", "trl_clean.yaml", "llama_factory_clean.yaml"])
def test_clean_configs_get_no_config_finding(name):
    report, findings = config_findings(VALIDATION / name)
    assert [f for f in findings if f.code in ("CF001", "CF002", "CF003")] == []  # the key checks: nothing
    assert {"CF001", "CF002", "CF003"} <= set(report.checks_run)
    # the stability checks may say what the guide suggests (e.g. CF006: no eval set), never more than information
    assert all(f.severity.value == "info" for f in findings), findings


def test_a_misspelt_required_key_is_reported_not_refused():
    report, _ = config_findings(VALIDATION / "axolotl_missing_lr.yml")
    assert report.context["schedule"].startswith("not simulated: ") and "learning_rate" in report.context["schedule"]


def test_axolotl_drops_unknown_keys_unless_a_plugin_may_read_them(tmp_path):
    path = tmp_path / "plugins.yml"
    path.write_text((VALIDATION / "axolotl_clean.yml").read_text() + "plugins:\n  - x.Plugin\nliger_rope: true\n")
    [finding] = by_code(config_findings(path)[1], "CF001").values()
    assert "unless one of its plugins reads it" in finding.message


def test_cf003_is_silent_once_the_version_is_given_by_flag_toml_or_requirements(tmp_path):
    config = tmp_path / "hf.yaml"
    shutil.copy(VALIDATION / "hf_typos.yaml", config)
    assert "warmup_ratio" in by_code(config_findings(config)[1], "CF003")
    report, findings = config_findings(config, target_versions={"transformers": "4.57.1"})
    assert not by_code(findings, "CF003") and "transformers 4.57.1 (--transformers-version)" in report.context["versions"]
    report, findings = config_findings(config, configured_versions={"transformers": "5.1.0"})
    assert not by_code(findings, "CF003") and "(mldebug.toml)" in report.context["versions"]
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\ntransformers[torch]==4.46.3  # pinned\n")
    report, findings = config_findings(config)
    assert not by_code(findings, "CF003")
    assert f"transformers 4.46.3 ({tmp_path / 'requirements.txt'} line 2)" in report.context["versions"]


def test_a_lockfile_beside_the_config_gives_the_version(tmp_path):
    from mldebug_cli.frameworks import versions

    (tmp_path / "uv.lock").write_text('version = 1\n[[package]]\nname = "trl"\nversion = "0.19.1"\n'
                                      '[[package]]\nname = "llamafactory"\nversion = "0.9.3"\n')
    targets = versions.resolve(str(tmp_path / "c.yaml"))
    assert targets.get("trl").version == "0.19.1" and targets.get("llama-factory").version == "0.9.3"
    assert targets.get("trl").given


def test_mldebug_toml_versions_are_validated(tmp_path):
    from mldebug_cli.core.config import ConfigError, read_file
    from mldebug_cli.frameworks.registry import VERSION_PACKAGES

    path = tmp_path / "mldebug.toml"
    path.write_text('[versions]\ntransformers = "4.57.1"\n')
    assert read_file(path, version_packages=VERSION_PACKAGES).versions == {"transformers": "4.57.1"}
    path.write_text('[versions]\ntransformer = "4.57.1"\n')
    with pytest.raises(ConfigError, match="did you mean 'transformers'"):
        read_file(path, version_packages=VERSION_PACKAGES)


def test_a_transformers_4_target_checks_keys_against_the_4x_list(tmp_path):
    config = tmp_path / "hf.yaml"
    config.write_text("output_dir: out\noverwrite_output_dir: true\nwarmup_ratio: 0.1\nlearning_rate: 1.0e-4\n"
                      "evaluation_strategy: steps\n")
    _, findings = config_findings(config)
    found = by_code(findings, "CF001")
    assert set(found) == {"overwrite_output_dir", "evaluation_strategy"}  # warmup_ratio: LR004 reports it
    assert "--transformers-version" in found["overwrite_output_dir"].hint
    _, findings = config_findings(config, target_versions={"transformers": "4.57.6"})
    assert set(by_code(findings, "CF001")) == {"evaluation_strategy"}  # 4.57 has the other two, not this old name


def test_lr_plot_cli_takes_the_version_flags(tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, ["lr-plot", "--config", str(VALIDATION / "hf_typos.yaml"), "--num-rows", "100",
                                      "--transformers-version", "4.57.6", "-f", "json"])
    doc = json.loads(result.stdout)
    assert "transformers 4.57.6 (--transformers-version)" in doc["context"]["versions"]
    assert not any(f["code"] in ("CF003", "LR004") for f in doc["findings"])
    bad = CliRunner().invoke(app, ["lr-plot", "--config", str(VALIDATION / "hf_typos.yaml"), "--num-rows", "100",
                                   "--transformers-version", "latest"])
    assert bad.exit_code == 2


# The wheels' record against the real packages, when they are installed here.
def _installed(distribution):
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def test_recorded_trl_keys_match_the_installed_trl(fresh_comparisons):
    from mldebug_cli.frameworks import record
    from mldebug_cli.frameworks.trl import config_classes as trl

    version, transformers_version = _installed("trl"), _installed("transformers")
    if version not in record.releases("trl") or transformers_version not in record.releases("transformers"):
        pytest.skip(f"trl {version} on transformers {transformers_version}: not a recorded pair to compare with")
    recorded, source = trl.recorded_keys(version, transformers_version)
    assert source == f"trl {version} (recorded from its wheel)"
    assert fresh_comparisons["trl"] == "", fresh_comparisons["trl"]


def test_recorded_axolotl_keys_match_the_installed_axolotl():
    from mldebug_cli.frameworks import record, schema

    version = _installed("axolotl")
    if version not in record.releases("axolotl"):
        pytest.skip(f"axolotl is not installed here, or not a recorded release ({version}; it pins another "
                    "transformers than mldebug's): nothing to compare the record with")
    from axolotl.utils.schemas import datasets
    from axolotl.utils.schemas.config import AxolotlInputConfig

    from mldebug_cli.frameworks.schema import pydantic_keys

    assert set(schema.recorded_keys("axolotl", ("AxolotlInputConfig",), version)) == set(pydantic_keys(AxolotlInputConfig))
    for name in record.behaviour("axolotl", "datasets_union", version):
        assert set(schema.recorded_keys("axolotl", (name,), version)) == set(pydantic_keys(getattr(datasets, name))), name


def test_recorded_llama_factory_keys_match_the_installed_llama_factory():
    from mldebug_cli.frameworks import record, schema

    version = _installed("llamafactory")
    if version not in record.releases("llamafactory"):
        pytest.skip(f"llamafactory is not installed here, or not a recorded release ({version}; it caps transformers "
                    "at 5.6): nothing to compare the record with")
    import dataclasses

    from llamafactory import hparams
    from transformers import Seq2SeqTrainingArguments

    from mldebug_cli.frameworks.llama_factory.framework import DATACLASSES

    base = {f.name for f in dataclasses.fields(Seq2SeqTrainingArguments)}
    real = {f.name for n in DATACLASSES for f in dataclasses.fields(getattr(hparams, n)) if f.init}
    assert set(schema.recorded_keys("llamafactory", DATACLASSES, version)) - base == real - base


@pytest.mark.parametrize("name", ["TrainingArguments", "Seq2SeqTrainingArguments"])
def test_recorded_transformers_keys_match_the_installed_transformers(name, fresh_comparisons):
    """The record (read from the wheel's source) and the installed dataclass: the same keys, types and choices."""
    import transformers

    from mldebug_cli.frameworks import record, schema
    from mldebug_cli.frameworks.schema import dataclass_keys

    version = _installed("transformers")
    if version not in record.releases("transformers"):
        pytest.skip(f"transformers {version} is not a recorded release")
    assert schema.recorded_keys("transformers", (name, "TrainingArguments"), version)  # (compared below)
    assert dataclass_keys([getattr(transformers, name)], text_becomes_enum=True)
    assert fresh_comparisons[name] == "", fresh_comparisons[name]


# The record against the installed classes, compared in a new interpreter: in a test worker that ran other modules
# first the two sides were seen to differ (fsdp_config's and debug's kinds), and pass alone; what a user's run reads is
# a fresh process. One process for the three comparisons (each paid transformers', torch's and trl's imports, 9-10 CPU
# s, in a process of its own); the transformers classes are compared before trl is imported, as they were alone.
FRESH_COMPARISONS = """
import json, sys
from importlib import metadata

def differences(recorded, installed):
    if recorded == installed:
        return ""
    if isinstance(recorded, dict) and isinstance(installed, dict):
        keys = sorted(set(recorded) ^ set(installed)) + sorted(k for k in set(recorded) & set(installed)
                                                                if recorded[k] != installed[k])
        return "the record and the installed classes differ at " + repr(
            {k: (recorded.get(k), installed.get(k)) for k in keys})[:3000]
    return f"the record and the installed classes differ: {recorded!r:.1500} != {installed!r:.1500}"

out, version = {}, metadata.version("transformers")
import transformers
from mldebug_cli.frameworks import schema
for name in ("TrainingArguments", "Seq2SeqTrainingArguments"):
    try:
        out[name] = differences(schema.recorded_keys("transformers", (name, "TrainingArguments"), version),
                                schema.dataclass_keys([getattr(transformers, name)], text_becomes_enum=True))
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
try:
    from mldebug_cli.frameworks.trl import config_classes as trl
    out["trl"] = differences(trl.recorded_keys(metadata.version("trl"), version)[0], trl._installed_keys())
except Exception as exc:
    out["trl"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fresh_comparisons() -> dict[str, str]:
    """Each comparison's differences ("" where the record and the installed classes agree)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FRESH_COMPARISONS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_preflight_names_the_typo_behind_a_config_it_cannot_read(tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    config = tmp_path / "axolotl.yml"
    config.write_text("base_model: x\ndatasets:\n  - pth: train.jsonl\n    type: chat_template\nlearning_rate: 0.001\n"
                      "micro_batch_size: 1\nnum_epochs: 1\n")
    result = CliRunner().invoke(app, ["preflight", str(config)])
    assert result.exit_code == 2
    assert f"{config}:3: datasets[0] has no path" in result.stderr
    assert "Hint: CF001 line 3: 'datasets.0.pth'" in result.stderr and "did you mean 'path'?" in result.stderr
