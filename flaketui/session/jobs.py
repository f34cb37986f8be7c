"""The slow work that fills a :class:`~flaketui.session.state.RunState`, as iterators of batches.

Each job reads traces (or the history) and yields batches: what it found since the last batch
and how far it has got. A batch's ``apply`` puts what it found into the run state (the
session, for the history's states), so the one who runs the job decides where and when that
happens: the CLI runs a job to the end (:func:`run_to_end`, :func:`find_causes`), the app runs
it in a thread worker, posts each batch and applies it on the thread that draws, then redraws.

The jobs:

- :func:`divergences`: each flaky task's first divergence (the table's ``div`` column);
- :func:`causes`: each flaky task's suggested source of flakiness and, beside it, its trajectory
  consistency (the ``cause?`` and ``consist.`` columns, the report's suggestions);
- :func:`history_states`: each task's lifecycle state in the history (the ``state`` column).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from flaketui.model import TrialLog

if TYPE_CHECKING:
    from flaketui.session.state import RunState, Session
    from flaketui.traces.normalise import Normaliser

Progress = Callable[[int, int], None]
"""Called with (done, total) as a job goes."""


@dataclass(frozen=True)
class DivergenceBatch:
    """First divergence steps of some tasks of a run (task → 1-based step, None: none)."""

    run: str
    steps: dict[str, int | None]
    done: int
    total: int

    def apply(self, state: RunState) -> None:
        """Put the steps into the run's state."""
        state.divergences.update(self.steps)


@dataclass(frozen=True)
class CausesBatch:
    """Suggested sources of flakiness of some tasks of a run, and those tasks' trajectory consistency."""

    run: str
    causes: dict[str, str]
    """Task → its suggested source (:data:`~flaketui.traces.causes.CAUSES`)."""
    done: int
    total: int
    consistency: dict[str, float | None] = field(default_factory=dict)
    """Task → its trajectory consistency (None: fewer than two passing trials with actions)."""
    suggestions: dict[str, Any] = field(default_factory=dict)
    """Task → its whole :class:`~flaketui.traces.causes.CauseSuggestion` (a later batch may revise
    one: the run's outage windows are known only once every task is read)."""

    def apply(self, state: RunState) -> None:
        """Put the suggestions into the run's state; its progress says how far the job has got."""
        state.causes.update(self.causes)
        state.suggestions.update(self.suggestions)
        state.consistency.update(self.consistency)
        state.causes_progress = f"{self.done} of {self.total}" if self.done < self.total else None


@dataclass(frozen=True)
class StatesBatch:
    """The tasks' lifecycle states read from the history (None: none recorded, or ``error``)."""

    states: dict[str, str] | None
    error: str | None = None
    """Why the history could not be read (said once)."""

    def apply(self, session: Session) -> None:
        """Put the states into the session (every run's ``state`` column reads them)."""
        session.history_states = self.states


def divergences(state: RunState, mode: str | None = None) -> Iterator[DivergenceBatch]:
    """Read the traces of each flaky task of ``state``'s run and yield its first divergence
    (:func:`~flaketui.traces.task_view.divergences`, in ``mode``; None: each pair's default),
    one task a batch; a run with none yields one empty batch."""
    from flaketui.loading import read_trial
    from flaketui.traces.task_view import divergence_rows
    from flaketui.traces.task_view import divergences as find

    log, session = state.log, state.session
    todo = divergence_rows(log, state.outcomes)
    if not todo:
        yield DivergenceBatch(state.name, {}, 0, 0)
        return
    for done, (task, step) in enumerate(find(functools.partial(read_trial, log), todo, session.normaliser, mode), 1):
        yield DivergenceBatch(state.name, {task: step}, done, len(todo))


