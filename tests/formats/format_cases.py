"""Reports the format tests render, built from real runs, and the stored expected files they must match."""

from __future__ import annotations

import importlib
import io
import os
from dataclasses import replace
from functools import cache
from pathlib import Path
from unittest import mock

import pytest

from mldebug_cli.core.findings import Finding, Location, Report, Severity
from mldebug_cli.frameworks import versions
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import DATASETS, FIXTURES, LLAMA3, QWEN25, ROOT

EXPECTED = Path(__file__).resolve().parent / "expected"
DEMO = DATASETS / "demo" / "support_chat.jsonl"
CLEAN = FIXTURES / "preflight" / "trl" / "train_fixed.jsonl"
REGENERATE = "MLDEBUG_REGENERATE"  # MLDEBUG_REGENERATE=1 pytest tests/formats rewrites the expected files
VERSION = "0.0.0-test"
INSTALLED_TRANSFORMERS = "5.24.0"  # the installed transformers the expected files name (clean_report)
# The data checks the expected files were made with: a check added to the registry later changes no file.
DATA_CHECKS = tuple(f"DS{i:03d}" for i in range(1, 26))


def _relative_context(report: Report) -> Report:
    """Absolute fixture paths in the context made repo-relative, so expected files hold no checkout path."""
    prefix = f"{ROOT}{os.sep}"
    context = {k: v.replace(prefix, "") if isinstance(v, str) else v for k, v in report.context.items()}
    return replace(report, context=context)


@cache
def demo_report() -> Report:
    """Four rows of the README demo dataset under Llama 3: errors, warnings, a setup finding."""
    options = InspectOptions(dataset=str(DEMO), tokenizer=str(LLAMA3), rows=(6, 11, 14, 20), select=DATA_CHECKS)
    return _relative_context(build_report(options))


@cache
def clean_report(ignore: tuple[str, ...] = ()) -> Report:
    """One clean chat row under Qwen2.5, trained the axolotl way: only an info finding (DS015), or none. The header
    names the installed transformers beside axolotl's pin: it is held at the release the expected files were made
    with, so CI's lowest-versions run (another installed release) renders the same words."""
    options = InspectOptions(dataset=str(CLEAN), tokenizer=str(QWEN25), rows=(0,), framework="axolotl",
                             train_on="assistant", select=DATA_CHECKS, ignore=ignore)
    real = versions.installed
    with mock.patch.object(versions, "installed", lambda p: INSTALLED_TRANSFORMERS if p == "transformers" else real(p)):
        return _relative_context(build_report(options))


def finding(code: str = "DS011", name: str = "unmapped-role", severity: Severity = Severity.ERROR,
            message: str = "a message", hint: str | None = None, **location) -> Finding:
    return Finding(code, name, severity, message, hint, Location(**location))


def synthetic(*findings: Finding, targets: tuple[str, ...] = ("data/train.jsonl",)) -> Report:
    return Report(command="inspect-data", findings=findings, checks_run=("DS011", "DS023"), targets=targets)


def assert_matches_expected(name: str, text: str) -> None:
    path = EXPECTED / name
    if os.environ.get(REGENERATE):
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"{path} is missing: run `{REGENERATE}=1 pytest tests/formats` and review the diff")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: if intended, regenerate with {REGENERATE}=1"


def in_repo(monkeypatch) -> None:
    """Render as in the repository root, outside GitHub Actions, with a fixed version."""
    monkeypatch.chdir(ROOT)
    for var in ("GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("mldebug_cli.formats.sarif.__version__", VERSION)


def rendered(fmt: str, report: Report, monkeypatch) -> str:
    """``report`` in format ``fmt`` (a module of mldebug_cli.formats), rendered from the repository root."""
    in_repo(monkeypatch)
    stream = io.StringIO()
    importlib.import_module(f"mldebug_cli.formats.{fmt}").render(report, stream, False)
    return stream.getvalue()
