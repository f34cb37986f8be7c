"""The harness's own published figures beside flaketui's, figure by figure.

A harness writes its headline into its output (Harbor's job ``result.json``: ``n_total_trials``,
``stats.n_errors`` and the eval's ``metrics[0].mean``; Terminal-Bench's run ``results.json``:
``accuracy`` and ``pass_at_k``). Each is recomputed here from the trials on disk, by the
harness's own formula, so a user sees the same number the harness printed, or a warning naming
both numbers and why they differ (trials missing from disk, most often).

No Textual, no Rich.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from flaketui.model import ERRORED, PASS, TrialLog
from flaketui.stats.estimators import pass_at_k

TOLERANCE = 1e-9
"""Two figures agree when they differ by no more than this (a harness rounds nothing; floats
summed in another order differ in the last bits)."""

LABELS = {"n_total_trials": "trials", "n_errors": "errored trials", "mean": "mean reward",
          "accuracy": "accuracy"}
"""How each published figure is named in the report (``pass_at_K`` reads ``pass@K``)."""


@dataclass(frozen=True)
class Figure:
    """One published figure and flaketui's value of it."""

    name: str
    published: float
    ours: float | None
    """None: flaketui cannot compute it from the trials on disk."""

    @property
    def matches(self) -> bool:
        """flaketui's value equals the published one (within :data:`TOLERANCE`)."""
        return self.ours is not None and abs(self.ours - self.published) <= TOLERANCE

    @property
    def label(self) -> str:
        """The figure's name in the report (:data:`LABELS`; ``pass_at_5`` reads ``pass@5``)."""
        return LABELS.get(self.name, self.name.replace("pass_at_", "pass@"))

    def to_json(self) -> dict[str, Any]:
        """``{"name", "published", "flaketui", "matches"}``."""
        return {"name": self.name, "published": self.published, "flaketui": self.ours, "matches": self.matches}


@dataclass(frozen=True)
class Published:
    """A run's published figures, checked: which harness, each figure, and why they may differ."""

    harness: str
    figures: tuple[Figure, ...]
    trials: int
    """The run's trials on disk."""

    @property
    def matches(self) -> bool:
        """Every figure matches."""
        return all(f.matches for f in self.figures)

    def why(self) -> str:
        """The likeliest reason for a difference: trials missing from disk, else the rule."""
        total = next((f.published for f in self.figures if f.name == "n_total_trials"), None)
        if total is not None and total != self.trials:
            return f"{self.trials} of {int(total)} trials on disk"
        return f"flaketui counts the {self.trials} trials on disk by {self.harness}'s formula"

    def line(self) -> str:
        """One line: ``Harbor's figures: trials 5, errored trials 2, mean reward 0.510: matches Harbor's``."""
        shown = ", ".join(f"{f.label} {_fmt(f.name, f.published)}" for f in self.figures)
        if self.matches:
            return f"{self.harness}'s own figures: {shown}: flaketui's match {self.harness}'s"
        return f"{self.harness}'s own figures: {shown}"

    def warnings(self) -> list[str]:
        """A warning per figure that differs, naming both numbers and why."""
        return [f"{f.label}: flaketui {_fmt(f.name, f.ours) if f.ours is not None else 'cannot compute it'}, "
                f"{self.harness}'s {_fmt(f.name, f.published)} ({self.why()})"
                for f in self.figures if not f.matches]

    def to_json(self) -> dict[str, Any]:
        """A run's JSON ``published``: ``{"harness", "matches", "figures": [...]}``."""
        return {"harness": self.harness, "matches": self.matches,
                "figures": [f.to_json() for f in self.figures]}


def _fmt(name: str, value: float) -> str:
    """A count as an integer, a rate to four decimals (``1.0``, ``0.51``, ``0.2909``)."""
    return str(int(value)) if name.startswith("n_") else repr(round(float(value), 4))


def mean_score(scores: np.ndarray) -> float:
    """Harbor's ``Mean``: the sum of every trial's reward, a trial without one counting 0,
    over the number of trials (``math.fsum``: the sum exact, whatever the order).

    References
    ----------
    Harbor ``src/harbor/metrics/mean.py`` (``Mean.compute``) and ``metrics/base.py``
    (``aggregate_reward_dicts``: ``0 if reward is None``), harbor 0.26.0.
    """
    if not scores.size:
        return math.nan
    return math.fsum(np.nan_to_num(scores, nan=0.0).tolist()) / scores.size


def terminal_bench_pass_at_k(tasks: np.ndarray, passed: np.ndarray, k: int) -> float:
    """Terminal-Bench's ``pass_at_k``: per task the unbiased estimator 1 − C(n−c, k)/C(n, k)
    over all its trials (an undecided trial fails), averaged over the tasks with n ≥ k.

    References
    ----------
    M. Chen et al., "Evaluating Large Language Models Trained on Code", 2021, eq. 1;
    Terminal-Bench ``terminal_bench/harness/models.py`` (``BenchmarkResults.pass_at_k``).
    """
    _, inv = np.unique(tasks, return_inverse=True)
    n = np.bincount(inv)
    c = np.bincount(inv, weights=passed.astype(np.float64)).astype(np.int64)
    ok = n >= k
    if not ok.any():
        return math.nan
    return float(np.mean(pass_at_k(n[ok], c[ok], k)))


def check(log: TrialLog, run: str) -> Published | None:
    """``run``'s published figures (:attr:`TrialLog.published`) beside flaketui's, or None when
    its harness published none. Every trial on disk counts, as the harness counts them."""
    found: Mapping[str, Any] | None = log.published.get(run)
    if not found or run not in log.runs:
        return None
    rows = np.flatnonzero(log.run == log.runs.index(run))
    outcome = log.outcome[rows]
    out: list[Figure] = []
    for name, value in found.items():
        if name == "harness" or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        ours: float | None
        if name == "n_total_trials":
            ours = float(rows.size)
        elif name == "n_errors":
            ours = float(np.count_nonzero(outcome == ERRORED))
        elif name == "mean":
            ours = mean_score(log.score[rows])
        elif name == "accuracy":
            ours = float(np.count_nonzero(outcome == PASS) / rows.size) if rows.size else None
        elif name.startswith("pass_at_") and name[8:].isdigit():
            ours = terminal_bench_pass_at_k(log.task[rows], outcome == PASS, int(name[8:]))
        else:
            continue
        out.append(Figure(name, float(value), None if ours is None or ours != ours else ours))
    if not out:
        return None
    return Published(str(found.get("harness") or "the harness"), tuple(out), int(rows.size))