def causes(state: RunState, known: Iterable[str] = (), *, traced_only: bool = True, fork: bool = False,
           run_bursts: bool = False, normaliser: Normaliser | None = None, workers: int = 1,
           grades_field: str | None = None, rescored: Mapping[str, Mapping[int, float]] | None = None,
           ) -> Iterator[CausesBatch]:
    """Suggest the source of flakiness of each flaky task of ``state``'s run
    (:func:`~flaketui.traces.causes.suggest_causes`, task by task) and its trajectory consistency.

    Args:
        state: The run.
        known: Tasks whose cause is kept already (the triage file): only their passing trials are
            read, for their consistency (a kept cause spares its pairs, not its consistency).
        traced_only: Only the tasks with a trace (the table's; the report reads every flaky task).
        fork: Also find each task's decisive fork (the report's evidence; the table needs none).
        run_bursts: Look for outage windows over the whole run once every task is read (the
            report's ``burst``), rather than over each task's own trials (the table's).
        normaliser: Which keys to ignore (None: the session's).
        workers: Processes to spread the tasks over with ``run_bursts`` (1: in this process, a
            batch a task).
        grades_field: Where each trial's grades are (``--grades-field``).
        rescored: Task → trial → its re-scored grade (``--rescored``).

    Yields:
        A batch a task read (with ``workers > 1``: progress batches, then one with every
        suggestion); with ``run_bursts`` a last batch revises the tasks an outage window explains.
    """
    import flaketui.traces.causes as found_in
    from flaketui.loading import read_trial
    from flaketui.model import PASS
    from flaketui.traces.consistency import task_consistency

    log, run = state.log, state.name
    norm = state.session.normaliser if normaliser is None else normaliser
    read = functools.partial(read_trial, log)
    rows_by_task = found_in.flaky_rows(state.outcomes)
    if traced_only:
        rows_by_task = {t: r for t, r in rows_by_task.items() if log.has_trace[r].any()}
    kept = frozenset(known)
    todo = {t: r for t, r in rows_by_task.items() if t not in kept}
    again = [(t, r[log.outcome[r] == PASS]) for t, r in rows_by_task.items() if t in kept]
    total = len(todo) + len(again)
    if not total:
        yield CausesBatch(run, {}, 0, 0)
        return
    found: dict[str, Any] = {}

    def batch(got: Mapping[str, Any], done: int) -> CausesBatch:
        found.update(got)
        return CausesBatch(run, {t: s.cause for t, s in got.items()}, done, total,
                           {t: s.consistency.trajectory for t, s in got.items()}, dict(got))

    if workers > 1 and len(todo) > 1 and run_bursts:  # a task's own outage windows: one a task
        yield from _in_processes(run, todo, read, norm, workers, fork, grades_field, rescored, batch, total)
    else:
        for done, (task, rows) in enumerate(todo.items(), 1):
            got = found_in.suggest_causes(read, {task: rows}, norm, fork=fork, bursts=not run_bursts,
                                          grades_field=grades_field,
                                          rescored={task: rescored[task]} if rescored and task in rescored else None)
            yield batch(got, done)
    for done, (task, rows) in enumerate(again, len(todo) + 1):
        yield CausesBatch(run, {}, done, total, {task: task_consistency((read(int(r)) for r in rows), norm).trajectory})
    if run_bursts:
        revised = found_in.apply_bursts(found)
        changed = {t: s for t, s in revised.items() if s is not found[t]}
        if changed:
            yield batch(changed, total)


def _in_processes(run: str, todo: Mapping[str, Any], read: Callable[[int], Any], norm: Normaliser, workers: int,
                  fork: bool, grades_field: str | None, rescored: Mapping[str, Mapping[int, float]] | None,
                  batch: Callable[[Mapping[str, Any], int], CausesBatch], total: int) -> Iterator[CausesBatch]:
    """:func:`causes`' tasks read by ``workers`` processes in one
    :func:`~flaketui.traces.causes.suggest_causes` call (its pool sends the reader once to each
    process), run in a thread so that its progress comes out as batches as it goes."""
    import queue
    import threading

    import flaketui.traces.causes as found_in

    said: queue.Queue[tuple[int, int] | None] = queue.Queue()
    result: list[Any] = []

    def work() -> None:
        try:
            result.append(found_in.suggest_causes(read, todo, norm, workers=workers, fork=fork, bursts=False,
                                                  grades_field=grades_field, rescored=rescored,
                                                  progress=lambda done, _total: said.put((done, _total))))
        except BaseException as exc:  # handed to the caller's thread below
            result.append(exc)
        finally:
            said.put(None)

    thread = threading.Thread(target=work, name="causes", daemon=True)
    thread.start()
    while (got := said.get()) is not None:
        if got[0] < len(todo):
            yield CausesBatch(run, {}, got[0], total)
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    yield batch(result[0], len(todo))


