"""`mldebug probe` on the planted cases of tools/make_probe_cases.py (tiny random models, some trained by TRL 1.16):
each GP finding fires on its case and the healthy runs stay quiet."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from support import ROOT

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("trl")

CASES = ("sft-healthy", "sft-reentrant", "sft-trl-cli-reentrant", "lf-lora-dpo", "sft-new-tokens", "sft-new-tokens-saved", "sft-lr-tiny", "sft-fp16-overflow",
         "sft-bf16-scaled",
         "dpo-healthy", "orpo-healthy", "orpo-conflict", "dpo-sft-tiny", "dpo-saturated", "dpo-opposite-optim", "kto-healthy",
         "kto-saturated", "grpo-healthy", "grpo-equal-rewards", "grpo-kl-conflict")


class _Cases:
    """The planted cases by name, each built when a test first asks for it (once per test run: conftest.probe_case)."""

    def __init__(self, build) -> None:
        self.build = build

    def __getitem__(self, name: str):
        return self.build(name)


@pytest.fixture(scope="session")
def probe_cases(probe_case) -> _Cases:
    return _Cases(probe_case)


def _options(folder, **extra):
    from mldebug_cli.pipelines.probe import ProbeOptions

    case = json.loads((folder / "case.json").read_text())
    args = dict(case["args"])
    for key in ("checkpoint", "rewards"):
        if key in args:
            args[key] = str(folder / args[key])
    return ProbeOptions(config=str(folder / "config.yaml"), model=str(folder / case["model"]), allow_outside_paths=True,
                        **{**args, **extra})


# The planted cases TRL trains before the probe runs (dpo-saturated, dpo-opposite-optim, kto-saturated,
# grpo-kl-conflict) cost 40-100 CPU s each to build: the tests that need one are in the slow tier, and the fast tier
# keeps a case of the same check built without training (GP001: the case files' GRPO case; GP006 keeps its case file's).
TRAINED_CASE = pytest.mark.slow


@pytest.mark.replay(keep=1)  # each case trains a tiny model with TRL; the case files keep one case of each GP check
@pytest.mark.parametrize("name", CASES)
def test_each_finding_fires_on_its_case_and_healthy_runs_stay_quiet(probe_cases, name):
    from mldebug_cli.pipelines.probe import build_report

    folder = probe_cases[name]
    expected = json.loads((folder / "case.json").read_text())["expected"]
    report = build_report(_options(folder))
    assert sorted({f.code for f in report.findings}) == expected, [f.message for f in report.findings]
    assert report.details["map"]["row"] == ("healthy" if not expected else report.details["map"]["row"])


def test_lora_a_matrices_are_exempt_on_the_first_step_never_flagged(probe_cases):
    from mldebug_cli.pipelines.probe import build_report

    tensors = build_report(_options(probe_cases["sft-healthy"])).details["probe"]["tensors"]
    a_matrices = [t for t in tensors if "lora_A" in t["name"]]
    assert a_matrices and all(t["grad_norm"] == 0.0 and "by design" in t["exempt"] for t in a_matrices)
    assert all(t["grad_norm"] > 0 for t in tensors if "lora_B" in t["name"])


@pytest.mark.parametrize("name, read_as, adapters", [
    ("sft-trl-cli-reentrant", "(trl, sft)", 4),
    # the same promise under LLaMA-Factory's DPO (14 adapters, two terms): 13-14 CPU s, the slow tier
    pytest.param("lf-lora-dpo", "(llama-factory, dpo)", 14, marks=pytest.mark.slow)])
def test_issue_33_false_alarms_every_lora_b_gets_the_gradient_the_trainer_gives_it(probe_case, name, read_as,
                                                                                    adapters):
    """Reentrant checkpointing with input grads on: the gradient reaches every lora_B through the recomputed
    segment (backward(), as the trainers take it; autograd.grad returns None there)."""
    from mldebug_cli.pipelines.probe import build_report

    report = build_report(_options(probe_case(name)))
    assert report.context["config"].endswith(read_as)
    assert report.context["gradient checkpointing"].startswith("on, reentrant")
    tensors = report.details["probe"]["tensors"]
    b_matrices = [t for t in tensors if "lora_B" in t["name"]]
    assert len(b_matrices) == adapters and all(t["grad_norm"] > 0 for t in b_matrices)
    assert all(t["grad_norm"] > 0 for t in report.details["probe"]["terms"])
    assert report.findings == ()


def test_reentrant_case_names_the_reason_and_the_key(probe_cases):
    from mldebug_cli.pipelines.probe import build_report

    report = build_report(_options(probe_cases["sft-reentrant"]))
    (finding,) = report.findings
    assert "reentrant gradient checkpointing" in finding.message and finding.location.key == "gradient_checkpointing_kwargs"
    assert "nobody" in report.context["gradient checkpointing"]
    assert report.details["map"]["row"] == "structural"


@TRAINED_CASE
def test_saturated_dpo_pairs_are_named_with_their_margins(probe_cases):
    from mldebug_cli.pipelines.probe import build_report

    report = build_report(_options(probe_cases["dpo-saturated"]))
    finding = next(f for f in report.findings if f.code == "GP001")
    assert finding.message.startswith("sigmoid: push below 0.05 on 4 of 4 rows")
    assert report.details["map"]["row"] == "loss"


@TRAINED_CASE
def test_thresholds_from_mldebug_toml_change_the_verdict(probe_cases):
    from mldebug_cli.pipelines.probe import build_report

    options = _options(probe_cases["dpo-saturated"], thresholds={"GP001": {"push_below": 1e-30}})
    assert [f.code for f in build_report(options).findings] == ["GP007"]


def test_cli_writes_json_and_exits_with_the_findings_code(probe_cases, tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    folder = probe_cases["sft-lr-tiny"]
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                                      "--sample", "2", "-f", "json", "-o", str(out), "--fail-on", "warning",
                                      "--allow-outside-paths"])
    assert result.exit_code == 1, result.output
    doc = json.loads(out.read_text())
    assert [f["code"] for f in doc["findings"]] == ["GP007"]
    assert doc["map"]["row"] == "competing"


@pytest.mark.parametrize("args, message", [
    (["--device", "tpu"], "--device: unknown device 'tpu'"),
    (["--ablate", "sft"], "--ablate needs --steps K"),
    (["--steps", "1", "--ablate", "kl"], "--ablate: the config's loss has no term 'kl'"),
])
def test_bad_flags_are_one_line_errors_and_exit_2(probe_cases, args, message):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    folder = probe_cases["dpo-healthy"]
    result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                                      "--allow-outside-paths", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_a_missing_model_folder_is_exit_2_before_anything_loads(tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    config = tmp_path / "config.yaml"
    config.write_text("model_name_or_path: nowhere\ndataset_name: rows.json\n")
    result = CliRunner().invoke(app, ["probe", str(config), "--model", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no such folder" in result.output


def test_explain_documents_every_gp_check():
    result = subprocess.run([sys.executable, "-m", "mldebug_cli", "explain", "GP001"], capture_output=True, text=True,
                            cwd=ROOT)
    assert "GP001 loss-saturated" in result.stdout and "Why it matters for training" in result.stdout
    from mldebug_cli.core import registry

    for ref in registry.REGISTRY:
        if ref.family == "GP":
            doc = registry.load(ref).doc
            assert all(h in doc for h in ("What it finds", "Why it matters for training", "Example", "Fix")), ref.code


def test_probe_help_imports_no_torch():
    code = ("import sys\nfrom mldebug_cli.cli import main\nsys.argv = ['mldebug', 'probe', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', [m for m in ('torch', 'transformers', 'peft', 'datasets') if m in sys.modules])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "--ablate" in result.stdout and "HEAVY []" in result.stdout, result.stdout[-400:]


@pytest.mark.slow  # the same promise as GP001's case file's fast case (the groups named by their prompts)
def test_grpo_equal_reward_groups_are_named_by_their_prompts(probe_cases):
    from mldebug_cli.pipelines.probe import build_report

    report = build_report(_options(probe_cases["grpo-equal-rewards"]))
    (finding,) = report.findings
    assert finding.message.startswith("grpo-policy: push below 0.05 on 3 of 4 prompts")
    assert "'What is the capital of France?' (line 1)" in finding.message and finding.location.key == "num_generations"
    assert report.context["rows"] == "4 prompts, 16 completions on cpu"
    assert report.details["map"]["row"] == "loss"


@pytest.mark.slow  # a GRPO probe, 41 CPU s; the fast tier holds GP005's decision on an idle KL term
def test_a_fresh_grpo_runs_kl_term_is_idle_not_dominated(probe_cases, tmp_path):  # (test_probe_readings.py)
    """With the policy still the reference, GRPO's KL term and its gradient are exactly 0: never GP005."""
    import yaml

    from mldebug_cli.pipelines.probe import build_report

    folder = probe_cases["grpo-healthy"]
    config = yaml.safe_load((folder / "config.yaml").read_text()) | {"beta": 0.04}
    (folder / "config-kl.yaml").write_text(yaml.safe_dump(config))
    report = build_report(replace(_options(folder), config=str(folder / "config-kl.yaml")))
    kl = next(t for t in report.details["probe"]["terms"] if t["name"] == "kl")
    assert report.findings == () and kl["grad_norm"] == 0.0 and "still the reference" in kl["idle"]


