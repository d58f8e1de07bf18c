"""CI integration end to end: --output-format auto, the config file through the CLI, the pre-commit
manifest, the composite action (its scripts run here), and the manual's generated check table (docs/checks.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import DATASETS, LLAMA3, ROOT

CHECKS_PAGE = ROOT / "docs" / "checks.md"  # the generated check table
CI_PAGE = ROOT / "docs" / "output-formats.md"  # the workflow and pre-commit examples
ACTION = ROOT / "action.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
REGENERATE = "MLDEBUG_REGENERATE"
DEMO = DATASETS / "demo" / "support_chat.jsonl"
INSPECT = ["inspect-data", str(DEMO), "-t", str(LLAMA3), "--rows", "6", "--select", "DS0"]  # DS024, DS023, DS025


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def in_tmp(monkeypatch, tmp_path) -> Path:
    """A working directory with no configuration above it that matters, outside GitHub Actions."""
    monkeypatch.chdir(tmp_path)
    for var in ("GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY", "MLDEBUG_CONFIG",
                "MLDEBUG_SELECT", "MLDEBUG_IGNORE", "MLDEBUG_FAIL_ON"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


# --output-format auto


def test_auto_is_text_outside_github_actions(in_tmp):
    result = run(*INSPECT, "--color", "never")
    assert result.exit_code == 1 and result.stdout.startswith("mldebug inspect-data: ")


def test_auto_is_github_under_github_actions(in_tmp):
    summary = in_tmp / "summary.md"
    result = run(*INSPECT, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1 and result.stdout.startswith("::group::DS024 tool-call-dropped (1)\n::error file=")
    assert "\x1b[" not in result.stdout
    assert summary.read_text(encoding="utf-8").startswith("## mldebug inspect-data: 1 error")


@pytest.mark.parametrize("fmt", ["sarif", "junit", "markdown", "github"])
def test_machine_formats_through_the_cli_exit_on_findings_and_are_clean(in_tmp, fmt):
    result = run(*INSPECT, "-f", fmt, "--color", "always")
    assert result.exit_code == 1 and "\x1b[" not in result.stdout
    if fmt == "sarif":
        assert json.loads(result.stdout)["runs"][0]["results"]
    if fmt == "junit":
        assert ET.fromstring(result.stdout).get("failures") == "3"
    assert run(*INSPECT, "-f", fmt, "--exit-zero").exit_code == 0


# configuration through the CLI


def test_the_config_file_selects_ignores_and_sets_fail_on(in_tmp):
    (in_tmp / "mldebug.toml").write_text('ignore = ["tool-call-dropped"]\n', encoding="utf-8")
    assert run(*INSPECT).exit_code == 0  # only warnings are left
    (in_tmp / "mldebug.toml").write_text('ignore = ["tool-call-dropped"]\nfail-on = "warning"\n', encoding="utf-8")
    assert run(*INSPECT).exit_code == 1
    assert run(*INSPECT, "--fail-on", "error").exit_code == 0  # a flag beats the file
    assert run(*INSPECT, env={"MLDEBUG_FAIL_ON": "error"}).exit_code == 0  # so does the environment
    findings = json.loads(run(*INSPECT, "-f", "json", "--ignore", "DS023").stdout)["findings"]
    assert {f["code"] for f in findings} == {"DS024", "DS025"}  # --ignore replaced the file's ignore


def test_per_check_severity_from_the_config_changes_the_report_and_the_exit_code(in_tmp):
    (in_tmp / "pyproject.toml").write_text(
        '[tool.mldebug.checks]\ntool-call-dropped = { severity = "warning" }\nDS025 = { severity = "info" }\n',
        encoding="utf-8",
    )
    result = run(*INSPECT, "-f", "json")
    assert result.exit_code == 0
    severities = {f["code"]: f["severity"] for f in json.loads(result.stdout)["findings"]}
    assert severities == {"DS024": "warning", "DS025": "info", "DS023": "warning"}


@pytest.mark.parametrize("text, error", [
    ('selct = ["DS001"]\n', "mldebug.toml: the top level: unknown key 'selct' (did you mean 'select'?)"),
    ("fail-on = [\n", "mldebug.toml: not valid TOML"),
])
def test_an_invalid_config_exits_2_naming_the_key(in_tmp, text, error):
    (in_tmp / "mldebug.toml").write_text(text, encoding="utf-8")
    result = run(*INSPECT)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and error in result.stderr and "Traceback" not in result.stderr


# pre-commit


def test_the_pre_commit_manifest_is_valid_and_its_hooks_are_commands():
    from pre_commit.clientlib import load_manifest

    hooks = load_manifest(str(HOOKS))
    commands = {c.name for c in app.registered_commands}
    assert [h["id"] for h in hooks] == ["mldebug-inspect-data", "mldebug-check-template", "mldebug-lr-plot"]
    for hook in hooks:
        program, command = hook["entry"].split()
        assert program == "mldebug" and command in commands
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert hook["id"] == f"mldebug-{command}" and re.compile(hook["files"])


def test_the_docs_pre_commit_example_is_a_valid_config_using_shipped_hooks(tmp_path):
    from pre_commit.clientlib import load_config

    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(_docs_block("# .pre-commit-config.yaml"), encoding="utf-8")
    hook_ids = {h["id"] for repo in load_config(str(config))["repos"] for h in repo["hooks"]}
    assert hook_ids <= {h["id"] for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}


# the composite action


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def test_the_action_is_a_well_formed_composite_action():
    action = _action()
    assert set(action) <= {"name", "author", "description", "inputs", "outputs", "runs", "branding"}
    assert action["name"] and action["description"] and action["runs"]["using"] == "composite"
    assert all(spec.get("description") and set(spec) <= {"description", "required", "default", "deprecationMessage"}
               for spec in action["inputs"].values())
    assert all(isinstance(spec.get("default", ""), str) for spec in action["inputs"].values())
    steps = action["runs"]["steps"]
    ids = [s["id"] for s in steps if "id" in s]
    assert len(ids) == len(set(ids))
    for step in steps:
        assert ("run" in step) != ("uses" in step), step.get("name")
        assert ("shell" in step) == ("run" in step), step.get("name")  # composite run steps must name a shell
        if "run" in step:
            assert "${{" not in step["run"], f"{step['name']}: inputs reach scripts through env, never inline"
    text = ACTION.read_text(encoding="utf-8")
    assert set(re.findall(r"inputs\.([\w-]+)", text)) <= set(action["inputs"])
    assert set(re.findall(r"steps\.([\w-]+)\.outputs", text)) <= set(ids)
    assert all(spec["value"] and spec["description"] for spec in action["outputs"].values())
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif@") for s in steps)


def test_the_docs_workflow_uses_only_declared_inputs():
    workflow = yaml.safe_load(_docs_block("# .github/workflows/mldebug.yml"))
    step = next(s for s in workflow["jobs"]["preflight"]["steps"] if "/mldebug@" in s.get("uses", ""))
    assert set(step["with"]) <= set(_action()["inputs"]) and workflow["permissions"]["security-events"] == "write"


def test_the_action_scripts_annotate_write_sarif_and_fail_the_step(tmp_path):
    steps = {s.get("id") or s["name"]: s for s in _action()["runs"]["steps"]}
    outputs, summary, sarif = tmp_path / "output", tmp_path / "summary.md", tmp_path / "mldebug.sarif"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(ROOT),
        "MLDEBUG_COMMAND": "inspect-data", "MLDEBUG_ARGS": f"{DEMO} --tokenizer {LLAMA3} --rows 6",
        "MLDEBUG_FAIL_ON": "", "SARIF_FILE": str(sarif), "HF_HUB_OFFLINE": "1",
    }
    check = subprocess.run(["bash", "-e", "-c", steps["check"]["run"]], env=env, cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert "::error file=fixtures/datasets/demo/support_chat.jsonl,line=7," in check.stdout
    assert summary.read_text(encoding="utf-8").startswith("## mldebug inspect-data:")
    subprocess.run(["bash", "-e", "-c", steps["sarif"]["run"]], env=env, cwd=ROOT, check=True, capture_output=True)
    assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"
    written = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines())
    assert written == {"exit-code": "1", "sarif-file": str(sarif)}
    fail = subprocess.run(["bash", "-e", "-c", steps["Fail on findings"]["run"]], capture_output=True, text=True,
                          env={**env, "EXIT_CODE": written["exit-code"]})
    assert fail.returncode == 1 and "mldebug exited with 1" in fail.stdout


# the manual's check table (docs/checks.md)


def test_the_docs_check_table_is_the_explain_output():
    generated = run("explain", "--all", "--output-format", "markdown").stdout
    text = CHECKS_PAGE.read_text(encoding="utf-8")
    start, end = re.search(r"<!-- checks:start[^\n]*-->\n", text), text.index("<!-- checks:end -->")
    if os.environ.get(REGENERATE):
        CHECKS_PAGE.write_text(text[: start.end()] + generated + text[end:], encoding="utf-8")
        text = CHECKS_PAGE.read_text(encoding="utf-8")
        end = text.index("<!-- checks:end -->")
    assert text[start.end(): end] == generated, (
        f"docs/checks.md's check table differs from `mldebug explain --all -f markdown`: rerun with {REGENERATE}=1"
    )


def _docs_block(first_line: str) -> str:
    """docs/output-formats.md's fenced YAML example whose first line is ``first_line``."""
    for block in re.findall(r"```yaml\n(.*?)```", CI_PAGE.read_text(encoding="utf-8"), flags=re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"docs/output-formats.md has no yaml example starting with {first_line!r}")