def history_states(url: str | None, flaky_cap: float | None = None) -> Iterator[StatesBatch]:
    """Each task's state in the history at ``url`` (:func:`flaketui.history.recording.task_states`),
    in one batch; a history that can't be read yields no states and says why."""
    from flaketui.history import HistoryError
    from flaketui.history.recording import task_states
    from flaketui.sanitize import visible

    try:
        yield StatesBatch(task_states(url, flaky_cap))
    except HistoryError as exc:
        yield StatesBatch(None, visible(str(exc)))


T = TypeVar("T", DivergenceBatch, CausesBatch)


def run_to_end(state: RunState, job: Iterable[T], progress: Progress | None = None) -> RunState:
    """Run ``job`` to its end, each batch put into ``state`` (``progress``: told each batch's
    done and total)."""
    for batch in job:
        batch.apply(state)
        if progress is not None:
            progress(batch.done, batch.total)
    return state


def every(job: Iterable[T], seconds: float) -> Iterator[T]:
    """``job``'s batches, at most one each ``seconds`` (the last always): several at once are
    one batch (what a worker posts, so that a fast job does not redraw the table per task)."""
    last = time.monotonic()
    pending: list[T] = []
    for batch in job:
        pending.append(batch)
        if time.monotonic() - last > seconds or batch.done >= batch.total:
            yield merge(pending)
            pending, last = [], time.monotonic()
    if pending:
        yield merge(pending)


def merge(batches: Sequence[T]) -> T:
    """Batches of one job as one: what each found, the last one's progress."""
    last = batches[-1]
    if len(batches) == 1:
        return last
    if isinstance(last, DivergenceBatch):
        steps: dict[str, int | None] = {}
        for b in batches:
            steps.update(b.steps)  # type: ignore[union-attr]
        return DivergenceBatch(last.run, steps, last.done, last.total)  # type: ignore[return-value]
    found: dict[str, str] = {}
    consistent: dict[str, float | None] = {}
    suggestions: dict[str, Any] = {}
    for b in batches:
        found.update(b.causes)  # type: ignore[union-attr]
        consistent.update(b.consistency)  # type: ignore[union-attr]
        suggestions.update(b.suggestions)  # type: ignore[union-attr]
    return CausesBatch(last.run, found, last.done, last.total, consistent, suggestions)  # type: ignore[return-value]


def find_causes(log: TrialLog, runs: Sequence[str], workers: int = 1, grades_field: str | None = None,
                rescoring: Mapping[str, Any] | None = None, progress: Progress | None = None,
                session: Session | None = None) -> dict[str, Any]:
    """Each run's flaky tasks' suggested sources of flakiness (reads only their traces): the
    :func:`causes` job run to the end for each run, as the report asks it (every flaky task,
    with its decisive fork, outage windows over the run); ``grades_field``: where each trial's
    grades are; ``rescoring``: run → its :class:`~flaketui.traces.causes.Rescoring`
    (``--rescored``); ``progress`` counts the tasks read over every run.

    Returns:
        Run → task → :class:`~flaketui.traces.causes.CauseSuggestion`, in each run's task order.
    """
    from flaketui.session.state import Session
    from flaketui.traces.causes import flaky_rows

    if session is None:
        session = Session()
    if session.log is not log:
        session.set_log(log)
    states = [session.run(r) for r in runs]
    total = sum(len(flaky_rows(s.outcomes)) for s in states)
    out: dict[str, Any] = {}
    before = 0
    for state in states:
        rescored = rescoring[state.name].grades if rescoring and state.name in rescoring else None
        job = causes(state, traced_only=False, fork=True, run_bursts=True, normaliser=None, workers=workers,
                     grades_field=grades_field, rescored=rescored)
        tell = None if progress is None else (lambda done, _total, at=before: progress(at + done, total))
        run_to_end(state, job, tell)
        order = flaky_rows(state.outcomes)
        out[state.name] = {t: state.suggestions[t] for t in order if t in state.suggestions}
        before += len(order)
    return out
