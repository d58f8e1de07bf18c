"""RN040 run-crashed and RN041 run-hung: the crash part of console logs and stderr captures.

The crash logs under fixtures/runs are real output (tools/make_run_logs.py: the real transformers Trainer,
TRL's GRPOConfig, accelerate's DummyOptim, torch's embedding, checkpoint and numpy conversion on CPU,
torch.distributed.run with a worker over a memory limit; tools/make_cuda_oom_log.py: torch on an H200).
The errors no CPU can raise (NCCL, axolotl's template warning) are written here with the frameworks' own
message text, each quoted from the source named beside it.
"""

from __future__ import annotations

import pytest

from mldebug_cli.core.findings import Severity
from mldebug_cli.pipelines.check_run import build_report
from support import RUNS


def crash(path, **kwargs):
    found = [f for f in build_report(str(path), **kwargs).findings if f.code in ("RN040", "RN041")]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name, line, quoted, cause", [
    ("crash-no-pad-token", "ValueError: Asking to pad but the tokenizer does not have a padding token",
     "ValueError: Asking to pad", "the tokenizer has no pad token"),
    ("crash-grpo-generation-batch", "generation_batch_size (3) must be divisible by num_generations (4)",
     "generation_batch_size (3)", "whole groups of num_generations"),
    ("crash-dummy-optim", "'DummyOptim' object has no attribute 'step'", "AttributeError", "DeepSpeed is not running"),
    ("crash-weight-2d", "RuntimeError: 'weight' must be 2-D", "'weight' must be 2-D", "FSDP1"),
    ("crash-checkpoint-error", "CheckpointError", "torch.utils.checkpoint.CheckpointError", "ZeRO-3"),
    ("crash-bf16-weight-sync", "TypeError: Got unsupported ScalarType BFloat16", "BFloat16", "numpy"),
    ("host-oom-killed", "exitcode: -9", "failed (exitcode: -9)", "OOM killer"),
    ("host-oom-rlimit", "DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator", "host memory ran out"),
    ("crash-cuda-oom", "torch.OutOfMemoryError: CUDA out of memory", "CUDA out of memory", "GPU memory ran out"),
    ("crash-bus-error", "exitcode: -7", "failed (exitcode: -7)", "SIGBUS"),
    ("crash-dataloader-bus-error", "is killed by signal: Bus error", "DataLoader worker", "shared memory"),
])
def test_real_crash_logs_name_the_cause_at_the_line(name, line, quoted, cause):
    path = RUNS / name / "console.log"
    lines = path.read_text(encoding="utf-8").splitlines()
    finding = crash(path)
    assert finding.severity == Severity.ERROR and quoted in finding.message and cause in finding.message
    assert line in lines[finding.location.line - 1]  # the finding points at the line that names the cause
    assert finding.hint and "does not recognise" not in finding.message


def test_the_oom_kill_is_named_at_the_launchers_first_line_not_its_child_failed_error():
    finding = crash(RUNS / "host-oom-killed" / "console.log")
    assert finding.location.line == 3 and "ChildFailedError" not in finding.message


def test_the_bus_error_is_named_at_the_launchers_exit_code_line_not_its_child_failed_error():
    finding = crash(RUNS / "crash-bus-error" / "console.log")
    assert finding.location.line == 3 and "ChildFailedError" not in finding.message
    assert "--shm-size" in finding.hint and "dataloader_num_workers" in finding.hint


def test_the_stray_nul_torch_writes_after_a_worker_bus_error_does_not_make_the_log_binary():
    path = RUNS / "crash-dataloader-bus-error" / "console.log"
    assert b"\x00" in path.read_bytes()  # torch's worker signal handler wrote it (the real capture)
    report = build_report(str(path))
    assert report.context["format"] == "console" and report.summary["final_loss"] is not None


def test_a_binary_file_is_still_refused_with_one_line(tmp_path):
    from mldebug_cli.core.errors import InputError

    blob = tmp_path / "dump.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputError, match="binary data in no known run-log format"):
        build_report(str(blob))


def test_a_crash_log_with_metrics_keeps_its_series_and_names_the_crash_after_the_last_step():
    report = build_report(str(RUNS / "crash-cuda-oom" / "console.log"))
    assert report.context["steps"] == "up to 2" and report.summary["final_loss"] == 0.0364


