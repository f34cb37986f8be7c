"""Statistics of trial outcomes: pure numpy/scipy, no Textual, no Rich."""

from flaketui.stats.estimators import (
    Interval,
    classify,
    flakiness,
    p_hat,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_interval,
    rule_of_three,
    wilson_interval,
)
from flaketui.stats.paired import PairedComparison, compare_runs, sign_test
from flaketui.stats.suite import (
    GateResult,
    MeanEstimate,
    SuiteSummary,
    TaskStats,
    default_k,
    gate,
    mean_estimate,
    summarise,
    task_stats,
)
from flaketui.stats.verdict import verdict

__all__ = [
    "GateResult", "Interval", "MeanEstimate", "PairedComparison", "SuiteSummary", "TaskStats",
    "classify", "compare_runs", "default_k", "flakiness", "gate", "mean_estimate", "p_hat",
    "pass_at_k", "pass_hat_k", "pass_hat_k_interval", "rule_of_three", "sign_test", "summarise",
    "task_stats", "verdict", "wilson_interval",
]
