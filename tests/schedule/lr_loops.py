"""Small real torch training loops, each making one LR-schedule mistake, logging like the HF Trainer.

Every loop trains a tiny linear model on random data with a real optimizer and a real
``transformers.get_scheduler`` scheduler, and writes ``trainer_state.json`` (``log_history`` with
``step`` and ``learning_rate`` of every optimizer step, ``max_steps``). ``OVERLAY_CONFIG`` is the
TrainingArguments config all of them were meant to follow; ``fixtures/trainer_state/`` holds their
output (``regenerate_fixtures`` rewrites it).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

OVERLAY_CONFIG = {
    "learning_rate": 1e-3,
    "lr_scheduler_type": "linear",
    "warmup_steps": 3,
    "per_device_train_batch_size": 2,
    "gradient_accumulation_steps": 4,
    "num_train_epochs": 2,
    "logging_steps": 1,
}
OVERLAY_ROWS = 40  # 20 micro-batches per epoch, 5 optimizer steps per epoch, T = 10
PER_PROCESS_CONFIG = {**OVERLAY_CONFIG, "gradient_accumulation_steps": 1, "num_train_epochs": 1, "warmup_steps": 2}
PER_PROCESS_WORLD_SIZE = 2  # 40 rows / batch 2 / 2 processes: 10 optimizer steps per process
RESUMED_EPOCHS = 3  # the resumed half runs with num_train_epochs 3 instead of 2
RESUME_AFTER_STEP = 4
POISONED_STEPS = (3, 4, 7)  # optimizer steps whose batch overflows: the loss scaler skips them
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trainer_state"


def total_steps(config: dict, rows: int = OVERLAY_ROWS, world_size: int = 1) -> int:
    batches = math.ceil(math.ceil(rows / config["per_device_train_batch_size"]) / world_size)
    return math.ceil(batches / config["gradient_accumulation_steps"]) * config["num_train_epochs"]


def write_state(path: Path, logged: list[tuple[int, float]], max_steps: int, epochs: float) -> Path:
    state = {
        "global_step": logged[-1][0],
        "max_steps": max_steps,
        "num_train_epochs": epochs,
        "logging_steps": 1,
        "log_history": [{"step": step, "learning_rate": lr, "loss": 0.0} for step, lr in logged],
    }
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    return path


def _setup(config: dict, total: int, rows: int = OVERLAY_ROWS, seed: int = 0):
    import torch
    from transformers import get_scheduler

    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["learning_rate"])
    scheduler = get_scheduler(config["lr_scheduler_type"], optimizer, config["warmup_steps"], total)
    inputs, targets = torch.randn(rows, 4), torch.randn(rows, 1)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(inputs, targets), batch_size=config["per_device_train_batch_size"]
    )
    return model, optimizer, scheduler, loader


def _loss(model, batch):
    import torch

    inputs, targets = batch
    return torch.nn.functional.mse_loss(model(inputs), targets)


def correct_loop(path: Path) -> Path:
    """What the Trainer does: step the scheduler once per optimizer step, log the LR the step used."""
    config, total = OVERLAY_CONFIG, total_steps(OVERLAY_CONFIG)
    model, optimizer, scheduler, loader = _setup(config, total)
    accumulation, logged = config["gradient_accumulation_steps"], []
    for _ in range(config["num_train_epochs"]):
        for i, batch in enumerate(loader):
            (_loss(model, batch) / accumulation).backward()
            if (i + 1) % accumulation == 0 or i + 1 == len(loader):
                optimizer.step()
                logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
                scheduler.step()
                optimizer.zero_grad()
    return write_state(path, logged, total, config["num_train_epochs"])


def per_micro_batch_loop(path: Path) -> Path:
    """Mistake: ``scheduler.step()`` on every micro-batch instead of every optimizer step."""
    config, total = OVERLAY_CONFIG, total_steps(OVERLAY_CONFIG)
    model, optimizer, scheduler, loader = _setup(config, total)
    accumulation, logged = config["gradient_accumulation_steps"], []
    for _ in range(config["num_train_epochs"]):
        for i, batch in enumerate(loader):
            (_loss(model, batch) / accumulation).backward()
            if (i + 1) % accumulation == 0:
                optimizer.step()
                logged.append((len(logged) + 1, optimizer.param_groups[0]["lr"]))
                optimizer.zero_grad()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns about this very mistake on the first micro-batch
                scheduler.step()
    return write_state(path, logged, total, config["num_train_epochs"])


def logged_after_step_loop(path: Path) -> Path:
    """Mistake: the LR is read after ``scheduler.step()`` (transformers <= 4.50 did this): the next step's LR."""
    config, total = OVERLAY_CONFIG, total_steps(OVERLAY_CONFIG)
    model, optimizer, scheduler, loader = _setup(config, total)
    accumulation, logged = config["gradient_accumulation_steps"], []
    for _ in range(config["num_train_epochs"]):
        for i, batch in enumerate(loader):
            (_loss(model, batch) / accumulation).backward()
            if (i + 1) % accumulation == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
    return write_state(path, logged, total, config["num_train_epochs"])


