"""Run crashed: a console log (or a captured stderr) ends in an error; the cause and the fix, named.

What it finds
    The error lines a console log holds after its last metric record (all of them when it has none): Python
    exception lines, the elastic launcher's ``exitcode: -9``, the shell's ``Killed``, NCCL's watchdog
    timeout, ``terminate called after throwing``. The first one that matches the table below is the root
    cause (later lines are the consequences: the other ranks' NCCL aborts, torchrun's ``ChildFailedError``);
    with no match the last error is named as not recognised, with its line. axolotl's warning that it could
    not find a turn's content in the rendered template is reported wherever it is (the run goes on, trained
    on the wrong tokens). The table, from the frameworks' own messages and the training-stability guide's
    common errors (axolotl ``docs/training_stability.qmd``):

    - ``exitcode: -9``, ``Signal 9 (SIGKILL)``, ``Killed``: host RAM, the kernel's OOM killer
      (torch.distributed.elastic reports a worker killed by signal 9 as exit code -9);
      ``DefaultCPUAllocator: can't allocate memory``, ``MemoryError``: host RAM, an allocation refused;
    - ``CUDA out of memory`` / ``torch.OutOfMemoryError``: GPU memory (torch's caching allocator);
    - ``NCCL communicator was aborted``, ``DistBackendError``, NCCL errors: a collective failed, usually
      because another rank died first; ``Watchdog caught collective operation timeout``: a hang that the
      NCCL watchdog ended (ProcessGroupNCCL, ``timeout`` default 10 min, ``ddp_timeout`` 30 min in HF);
    - ``Asking to pad but the tokenizer does not have a padding token`` (transformers' tokenizer ``pad``);
    - ``generation_batch_size (N) must be divisible by num_generations (G)`` (TRL ``GRPOConfig``; before
      0.18 "must be evenly divisible by the number of generations per prompt");
    - ``'DummyOptim' object has no attribute 'step'``: accelerate's stand-in optimizer for a DeepSpeed
      config that names one, stepped without DeepSpeed running (one GPU, plain ``python``);
    - ``'weight' must be 2-D``: FSDP1 flattened parameters met outside its forward (generation);
    - ``CheckpointError`` (torch.utils.checkpoint): non-reentrant checkpointing whose recomputation sees
      other tensors, as ZeRO-3's partitioned parameters;
    - ``Got unsupported ScalarType BFloat16``: a bf16 tensor turned into numpy (weight sync to vLLM);
    - ``Content end boundary is before start boundary`` and ``Could not find content start/end boundary``
      (axolotl's chat_template strategy): the EOS token does not match the template's end of turn;
    - ``exitcode: -7``, ``Signal 7 (SIGBUS)``, ``Bus error``, a DataLoader worker "out of shared memory": a
      process died of SIGBUS, most often because shared memory (``/dev/shm``, 64 MB in a default Docker
      container) ran out under the data-loader workers; with DeepSpeed also an outdated DeepSpeed (axolotl's
      table: ``pip install -U deepspeed``). The exit-code line is named, not the ``ChildFailedError`` wrapper;
    - ``unable to load strategy X`` followed by an error (``'NoneType' object is not callable``): axolotl's
      loader could not import the strategy or reward module X and returned None, which its caller called;
    - ``CAS service error`` (``Data processing error``): the Hub's Xet storage client (hf_xet) failed
      while downloading; ``HF_HUB_DISABLE_XET=1`` falls back to plain HTTP.

Why it matters for training
    The traceback of a crashed run is long and the line that names the cause is rarely the last one: the
    launcher and the other ranks add their own errors after it. Reading the wrong one sends people after
    NCCL settings when a rank ran out of memory.

Example
    ``line 41: the run ended in "exitcode  : -9 (pid: 3110)": host memory ran out and the kernel's OOM
    killer ended the process (signal 9)``.

Fix
    The hint of each finding gives the fix for that cause.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import run_hit
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS: dict[str, float] = {}

# (name, pattern on the error line, cause, fix); the first entry that matches a line wins for that line
CAUSES: tuple[tuple[str, re.Pattern, str, str], ...] = tuple((name, re.compile(pattern), cause, fix) for
                                                             name, pattern, cause, fix in (
    ("host-oom", r"exitcode\s*:\s*-9\b|Signal 9 \(SIGKILL\)|^Killed$|\sKilled$",
     "host memory ran out and the kernel's OOM killer ended the process (signal 9, exit code -9)",
     "use less host RAM: fewer dataloader_num_workers / dataset_num_proc, low_cpu_mem_usage or a sharded load, "
     "streaming datasets, no preprocessing copies per rank; `dmesg` shows 'Out of memory: Killed process'"),
    ("host-alloc", r"DefaultCPUAllocator: can't allocate memory|^MemoryError|\bMemoryError\b",
     "host memory ran out: an allocation on the CPU was refused",
     "use less host RAM (fewer workers and processes, streaming datasets, a sharded model load) or raise the "
     "memory limit (ulimit -v, the job's memory request)"),
    ("cuda-oom", r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory",
     "GPU memory ran out",
     "lower per_device_train_batch_size (raise gradient_accumulation_steps to keep the batch), lower max_length, "
     "turn on gradient_checkpointing, use LoRA/QLoRA; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
     "`mldebug memory` estimates the config"),
    ("nccl-timeout", r"Watchdog caught collective operation timeout",
     "a hang: a collective waited past its timeout (the ranks stopped running the same collectives: one rank "
     "in eval, save or a longer batch, or a dead peer)",
     "make every rank run the same collectives (eval and save on all ranks, equal batches); raise ddp_timeout only "
     "for a step that is legitimately slow; TORCH_NCCL_DESYNC_DEBUG=1 names the rank that fell behind"),
    ("nccl-abort", r"NCCL communicator was aborted|DistBackendError|NCCL error|ncclInternalError|ncclSystemError",
     "a collective failed: NCCL aborted the communicator (usually another rank died first: its error is the "
     "cause; else the network or driver)",
     "find the first rank's own error above; NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME / NCCL_IB_DISABLE for "
     "the interconnect"),
    ("no-pad-token", r"Asking to pad but the tokenizer does not have a padding token",
     "the tokenizer has no pad token and the collator pads",
     "set tokenizer.pad_token (a dedicated pad token, or eos_token when labels mask padding) before training; "
     "`mldebug preflight` checks it"),
    ("generation-batch", r"generation_batch_size \(\d+\) must be divisible by num_generations|must be evenly "
     r"divisible by the number of generations",
     "GRPO's generation batch does not hold whole groups of num_generations completions",
     "make per_device_train_batch_size × processes × steps_per_generation (generation_batch_size) a multiple of "
     "num_generations; `mldebug preflight` checks it"),
    ("dummy-optim", r"'DummyOptim' object has no attribute",
     "the DeepSpeed config names an optimizer, so accelerate put in its DummyOptim, but DeepSpeed is not running "
     "(one GPU, launched without deepspeed/accelerate)",
     "launch with `deepspeed` or `accelerate launch --use_deepspeed`, or drop the `deepspeed:` setting (or the "
     "config's optimizer block) for a single-GPU run"),
    ("fsdp1-flat-weight", r"'weight' must be 2-D",
     "an embedding got a flattened 1-D weight: FSDP1 (use_orig_params false) flattens parameters outside its "
     "forward, as during generation",
     "use FSDP2 (fsdp_version: 2) or fsdp_use_orig_params: true; generate inside FSDP.summon_full_params"),
    ("checkpoint-zero3", r"CheckpointError",
     "non-reentrant activation checkpointing recomputed the forward with other tensors (with DeepSpeed ZeRO-3 "
     "the parameters are partitioned outside the gather)",
     "set gradient_checkpointing_kwargs: {use_reentrant: true} with ZeRO-3, or use ZeRO-2"),
    ("bf16-numpy", r"Got unsupported ScalarType BFloat16",
     "a bfloat16 tensor was turned into numpy, which has no bfloat16 (a weight sync to vLLM, a logging or "
     "saving path)",
     "cast to float32 before .numpy() (tensor.float()), or upgrade the framework whose weight sync does it"),
    ("bus-error", r"exitcode\s*:\s*-7\b|Signal 7 \(SIGBUS\)|\bBus error\b|out of shared memory|insufficient shared memory",
     "a process died of SIGBUS (exit code -7): most often shared memory (/dev/shm) ran out under the data-loader "
     "workers (a default Docker container has 64 MB); with DeepSpeed also an outdated DeepSpeed",
     "give the job more shared memory (docker run --shm-size=16g or --ipc=host; Kubernetes: an emptyDir with "
     "medium Memory at /dev/shm) or lower dataloader_num_workers; with DeepSpeed, pip install -U deepspeed"),
    ("strategy-load", r"unable to load strategy",
     "axolotl could not import that strategy (or reward) module and used the None its loader returned, so the "
     "call failed ('NoneType' object is not callable)",
     "import the module on its own from the directory axolotl runs in (python -c \"import my_rewards\"): fix "
     "the import error, the missing dependency or the module path in the config"),
    ("cas-error", r"CAS service error",
     "the Hugging Face Hub's Xet storage client (hf_xet) failed while fetching the data or model",
     "export HF_HUB_DISABLE_XET=1 (plain HTTP downloads) and run again, or upgrade hf_xet"),
    ("template-boundary", r"Content end boundary is before start boundary|content start/end boundary",
     "axolotl could not find a turn's content in the rendered template: the tokenizer's EOS does not match the "
     "token the chat template ends turns with, so the turn's labels are wrong or dropped",
     "set the eos_token (axolotl special_tokens / eos_token) to the template's end-of-turn token, or choose the "
     "chat_template that matches the tokenizer; `mldebug inspect-data --config` shows the masks"),
))
WRAPPERS = ("ChildFailedError", "CalledProcessError", "ProcessRaisedException", "ProcessExitedException")


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    errors = subject.meta.get("errors") or ()
    if not errors:
        return
    yield from _template_warnings(subject, errors)
    last_metric = subject.meta.get("last_metric_line") or 0
    tail = [e for e in errors if e.line > last_metric and e.kind != "template-boundary"]
    if not tail:
        return
    for index, error in enumerate(tail):
        cause = _cause(error.text)
        if cause is None or cause[0] == "template-boundary":
            continue
        name, text, fix = cause
        if name == "strategy-load":  # a warning: the cause only when an error follows it
            after = [e for e in tail[index + 1:] if e.kind != "strategy-load"]
            if not after:
                continue
            text += f"; the error follows at line {after[0].line}: {_quote(after[0].text, 80)}"
        yield run_hit(subject, f"line {error.line}: the run ended in {_quote(error.text)}: {text}", fix,
                      line=error.line)
        return
    named = [e for e in tail if e.kind in ("exception", "fatal", "watchdog") and e.name not in WRAPPERS] or tail
    last = named[-1]
    yield run_hit(subject, f"line {last.line}: the run ended in {_quote(last.text)}, an error mldebug does not "
                  "recognise", "read the traceback above that line; the first error of the first rank is the cause",
                  line=last.line)


def _template_warnings(subject, errors):
    boundary = [e for e in errors if e.kind == "template-boundary"]
    if boundary:
        _name, text, fix = _cause(boundary[0].text)
        count = subject.meta.get("errors_seen", len(errors)) if len(boundary) == len(errors) else len(boundary)
        yield run_hit(subject, f"line {boundary[0].line}: {_quote(boundary[0].text)} ({count} such line"
                      f"{'s' if count != 1 else ''}): {text}", fix, line=boundary[0].line, severity=Severity.WARNING)


def _cause(text: str) -> tuple[str, str, str] | None:
    for name, pattern, cause, fix in CAUSES:
        if pattern.search(text):
            return name, cause, fix
    return None


def _quote(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[:limit - 1] + "…") + '"'
