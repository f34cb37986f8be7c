"""The retry audit: whether trials a harness retried (Inspect's ``retry_on_error``, Harbor's queue
retries, a JSON Lines ``attempt`` or ``retry``) pass at the rate first attempts do, per task.

Inspect records, per sample, how many times it was retried after an error (``retries`` in the
sample summary; the errors in ``EvalSample.error_retries``); the sample's outcome is its last
attempt's. Its maintainers warn that a retried sample can score differently from a first
attempt (a retry sees another sandbox, cache or rate limit), so the audit checks it after the
run: per task, the passes among first attempts against those among retried trials, by Fisher's
exact test, Holm-adjusted over the tasks that have both. Errored trials are counted in each
group (never dropped) and enter its n as the rest of the report's rates do (``errored_as``:
left out of n when ``apart``, failures when ``fail``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from flaketui.model import ERRORED, PASS
from flaketui.stats.arrays import Bools, Floats, Ints
from flaketui.stats.exact import fisher_pvalue
from flaketui.stats.pertask import holm

ALPHA = 0.05


@dataclass(frozen=True)
class RetryAudit:
    """Per task with a retried trial: first attempts' and retried trials' passes, trials
    counted in n (errored ones as ``errored_as`` says) and errored, Fisher's p and Holm's
    adjusted p (NaN where one group has no usable trial); and the verdict over the tasks."""

    tasks: list[str]
    first_passes: Ints
    first_n: Ints
    first_errored: Ints
    retried_passes: Ints
    retried_n: Ints
    retried_errored: Ints
    p_value: Floats
    p_adjusted: Floats
    alpha: float = ALPHA

    @property
    def changed(self) -> list[str]:
        """The tasks whose retried trials pass at another rate (Holm-adjusted p < alpha)."""
        return [t for t, p in zip(self.tasks, self.p_adjusted.tolist(), strict=True) if p == p and p < self.alpha]

    def line(self) -> str:
        """One sentence for the report's summary."""
        tested = int(np.count_nonzero(~np.isnan(self.p_adjusted)))
        fp, fn = int(self.first_passes.sum()), int(self.first_n.sum())
        rp, rn = int(self.retried_passes.sum()), int(self.retried_n.sum())
        again = int(self.retried_errored.sum())
        rates = (f"first attempts {fp}/{fn} passed, retried trials {rp}/{rn}"
                 f" ({again} retried trial{_s(again)} errored again)")
        if not tested:
            return f"retries: {len(self.tasks)} task{_s(len(self.tasks))} retried, none testable; {rates}"
        if self.changed:
            return (f"retries changed the outcome rate in {len(self.changed)} of {tested} task{_s(tested)} tested "
                    f"(Fisher, Holm, alpha {self.alpha:g}); {rates}")
        return (f"retries did not change the outcome rate in {'any of ' if tested > 1 else ''}{tested} "
                f"task{_s(tested)} tested (Fisher, Holm); {rates}")

    def to_json(self) -> dict[str, Any]:
        """``retry_audit``: ``test``, ``alpha``, ``changed`` (tasks), ``tasks`` (per task: first and
        retried passes, n, errored, p_value, p_adjusted)."""
        def num(x: float) -> float | None:
            return None if x != x else float(x)

        rows = zip(self.tasks, self.first_passes.tolist(), self.first_n.tolist(), self.first_errored.tolist(),
                   self.retried_passes.tolist(), self.retried_n.tolist(), self.retried_errored.tolist(),
                   self.p_value.tolist(), self.p_adjusted.tolist(), strict=True)
        return {"test": "fisher-exact per task, holm over tasks", "alpha": self.alpha, "changed": self.changed,
                "summary": self.line(),
                "tasks": [{"task": t, "first": {"passes": a, "n": b, "errored": c},
                           "retried": {"passes": d, "n": e, "errored": f}, "p_value": num(p), "p_adjusted": num(q)}
                          for t, a, b, c, d, e, f, p, q in rows]}


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def retry_audit(task: NDArray[np.integer], outcome: NDArray[np.integer], attempt: NDArray[np.floating],
                names: list[str], alpha: float = ALPHA, errored_as: str = "apart") -> RetryAudit | None:
    """The :class:`RetryAudit` of one run's trials (``task``: index into ``names``; ``outcome``:
    :data:`~flaketui.model.PASS`, FAIL or :data:`~flaketui.model.ERRORED`; ``attempt``: 1 for a
    first attempt, more for a retried one, NaN where the log does not mark the trial, which is
    a first attempt: Inspect marks only the samples it retried); None when no trial was retried.
    ``errored_as``: errored trials left out of each group's n (``apart``) or counted in it as
    failures (``fail``), the report's own policy (:attr:`~flaketui.model.FieldMap.errored_as`).

    Notes
    -----
    Per task, the 2 × 2 table (first attempts, retried) × (pass, fail) is tested by Fisher's
    exact two-sided test [1]_ (:func:`~flaketui.stats.exact.fisher_pvalue`, scipy's
    ``fisher_exact``), and the p-values of the tasks with a usable trial in both groups are
    adjusted by Holm's step-down method [2]_ (:func:`~flaketui.stats.pertask.holm`), which holds
    the family-wise error rate at ``alpha`` whatever the dependence between tasks.

    References
    ----------
    .. [1] R. A. Fisher, *The Design of Experiments*, Oliver & Boyd, 1935.
    .. [2] S. Holm, "A Simple Sequentially Rejective Multiple Test Procedure", Scandinavian
       Journal of Statistics 6(2):65-70, 1979.
    """
    attempt = np.asarray(attempt, dtype=np.float64)
    retried = attempt > 1  # NaN compares False: a first attempt
    if not retried.any():
        return None
    task = np.asarray(task, dtype=np.int64)
    outcome = np.asarray(outcome)
    audited = np.unique(task[retried])
    first = ~retried
    errored = outcome == ERRORED
    passed = outcome == PASS
    counted = np.ones_like(errored) if errored_as == "fail" else ~errored
    size = len(names)

    def counts(mask: Bools) -> tuple[Ints, ...]:
        return tuple(np.bincount(task[mask & m], minlength=size)[audited].astype(np.int64)
                     for m in (passed, counted, errored))

    fp, fn, fe = counts(first)
    rp, rn, re = counts(retried)
    p = np.full(len(audited), np.nan)
    both = (fn > 0) & (rn > 0)
    for i in np.flatnonzero(both).tolist():  # the retried tasks only: few, and each an exact sum
        p[i] = fisher_pvalue(int(fp[i]), int(fn[i]), int(rp[i]), int(rn[i]))
    adjusted = np.full(len(audited), np.nan)
    if both.any():
        adjusted[both] = holm(p[both])
    return RetryAudit([names[i] for i in audited.tolist()], fp, fn, fe, rp, rn, re, p, adjusted, alpha)
