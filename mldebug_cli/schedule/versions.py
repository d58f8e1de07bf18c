"""Which framework version's semantics apply, read from package metadata without importing it."""

from __future__ import annotations

import re
from importlib import metadata

# the newest transformers whose step counting and schedulers the built-in engine was checked against
NEWEST_CHECKED_TRANSFORMERS = "5.23.0"
_DISTRIBUTIONS = {
    "transformers": "transformers",
    "trl": "trl",
    "axolotl": "axolotl",
    "llama-factory": "llamafactory",
    "torchtune": "torchtune",
}


def installed(framework: str) -> str | None:
    try:
        return metadata.version(_DISTRIBUTIONS.get(framework, framework))
    except metadata.PackageNotFoundError:
        return None


def parse(version: str | None) -> tuple[int, ...]:
    """``"5.23.0.dev0"`` -> ``(5, 23, 0)``; None means the newest checked version."""
    numbers = re.findall(r"\d+", (version or NEWEST_CHECKED_TRANSFORMERS).split("+")[0])[:3]
    return tuple(int(n) for n in numbers)


def warmup_ratio_removed(transformers_version: str | None) -> bool:
    return parse(transformers_version) >= (5, 2)


def warmup_ratio_deprecated(transformers_version: str | None) -> bool:
    return (5, 0) <= parse(transformers_version) < (5, 2)


def logs_next_step_lr(transformers_version: str | None) -> bool:
    """Up to 4.50 the Trainer read the LR after stepping the scheduler: it logged step k+1's LR."""
    return parse(transformers_version) < (4, 51)
