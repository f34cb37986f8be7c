"""A task's traces as a headless model: its trials, the pair worth comparing, its divergences.

What a trace screen shows of a task is decided here, so that a worker computes it in one call
and the screen only renders it: :func:`task_traces` takes a task's trials and returns a
:class:`TaskTraces` (the traced passing and failing trials, the most informative pair, the fork
map); :func:`task_across_runs` lays one task's trials out run by run, each run's first
divergence from one reference trial; :func:`flip_divergence` finds where a flip's two runs part
and why; :func:`divergences` reads tasks one by one and yields each one's first divergence — the
iterator twin of :func:`~flaketui.traces.causes.suggest_causes`, for a worker that posts its
findings as they come.

The pair is always chosen by :func:`~flaketui.traces.align.pick_pair` (re-exported here), the
one statement of "the most informative pair": the trace screen, the run comparison's traces,
``flaketui diff`` and the ``div`` column agree on it. Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from flaketui.model import ERRORED, PASS, RunOutcomes, Trial, TrialLog, counts_errored
from flaketui.traces.align import align_traces, task_divergence
from flaketui.traces.align import pick_pair as pick_pair
from flaketui.traces.causes import classify_pair, flaky_rows
from flaketui.traces.forkmap import ForkNode, build_fork_map
from flaketui.traces.normalise import Normaliser
from flaketui.traces.steps import default_mode

__all__ = ["FlipDivergence", "RememberingNormaliser", "RunTrials", "TaskAcrossRuns", "TaskTraces", "divergence_rows", "divergences",
           "flip_divergence", "pair_across", "pick_pair", "task_across_runs", "task_traces", "traced_sides"]


@dataclass(frozen=True)
class TaskTraces:
    """One task's trials as the trace screen shows them.

    ``passing`` and ``failing`` are the non-errored trials that have a trace, in trial order;
    ``pair`` indexes the most informative (passing, failing) pair in them (None: a side is
    empty); ``mode`` is the divergence mode the pair and ``fork_map`` were found in.
    """

    trials: list[Trial]
    mode: str
    passing: list[Trial]
    failing: list[Trial]
    pair: tuple[int, int] | None
    fork_map: ForkNode

    @property
    def pair_trials(self) -> tuple[Trial, Trial] | None:
        """The (passing, failing) trials of :attr:`pair`."""
        if self.pair is None:
            return None
        return self.passing[self.pair[0]], self.failing[self.pair[1]]

    @property
    def untraced(self) -> int:
        """Trials (errored ones included) without a trace."""
        return sum(1 for t in self.trials if t.trace is None)


@dataclass(frozen=True)
class RememberingNormaliser(Normaliser):
    """A :class:`~flaketui.traces.normalise.Normaliser` that keeps each trace's step signatures:
    a task's read normalises the same traces for the pair, the fork map and the alignment, and
    normalising is most of a long pair's read. Kept by trace and by step, since the alignment
    copies a trace's list (the same steps in a new list). For one read: it holds the traces it
    has seen."""

    _seen: dict[int, tuple[Sequence[object], list[str]]] = field(default_factory=dict, compare=False, repr=False)
    _steps: dict[int, tuple[object, str]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def like(cls, normaliser: Normaliser | None) -> RememberingNormaliser:
        """One that ignores what ``normaliser`` ignores (None: the defaults)."""
        norm = normaliser or Normaliser()
        return cls(norm.extra_keys, norm.noise_keys)

    def signature(self, step: object) -> str:
        if isinstance(step, str):
            return super().signature(step)
        kept = self._steps.get(id(step))
        if kept is None or kept[0] is not step:
            kept = self._steps[id(step)] = (step, super().signature(step))
        return kept[1]

    def signatures(self, trace: Sequence[object] | None) -> list[str]:
        if not trace:
            return []
        kept = self._seen.get(id(trace))
        if kept is None or kept[0] is not trace:
            kept = self._seen[id(trace)] = (trace, super().signatures(trace))
        return list(kept[1])


def traced_sides(trials: Iterable[Trial]) -> tuple[list[Trial], list[Trial]]:
    """The non-errored trials that have a trace, passing ones and failing ones, in trial order:
    the sides a task's pair is chosen from."""
    traced = [t for t in trials if t.outcome != ERRORED and t.trace is not None]
    return [t for t in traced if t.outcome == PASS], [t for t in traced if t.outcome != PASS]


