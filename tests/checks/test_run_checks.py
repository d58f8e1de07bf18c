"""RN checks: each fires on a real or generated log where it should and stays silent on healthy runs.

Real logs: the shared corpus (runs people committed) and fixtures/runs (the real HF Trainer and TRL on a
tiny model with planted faults, tools/make_run_logs.py). A few failure modes no cheap real run produces
(a negative cross-entropy, an eval set overlapping training, collapsed entropy...) are small logs written
here in tmp.
"""

from __future__ import annotations

import json
import math

import pytest

from mldebug_cli.core.findings import Severity
from mldebug_cli.pipelines.check_run import build_report
from support import CORPUS_RUNS, RUNS, needs_corpus

QWEN_VOCAB = 151665  # len() of fixtures/tokenizers/qwen2.5-instruct, the tiny model's vocabulary


def findings(path, **kwargs):
    return build_report(str(path), **kwargs).findings


def codes(path, **kwargs) -> set[str]:
    return {f.code for f in findings(path, **kwargs)}


def serious(path, **kwargs) -> list:
    return [f for f in findings(path, **kwargs) if f.severity != Severity.INFO]


def state(tmp_path, entries, **meta):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": entries, **meta}))
    return path


# --- our own runs (real trainers, planted faults) ------------------------------------------------------------------

def test_healthy_generated_run_has_no_error_or_warning():
    assert serious(RUNS / "sft-healthy", vocab_size=QWEN_VOCAB) == []


def test_all_labels_masked_is_zero_loss_from_the_start():
    (finding,) = [f for f in findings(RUNS / "sft-all-labels-masked") if f.code == "RN001"]
    assert finding.severity == Severity.ERROR and "from the first logged step" in finding.message
    assert finding.location.step == 2 and finding.location.step_end == 20 and finding.location.key == "loss"


def test_lr_far_too_high_is_worse_than_uniform():
    found = findings(RUNS / "sft-lr-too-high", vocab_size=QWEN_VOCAB)
    above = [f for f in found if f.code == "RN007"]
    assert above and f"ln({QWEN_VOCAB})" in above[0].message
    (bound,) = [f for f in findings(RUNS / "sft-lr-too-high") if f.code == "RN007"]  # no vocabulary size:
    assert "ln(2^21)" in bound.message  # the bound that holds for any real vocabulary (issue 21, item 9)


def test_overfitting_on_16_rows_is_eval_loss_rising():
    (finding,) = [f for f in findings(RUNS / "sft-overfit-16-rows") if f.code == "RN006"]
    assert "best" in finding.message and finding.location.key == "eval_loss"


def test_constant_grpo_reward_is_stuck_at_zero_with_no_variance():
    found = codes(RUNS / "grpo-constant-reward")
    assert {"RN020", "RN021"} <= found


def test_dpo_with_lr_zero_is_not_learning():
    assert "RN031" in codes(RUNS / "dpo-lr-zero")


# --- real runs from the corpus ---------------------------------------------------------------------------------------

@needs_corpus
def test_tinyllama_sft_has_no_error_or_warning():
    assert serious(CORPUS_RUNS / "trl-sft__tinyllama.trainer_state.json", vocab_size=32000) == []


@needs_corpus
@pytest.mark.parametrize("name, expected", [
    ("hf-sft__5hiri.trainer_state.json", {"RN002", "RN003", "RN008"}),
    ("hf-sft__law-llm.trainer_state.json", {"RN004", "RN007", "RN009"}),
    ("hf-sft__3d-icon-hub.trainer_state.json", {"RN007"}),  # a first loss of 19.9 (Gemma 2: ln 256000 = 12.45)
    ("lf-sft__qwen25-medical.trainer_log.jsonl", {"RN013"}),  # eval steps up at epoch 3 as the train loss steps down
    ("hf-seq2seq__whisper-ja.trainer_state.json", {"RN006"}),
    ("hf-sft__kevin-token-compressor.trainer_state.json", {"RN005"}),
    ("lf-dpo__360-llama-factory.trainer_log.jsonl", {"RN011", "RN031"}),
    ("lf-sft__sft-training-llm.trainer_log.jsonl", {"RN012"}),
    ("lf-orpo__rlhf-recsys-2.trainer_state.json", {"RN032"}),
    ("trl-dpo__distill-safety.trainer_state.json", {"RN030"}),
    # reward 0 throughout: no advantage, so grad_norm stays at 0 (RN052) as the rewards stay stuck (RN020, RN021)
    ("trl-grpo-console__nips-grpo-dynamics-2.log", {"RN012", "RN020", "RN021", "RN024", "RN052"}),
    ("trl-grpo__chaos-economy.trainer_state.json", {"RN024"}),
    ("trl-grpo__grpo-verified-reasoner.trainer_state.json", {"RN004", "RN023"}),
])
def test_corpus_run_findings(name, expected):
    assert codes(CORPUS_RUNS / name) == expected


@needs_corpus
def test_fp16_overflow_steps_with_the_lr_held_are_info_and_the_spike_after_recovers():
    found = {f.code: f for f in findings(CORPUS_RUNS / "hf-sft__5hiri.trainer_state.json")}
    assert found["RN002"].severity == Severity.INFO and "LR held still at 2" in found["RN002"].message
    assert "it recovered" in found["RN003"].message and found["RN003"].location.step == 18
    assert found["RN008"].severity == Severity.INFO  # -0.0003: rounding of a loss at 0


@needs_corpus
def test_accumulation_from_the_config_names_the_key(tmp_path):
    config = tmp_path / "args.yaml"
    config.write_text("learning_rate: 2.0e-4\ngradient_accumulation_steps: 16\n")
    (finding,) = [f for f in findings(CORPUS_RUNS / "hf-sft__law-llm.trainer_state.json", config=str(config))
                  if f.code == "RN009"]
    assert "gradient accumulation is 16" in finding.message and "line 2" in finding.message