@pytest.mark.parametrize("extra, message", [
    ([], "a GRPO config needs --rewards FILE"),
    (["--rewards", "nowhere.jsonl"], "--rewards nowhere.jsonl: no such file"),
])
def test_grpo_without_a_rewards_file_is_exit_2(probe_cases, extra, message):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    folder = probe_cases["grpo-healthy"]
    result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                                      "--allow-outside-paths", *extra])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_bad_rewards_line_is_exit_2_naming_the_line(probe_cases, tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    folder = probe_cases["grpo-healthy"]
    bad = tmp_path / "rewards.jsonl"
    bad.write_text((folder / "rewards.jsonl").read_text() + '{"prompt": "x", "completions": ["a"], "rewards": [1]}\n')
    result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                                      "--rewards", str(bad), "--allow-outside-paths"])
    assert result.exit_code == 2, result.output
    assert "rewards.jsonl: line 5: 1 completions; the config's num_generations is 4" in result.output


TWINS = [  # (planted, loud case, its quiet twin, the code the loud one gives)
    # each runs two probes through the CLI (6-20 CPU s): the slow tier. The fast tier holds GP002's pair through
    # test_reentrant_case_names_the_reason_and_the_key (loud) and test_issue_33's TRL SFT case (quiet), the CLI's exit
    # code and JSON through test_cli_writes_json_and_exits_with_the_findings_code, each check's decision on its planted
    # readings through tests/checks/test_probe_readings.py
    pytest.param("no gradient path", "sft-reentrant", "sft-trl-cli-reentrant", "GP002", marks=pytest.mark.slow),
    pytest.param("frozen new tokens", "sft-new-tokens", "sft-new-tokens-saved", "GP003", marks=pytest.mark.slow),
    pytest.param("a term saturated", "dpo-saturated", "dpo-healthy", "GP001", marks=TRAINED_CASE),
    pytest.param("conflicting terms", "orpo-conflict", "orpo-healthy", "GP004", marks=pytest.mark.slow),
    pytest.param("a non-finite module", "sft-fp16-overflow", "sft-bf16-scaled", "GP008", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("planted, loud, quiet, code", TWINS, ids=[getattr(t, "values", t)[0] for t in TWINS])
def test_each_planted_case_is_loud_through_the_cli_and_its_twin_quiet(probe_case, tmp_path, planted, loud, quiet,
                                                                      code):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    def run(name):
        folder = probe_case(name)
        case = json.loads((folder / "case.json").read_text())
        extra = [f"--{k}={folder / v if k in ('checkpoint', 'rewards') else v}" for k, v in case["args"].items()]
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder / case["model"]),
                                          "-f", "json", "-o", str(out), "--allow-outside-paths", *extra])
        assert result.exit_code in (0, 1) and out.is_file(), result.output
        return result.exit_code, {f["code"] for f in json.loads(out.read_text())["findings"]}

    loud_exit, loud_codes = run(loud)
    quiet_exit, quiet_codes = run(quiet)
    assert code in loud_codes and loud_exit == (1 if code in ("GP002", "GP003", "GP008") else 0)
    assert quiet_codes == set() and quiet_exit == 0


def _has_bitsandbytes() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


@pytest.mark.skipif(_has_bitsandbytes(), reason="bitsandbytes is installed: probe loads the 4-bit model "
                    "(tests/differential/test_probe_goldens.py replays the QLoRA goldens)")
def test_a_4bit_config_without_bitsandbytes_says_in_one_line_that_probe_cannot_load_it(probe_cases, tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    model = probe_cases["base-model"]
    (tmp_path / "rows.json").write_text(json.dumps([{"messages": [{"role": "user", "content": "Hi"},
                                                                  {"role": "assistant", "content": "Hello."}]}] * 2))
    config = tmp_path / "config.yaml"
    config.write_text(f"model_name_or_path: {model}\ndataset_name: rows.json\nuse_peft: true\nlora_r: 4\n"
                      "load_in_4bit: true\nbnb_4bit_quant_type: nf4\nper_device_train_batch_size: 2\n")
    result = CliRunner().invoke(app, ["probe", str(config), "--model", str(model), "--allow-outside-paths"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert ("load_in_4bit: probe cannot load the model quantized as the run does: bitsandbytes is not installed"
            in " ".join(result.output.split()))
