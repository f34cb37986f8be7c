"""Trace comparison: normalise steps, align two traces, first divergence, fork map.

Pure Python (difflib): no Textual, no Rich.
"""

from flaketui.traces.align import (
    AlignedRow,
    Alignment,
    FieldChange,
    WordDiff,
    align,
    align_traces,
    best_pair,
    common_prefix,
    first_divergence,
    step_changes,
    task_divergence,
    word_diff,
)
from flaketui.traces.forkmap import ForkNode, build_fork_map, chain, split_points
from flaketui.traces.normalise import Normaliser, describe

__all__ = [
    "AlignedRow", "Alignment", "FieldChange", "ForkNode", "Normaliser", "WordDiff", "align",
    "align_traces", "best_pair", "build_fork_map", "chain", "common_prefix", "describe",
    "first_divergence", "split_points", "step_changes", "task_divergence", "word_diff",
]
