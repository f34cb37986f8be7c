"""Which two trials to compare: the pair ``flaketui diff`` shows, and the pairs the HTML pages show.

With ``trials`` given, those two; else, with two runs, the trials of A and B sharing the longest
prefix (a passing A beside a failing B when there are such, else a failing A beside a passing
B, else any two); with one run, a passing and a failing trial sharing the longest prefix, as the
app's trace screen picks them (:func:`flaketui.traces.task_view.pair_across`). Headless: what
cannot be read or found is an :class:`~flaketui.model.InputError` naming it, which a face shows
in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flaketui.model import ERRORED, PASS, InputError, Trial, TrialLog
from flaketui.sanitize import visible

if TYPE_CHECKING:  # the trace modules load when a pair is chosen
    from flaketui.output.trace_pair import TracePair
    from flaketui.traces import Normaliser


@dataclass(frozen=True)
class Pair:
    """The two trials compared."""

    a: Trial
    b: Trial


def _trials(log: TrialLog, run: str, task: str) -> list[Trial]:
    from flaketui.loading import read_trial

    outcomes = log.run_outcomes(run)
    if task not in outcomes.tasks:
        raise InputError(f"run {visible(run)!r} has no task {visible(task)!r}")
    try:  # a trial table's source it will not follow is an InputError (SourceRefused) too
        return [read_trial(log, r) for r in outcomes.task_rows(outcomes.index(task)).tolist()]
    except OSError as exc:
        raise InputError(f"cannot read the trials of {visible(task)!r}: {exc.strerror or exc}") from None


def _by_number(trials: Sequence[Trial], number: int, run: str) -> Trial:
    for t in trials:
        if t.trial == number:
            return t
    have = ", ".join(str(t.trial) for t in trials[:20])
    raise InputError(f"run {visible(run)!r} has no trial {number} of this task (trials: {have})")


def _best(a: Sequence[Trial], b: Sequence[Trial], norm: Normaliser, mode: str | None) -> Pair | None:
    """The pair of ``a`` × ``b`` sharing the longest prefix (of actions, or of steps)."""
    a = [t for t in a if t.trace is not None]
    b = [t for t in b if t.trace is not None]
    if not a or not b:
        return None
    from flaketui.traces.task_view import pair_across

    best = pair_across(a, b, True, norm, mode)
    assert best is not None
    return Pair(a[best[0]], b[best[1]])


def _within(found: Sequence[Trial], norm: Normaliser, mode: str | None) -> Pair | None:
    """A passing and a failing trial of one run's ``found`` sharing the longest prefix."""
    return _best([t for t in found if t.outcome == PASS], [t for t in found if t.outcome != PASS], norm, mode)


def _across(a: Sequence[Trial], b: Sequence[Trial], norm: Normaliser, mode: str | None) -> Pair | None:
    """A trial of ``a`` beside one of ``b``: a passing A beside a failing B, else the reverse,
    else any two, sharing the longest prefix."""
    for want_a, want_b in ((True, False), (False, True)):
        pair = _best([t for t in a if t.passed == want_a], [t for t in b if t.passed == want_b], norm, mode)
        if pair is not None:
            return pair
    return _best(a, b, norm, mode)