def test_an_error_it_does_not_know_is_named_as_such(tmp_path):
    log = tmp_path / "stderr.txt"
    log.write_text("{'loss': 2.1, 'learning_rate': 1e-05, 'epoch': 0.1}\nTraceback (most recent call last):\n"
                   '  File "train.py", line 3, in <module>\n'
                   "KeyError: 'messages'\n", encoding="utf-8")
    finding = crash(log)
    assert finding.location.line == 4 and "does not recognise" in finding.message and "KeyError" in finding.message


def test_a_coloured_error_line_is_read_and_quoted_without_its_control_bytes(tmp_path):
    log = tmp_path / "stderr.txt"
    log.write_bytes(b"\x1b[31mValueError\x1b[0m: Asking to pad but the tokenizer does not have a padding token.\x07\n")
    finding = crash(log)  # a capture with no metric record at all: the crash is the reading
    assert "the tokenizer has no pad token" in finding.message
    assert not any(ord(c) < 32 or c == "\x7f" for c in finding.message)


def test_errors_before_the_last_step_are_not_a_crash(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("ValueError: a warning-like error a callback printed and survived\n"
                   "{'loss': 2.1, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                   "{'train_runtime': 12.0, 'train_samples_per_second': 3.0, 'train_steps_per_second': 1.0, "
                   "'train_loss': 2.1, 'epoch': 0.1}\n", encoding="utf-8")
    assert not [f for f in build_report(str(log)).findings if f.code == "RN040"]


# The frameworks' own texts, for the errors a CPU cannot raise.
NCCL_WATCHDOG = (  # torch ProcessGroupNCCL.cpp: "[Rank ", rank_, "] Watchdog caught collective operation timeout: ",
    # work, " ran for ", timeElapsed, " milliseconds before timing out."
    "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran "
    "for 600081 milliseconds before timing out.")
NCCL_ABORT = "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0. "  # ProcessGroupNCCL getNcclComm
AXOLOTL_BOUNDARY = (  # axolotl prompt_strategies/chat_template.py: LOG.warning(f"Content end boundary is before
    # start boundary for turn {turn_idx}")
    "[2025-06-01 10:00:01,123] [WARNING] [axolotl.prompt_strategies.chat_template.find_turn:512] [PID:77] "
    "Content end boundary is before start boundary for turn 1")


def test_the_first_ranks_oom_is_the_cause_not_the_nccl_abort_after_it(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("{'loss': 1.9, 'grad_norm': 0.8, 'learning_rate': 2e-05, 'epoch': 0.5}\n"
                   "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
                   f"[rank0]: {NCCL_ABORT}\n", encoding="utf-8")
    finding = crash(log)
    assert finding.location.line == 2 and "GPU memory ran out" in finding.message


@pytest.mark.parametrize("text, cause", [
    (NCCL_WATCHDOG, "a hang"),
    (NCCL_ABORT, "NCCL aborted the communicator"),
])
def test_nccl_failures_from_torchs_own_text(tmp_path, text, cause):
    log = tmp_path / "console.log"
    log.write_text("{'loss': 1.9, 'learning_rate': 2e-05, 'epoch': 0.5}\n" + text + "\n", encoding="utf-8")
    assert cause in crash(log).message


def test_axolotl_template_boundary_warning_is_reported_even_though_the_run_went_on(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(AXOLOTL_BOUNDARY + "\n" + AXOLOTL_BOUNDARY.replace("turn 1", "turn 3") + "\n"
                   "{'loss': 1.9, 'learning_rate': 2e-05, 'epoch': 0.5}\n", encoding="utf-8")
    finding = crash(log)
    assert finding.severity == Severity.WARNING and finding.location.line == 1
    assert "2 such lines" in finding.message and "EOS does not match" in finding.message


def test_a_log_whose_clock_runs_on_without_steps_is_a_hang(tmp_path):
    lines = [f"2026-04-17 14:{minute:02d}:00,000 [INFO] train: step\n{{'loss': {2 - minute / 100}, 'epoch': "
             f"{minute / 10}}}" for minute in range(10)]
    lines += ["2026-04-17 14:30:00,000 [INFO] heartbeat: still waiting", "2026-04-17 15:10:00,000 [INFO] heartbeat"]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    finding = crash(log)
    assert finding.code == "RN041" and "61 min later" in finding.message and finding.location.line == 22


def test_a_finished_log_with_time_stamps_after_it_is_not_a_hang(tmp_path):
    lines = [f"2026-04-17 14:{minute:02d}:00,000 [INFO] x\n{{'loss': 2.0, 'epoch': {minute / 10}}}" for minute in range(5)]
    lines += ["{'train_runtime': 300.0, 'train_samples_per_second': 1.0, 'train_steps_per_second': 1.0, "
              "'train_loss': 2.0, 'epoch': 0.5}", "2026-04-17 16:00:00,000 [INFO] uploading the model"]
    log = tmp_path / "console.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not [f for f in build_report(str(log)).findings if f.code in ("RN040", "RN041")]


# --- the preflight twins: causes preflight sees before the run ------------------------------------------------------

def test_a_tokenizer_without_a_pad_token_under_transformers_padding_collators_is_ds027():
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.pipelines.inspect import build_report as inspect_report
    from support import DATASETS, TOKENIZERS

    def codes(tokenizer: str, framework: str) -> list[str]:
        report = inspect_report(InspectOptions(dataset=str(DATASETS / "demo" / "support_chat.jsonl"),
                                               tokenizer=str(TOKENIZERS / tokenizer), framework=framework,
                                               select=("DS028",)))
        return [f.code for f in report.findings]

    assert codes("llama3-instruct", "transformers") == ["DS028"]  # pad_token: null
    assert codes("llama3-instruct", "trl") == []  # TRL picks a pad token itself
    assert codes("qwen2.5-instruct", "transformers") == []  # it has one


def test_a_deepspeed_config_on_one_process_is_lr016_and_not_on_two():
    from mldebug_cli.pipelines import schedule
    from support import FIXTURES

    def codes(world_size: int) -> list[str]:
        report = schedule.build_report(config=str(FIXTURES / "configs" / "hf_deepspeed_zero2.json"), num_rows=1000,
                                       world_size=world_size, select=["LR016"], engine="builtin")
        return [f.code for f in report.findings]

    assert codes(1) == ["LR016"] and codes(2) == []


# axolotl's strategy loaders log this and return None (prompt_strategies/dpo/__init__.py:
# LOG.warning(f"unable to load strategy {strategy}")); the caller then calls the None.
AXOLOTL_STRATEGY = ("[2025-06-01 10:00:01,123] [WARNING] [axolotl.prompt_strategies.dpo.load:31] [PID:77] "
                    "unable to load strategy my_rewards.format_reward")
NONE_CALLED = "TypeError: 'NoneType' object is not callable"
# hf_xet's error, as users report it (huggingface/xet-core issues 394 and 444)
CAS_ERROR = "RuntimeError: Data processing error: CAS service error : IO Error: Timer expired"


def test_an_unloadable_strategy_is_named_at_its_warning_with_the_error_after_it(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(f"{AXOLOTL_STRATEGY}\nTraceback (most recent call last):\n"
                   '  File "/workspace/axolotl/src/axolotl/utils/data/rl.py", line 97, in _map_dataset\n'
                   f"{NONE_CALLED}\n", encoding="utf-8")
    finding = crash(log)
    assert finding.location.line == 1 and "my_rewards.format_reward" in finding.message
    assert "line 4" in finding.message and "python -c" in finding.hint


def test_the_strategy_warning_alone_is_not_a_crash(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(f"{AXOLOTL_STRATEGY}\n{{'loss': 1.9, 'learning_rate': 2e-05, 'epoch': 0.5}}\n", encoding="utf-8")
    assert not [f for f in build_report(str(log)).findings if f.code == "RN040"]


def test_a_none_called_without_the_strategy_warning_is_not_named_as_one(tmp_path):
    log = tmp_path / "console.log"
    log.write_text(f"{{'loss': 1.9, 'learning_rate': 2e-05, 'epoch': 0.5}}\n{NONE_CALLED}\n", encoding="utf-8")
    assert "does not recognise" in crash(log).message


def test_the_xet_cas_error_names_hf_hub_disable_xet(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("Fetching 4 files:  25%|##5       | 1/4\n" + CAS_ERROR + "\n", encoding="utf-8")
    finding = crash(log)
    assert finding.location.line == 2 and "Xet" in finding.message and "HF_HUB_DISABLE_XET=1" in finding.hint
