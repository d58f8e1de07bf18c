"""Every check's case file (tests/checks/cases/<CODE>.yml) run through the real pipeline of its command.

A case file is data, not code (sqlfluff's ``test/fixtures/rules/std_rule_cases`` layout): the check's code, the
command whose public report function runs it, and a list of cases. Each case gives its inputs inline (rows, a
config, a run log, small files) or names real files (``$fixtures/...``, ``$corpus/...``), and says whether the
check fires (``expect: fail``) or stays quiet (``expect: pass``). A failing case may pin the rows it fires on
(``at``), words of its message (``message``) and its severity. The loaded tokenizers are shared across cases
(the sources keep each one loaded once per process), so the whole set runs in one pass.

Case keys (all optional but ``name`` and ``expect``):
  tokenizer   a folder name under fixtures/tokenizers, or a ``$corpus/...``/``$fixtures/...`` path
  rows        rows written as $tmp/data.jsonl (the dataset of inspect-data unless options.dataset names one)
  config      a mapping written as $tmp/config.yaml (preflight and lr-plot read it)
  log         a trainer_state.json log_history written as $tmp/trainer_state.json (check-run reads it);
              ``state`` adds its other keys (max_steps, ...)
  files       {name: text, or a mapping/list written as JSON (.json/.jsonl) or YAML}, under $tmp
  slow        true: the case runs in the slow tier (it takes seconds: a whole memory estimate)
  options     keyword arguments of the command's options ($tmp, $fixtures, $corpus, $tokenizers, $build expand;
              $build holds the files conftest derives from the corpus; $probe/NAME is a planted case of
              tools/make_probe_cases.py, built once per session, and $probe/base-model their tiny random model)

probe cases run `mldebug probe` on $tmp/config.yaml (its dataset written from ``rows`` as $tmp/data.jsonl, a GRPO
rewards file under ``files``) with ``options`` such as ``model``, ``checkpoint``, ``rewards``, ``steps``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import CORPUS, FIXTURES, ROOT, TOKENIZERS, needs_corpus

CASES = Path(__file__).parent / "cases"
BUILD = ROOT / "build"  # files conftest derives from the corpus (the Phi-3 GGUFs and Modelfile)
COMMANDS = ("inspect-data", "preflight", "lr-plot", "check-template", "check-run", "probe")
OUTCOMES = ("fail", "pass")
PROBE_SAMPLE = pytest.mark.replay(by="code", keep=1)
PROBE_FAST_CODE = "GP002"  # the probe case file whose first case stays in the fast tier
CASE_KEYS = {"name", "expect", "at", "message", "severity", "tokenizer", "rows", "config", "log", "state", "files",
             "options", "why", "slow"}


def _load_case_files() -> list[Any]:
    params = []
    for path in sorted(CASES.glob("*.yml")):
        document = yaml.safe_load(path.read_text())
        code = document["code"]
        assert path.stem == code, f"{path.name}: holds the cases of {code}"
        assert document["command"] in COMMANDS, f"{path.name}: unknown command {document['command']!r}"
        for case in document["cases"]:
            unknown = set(case) - CASE_KEYS
            assert not unknown, f"{path.name}: case {case.get('name')!r} has unknown keys {sorted(unknown)}"
            assert case["expect"] in OUTCOMES, f"{path.name}: case {case['name']!r}: expect is fail or pass"
            marks = [needs_corpus] if "$corpus" in json.dumps(case) or "$build" in json.dumps(case) else []
            if case.get("slow"):  # a case that runs a whole estimate (seconds): the slow tier
                marks.append(pytest.mark.slow)
            if document["command"] == "probe":  # each runs a tiny model, some after TRL trained it: GP002's first in
                # the fast tier (the cheapest end-to-end probe), the others in the slow tier; each GP check's decision
                # on its planted readings is in the fast tier (tests/checks/test_probe_readings.py)
                marks.append(PROBE_SAMPLE if code == PROBE_FAST_CODE else pytest.mark.slow)
            params.append(pytest.param(document["command"], code, case, id=f"{code}-{case['name']}", marks=marks))
    return params


ALL_PARAMS = _load_case_files()
# the probe cases run tiny models: their own module (tests/checks/test_probe_case_files.py)
PARAMS = [p for p in ALL_PARAMS if p.values[0] != "probe"]
PROBE_PARAMS = [p for p in ALL_PARAMS if p.values[0] == "probe"]


def _expand(value: Any, tmp: Path) -> Any:
    if isinstance(value, str):
        return (value.replace("$tmp", str(tmp)).replace("$fixtures", str(FIXTURES))
                .replace("$corpus", str(CORPUS)).replace("$tokenizers", str(TOKENIZERS)).replace("$build", str(BUILD)))
    if isinstance(value, list):
        return [_expand(v, tmp) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, tmp) for k, v in value.items()}
    return value


def _write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)  # files under a folder (LLaMA-Factory's data/dataset_info.json)
    if isinstance(content, str):
        path.write_text(content)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in content))
    elif path.suffix == ".json":
        path.write_text(json.dumps(content, indent=1))
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False))


def _tokenizer(name: str, tmp: Path) -> str:
    if name.startswith("$declared/"):  # a declared-class variant (tests/differential/strategies.py), made in tmp
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))
        from strategies import declared_class_folder

        return str(declared_class_folder(name.removeprefix("$declared/"), tmp / "declared"))
    return _expand(name, tmp) if name.startswith("$") else str(TOKENIZERS / name)


def _tuples(options: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}


def _planted(case: dict[str, Any], probe_case) -> dict[str, Any]:
    """$probe/NAME/... -> the planted case's folder, built on first use."""
    text = json.dumps(case)
    for name in sorted(set(re.findall(r"\$probe/([a-z0-9-]+)", text))):
        text = text.replace(f"$probe/{name}", str(probe_case(name)))
    return json.loads(text)


