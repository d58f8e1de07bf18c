"""axolotl 0.19.0's goldens (tools/axolotl_goldens.py, from the unpacked wheel): its instruction prompters, its
chat_template reading settings and its named chat templates give these ids and labels; content parts
(content_parts.py); and the rows its trainer puts in each optimizer step (batch_plans.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _pytest.mark import ParameterSet

from goldens import axolotl_vision, batch_plans, content_parts
from goldens.suite import GoldenSuite
from mldebug_cli.core.findings import Report
from mldebug_cli.frameworks.axolotl import framework as axolotl_framework
from mldebug_cli.frameworks.axolotl.framework import masking_options
from mldebug_cli.pipelines import inspect
from mldebug_cli.sources.config_file import load_config
from support import FIXTURES, GLAIVE, ROOT, golden_clock, needs_corpus

GOLDENS = FIXTURES / "axolotl-0.19.0"
PROMPTERS, CHAT, NAMED = GOLDENS / "prompters", GOLDENS / "chat", GOLDENS / "named"
TOOL = "tools/axolotl_goldens.py"
COMMAND = "python tools/axolotl_goldens.py --wheel /tmp/axo/whl --only {}"


def report_for(cfg: dict[str, Any], tokenizer: str, tmp_path: Path, **extra: Any) -> Report:
    """inspect-data's report for the config's first dataset, read by the same reader as preflight."""
    config_path = tmp_path / "axolotl.yml"
    config_path.write_text(yaml.safe_dump({"base_model": tokenizer, "learning_rate": 1e-5, **cfg}))
    plan = axolotl_framework.read_plan(load_config(config_path))
    dataset = plan.datasets[0]
    options = inspect.InspectOptions(
        dataset=dataset.spec, tokenizer=tokenizer, framework="axolotl", data_format=dataset.data_format,
        max_length=plan.max_length.value, chat_template=plan.chat_template.value,
        framework_options=masking_options(dataset), **extra)
    return inspect.build_report(options)


def golden_report(golden: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[int, dict[str, Any]], Report]:
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str(PROMPTERS / d["path"])} for d in cfg["datasets"]]
    n = len(expected["rows"])
    report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    return expected, {view["row"]: view for view in report.details["rows"]}, report


def files(folder: Path) -> list[ParameterSet]:
    return [pytest.param(path, id=path.name[:-5]) for path in sorted(folder.glob("*.*.json"))]


def replay_prompter(golden: Path, tmp_path: Path) -> None:
    expected, got, _ = golden_report(golden, tmp_path)
    for want in expected["rows"]:
        row = got[want["row"]]
        if "rows" in want:  # completion: axolotl splits the row into rows of sequence_len, in order
            assert row["input_ids"] == [i for r in want["rows"] for i in r["input_ids"]], f"row {want['row']}"
            assert row["labels"] == [i for r in want["rows"] for i in r["labels"]], f"row {want['row']}"
            assert all(r["kept"] for r in want["rows"]) == (not row.get("dropped", False))
            continue
        assert row["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert row["labels"] == want["labels"], f"row {want['row']}"
        assert row.get("dropped", False) == (not want["kept"]), f"row {want['row']}"


def replay_chat(golden: Path, tmp_path: Path) -> None:
    """field_messages, message_property_mappings (and the older keys), roles, per-message train, split_thinking."""
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str(CHAT / d["path"])} for d in cfg["datasets"]]
    n = len(expected["rows"])
    report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    got = {view["row"]: view for view in report.details["rows"]}
    for want in expected["rows"]:
        assert got[want["row"]]["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert got[want["row"]]["labels"] == want["labels"], f"row {want['row']}"


def replay_named(golden: Path, tmp_path: Path) -> None:
    """chat_template: chatml / qwen_25 / qwen3 / llama3 / mistral_v7_tekken / phi_3 / gemma3, from the installed
    axolotl or the stored copy of 0.19.0's templates."""
    expected = json.loads(golden.read_text())
    cfg = expected["axolotl_cfg"]
    cfg["datasets"] = [{**d, "path": str((NAMED / d["path"]).resolve())} for d in cfg["datasets"]]
    n = len(expected["rows"])
    with golden_clock(expected):  # mistral_v7_tekken writes today's date into the system prompt
        report = report_for(cfg, str(ROOT / expected["tokenizer"]), tmp_path, rows=tuple(range(n)), show=n)
    assert report.context["chat_template"].startswith(f"axolotl's {cfg['chat_template']!r} template, from axolotl ")
    got = {view["row"]: view for view in report.details["rows"]}
    for want in expected["rows"]:
        row = got[want["row"]]
        if "error" in want:  # the template raises on the row: axolotl stops, mldebug reports it (DS009)
            assert row["input_ids"] == [] and row.get("error")
            continue
        assert row["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert row["labels"] == want["labels"], f"row {want['row']}"


def replay_content_parts(tokenizer: str, tmp_path: Path) -> None:
    """axolotl joins each part's text/content/value (an image part adds nothing) and never reads a message's
    loss_weight (DS066). Its per-part train/weight flags mask part of a turn, token by token (rows 7 and 8). A row
    with nothing trained (no assistant turn, nothing flagged) is masked as any other and then dropped: the same ids
    and labels, and an error on the row."""
    doc = content_parts.inspect("axolotl", tokenizer)
    cases = content_parts.golden("axolotl")[tokenizer]
    content_parts.agree(doc, cases)
    untrained = {i for i, c in enumerate(cases) if "labels" in c and all(label == -100 for label in c["labels"])}
    assert untrained and untrained <= {f["location"].get("row") for f in doc["findings"] if f["severity"] == "error"}
    assert content_parts.weighted_rows(doc) == set(content_parts.WEIGHTED)


UNMAPPED = FIXTURES / "axolotl-unmapped-roles" / "goldens.json"


def unmapped_role_cases() -> list[ParameterSet]:
    """One case per template; each inspects the corpus's 300 glaive rows (30-60 s on 2 shared cores): slow."""
    cases = json.loads(UNMAPPED.read_text(encoding="utf-8"))["cases"]
    return [pytest.param(template, id=template, marks=[needs_corpus, pytest.mark.slow]) for template in sorted(cases)]


def replay_unmapped_roles(template: str, tmp_path: Path) -> None:
    """Issue 34 item 7: ShareGPT tool rows whose function_call/observation tags the config does not map. axolotl
    hands the tags to the template as roles: Gemma 3's raises on 153 rows (one stops the dataset map: mldebug says
    the run will not start), ChatML renders them (the same ids and labels; DS011 says the template does not know
    them)."""
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    goldens = json.loads(UNMAPPED.read_text(encoding="utf-8"))
    case = goldens["cases"][template]
    config = {"base_model": str(FIXTURES / case["tokenizer"]), "chat_template": template, "sequence_len": 100_000,
              "micro_batch_size": 1, "datasets": [{"path": str(GLAIVE), "type": "chat_template", **goldens["entry"]}]}
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = CliRunner().invoke(app, ["inspect-data", "--config", str(path), "--allow-outside-paths", "--all",
                                      "--show", "300", "-f", "json", "--exit-zero"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    want = case["rows"]
    raised = {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS009" and f["location"].get("row") is not None}
    assert raised == {n for n, r in enumerate(want) if "error" in r}
    shown = {r["row"]: r for r in doc["rows"] if r.get("input_ids")}
    digests = {n: hashlib.sha1(json.dumps([r["input_ids"], r["labels"]], separators=(",", ":")).encode()).hexdigest()[:16]
               for n, r in shown.items()}
    assert shown and all(digests[n] == want[n]["digest"] for n in shown)
    stops = [f["message"] for f in doc["findings"] if f["code"] == "DS009" and f["location"].get("row") is None]
    if raised:
        assert len(stops) == 1 and stops[0].startswith("the run will not start: axolotl tokenizes every row")
    else:
        assert not stops and "DS011" in {f["code"] for f in doc["findings"]}


SUITES = (
    GoldenSuite("axolotl-prompters", "axolotl", TOOL, COMMAND.format("prompters"), PROMPTERS,
                lambda: files(PROMPTERS), replay_prompter),
    GoldenSuite("axolotl-chat", "axolotl", TOOL, COMMAND.format("chat_settings"), CHAT, lambda: files(CHAT), replay_chat),
    GoldenSuite("axolotl-named", "axolotl", TOOL, COMMAND.format("named"), NAMED, lambda: files(NAMED), replay_named),
    GoldenSuite("axolotl-content-parts", "axolotl", content_parts.TOOL,
                "python tools/content_parts_goldens.py axolotl --wheel /tmp/axo/whl", content_parts.GOLDENS,
                lambda: content_parts.cases("axolotl"), replay_content_parts),
    GoldenSuite("axolotl-unmapped-roles", "axolotl", "tools/axolotl_unmapped_roles_golden.py",
                "python tools/axolotl_unmapped_roles_golden.py --wheel /work/venvs/axolotl-whl", UNMAPPED,
                unmapped_role_cases, replay_unmapped_roles, keep=None),
    GoldenSuite("axolotl-batch-plan", "axolotl", batch_plans.AXOLOTL_TOOL, batch_plans.AXOLOTL_COMMAND,
                batch_plans.AXOLOTL_GOLDENS, lambda: batch_plans.cases(batch_plans.AXOLOTL_GOLDENS),
                batch_plans.replay_axolotl),
    GoldenSuite("axolotl-prepare", "axolotl", batch_plans.AXOLOTL_PREPARE_TOOL, batch_plans.AXOLOTL_PREPARE_COMMAND,
                batch_plans.AXOLOTL_PREPARE_GOLDENS, batch_plans.prepare_cases, batch_plans.replay_axolotl_prepare),
    *axolotl_vision.SUITES,
)