def resumed_loop(path: Path) -> Path:
    """Mistake: resume from a checkpoint at step 4 with num_train_epochs 3 instead of 2.

    The second half builds its scheduler for the new total and loads the checkpoint's scheduler
    state, as ``Trainer.train(resume_from_checkpoint=...)`` does; its log keeps the first half's.
    """
    first, total = OVERLAY_CONFIG, total_steps(OVERLAY_CONFIG)
    model, optimizer, scheduler, loader = _setup(first, total)
    accumulation, logged = first["gradient_accumulation_steps"], []
    checkpoint = None
    for i, batch in enumerate(loader):
        (_loss(model, batch) / accumulation).backward()
        if (i + 1) % accumulation == 0:
            optimizer.step()
            logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
            scheduler.step()
            optimizer.zero_grad()
            if len(logged) == RESUME_AFTER_STEP:
                checkpoint = (model.state_dict(), optimizer.state_dict(), scheduler.state_dict())
                break
    second = {**first, "num_train_epochs": RESUMED_EPOCHS}
    new_total = total_steps(second)
    model, optimizer, scheduler, loader = _setup(second, new_total)
    model.load_state_dict(checkpoint[0])
    optimizer.load_state_dict(checkpoint[1])
    scheduler.load_state_dict(checkpoint[2])
    windows = [batch for _ in range(RESUMED_EPOCHS) for batch in loader][RESUME_AFTER_STEP * accumulation:]
    for i, batch in enumerate(windows):
        (_loss(model, batch) / accumulation).backward()
        if (i + 1) % accumulation == 0:
            optimizer.step()
            logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
            scheduler.step()
            optimizer.zero_grad()
    return write_state(path, logged, new_total, RESUMED_EPOCHS)


def skipped_fp16_loop(path: Path) -> Path:
    """fp16 loss scaling: windows whose gradients overflow make the scaler skip the optimizer step, and
    then the scheduler is not stepped either (as in the HF Trainer and accelerate), while the step
    counter moves on."""
    import torch

    config, total = OVERLAY_CONFIG, total_steps(OVERLAY_CONFIG)
    model, optimizer, scheduler, loader = _setup(config, total)
    scaler = torch.amp.GradScaler("cpu")
    accumulation, logged = config["gradient_accumulation_steps"], []
    for _ in range(config["num_train_epochs"]):
        for i, (inputs, targets) in enumerate(loader):
            if len(logged) + 1 in POISONED_STEPS and i % accumulation == 0:
                inputs = inputs * 1e38  # the scaled loss overflows to inf, as an fp16 activation would
            scaler.scale(torch.nn.functional.mse_loss(model(inputs), targets) / accumulation).backward()
            if (i + 1) % accumulation == 0:
                scale_before = scaler.get_scale()
                scaler.step(optimizer)
                scaler.update()
                logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
                if scaler.get_scale() >= scale_before:  # a skipped step lowers the scale
                    scheduler.step()
                optimizer.zero_grad()
    return write_state(path, logged, total, config["num_train_epochs"])


def _per_process_worker(path: str) -> None:
    import torch
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    config = PER_PROCESS_CONFIG
    loader_len = math.ceil(OVERLAY_ROWS / config["per_device_train_batch_size"] / accelerator.num_processes)
    total = loader_len * config["num_train_epochs"]  # per-process step count, as most scripts compute it
    model, optimizer, scheduler, loader = _setup(config, total)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    logged = []
    for _ in range(config["num_train_epochs"]):
        for batch in loader:
            accelerator.backward(_loss(model, batch))
            optimizer.step()
            logged.append((len(logged) + 1, scheduler.get_last_lr()[0]))
            scheduler.step()  # the prepared scheduler steps once per process
            optimizer.zero_grad()
    if accelerator.is_main_process:
        write_state(Path(path), logged, total, config["num_train_epochs"])
    torch.distributed.barrier()


def per_process_loop(path: Path) -> Path:
    """Mistake: a scheduler built for the per-process step count and prepared by accelerate, on 2 processes.

    Launched from a fresh interpreter: forked workers would inherit the caller's accelerate state.
    """
    import subprocess
    import sys

    subprocess.run([sys.executable, __file__, "per_process", str(path)], check=True, capture_output=True, timeout=300)
    return path


def _launch_per_process(path: str) -> None:
    from accelerate import debug_launcher

    debug_launcher(_per_process_worker, args=(path,), num_processes=PER_PROCESS_WORLD_SIZE)


LOOPS = {
    "correct": correct_loop,
    "per_micro_batch": per_micro_batch_loop,
    "per_process": per_process_loop,
    "logged_after_step": logged_after_step_loop,
    "resumed": resumed_loop,
    "skipped_fp16": skipped_fp16_loop,
}


def regenerate_fixtures() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, loop in LOOPS.items():
        loop(FIXTURES / f"{name}.json")
    (FIXTURES / "overlay_config.json").write_text(json.dumps(OVERLAY_CONFIG, indent=2) + "\n", encoding="utf-8")
    (FIXTURES / "per_process_config.json").write_text(json.dumps(PER_PROCESS_CONFIG, indent=2) + "\n",
                                                       encoding="utf-8")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["per_process"]:
        _launch_per_process(sys.argv[2])
    else:
        regenerate_fixtures()