def _report(command: str, code: str, case: dict[str, Any], tmp: Path, probe_case=None):
    case = _expand(_planted(case, probe_case) if probe_case else case, tmp)
    for name, content in (case.get("files") or {}).items():
        _write(tmp / name, content)
    if "rows" in case:
        _write(tmp / "data.jsonl", case["rows"])
    if "config" in case:
        _write(tmp / "config.yaml", case["config"])
    if "log" in case:
        _write(tmp / "trainer_state.json", {"log_history": case["log"], **(case.get("state") or {})})
    options = dict(case.get("options") or {})
    if command == "inspect-data":
        from mldebug_cli.pipelines.inspect import InspectOptions, build_report

        options.setdefault("dataset", str(tmp / "data.jsonl"))
        options.setdefault("all_rows", True)
        return build_report(InspectOptions(tokenizer=_tokenizer(case["tokenizer"], tmp), select=(code,), **_tuples(options)))
    if command == "preflight":
        from mldebug_cli.pipelines.preflight import PreflightOptions, build_report

        options.setdefault("config", str(tmp / "config.yaml"))
        if "tokenizer" in case:
            options["tokenizer"] = _tokenizer(case["tokenizer"], tmp)
        return build_report(PreflightOptions(select=(code,), **_tuples(options)))
    if command == "lr-plot":
        from mldebug_cli.pipelines.schedule import build_report

        options.setdefault("config", str(tmp / "config.yaml"))
        if "dataset" not in options:
            options.setdefault("num_rows", 40)
        return build_report(select=(code,), **options)
    if command == "check-template":
        from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report

        if "tokenizer" in case:
            options.setdefault("train", _tokenizer(case["tokenizer"], tmp))
        return build_report(CheckTemplateOptions(select=(code,), **_tuples(options)))
    if command == "probe":
        from mldebug_cli.pipelines.probe import ProbeOptions, build_report

        options.setdefault("config", str(tmp / "config.yaml"))
        return build_report(ProbeOptions(select=(code,), allow_outside_paths=True, **_tuples(options)))
    from mldebug_cli.pipelines.check_run import build_report

    run_path = options.pop("run", str(tmp / "trainer_state.json"))
    return build_report(run_path, select=(code,), **options)


@pytest.mark.parametrize("command,code,case", PARAMS)
def test_case(command: str, code: str, case: dict[str, Any], tmp_path: Path, request) -> None:
    run_case(command, code, case, tmp_path, request)


def run_case(command: str, code: str, case: dict[str, Any], tmp_path: Path, request) -> None:
    """One case through its command's pipeline: the check fires where the case says, or stays quiet."""
    if command == "probe":
        for library in ("torch", "peft", "trl"):
            pytest.importorskip(library)
    planted = request.getfixturevalue("probe_case") if command == "probe" else None
    report = _report(command, code, case, tmp_path, planted)
    found = [f for f in report.findings if f.code == code]
    described = [f"{f.location.row}: {f.severity.value}: {f.message}" for f in found]
    if case["expect"] == "pass":
        assert found == [], f"{code} fired on a passing case: {described}"
        assert code in report.checks_run, f"{code} did not run, so the passing case proves nothing"
        return
    assert found, f"{code} did not fire (report holds {[f.code for f in report.findings]})"
    if "at" in case:
        assert {f.location.row for f in found} == set(case["at"]), described
    if "message" in case:
        assert any(case["message"] in f.message for f in found), described
    if "severity" in case:
        assert {f.severity.value for f in found} == {case["severity"]}, described


def test_every_case_file_names_a_registered_check():
    from mldebug_cli.core import registry

    codes = {r.code for r in registry.REGISTRY}
    for path in CASES.glob("*.yml"):
        assert path.stem in codes, f"{path.name}: no check {path.stem}"


def test_every_case_file_has_a_failing_and_a_passing_case():
    for path in CASES.glob("*.yml"):
        outcomes = {case["expect"] for case in yaml.safe_load(path.read_text())["cases"]}
        assert outcomes == set(OUTCOMES), f"{path.name}: has only {sorted(outcomes)} cases"
