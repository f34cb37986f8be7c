"""Structural diff of two values: the dotted paths where they differ.

Objects compare key by key (key order never counts), lists position by position,
numbers by value within a tolerance, anything else by equality. The walk keeps
its own stack, so nesting depth is limited by memory, not by Python's recursion
limit. Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""Stands for a field that one of two steps does not have."""


@dataclass(frozen=True)
class FieldChange:
    """A field that differs between two steps.

    ``path`` is dotted, list positions included (``tool_calls.0.arguments.reservation_id``);
    it is empty when the steps themselves differ as wholes (strings, or values of
    different kinds). ``a`` or ``b`` is :data:`MISSING` when only one step has the field.
    """

    path: str
    a: Any
    b: Any


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same_value(a: Any, b: Any, tolerance: float = 0.0) -> bool:
    """Two leaves are equal: numbers within ``tolerance`` (absolute or relative), else ``==``.

    Numbers compare by value (``1 == 1.0``); a bool is not a number here; NaN equals NaN.
    """
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    return type(a) is type(b) and a == b


def structural_diff(a: Any, b: Any, tolerance: float = 0.0, path: str = "") -> list[FieldChange]:
    """Every leaf where ``a`` and ``b`` differ, depth first, A's keys in order then B's.

    Args:
        a: A JSON-like value (dicts, lists, scalars).
        b: The other.
        tolerance: Numbers closer than this (absolutely or relative to the larger) are equal.
        path: Prefix of every change's path.

    Returns:
        The changes; an object or list only one side has is one change at its
        path, a key only one side has is one change with :data:`MISSING` on the other
        (unless its value is null: null and absent are the same).
    """
    out: list[FieldChange] = []
    stack: list[tuple[str, Any, Any]] = [(path, a, b)]
    while stack:
        p, x, y = stack.pop()
        if isinstance(x, dict) and isinstance(y, dict):
            keys = list(x) + [k for k in y if k not in x]
            stack.extend((_join(p, k), x.get(k, MISSING), y.get(k, MISSING)) for k in reversed(keys))
        elif isinstance(x, list) and isinstance(y, list):
            n = max(len(x), len(y))
            stack.extend((_join(p, i), x[i] if i < len(x) else MISSING, y[i] if i < len(y) else MISSING)
                         for i in reversed(range(n)))
        elif x is MISSING or y is MISSING or not same_value(x, y, tolerance):
            if (x is MISSING or x is None) and (y is MISSING or y is None):
                continue  # null on one side, absent on the other: no difference
            out.append(FieldChange(p, x, y))
    return out


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)
