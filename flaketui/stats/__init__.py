"""Statistics of trial outcomes: pure numpy/scipy, no Textual, no Rich.

The names below are imported from their modules when first used (PEP 562), so a command
that needs only the per-task statistics (``report``) does not import the paired tests
(about 13 ms of a warm report's start). :func:`~flaketui.stats.verdict.verdict` is imported at
once: its name is its module's too, which an import of the module would otherwise put here.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from flaketui.stats.verdict import verdict

_HOMES = {
    "estimators": ("Interval", "flakiness", "p_hat", "pass_at_k", "pass_hat_k",
                   "pass_hat_k_interval", "rule_of_three", "wilson_interval"),
    "paired": ("PairedComparison", "compare_runs", "sign_test"),
    "suite": ("GateResult", "MeanEstimate", "SuiteSummary", "TaskStats", "default_k", "gate",
              "mean_estimate", "summarise", "task_stats"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "GateResult", "Interval", "MeanEstimate", "PairedComparison", "SuiteSummary", "TaskStats",
    "compare_runs", "default_k", "flakiness", "gate", "mean_estimate", "p_hat",
    "pass_at_k", "pass_hat_k", "pass_hat_k_interval", "rule_of_three", "sign_test", "summarise",
    "task_stats", "verdict", "wilson_interval",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