def task_traces(trials: Sequence[Trial], normaliser: Normaliser | None = None, mode: str | None = None,
                ) -> TaskTraces:
    """The model of one task's traces.

    Args:
        trials: The task's trials, with their traces, in trial order.
        normaliser: Which keys to ignore.
        mode: ``actions`` or ``all``; None: :func:`~flaketui.traces.steps.default_mode` of the
            traced non-errored trials.
    """
    norm = normaliser or Normaliser()
    trials = list(trials)
    passing, failing = traced_sides(trials)
    mode = mode or default_mode(*(t.trace for t in trials if t.outcome != ERRORED and t.trace is not None))
    fork = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials], norm, mode)
    pair = pick_pair([t.trace for t in passing], [t.trace for t in failing], norm, mode)
    return TaskTraces(trials, mode, passing, failing, pair, fork)


def pair_across(a: Sequence[Trial], b: Sequence[Trial], a_first: bool, normaliser: Normaliser | None = None,
                mode: str | None = None) -> tuple[int, int] | None:
    """The most informative pair of a trial of ``a`` and a trial of ``b`` (two runs' trials of a task).

    Ties go to the earliest trials of the side named by ``a_first`` (the passing side of a
    broken or fixed task, as on the trace screen), then of the other. ``mode`` None:
    :func:`~flaketui.traces.steps.default_mode` of both sides' traces.
    """
    mode = mode or default_mode(*(t.trace for t in [*a, *b]))
    ta, tb = [t.trace for t in a], [t.trace for t in b]
    if a_first:
        return pick_pair(ta, tb, normaliser, mode)
    found = pick_pair(tb, ta, normaliser, mode)
    return None if found is None else (found[1], found[0])


@dataclass(frozen=True)
class RunTrials:
    """One run's trials of a task, as the task-across-runs view shows them.

    ``trials`` are every trial of the task in the run (errored ones included), in trial
    order, and ``rows`` their :class:`~flaketui.model.TrialLog` rows; ``n`` counts the
    non-errored ones (the errored too with ``--errored-as fail``, as
    :meth:`~flaketui.model.TrialLog.run_outcomes` does). ``representative`` indexes the trial
    shown for the run (None: no non-errored trial with a trace); ``divergence`` and
    ``divergence_b`` are the 1-based steps, in the reference's trace and in the
    representative's, of their first divergence (None: they do not diverge, or there is
    no pair).
    """

    run: str
    trials: list[Trial]
    rows: list[int]
    passes: int
    n: int
    errored: int
    representative: int | None
    divergence: int | None
    divergence_b: int | None
    has_reference: bool

    @property
    def p_hat(self) -> float:
        """Passes over n (NaN when the run has no trial of the task that counts)."""
        return self.passes / self.n if self.n else float("nan")

    @property
    def representative_trial(self) -> Trial | None:
        """The trial shown for the run."""
        return None if self.representative is None else self.trials[self.representative]


@dataclass(frozen=True)
class TaskAcrossRuns:
    """One task's trials in every loaded run, each run's representative trial set against
    one reference trial. ``reference`` is ``(run index, trial index)`` into :attr:`runs` and
    that run's ``trials`` (None: no run has a non-errored trial with a trace)."""

    task: str
    mode: str
    runs: list[RunTrials]
    reference: tuple[int, int] | None

    @property
    def reference_trial(self) -> Trial | None:
        """The trial every run's divergence is measured from."""
        if self.reference is None:
            return None
        return self.runs[self.reference[0]].trials[self.reference[1]]


def _counted(trials: Sequence[Trial]) -> list[int]:
    """Positions of the trials a pair may use: non-errored, with a trace."""
    return [i for i, t in enumerate(trials) if t.outcome != ERRORED and t.trace is not None]


