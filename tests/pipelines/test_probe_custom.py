"""`probe --metric FILE:FUNCTION` and `--loss-term FILE:FUNCTION`: the user's own metric and loss terms, measured on
the planted tiny model (tools/make_probe_cases.py's sft-healthy, LoRA on q_proj/v_proj). Twins: a metric the
parameters can move (the answer tokens' log-prob) and one they cannot (argmax accuracy); a differentiable loss
term and one built from argmax ids. Bad FILE:FUNCTION specs are one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("trl")

USER_CODE = '''
import pathlib

import torch

pathlib.Path(__file__).with_name("imported").write_text("yes")


def answer_logprob(outputs, batch):
    logps = torch.log_softmax(outputs.logits[:, :-1].float(), -1)
    labels = batch["labels"][:, 1:]
    mask = labels != -100
    picked = logps.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return (picked * mask).sum() / mask.sum()


def argmax_accuracy(outputs, batch):
    labels = batch["labels"][:, 1:]
    mask = labels != -100
    return ((outputs.logits[:, :-1].argmax(-1) == labels) & mask).sum().float() / mask.sum()


def mean_entropy(outputs, batch):
    logps = torch.log_softmax(outputs.logits.float(), -1)
    return -(logps.exp() * logps).sum(-1).mean()


def nonzero_ids(outputs, batch):
    return (outputs.logits.argmax(-1) != 0).float().mean()


def a_count(outputs, batch):
    return 3


def broken(outputs, batch):
    raise KeyError("answer_mask")
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(USER_CODE)
    return path


def _probe(folder, out, *extra):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, ["probe", str(folder / "config.yaml"), "--model", str(folder.parent / "base-model"),
                                      "-f", "json", "-o", str(out), "--allow-outside-paths", *extra])
    return result


@pytest.mark.slow
def test_a_metric_the_parameters_move_and_a_differentiable_term_stay_quiet(probe_case, user_file, tmp_path):
    out = tmp_path / "report.json"
    result = _probe(probe_case("sft-healthy"), out, "--metric", f"{user_file}:answer_logprob",
                    "--loss-term", f"{user_file}:mean_entropy")
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert not {f["code"] for f in report["findings"]} & {"GP010", "GP011", "GP002"}
    metric = report["probe"]["metric"]
    assert metric["source"].endswith("mine.py:answer_logprob") and metric["grad_norm"] > 0
    groups = {group: norm for group, _, norm in metric["groups"]}
    assert set(groups) == {"layers.0.self_attn", "layers.1.self_attn"}  # LoRA on q_proj and v_proj only
    assert all(norm > 0 for norm in groups.values())
    term = next(t for t in report["probe"]["terms"] if t["name"] == "mean_entropy")
    assert term["grad_norm"] > 0 and term["weight"] == 1.0
    assert [c["terms"] for c in report["probe"]["cosines"]] == [["nll", "mean_entropy"]]


@pytest.mark.slow
def test_a_metric_no_parameter_moves_and_a_term_without_gradient_are_loud(probe_case, user_file, tmp_path):
    out = tmp_path / "report.json"
    result = _probe(probe_case("sft-healthy"), out, "--metric", f"{user_file}:argmax_accuracy",
                    "--loss-term", f"{user_file}:nonzero_ids")
    assert result.exit_code == 1, result.output  # GP011 is an error
    report = json.loads(out.read_text())
    found = {f["code"]: f["message"] for f in report["findings"]}
    assert "mine.py:argmax_accuracy" in found["GP010"] and "no trainable parameter moves it" in found["GP010"]
    assert "mine.py:nonzero_ids" in found["GP011"] and "gradient norm 0" in found["GP011"]
    assert "GP005" not in found  # a term without gradient is GP011's, not "dominated"
    assert report["probe"]["metric"]["grad_norm"] is None
    assert report["map"]["row"] == "structural"


@pytest.mark.parametrize("spec, message", [
    ("{file}", "expected FILE:FUNCTION"),
    ("{dir}/missing.py:f", "no such file"),
    ("{file}:not_there", "defines no function 'not_there'"),
    ("{bad}:f", "importing"),
])
def test_a_bad_file_function_is_a_one_line_error_before_the_model_loads(probe_case, user_file, tmp_path, spec,
                                                                        message):
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_module_here\n")
    flag_value = spec.format(file=user_file, dir=tmp_path, bad=bad)
    for flag in ("--metric", "--loss-term"):
        result = _probe(probe_case("sft-healthy"), tmp_path / "r.json", flag, flag_value)
        assert result.exit_code == 2, result.output
        assert message in result.output and flag in result.output and "Traceback" not in result.output
    if "importing" in message:
        assert "ModuleNotFoundError: No module named 'no_such_module_here'" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("function, message", [("a_count", "returned int, not a floating-point tensor"),
                                               ("broken", "raised KeyError: 'answer_mask'")])
def test_a_function_that_fails_on_the_batch_is_a_one_line_error(probe_case, user_file, tmp_path, function, message):
    result = _probe(probe_case("sft-healthy"), tmp_path / "r.json", "--metric", f"{user_file}:{function}")
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_the_users_file_is_imported_only_when_a_flag_names_it(probe_case, user_file):
    from mldebug_cli.pipelines.probe import ProbeOptions, _user_functions

    folder = probe_case("sft-healthy")
    plain = ProbeOptions(config=str(folder / "config.yaml"), model=str(folder.parent / "base-model"))
    assert _user_functions(plain) == (None, ())
    assert not (user_file.parent / "imported").exists()
    metric, terms = _user_functions(ProbeOptions(config=plain.config, model=plain.model,
                                                 loss_terms=(f"{user_file}:mean_entropy",)))
    assert metric is None and [t.name for t in terms] == ["mean_entropy"]
    assert (user_file.parent / "imported").read_text() == "yes"


def test_preflight_has_no_way_to_run_the_users_code():
    import inspect

    from mldebug_cli.pipelines import preflight

    assert not {"metric", "loss_terms"} & set(preflight.PreflightOptions.__dataclass_fields__)
    assert "probe.custom" not in inspect.getsource(preflight) and "ProbeOptions" not in inspect.getsource(preflight)


@pytest.mark.parametrize("name, group", [
    ("base_model.model.model.layers.3.self_attn.q_proj.lora_A.default.weight", "layers.3.self_attn"),
    ("model.layers.12.mlp.down_proj.weight", "layers.12.mlp"),
    ("model.embed_tokens.weight", "embed_tokens"),
    ("lm_head.weight", "lm_head"),
    ("model.norm.weight", "norm"),
    ("transformer.h.0.attn.c_attn.weight", "h.0.attn"),
])
def test_parameter_groups_are_a_layers_block_or_a_top_module(name, group):
    from mldebug_cli.probe.custom import parameter_group

    assert parameter_group(name) == group
