"""N runs side by side: a runs × tasks matrix of p̂, the variance across runs, trends, and "since run X" filters.

Pure numpy on the core's per-task statistics: no Textual, no Rich (the matrix
screen, :mod:`flaketui.app.screens.matrix`, draws it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flaketui.model import natural_ranks
from flaketui.output.columns import EPS
from flaketui.stats.arrays import Bools, Floats, Ints
from flaketui.stats.suite import TaskStats

SPARK = "▁▂▃▄▅▆▇█"
"""Eight levels of a sparkline: p̂ = 0 is the lowest, p̂ = 1 the highest."""


@dataclass(frozen=True)
class RunMatrix:
    """p̂ of every task (rows) in every run (columns, in load order); NaN where a run lacks it."""

    runs: list[str]
    tasks: list[str]
    p_hat: Floats
    """tasks × runs."""
    n: Ints
    """Non-errored trials, tasks × runs (0 where a run lacks the task)."""

    @property
    def flaky(self) -> Bools:
        """tasks × runs: the task both passed and failed in that run (0 < p̂ < 1)."""
        p = np.nan_to_num(self.p_hat, nan=0.0)
        return (p > EPS) & (p < 1 - EPS)

    @property
    def variance(self) -> Floats:
        """Variance of p̂ across the runs that have the task (population variance; NaN when fewer
        than two runs have it)."""
        have = ~np.isnan(self.p_hat)
        count = have.sum(axis=1)
        p = np.where(have, self.p_hat, 0.0)
        mean = p.sum(axis=1) / np.maximum(count, 1)
        var = (np.where(have, self.p_hat - mean[:, None], 0.0) ** 2).sum(axis=1) / np.maximum(count, 1)
        return np.where(count >= 2, var, np.nan)

    def order(self) -> Ints:
        """Rows by variance across runs, largest first (missing last), then by name in natural
        order (``task-2`` before ``task-10``)."""
        var = self.variance
        names = natural_ranks(self.tasks)
        missing = np.isnan(var)
        return np.lexsort((names, -np.nan_to_num(var, nan=0.0), missing))

    def newly_flaky(self, since: int) -> Bools:
        """Tasks stable (p̂ 0 or 1) in run ``since`` and flaky in the last run."""
        stable = ~np.isnan(self.p_hat[:, since]) & ~self.flaky[:, since]
        return stable & self.flaky[:, -1]

    def newly_failing(self, since: int) -> Bools:
        """Tasks that passed every trial in run ``since`` and failed at least one in the last run."""
        before, last = self.p_hat[:, since], self.p_hat[:, -1]
        with np.errstate(invalid="ignore"):
            return (before >= 1 - EPS) & (last < 1 - EPS)


def distinguishing_parts(runs: Sequence[str]) -> list[str]:
    """Each run name without the prefix and suffix all the names share, cut back to a word
    boundary (``-``, ``_``, ``.``, ``/``, `` ``, ``:``), so that short column headers tell
    the runs apart: ``orch-claude-v2``, ``orch-gpt-v2`` → ``claude``, ``gpt``. A name
    that would be left empty keeps its whole text.

    >>> distinguishing_parts(["orch-claude-v2", "orch-gpt-v2", "orch-azure-v2"])
    ['claude', 'gpt', 'azure']
    >>> distinguishing_parts(["r1", "r2"])
    ['r1', 'r2']
    """
    if len(runs) < 2:
        return list(runs)
    prefix = os.path.commonprefix(list(runs))
    suffix = os.path.commonprefix([r[::-1] for r in runs])[::-1]
    cut_front = max((i + 1 for i, ch in enumerate(prefix) if ch in _BOUNDARY), default=0)
    cut_back = max((i + 1 for i, ch in enumerate(suffix[::-1]) if ch in _BOUNDARY), default=0)
    parts = []
    for r in runs:
        part = r[cut_front:len(r) - cut_back] if cut_front + cut_back < len(r) else ""
        parts.append(part or r)
    return parts


_BOUNDARY = frozenset("-_./ :")


def run_matrix(stats: Sequence[TaskStats]) -> RunMatrix:
    """The matrix of the runs' p̂ over every task any run has (in first-seen order)."""
    index: dict[str, int] = {}
    for st in stats:
        for t in st.tasks:
            index.setdefault(t, len(index))
    p = np.full((len(index), len(stats)), np.nan)
    n = np.zeros((len(index), len(stats)), dtype=np.int64)
    for j, st in enumerate(stats):
        rows = np.fromiter((index[t] for t in st.tasks), dtype=np.int64, count=len(st.tasks))
        p[rows, j] = st.p_hat
        n[rows, j] = st.n
    return RunMatrix([st.run for st in stats], list(index), p, n)


def sparkline(values: Floats) -> str:
    """One character per run: the level of p̂ in [0, 1] (a space where the run lacks the task).

    Examples
    --------
    >>> sparkline(np.array([0.0, 0.5, 1.0, np.nan]))
    '▁▅█ '
    """
    levels = np.clip(np.round(np.nan_to_num(values, nan=0.0) * (len(SPARK) - 1)), 0, len(SPARK) - 1)
    return "".join(" " if v != v else SPARK[int(level)] for v, level in zip(values.tolist(), levels.tolist(),
                                                                            strict=True))
