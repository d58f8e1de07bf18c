"""The readings a careful reader makes of a run (issue 24), each on a planted run and its healthy twin.

The planted runs and their twins are real trainers on a tiny randomly initialised Llama on CPU
(tools/make_run_logs.py; fixtures/runs/VERSIONS.json gives each one's settings): TRL SFT with the eval set
equal to the training set / held out, several epochs over few rows, TRL DPO with a long warmup stopped
early / a short warmup, TRL DPO whose collator cuts every completion, TRL GRPO whose completions all run to
a small max_completion_length / end with EOS, SFT with the LR far too high / at a normal value. Where the
corpus holds a real run of the class (runs people committed), it is read too.
"""

from __future__ import annotations

import ast
import json

import pytest

from mldebug_cli.core.findings import Severity
from mldebug_cli.pipelines.check_run import build_report
from support import CORPUS_RUNS, RUNS, needs_corpus


def found(path, code, **kwargs):
    return [f for f in build_report(str(path), **kwargs).findings if f.code == code]


def serious(path, **kwargs):
    return [f for f in build_report(str(path), **kwargs).findings if f.severity != Severity.INFO]


# --- eval set = training set --------------------------------------------------------------------------------------

def test_an_eval_set_that_is_the_training_set_is_named_after_many_epochs():
    (finding,) = found(RUNS / "sft-eval-is-train", "RN010")
    assert "after 20 epochs" in finding.message and "training rows" in finding.message
    assert finding.location.key == "eval_loss" and finding.location.step == 40


def test_a_held_out_eval_set_is_not_a_leak():
    assert not found(RUNS / "sft-eval-held-out", "RN010")


def test_a_single_final_eval_on_the_training_rows_is_named_without_a_logged_train_loss():
    # HF Trainer at its default logging_steps: 72 steps log no train loss, only the run's mean train_loss
    (finding,) = found(RUNS / "sft-final-eval-is-train", "RN010")
    assert "after 12 epochs" in finding.message and "mean train loss 5.09" in finding.message
    assert finding.location.key == "eval_loss" and finding.location.step == 72
    assert not found(RUNS / "sft-final-eval-held-out", "RN010")


# --- memorisation at an epoch boundary -----------------------------------------------------------------------------

def test_several_epochs_over_few_rows_memorise_at_an_epoch_boundary():
    (finding,) = found(RUNS / "sft-epochs-memorise", "RN013")
    assert "end of epoch 6 (step 24" in finding.message and "start of epoch 7 (step 26" in finding.message
    assert finding.location.step == 24 and finding.location.step_end == 26
    assert not found(RUNS / "sft-epochs-memorise", "RN006")  # the rise (+1.6% in all) is below RN006's 2%


@needs_corpus
def test_eval_rising_at_the_start_of_an_epoch_with_a_train_staircase_is_memorisation():
    (finding,) = found(CORPUS_RUNS / "lf-sft__qwen25-medical.trainer_log.jsonl", "RN013")
    assert "end of epoch 2 (step 4500" in finding.message and "start of epoch 3 (step 5000" in finding.message
    assert "+1.4%" in finding.message and not found(CORPUS_RUNS / "lf-sft__qwen25-medical.trainer_log.jsonl", "RN006")


@pytest.mark.parametrize("name", ["sft-epochs-learning", "sft-healthy", "sft-overfit-16-rows"])
def test_multi_epoch_runs_without_the_step_are_not_memorisation(name):
    assert not found(RUNS / name, "RN013")


def test_a_written_staircase_with_an_eval_step_up_fires_and_a_smooth_one_does_not(tmp_path):
    def history(staircase: bool) -> list:
        rows = []
        for step in range(1, 31):
            epoch = (step - 1) // 10
            loss = ([2.0, 1.6, 1.2][epoch] if staircase else 2.0 - 0.027 * step) - 0.005 * ((step - 1) % 10)
            rows.append({"loss": loss, "step": step, "epoch": step / 10})
            if step % 5 == 0:
                rows.append({"eval_loss": {5: 1.9, 10: 1.7, 15: 1.6, 20: 1.52, 25: 1.55, 30: 1.57}[step],
                             "step": step, "epoch": step / 10})
        return rows

    for staircase, expected in ((True, 1), (False, 0)):
        path = tmp_path / f"{staircase}.json"
        path.write_text(json.dumps({"log_history": history(staircase)}))
        assert len(found(path, "RN013")) == expected


# --- DPO at ln 2 inside warmup; empty labels -----------------------------------------------------------------------

def test_dpo_at_ln2_inside_warmup_is_not_learning_yet_with_the_lr_phase():
    (finding,) = found(RUNS / "dpo-warmup-stopped", "RN031")
    assert finding.severity == Severity.INFO and "still in warmup" in finding.message
    assert "7.5e-05 at step 16, still rising" in finding.message and "4% of 400 planned steps" in finding.message


def test_dpo_that_learns_is_not_flagged():
    assert not found(RUNS / "dpo-learning", "RN031")