@needs_corpus
def test_kl_at_the_first_step_means_the_reference_is_not_the_policy():
    (finding,) = [f for f in findings(CORPUS_RUNS / "trl-grpo__grpo-verified-reasoner.trainer_state.json")
                  if f.code == "RN023"]
    assert "first logged step" in finding.message and finding.location.step == 5


@needs_corpus
@pytest.mark.parametrize("name", ["trl-sft__tinyllama.trainer_state.json", "hf-sft__serial-lain-ai/trainer_state.json"])
def test_healthy_sft_runs_trip_no_check(name):
    assert findings(CORPUS_RUNS / name) == ()


@needs_corpus
def test_an_output_folder_reads_the_final_evaluate_from_its_tensorboard_log():
    """Issue 34 item 10: HF Trainer saved trainer_state.json before the final evaluate(), which only its TensorBoard
    log (runs/) holds: the folder's one eval, after 100 epochs over 31 rows, is below the train loss: RN010."""
    (finding,) = [f for f in findings(CORPUS_RUNS / "hf-sft__serial-lain-ai") if f.code == "RN010"]
    assert finding.location.step == 3100 and "these eval rows are the training rows" in finding.message


# --- failure modes written here -------------------------------------------------------------------------------------

def test_nan_loss_before_grad_norm_points_at_the_forward_pass(tmp_path):
    entries = [{"step": s, "loss": 2.0 - s / 100, "grad_norm": 1.0, "learning_rate": 1e-4} for s in range(1, 11)]
    entries[6]["loss"] = math.nan
    entries[7].update(loss=math.nan, grad_norm=math.nan)
    found = [f for f in findings(state(tmp_path, entries)) if f.code == "RN002"]
    assert found[0].location.key == "loss" and "the forward pass" in found[0].message
    assert all(f.severity == Severity.ERROR for f in found)


def test_nan_filter_zero_loss_with_nan_grad_norm(tmp_path):
    entries = [{"step": s, "loss": 1.5, "grad_norm": 1.0} for s in range(1, 6)]
    entries += [{"step": s, "loss": 0.0, "grad_norm": math.nan} for s in range(6, 9)]
    (finding,) = [f for f in findings(state(tmp_path, entries)) if f.code == "RN001"]
    assert "NaN filter" in finding.message and finding.location.step == 6


def test_negative_cross_entropy(tmp_path):
    entries = [{"step": s, "loss": 1.0 - s / 5} for s in range(1, 11)]
    (finding,) = [f for f in findings(state(tmp_path, entries)) if f.code == "RN008"]
    assert finding.severity == Severity.ERROR and "min -1" in finding.message


def test_eval_far_below_train_means_overlap(tmp_path):
    entries = []
    for s in range(10, 60, 10):
        entries += [{"step": s, "loss": 2.0 - s / 100}, {"step": s, "eval_loss": 0.6 - s / 1000}]
    assert "RN010" in codes(state(tmp_path, entries))


def test_rl_entropy_clip_and_importance_ratio(tmp_path):
    entries = [{"step": s, "loss": 0.0, "reward": 0.5 + s / 100, "reward_std": 0.3, "frac_reward_zero_std": 0.1,
                "entropy": 0.3 if s < 10 else 0.004, "clip_ratio/region_mean": 0.05 if s < 15 else 0.4,
                "sampling/importance_sampling_ratio/min": 0.5 if s < 18 else 0.01,
                "sampling/sampling_logp_difference/mean": 0.05, "grad_norm": 0.2} for s in range(1, 21)]
    assert codes(state(tmp_path, entries)) == {"RN022", "RN026", "RN027"}


def test_completion_length_runaway_with_a_flat_reward(tmp_path):
    entries = [{"step": s, "loss": 0.0, "reward": 0.4, "reward_std": 0.2, "completions/mean_length": 100 + 12 * s,
                "completions/max_length": 512, "completions/clipped_ratio": 0.1} for s in range(1, 33)]
    assert codes(state(tmp_path, entries)) == {"RN025"}


def test_thresholds_are_overridable(tmp_path):
    entries = [{"step": s, "loss": 0.0, "reward": 0.5, "entropy": 0.02} for s in range(1, 5)]
    path = state(tmp_path, entries)
    assert "RN022" not in codes(path)
    assert "RN022" in codes(path, thresholds={"RN022": {"min_entropy": 0.05}})


@needs_corpus
@pytest.mark.parametrize("code", ["RN020", "RN021", "RN022", "RN024", "RN025", "RN026", "RN027"])
def test_rl_checks_are_silent_on_a_healthy_grpo_run(code):
    assert code not in codes(CORPUS_RUNS / "trl-grpo__grpo-verified-reasoner.trainer_state.json")


@needs_corpus
@pytest.mark.parametrize("code", ["RN030", "RN031"])
def test_preference_checks_are_silent_on_a_learning_orpo_run(code):
    assert code not in codes(CORPUS_RUNS / "lf-orpo__rlhf-recsys-2.trainer_state.json")


@needs_corpus
def test_the_hint_names_the_config_key_and_its_line(tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text("model_name_or_path: unsloth/llama-3.1-8b\nlearning_rate: 2.0e-4\nwarmup_steps: 5\n")
    (finding,) = [f for f in findings(CORPUS_RUNS / "hf-sft__5hiri.trainer_state.json", config=str(config))
                  if f.code == "RN003"]
    assert f"`learning_rate` ({config} line 2)" in finding.hint and f"`warmup_steps` ({config} line 3)" in finding.hint