def task_across_runs(
    log: TrialLog,
    task: str,
    read: Callable[[int], Trial],
    reference: tuple[str, int] | None = None,
    normaliser: Normaliser | None = None,
    mode: str | None = None,
) -> TaskAcrossRuns:
    """The model of one task across every loaded run: per run its trials, a representative
    trial and where that trial first parts from a reference trial.

    A run's representative is, of its non-errored traced trials (the reference itself
    left out), those whose outcome differs from the reference's when it has any, else all
    of them; of these the one sharing the longest prefix with the reference
    (:func:`~flaketui.traces.align.pick_pair` against the reference alone). As for a task's
    pair, the pair of differing outcomes that shares the most before it parts shows the one
    decision that made the outcomes differ; where every trial of the run has the
    reference's outcome, the closest one shows how far the run follows it. The divergence
    is :func:`~flaketui.traces.align.align_traces`' first divergence of the reference and
    the representative.

    Args:
        log: The loaded trials (every run).
        task: The task's name (a run without it gets an empty row).
        read: Reads one trial, with its trace, from its row
            (``functools.partial(flaketui.loading.read_trial, log)``).
        reference: ``(run, trial number)`` of the reference trial; None, or a trial that is
            errored, has no trace or is not there: the first passing traced trial of the first
            run that has one, else the first traced non-errored trial of any run.
        normaliser: Which keys to ignore.
        mode: ``actions`` or ``all``; None: :func:`~flaketui.traces.steps.default_mode` of
            every run's traced non-errored trials.
    """
    norm = normaliser or Normaliser()
    tid = log.tasks.index(task) if task in log.tasks else -1
    rows = np.flatnonzero(np.asarray(log.task) == tid) if tid >= 0 else np.empty(0, dtype=np.int64)
    rows = rows[np.lexsort((np.asarray(log.trial)[rows], np.asarray(log.run)[rows]))]
    by_run: list[list[int]] = [[] for _ in log.runs]
    for r in rows.tolist():
        by_run[int(log.run[r])].append(int(r))
    trials = [[read(r) for r in run_rows] for run_rows in by_run]
    counted = [_counted(ts) for ts in trials]
    mode = mode or default_mode(*(trials[j][i].trace for j in range(len(trials)) for i in counted[j]))
    ref = _reference(log.runs, trials, counted, reference)
    ref_trial = None if ref is None else trials[ref[0]][ref[1]]
    out: list[RunTrials] = []
    for j, (name, ts, run_rows) in enumerate(zip(log.runs, trials, by_run, strict=True)):
        outcome = np.asarray(log.outcome)[run_rows] if run_rows else np.empty(0, dtype=np.int64)
        errored = int((outcome == ERRORED).sum())
        n = len(run_rows) if counts_errored(log.errored_as(name)) else len(run_rows) - errored
        rep = div_a = div_b = None
        if ref_trial is not None:
            candidates = [i for i in counted[j] if ref is None or (j, i) != ref]
            if not candidates and ref is not None and ref[0] == j:
                candidates = [ref[1]]
            differing = [i for i in candidates if ts[i].passed != ref_trial.passed]
            pool = differing or candidates
            if pool:
                found = pick_pair([ref_trial.trace], [ts[i].trace for i in pool], norm, mode)
                rep = pool[found[1]] if found is not None else pool[0]
                aligned = align_traces(ref_trial.trace, ts[rep].trace, norm, mode)
                div_a, div_b = aligned.first_divergence, aligned.divergence_b
        out.append(RunTrials(name, ts, run_rows, int((outcome == PASS).sum()), n, errored, rep, div_a, div_b,
                             ref is not None and ref[0] == j))
    return TaskAcrossRuns(task, mode, out, ref)


def _reference(runs: Sequence[str], trials: Sequence[Sequence[Trial]], counted: Sequence[Sequence[int]],
               wanted: tuple[str, int] | None) -> tuple[int, int] | None:
    """``(run index, trial index)`` of the reference trial (see :func:`task_across_runs`)."""
    if wanted is not None and wanted[0] in runs:
        j = list(runs).index(wanted[0])
        for i in counted[j]:
            if trials[j][i].trial == wanted[1]:
                return j, i
    for j, idx in enumerate(counted):
        for i in idx:
            if trials[j][i].passed:
                return j, i
    for j, idx in enumerate(counted):
        if idx:
            return j, idx[0]
    return None


MAX_FLIP_CANDIDATES = 50
"""Trials per side scored for a flip's pair (as the comparison's trace screen scores them)."""


