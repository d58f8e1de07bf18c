"""The memory of common GPUs as PyTorch sees it (``torch.cuda.mem_get_info()`` total, in GiB).

A card sold as "80 GB" gives 79.2 GiB to a process; the values are the totals the driver reports
(nvidia-smi's MiB / 1024), read from the cards' public specifications and, for the H100, measured
(fixtures/memory-goldens: 81,559 MiB).
"""

from __future__ import annotations

import math

from mldebug_cli.core.errors import UsageError

GIB = 1024**3

GPUS: dict[str, float] = {
    "T4-16GB": 15.0,
    "V100-16GB": 15.8,
    "V100-32GB": 31.7,
    "A10G-24GB": 22.0,
    "L4-24GB": 22.0,
    "RTX3090-24GB": 23.7,
    "RTX4090-24GB": 23.6,
    "RTX5090-32GB": 31.4,
    "A6000-48GB": 47.4,
    "L40S-48GB": 44.4,
    "A100-40GB": 39.4,
    "A100-80GB": 79.2,
    "H100-80GB": 79.6,
    "H200-141GB": 139.8,
    "B200-180GB": 178.4,
    "MI300X-192GB": 191.5,
}


MAX_GIB = 1 << 20  # a mebi-GiB: more than any GPU or node; NaN, infinity and 0 are not sizes


def gib_flag(flag: str, value: float) -> float:
    """A GiB flag (``--gpu-memory``, ``--host-memory``): a finite number above 0 and at most MAX_GIB."""
    if not math.isfinite(value) or not 0 < value <= MAX_GIB:
        raise UsageError(f"{flag} must be a number of GiB above 0 and at most {MAX_GIB:,}, got {value}")
    return value


def gpu_memory(name: str | None, memory_gib: float | None) -> tuple[str, float] | None:
    """The GPU to judge against: ``--gpu NAME`` (case and separators ignored) or ``--gpu-memory GIB``."""
    if name and memory_gib is not None:
        raise UsageError("give --gpu or --gpu-memory, not both")
    if memory_gib is not None:
        gib_flag("--gpu-memory", memory_gib)
        return f"{memory_gib:g} GiB", float(memory_gib)
    if not name:
        return None
    wanted = _key(name)
    matches = [n for n in GPUS if _key(n) == wanted] or [n for n in GPUS if _key(n).startswith(wanted)]
    if len(matches) != 1:
        known = ", ".join(GPUS)
        what = "is ambiguous" if matches else "is not a GPU mldebug knows"
        raise UsageError(f"--gpu {name} {what}", f"one of: {known}; or give --gpu-memory GIB")
    return matches[0], GPUS[matches[0]]


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())
