"""How numbers are written, in one place for the command line and the app alike.

No Textual, no Rich: plain strings.
"""

from __future__ import annotations

import math
from typing import Any

DASH = "—"
"""Shown for a value that does not exist (k > n, no trials)."""


def is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fixed(x: Any, digits: int = 3, sign: str = "") -> str:
    """``x`` with ``digits`` decimals and never a signed zero: a value that rounds to zero is
    ``0.000`` (``+0.000`` with ``sign="+"``), not ``-0.000`` (a difference of means equal in
    exact arithmetic often comes out as -3e-17)."""
    return f"{round(float(x), digits) + 0.0:{sign}.{digits}f}"


def rate(x: Any, digits: int = 3) -> str:
    """A rate in [0, 1] as a decimal, e.g. ``0.318``."""
    return DASH if is_missing(x) else fixed(x, digits)


def interval(low: Any, high: Any, digits: int = 2) -> str:
    """An interval as ``[0.03, 1.00]``."""
    if is_missing(low) or is_missing(high):
        return DASH
    return f"[{fixed(low, digits)}, {fixed(high, digits)}]"


def suite_interval(est: Any) -> str:
    """A suite figure's interval over tasks (a :class:`~flaketui.stats.suite.MeanEstimate`:
    ``ci``, ``tasks``). One of no width says why instead of ``[0.00, 0.00]``: every task has the
    same value, so the tasks show no spread to draw an interval from (with few tasks that says
    little about the next ones)."""
    low, high = est.ci
    if is_missing(low) or is_missing(high):
        return DASH
    if float(high) - float(low) < 1e-12:
        return f"(no interval: all {est.tasks} tasks {rate(low)})"
    return interval(low, high)


def pvalue(p: float) -> str:
    """A p-value with three significant digits (``0.549``, ``0.0117``, ``1.00``)."""
    if is_missing(p):
        return DASH
    if p < 1e-4:
        return f"{p:.2e}"
    return f"{p:.3g}" if p < 1 else "1.00"


def number(x: Any) -> str:
    """A metric value compactly: ``1,234``, ``0.012``, ``12.5``."""
    if is_missing(x):
        return DASH
    v = float(x)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def json_float(x: Any) -> float | None:
    """A float for the JSON contract: NaN becomes ``null``."""
    return None if is_missing(x) else float(x) + 0.0  # + 0.0: no -0.0


def json_interval(low: Any, high: Any) -> list[float | None] | None:
    """An interval for the JSON contract: ``[low, high]``, or ``null`` when missing."""
    if is_missing(low) or is_missing(high):
        return None
    return [float(low), float(high)]