@needs_corpus
def test_a_real_dpo_run_stopped_in_warmup_is_read_as_not_learning_yet():
    (finding,) = found(CORPUS_RUNS / "lf-dpo__360-llama-factory.trainer_log.jsonl", "RN031")
    assert finding.severity == Severity.INFO and "1.98e-07 at step 202, still rising" in finding.message


def test_dpo_at_ln2_with_zero_logps_is_empty_labels_not_the_learning_rate():
    (finding,) = found(RUNS / "dpo-empty-completions", "RN031")
    assert finding.severity == Severity.ERROR and "empty labels" in finding.message
    assert "not a learning-rate problem" in finding.message


# --- GRPO completions at the limit without clipped_ratio -----------------------------------------------------------

def _without_clipped_ratio(name, tmp_path):
    """The real GRPO console with TRL's ``completions/clipped_ratio`` removed: what TRL <= 0.16 logged."""
    text = (RUNS / name / "console.log").read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if line.startswith("{'loss'"):
            entry = ast.literal_eval(line)
            entry.pop("completions/clipped_ratio", None)
            line = repr(entry)
        lines.append(line)
    path = tmp_path / f"{name}.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_grpo_completions_always_at_the_limit_are_read_from_the_lengths(tmp_path):
    (finding,) = found(_without_clipped_ratio("grpo-length-limit", tmp_path), "RN024")
    assert "limit of 8 tokens" in finding.message and "no clipped_ratio is logged" in finding.message
    (with_key,) = found(RUNS / "grpo-length-limit" / "console.log", "RN024")
    assert "clipped_ratio above 0.8" in with_key.message


def test_grpo_completions_that_end_are_not_at_a_limit(tmp_path):
    assert not found(_without_clipped_ratio("grpo-length-ends", tmp_path), "RN024")
    assert not found(RUNS / "grpo-length-ends" / "console.log", "RN024")


@needs_corpus
def test_the_real_grpo_console_with_every_completion_at_256_tokens():
    (finding,) = found(CORPUS_RUNS / "trl-grpo-console__nips-grpo-dynamics-2.log", "RN024")
    assert "exactly 256 at 49 of 50" in finding.message and "reward, reward_std, loss, grad_norm are 0" in finding.message


# --- an early, short loss spike -------------------------------------------------------------------------------------

def test_an_early_spike_with_the_lr_far_too_high_is_seen_from_the_first_steps():
    (finding,) = found(RUNS / "sft-lr-too-high", "RN003")
    assert finding.location.step == 4 and "2.5× its window mean" in finding.message


@pytest.mark.parametrize("name", ["sft-lr-base", "sft-healthy", "sft-console"])
def test_runs_at_a_normal_lr_have_no_early_spike(name):
    assert not found(RUNS / name, "RN003")


# --- issue 21, items 7 and 9 ---------------------------------------------------------------------------------------

@needs_corpus
def test_grad_norm_above_100_counts_a_first_logged_point_that_is_not_step_1():
    (finding,) = found(CORPUS_RUNS / "hf-sft__law-llm.trainer_state.json", "RN004")
    assert "above 100 at 2 of 6 logged points" in finding.message


@needs_corpus
def test_a_first_loss_of_19_9_is_above_uniform_without_a_vocabulary_size():
    (finding,) = found(CORPUS_RUNS / "hf-sft__3d-icon-hub.trainer_state.json", "RN007")
    assert "ln(2^21) = 14.56" in finding.message and "max 19.94" in finding.message
    assert "no vocabulary size given" in finding.message and finding.location.step == 1
    (exact,) = found(CORPUS_RUNS / "hf-sft__3d-icon-hub.trainer_state.json", "RN007", vocab_size=256000)
    assert "ln(256000)" in exact.message


def test_a_loss_below_ln_2_21_needs_the_vocabulary_size():
    assert not found(RUNS / "sft-healthy", "RN007")  # starts at 11.9 = ln(151665): uniform, not above it


@needs_corpus
def test_the_uniform_bound_reads_the_train_loss_through_rn009s_accumulation():
    messages = [f.message for f in found(CORPUS_RUNS / "hf-sft__law-llm.trainer_state.json", "RN007")]
    assert any("÷ 16" in m and "max 17.8" in m for m in messages)


# --- NaN logged as 0.0 -----------------------------------------------------------------------------------------------

def test_zero_loss_with_nan_grad_norm_is_read_as_nan_not_convergence(tmp_path):
    path = tmp_path / "console.log"  # transformers 5 prints '.4g' strings: a NaN window logs '0' with grad 'nan'
    path.write_text("{'loss': '2.31', 'grad_norm': '1.2', 'learning_rate': '2e-05', 'epoch': '0.1'}\n"
                    "{'loss': '0', 'grad_norm': 'nan', 'learning_rate': '2e-05', 'epoch': '0.2'}\n"
                    "{'loss': '0', 'grad_norm': 'nan', 'learning_rate': '2e-05', 'epoch': '0.3'}\n", encoding="utf-8")
    (finding,) = found(path, "RN001")
    assert "NaN filter logged 0.0" in finding.message
