"""The JSON report is a public format: each command's JSON on fixtures is compared byte for byte with a stored file.

Paths under the repository are written repo-relative and the tool's version as a placeholder, so the files hold
no checkout path; ``MLDEBUG_REGENERATE=1 pytest tests/formats/test_json_contract.py`` rewrites them (review the diff).
"""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from format_cases import DEMO, EXPECTED, assert_matches_expected
from typer.testing import CliRunner

from support import FIXTURES, LLAMA3, QWEN25, ROOT

PREFERENCE = FIXTURES / "trl-1.16.0-preference"
STATES = FIXTURES / "trainer_state"
# The data checks the files were made with: a check added to the registry later changes no file.
DATA_CHECKS = ",".join(f"DS{i:03d}" for i in range(1, 29))

CASES = {
    "inspect-data-sft": ["inspect-data", DEMO, "-t", LLAMA3, "--rows", "6,11,14,20", "--select", DATA_CHECKS],
    "inspect-data-sft-tokens": ["inspect-data", DEMO, "-t", LLAMA3, "--show", "2", "--tokens", "--select", DATA_CHECKS],
    "inspect-data-dpo": ["inspect-data", PREFERENCE / "rows_dpo_conversational.json", "-t", QWEN25, "--rows", "0,1"],
    "inspect-data-kto": ["inspect-data", PREFERENCE / "rows_kto.json", "-t", QWEN25, "--rows", "0,1"],
    "inspect-data-grpo": ["inspect-data", PREFERENCE / "rows_grpo.json", "-t", QWEN25, "--task", "grpo", "--rows", "0"],
    "lr-plot": ["lr-plot", "--config", FIXTURES / "configs" / "hf_training_args.json", "--num-rows", "1000"],
    "lr-plot-overlay": ["lr-plot", "--config", STATES / "overlay_config.json", "--num-rows", "40",
                        "--trainer-state", STATES / "resumed.json"],
    "check-run-masked": ["check-run", FIXTURES / "runs" / "sft-all-labels-masked"],
    "check-run-dpo": ["check-run", FIXTURES / "runs" / "dpo-learning"],
    "check-run-crash": ["check-run", FIXTURES / "runs" / "crash-cuda-oom" / "console.log"],
    "check-run-grpo": ["check-run", FIXTURES / "runs" / "grpo-length-limit"],
    "check-template": ["check-template", "--train", QWEN25, "--deploy", FIXTURES / "deploy" / "qwen3-chatml-no-stop.Modelfile"],
    "preflight-trl": ["preflight", FIXTURES / "preflight" / "trl" / "config.yaml"],
    "preflight-trl-deploy": ["preflight", FIXTURES / "preflight" / "trl" / "config_fixed.yaml", "--deploy",
                             FIXTURES / "deploy" / "qwen3-chatml-no-stop.Modelfile"],
    "memory": ["memory", FIXTURES / "memory" / "sft_long_row.yaml", "--model", FIXTURES / "memory-models" / "qwen2.5-0.5b",
               "--gpu", "L4-24GB", "--host-memory", "64"],  # not this machine's RAM: the file holds on any host
}


def json_output(args: list) -> str:
    from mldebug_cli import __version__
    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, [*map(str, args), "-f", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # a JSON document
    text = result.stdout.replace(json.dumps(f"{ROOT}/")[1:-1], "")
    for package in ("transformers", "trl", "tokenizers"):  # the installed releases: a newer one changes only these words
        installed = importlib.metadata.version(package)
        text = text.replace(f"{package} {installed}", f"{package} {package.upper()}_VERSION")
        text = text.replace(f'"framework_version": "{installed}"', f'"framework_version": "{package.upper()}_VERSION"')
    return text.replace(json.dumps({"name": "mldebug", "version": __version__}, indent=1).replace("\n", "\n "),
                        json.dumps({"name": "mldebug", "version": "VERSION"}, indent=1).replace("\n", "\n "))


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_what_it_was(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    for var in ("GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    assert_matches_expected(f"json/{name}.json", json_output(CASES[name]))


def test_every_stored_file_has_a_case():
    assert {p.stem for p in (EXPECTED / "json").glob("*.json")} == set(CASES)