def choose_pair(log: TrialLog, task: str, runs: tuple[str, str] | None, trials: tuple[int, int] | None,
                norm: Normaliser, mode: str | None) -> Pair:
    """The two trials to compare (see the module's docstring); what is missing: an
    :class:`~flaketui.model.InputError` naming it."""
    for name in runs or ():
        if name not in log.runs:
            raise InputError(f"no run named {visible(name)!r}; runs: {visible(', '.join(log.runs))}")
    if runs is None and len(log.runs) >= 2:
        runs = (log.runs[0], log.runs[1])
    if runs is None:
        run = log.runs[0]
        found = [t for t in _trials(log, run, task) if t.outcome != ERRORED]
        if trials is not None:
            return Pair(_by_number(found, trials[0], run), _by_number(found, trials[1], run))
        pair = _within(found, norm, mode)
        if pair is not None:
            return pair
        if not any(t.trace is not None for t in found):
            raise InputError(f"task {visible(task)!r} has no trial with a trace in run {visible(run)!r}: "
                             f"{_no_trace(log, run)}")
        kinds = "passing" if not any(t.outcome == PASS and t.trace is not None for t in found) else "failing"
        raise InputError(f"task {visible(task)!r} has no {kinds} trial with a trace in run {visible(run)!r}; "
                         "name two with --trials I J")
    side_a = [t for t in _trials(log, runs[0], task) if t.outcome != ERRORED]
    side_b = [t for t in _trials(log, runs[1], task) if t.outcome != ERRORED]
    if trials is not None:
        return Pair(_by_number(side_a, trials[0], runs[0]), _by_number(side_b, trials[1], runs[1]))
    pair = _across(side_a, side_b, norm, mode)
    if pair is None:
        raise InputError(f"task {visible(task)!r} has no trial with a trace in run {visible(runs[0])!r} "
                         f"or in run {visible(runs[1])!r}: {_no_trace(log, runs[0])}")
    return pair


def _no_trace(log: TrialLog, run: str) -> str:
    """Why ``run``'s trials have no trace, in its harness's words."""
    import numpy as np

    from flaketui.loading.formats import no_trace_reason

    return no_trace_reason(log, np.flatnonzero(log.run == log.runs.index(run))[:1].tolist())


def trace_pair(task: str, pair: Pair, norm: Normaliser, mode: str | None) -> TracePair:
    """``pair`` compared for the page (:data:`~flaketui.output.trace_pair.TRACE_CONTEXT` rows either
    side of the divergence, lines cut at :data:`~flaketui.output.trace_pair.LINE_WIDTH`)."""
    from flaketui.output.trace_pair import LINE_WIDTH, TRACE_CONTEXT, TracePair
    from flaketui.traces import diff_traces

    d = diff_traces(pair.a.trace, pair.b.trace, mode, norm, context=TRACE_CONTEXT, width=LINE_WIDTH)
    return TracePair(task, label(pair.a), label(pair.b), d)


def label(t: Trial) -> str:
    """A trial as a page names it: ``RUN trial N (pass)``."""
    return f"{t.run} trial {t.trial} ({'pass' if t.passed else 'fail'})"


def flaky_pairs(log: TrialLog, run: str, tasks: Sequence[str], mode: str | None = None) -> dict[str, TracePair]:
    """For each of ``tasks`` of ``run``: a passing and a failing trial sharing the longest
    prefix (as ``diff`` picks them), compared; tasks without such a pair are left out (a task
    none of whose trials has a trace is not read at all)."""
    from flaketui.loading import read_trial
    from flaketui.traces import Normaliser

    norm = Normaliser()
    outcomes = log.run_outcomes(run)
    where = {t: i for i, t in enumerate(outcomes.tasks)} if tasks else {}
    out: dict[str, TracePair] = {}
    for task in tasks:
        rows = outcomes.task_rows(where[task])
        if not log.has_trace[rows].any():
            continue
        pair = _within([t for t in (read_trial(log, r) for r in rows.tolist()) if t.outcome != ERRORED], norm, mode)
        if pair is not None:
            out[task] = trace_pair(task, pair, norm, mode)
    return out


def cross_pairs(side_a: tuple[TrialLog, str], side_b: tuple[TrialLog, str], tasks: Sequence[str],
                mode: str | None = None) -> dict[str, TracePair]:
    """For each of ``tasks``: a trial of run A beside one of run B, picked as ``diff --runs A B``
    picks them (a passing A beside a failing B, else the reverse, else any two)."""
    from flaketui.traces import Normaliser

    norm = Normaliser()
    out: dict[str, TracePair] = {}
    for task in tasks:
        pair = _across([t for t in _trials(*side_a, task) if t.outcome != ERRORED],
                       [t for t in _trials(*side_b, task) if t.outcome != ERRORED], norm, mode)
        if pair is not None:
            out[task] = trace_pair(task, pair, norm, mode)
    return out
