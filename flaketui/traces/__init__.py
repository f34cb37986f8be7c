"""Trace comparison: normalise steps, align two traces, first divergence, fork map, diff; why a task flakes.

Pure Python (difflib): no Textual, no Rich.
"""

from flaketui.traces.align import (
    AlignedRow,
    Alignment,
    WordDiff,
    align,
    align_traces,
    best_pair,
    common_prefix,
    first_divergence,
    pair_keys,
    step_changes,
    task_divergence,
    word_diff,
)
from flaketui.traces.burst import Burst, scan_bursts, trial_time
from flaketui.traces.causes import (
    CAUSES,
    CauseSuggestion,
    Evidence,
    apply_bursts,
    breakdown,
    breakdown_line,
    classify_pair,
    error_text,
    find_bursts,
    flaky_rows,
    suggest_causes,
    suggest_task,
    suite_bursts,
    suite_failure_modes,
    trial_grades,
)
from flaketui.traces.diff import ContextRow, StepChange, TraceDiff, change_text, diff_traces
from flaketui.traces.failure_modes import FailureMode, TrialSignature, failure_modes
from flaketui.traces.forkmap import ForkNode, build_fork_map, chain, split_points
from flaketui.traces.forktest import Branch, ForkTest, decisive_fork, fork_tests
from flaketui.traces.normalise import NOISE_KEYS, Normaliser, describe
from flaketui.traces.steps import ACTIONS, ALL, MODES, action_keys, default_mode, step_line, tool_calls
from flaketui.traces.structdiff import MISSING, FieldChange, structural_diff

__all__ = [
    "ACTIONS", "ALL", "CAUSES", "MISSING", "MODES", "NOISE_KEYS", "AlignedRow", "Alignment", "Branch", "Burst",
    "CauseSuggestion", "ContextRow", "Evidence", "FailureMode", "FieldChange", "ForkNode", "ForkTest", "Normaliser",
    "StepChange", "TraceDiff", "TrialSignature", "WordDiff", "action_keys", "align", "align_traces", "apply_bursts",
    "best_pair", "breakdown", "breakdown_line", "failure_modes", "find_bursts", "scan_bursts", "suite_bursts",
    "suite_failure_modes", "trial_grades", "trial_time",
    "build_fork_map", "chain", "change_text", "classify_pair", "common_prefix",
    "decisive_fork", "default_mode", "describe", "diff_traces", "error_text", "first_divergence", 
    "flaky_rows", "fork_tests", "pair_keys", "split_points", "step_changes", "step_line",
    "structural_diff", "suggest_causes", "suggest_task", "task_divergence", "tool_calls", "word_diff",
]
