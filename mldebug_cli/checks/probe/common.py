"""What the GP checks share: their thresholds and number formatting."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProbeContext:
    limits: Mapping[str, float] = field(default_factory=dict)  # this check's thresholds (defaults + mldebug.toml)

    def limit(self, name: str) -> float:
        return self.limits[name]


def fmt(value: float | None) -> str:
    if value is None:
        return "none"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-3):
        return f"{value:.2e}"
    return f"{value:.3g}"


def rows_text(rows, limit: int = 5) -> str:
    rows = list(dict.fromkeys(rows))
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")