@dataclass(frozen=True)
class FlipDivergence:
    """Where a flip's two runs first part, and why they may have.

    The pair is the comparison's trace screen's: for a broken task a passing trial of run A
    and a failing one of run B (fixed: the other way round), the pair sharing the longest
    prefix (:func:`pair_across`). ``step`` is its first divergence in A's trace (``step_b``
    in B's; None: the two do not part in ``mode``); ``cause`` the suggested source of the
    pair (:func:`~flaketui.traces.causes.classify_pair`, the passing trial against the failing
    one), ``kind`` the mark it rests on.
    """

    trial_a: int
    trial_b: int
    step: int | None
    step_b: int | None
    cause: str
    kind: str
    mode: str

    def to_json(self) -> dict[str, object]:
        return {"trial_a": self.trial_a, "trial_b": self.trial_b, "step": self.step, "step_b": self.step_b,
                "suggested_source": self.cause, "evidence": self.kind, "mode": self.mode}


def flip_divergence(a: Sequence[Trial], b: Sequence[Trial], broken: bool, normaliser: Normaliser | None = None,
                    mode: str | None = None) -> FlipDivergence | None:
    """The first divergence and suggested source of one flip (see :class:`FlipDivergence`).

    Args:
        a: Run A's trials of the task, with traces (errored ones are left out).
        b: Run B's.
        broken: p̂ fell from A to B (A's passing trial against B's failing one); False: it rose.
        normaliser: Which keys to ignore.
        mode: ``actions`` or ``all``; None: :func:`~flaketui.traces.steps.default_mode` of both sides.

    Returns:
        None when a side has no traced trial of the outcome wanted.
    """
    norm = normaliser or Normaliser()
    side_a = [t for t in a if t.outcome != ERRORED and t.trace is not None and t.passed == broken]
    side_b = [t for t in b if t.outcome != ERRORED and t.trace is not None and t.passed != broken]
    side_a, side_b = side_a[:MAX_FLIP_CANDIDATES], side_b[:MAX_FLIP_CANDIDATES]
    if not side_a or not side_b:
        return None
    mode = mode or default_mode(*(t.trace for t in [*side_a, *side_b]))
    pair = pair_across(side_a, side_b, broken, norm, mode)
    assert pair is not None
    ta, tb = side_a[pair[0]], side_b[pair[1]]
    aligned = align_traces(ta.trace, tb.trace, norm, mode)
    passing, failing = (ta, tb) if broken else (tb, ta)
    ev = classify_pair(passing, failing, norm)
    return FlipDivergence(ta.trial, tb.trial, aligned.first_divergence, aligned.divergence_b, ev.cause, ev.kind,
                          mode)


def divergence_rows(log: TrialLog, outcomes: RunOutcomes) -> dict[str, list[int]]:
    """Task name → the rows :func:`divergences` reads: the flaky tasks of ``outcomes``
    (:func:`~flaketui.traces.causes.flaky_rows`) that have a trace, each with its
    non-errored traced rows (the others are never read)."""
    out: dict[str, list[int]] = {}
    for task, rows in flaky_rows(outcomes).items():
        traced = np.asarray(log.has_trace[rows], dtype=bool)
        if traced.any():
            out[task] = rows[traced & (np.asarray(log.outcome[rows]) != ERRORED)].tolist()
    return out


def divergences(
    read: Callable[[int], Trial],
    rows_by_task: Mapping[str, Iterable[int]],
    normaliser: Normaliser | None = None,
    mode: str | None = None,
) -> Iterator[tuple[str, int | None]]:
    """Read the given tasks' trials and yield each task's first divergence, task by task.

    Args:
        read: Reads one trial, with its trace, from its row (as for
            :func:`~flaketui.traces.causes.suggest_causes`).
        rows_by_task: Task name → its rows (:func:`divergence_rows`).
        normaliser: Which keys to ignore.
        mode: ``actions`` or ``all``; None: each task's
            :func:`~flaketui.traces.steps.default_mode`.

    Yields:
        ``(task, step)``: the 1-based step of the task's most informative pair
        (:func:`~flaketui.traces.align.task_divergence`), None when it has no such pair or
        the pair does not diverge; in the order of ``rows_by_task``.
    """
    norm = normaliser or Normaliser()
    for task, rows in rows_by_task.items():
        trials = [read(int(r)) for r in rows]
        traces = [(t.passed, t.trace) for t in trials if t.outcome != ERRORED]
        yield task, task_divergence(traces, norm, mode or default_mode(*(t for _, t in traces)))
