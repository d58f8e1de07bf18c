"""mldebug's version tables come from the wheels (tools/version_facts.py -> keys/version-facts.json): each stored fact
is checked against the wheel when it is on this machine, and the warmup_ratio boundaries against a real Trainer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "tools"))

import version_facts  # noqa: E402

RECORD = json.loads((ROOT / "mldebug_cli" / "frameworks" / "keys" / "version-facts.json").read_text(encoding="utf-8"))
WHEELS = Path(os.environ.get("MLDEBUG_WHEELS", "/work/venvs/wheels"))
GOLDEN_5_6 = json.loads((FIXTURES / "configs" / "transformers-5.6-warmup-golden.json").read_text(encoding="utf-8"))


def _releases():
    for package, record in sorted(RECORD["packages"].items()):
        for version in record["versions"]:
            yield pytest.param(package, version, id=f"{package}-{version}")


@pytest.mark.replay(by="package")  # a replay of the stored facts against each release's wheel: 4 releases of each
@pytest.mark.parametrize(("package", "version"), list(_releases()))  # package in the fast tier, all in the slow
def test_each_stored_fact_is_what_the_wheel_has(package, version):
    found = version_facts._archives(WHEELS, package, version)
    if not found:
        pytest.skip(f"{package} {version}'s wheel is not in {WHEELS} (python tools/version_facts.py fetches it)")
    assert version_facts.decode(RECORD["packages"][package], version) == _without_empty(_facts_of(package, found[0]))


def _facts_of(package: str, wheel: Path) -> dict:
    """``version_facts.facts_of`` in a process of its own: it parses whole wheels with ``ast``, whose recursion
    counter Python 3.11 before 3.11.8 shares between threads (CPython gh-106905), so a thread another test left in
    this xdist worker (Ray Data's executor logging a traceback) turned one of its parses into ``SystemError: AST
    constructor recursion depth mismatch`` and crashed the worker (CI, 29 Nov 2026)."""
    code = "import json, sys; from pathlib import Path; import version_facts; " \
           "print(json.dumps(version_facts.facts_of(sys.argv[1], Path(sys.argv[2]))))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tools"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code, package, str(wheel)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _without_empty(facts: dict) -> dict:
    return {"classes": {k: v for k, v in facts["classes"].items() if v}, "where": facts["where"],
            "behaviours": facts["behaviours"]}


def test_the_record_covers_every_minor_release_asked_for():
    transformers = {tuple(int(n) for n in v.split(".")[:2]) for v in RECORD["packages"]["transformers"]["versions"]}
    assert {(4, m) for m in range(46, 58)} | {(5, m) for m in range(0, 24)} <= transformers
    trl = {tuple(int(n) for n in v.split(".")[:2]) for v in RECORD["packages"]["trl"]["versions"]}
    assert {(0, m) for m in range(12, 30)} | {(1, m) for m in range(0, 17)} <= trl
    assert "0.9.5" in RECORD["packages"]["llamafactory"]["versions"]
    axolotl = {tuple(int(n) for n in v.split(".")[:2]) for v in RECORD["packages"]["axolotl"]["versions"]}
    assert {(0, m) for m in range(5, 20)} <= axolotl  # 0.5 is the oldest axolotl on PyPI


def test_warmup_ratio_is_copied_into_warmup_steps_up_to_5_14_and_gone_from_5_15():
    from mldebug_cli.frameworks import versions

    assert versions.behaviour("transformers", "warmup_ratio", "4.57.6") == "field"
    for version in ("5.0.0", "5.2.0", "5.6.0", "5.14.1"):
        assert versions.warmup_ratio_deprecated(version) and not versions.warmup_ratio_removed(version), version
    for version in ("5.15.0", "5.23.0", "5.24.0"):
        assert versions.warmup_ratio_removed(version), version
    assert versions.warmup_ratio_removed_in() == "5.15"


def test_trl_renamed_max_seq_length_to_max_length_and_axolotl_has_a_dataset_schema_per_rl_type():
    sft = RECORD["packages"]["trl"]["classes"]["SFTConfig"]
    assert sft["max_seq_length"][-1][1] is None and sft["max_length"][0][1] is not None  # gone, then the new name
    gone = sft["max_seq_length"][-1][0]
    assert version_facts._key(gone) > (0, 12) and version_facts._key(sft["max_length"][0][0]) <= version_facts._key(gone)
    axolotl = version_facts.decode(RECORD["packages"]["axolotl"], "0.19.0")
    assert {"field_chosen", "field_rejected", "field_messages"} <= set(axolotl["classes"]["DPODataset"])
    assert "type" in axolotl["classes"]["KTODataset"] and "field_chosen" not in axolotl["classes"]["SFTDataset"]
    assert axolotl["behaviours"]["datasets_union"] == ["SFTDataset", "DPODataset", "KTODataset",
                                                        "StepwiseSupervisedDataset", "SyntheticDataset"]


def test_the_record_says_where_each_schema_was_read_from():
    """axolotl's schema lived in utils/config/models/input/v0_4_1 up to 0.7 and in utils/schemas from 0.8; TRL's KTO
    and ORPO configs moved into trl/experimental."""
    where = RECORD["packages"]["axolotl"]["where"]["AxolotlInputConfig"]
    assert where[0] == ["0.5.2", "axolotl/utils/config/models/input/v0_4_1/__init__.py"]
    assert ["0.8.1", "axolotl/utils/schemas/config.py"] in where
    trl = version_facts.decode(RECORD["packages"]["trl"], "1.16.0")["where"]
    assert trl["ORPOConfig"] == "trl/experimental/orpo/orpo_config.py" and trl["SFTConfig"] == "trl/trainer/sft_config.py"


def _simulate(tmp_path, config: dict, rows: int, version: str, framework: str):
    from mldebug_cli.frameworks import read_spec, versions
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    targets = versions.resolve(str(path), {"transformers": version})
    return simulate(loaded, read_spec(loaded, framework, 1, targets), from_num_rows(rows))


@pytest.mark.parametrize("case", GOLDEN_5_6["cases"], ids=lambda c: c["name"])
@pytest.mark.parametrize("framework", ["transformers", "trl"])
def test_transformers_5_6_schedules_warmup_ratio_as_its_real_trainer(tmp_path, case, framework):
    """Golden: a real transformers 5.6.0 Trainer (tools/transformers4_warmup_golden.py in a 5.6 venv): the deprecated
    warmup_ratio is copied into warmup_steps, so it wins over warmup_steps, and 0.1 of 125 steps is 13 warmup steps."""
    sim = _simulate(tmp_path, case["config"], case["rows"], GOLDEN_5_6["versions"]["transformers"], framework)
    assert (sim.plan.total_steps, sim.plan.warmup_steps) == (case["max_steps"], case["warmup_steps"])
    assert [i.key for i in sim.spec.ignored] == (["warmup_steps"] if "warmup_steps" in case["config"] else [])
    assert sim.lrs == pytest.approx(case["lrs"], rel=1e-9, abs=1e-15)


def test_a_trl_config_with_warmup_ratio_on_5_6_has_13_warmup_steps_and_no_lr004(tmp_path):
    config = {"learning_rate": 2e-5, "per_device_train_batch_size": 1, "num_train_epochs": 1, "warmup_ratio": 0.1,
              "max_length": 512}
    sim = _simulate(tmp_path, config, 125, "5.6.0", "trl")
    assert sim.plan.total_steps == 125 and sim.plan.warmup_steps == 13 and sim.spec.ignored == ()
    assert any("removed in 5.15" in note for note in sim.spec.notes)
    newest = _simulate(tmp_path, config, 125, "5.15.0", "trl")
    assert newest.plan.warmup_steps == 0 and "removed in 5.15" in newest.spec.ignored[0].reason
