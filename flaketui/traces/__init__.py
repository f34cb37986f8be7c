"""Trace comparison: normalise steps, align two traces, first divergence, fork map, diff.

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
from flaketui.traces.diff import ContextRow, StepChange, TraceDiff, change_text, diff_traces
from flaketui.traces.forkmap import ForkNode, build_fork_map, chain, split_points
from flaketui.traces.normalise import NOISE_KEYS, Normaliser, describe
from flaketui.traces.steps import ACTIONS, ALL, MODES, action_keys, default_mode, step_line, tool_calls
from flaketui.traces.structdiff import MISSING, FieldChange, structural_diff

__all__ = [
    "ACTIONS", "ALL", "MISSING", "MODES", "NOISE_KEYS", "AlignedRow", "Alignment", "ContextRow", "FieldChange",
    "ForkNode", "Normaliser", "StepChange", "TraceDiff", "WordDiff", "action_keys", "align", "align_traces",
    "best_pair", "build_fork_map", "chain", "change_text", "common_prefix", "default_mode", "describe",
    "diff_traces", "first_divergence", "pair_keys", "split_points", "step_changes", "step_line",
    "structural_diff", "task_divergence", "tool_calls", "word_diff",
]
