"""One way to write numbers in messages, the text report and the HTML report.

- counts with thousands separators and the noun agreeing: ``plural(1, "row")`` -> ``1 row``, ``2,048 rows``;
- learning rates in 4 significant digits: ``7.612e-06``, ``0.0002``, ``4.9e-06`` (never ``4.9000000000000005e-06``);
- epochs rounded to 2 decimals, never rounded onto a whole number they are not (``2.997``, not ``3``);
- other measured values in at most 4 significant digits, whole numbers as counts.

JSON, SARIF and CSV keep the exact values; only what people read goes through here.
"""

from __future__ import annotations

import math

_IRREGULAR = {"is": "are", "was": "were", "this": "these", "it": "they", "has": "have"}


def count(n: int) -> str:
    """``12000`` -> ``12,000``."""
    return f"{n:,}"


def noun(n: float, singular: str, plural_form: str | None = None) -> str:
    """The noun agreeing with ``n``; for a phrase the last word changes (``tool definition`` -> ``tool definitions``)."""
    if n == 1:
        return singular
    if plural_form is not None:
        return plural_form
    if singular in _IRREGULAR:
        return _IRREGULAR[singular]
    return singular + ("es" if singular.endswith(("s", "x", "sh")) else "s")


def plural(n: float, singular: str, plural_form: str | None = None) -> str:
    """``plural(1, "row")`` -> ``1 row``; ``plural(3, "check")`` -> ``3 checks``; ``plural(2, "entry", "entries")``."""
    shown = count(n) if isinstance(n, int) else number(n)
    return f"{shown} {noun(n, singular, plural_form)}"


def number(value: float | int | None, digits: int = 4) -> str:
    """A measured value: whole numbers as counts, others in at most ``digits`` significant digits."""
    if value is None:
        return "?"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return count(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return count(int(value))
    return f"{value:.{digits}g}"


def lr(value: float | None) -> str:
    """A learning rate: 4 significant digits (``7.612e-06``, ``0.0002``, ``0``)."""
    if value is None:
        return "?"
    if value == 0:
        return "0"
    return f"{value:.4g}"


def epochs(value: float | None) -> str:
    """Epochs rounded to 2 decimals, but never rounded onto a whole number they fall short of or pass."""
    if value is None:
        return "?"
    rounded = round(value, 2)
    if rounded == round(value) and abs(value - round(value)) > 1e-9:
        return f"{value:.4g}"
    return f"{rounded:g}"


def percent(share: float) -> str:
    """``0.031`` -> ``3.1%``; shares below 1% keep one significant digit (``0.04%``)."""
    pct = share * 100
    if pct == 0 or pct >= 1:
        return f"{pct:.3g}%"
    return f"{pct:.1g}%"
