"""The suite over time: per recorded run, pass@1 and pass^k with intervals, the tasks in each
lifecycle state, and each task's p̂ across the runs, with the changes the lifecycle saw
(``history trend``, the app's trend chart, the trend page). No Textual, no Rich.

Every recorded run is folded again in recorded order (:func:`flaketui.history.lifecycle.fold`,
as recording does), so the states after each run, and the changes between them, are the ones
the history would have reported then (at the cap asked for).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flaketui.history import lifecycle
from flaketui.stats.classes import CLASSES, DEFAULT_FLAKY_CAP, UNDETERMINED, evidence_classes
from flaketui.stats.estimators import FLAKY, pass_hat_k
from flaketui.stats.suite import MeanEstimate, mean_estimate

RUN_CLASSES = (FLAKY, UNDETERMINED)
"""The counts of a run that are the report's classes of that run's recorded trials (not the
lifecycle's states across runs)."""


@dataclass(frozen=True)
class TrendRun:
    """One recorded run in the trend."""

    run_id: int
    name: str
    recorded_at: str
    tasks: int
    pass_at_1: MeanEstimate
    pass_hat_k: MeanEstimate
    counts: dict[str, int]
    """``flaky`` and ``undetermined``: this run's tasks in the report's classes of its recorded
    trials and passes (as ``report`` on that run would count them, against the flakiness cap);
    the other lifecycle states (stable, failing, fixed, regressed) once this run is folded in,
    over every task seen so far; ``quarantined`` from the quarantines active when the run was
    recorded."""
    changes: list[dict[str, str]]
    """The tasks whose state this run changed into flaky, regressed or fixed: task, kind, from."""
    classes: dict[str, int] = field(default_factory=dict)
    """This run's tasks by every report class (flaky, undetermined, stable-pass, …)."""
    states: dict[str, int] = field(default_factory=dict)
    """Tasks in each lifecycle state once this run is folded in (including the history's own
    flaky and undetermined, over every task seen so far)."""


@dataclass
class Trend:
    """``history trend`` 's data (:func:`trend`)."""

    k: int
    cap: float
    runs: list[TrendRun]
    runs_recorded: int
    tasks: list[str]
    """The tasks shown in :attr:`p_hat` (every task, or those asked for)."""
    p_hat: np.ndarray
    """tasks × runs shown, NaN where the task was not in the run (or had no usable trial)."""
    states: list[str] = field(default_factory=list)
    """Each shown task's computed state after the last run."""
    flaky_cap: float = DEFAULT_FLAKY_CAP
    """The flakiness cap the classes (and the lifecycle's flaky) are stated against."""


def trend(store: Any, k: int | None = None, cap: float = lifecycle.DEFAULT_CAP, last: int = 0,
          tasks: list[str] | None = None, flaky_cap: float = DEFAULT_FLAKY_CAP) -> Trend:
    """The trend over the recorded runs (the last ``last``, 0: every one) of the history
    ``store``, pass^k at ``k`` (None: the trials most results have), states at ``cap``, classes
    against ``flaky_cap``; p̂ of ``tasks`` (None: every task)."""
    import sqlalchemy as sa

    from flaketui.history import schema
    from flaketui.history.snapshot import aware as _aware
    from flaketui.history.snapshot import matrix as _matrix
    from flaketui.history.snapshot import when as _when
    from flaketui.history.store import _rows

    r, t, tr, q = schema.runs, schema.tasks, schema.task_results, schema.quarantines
    with store.reading() as conn:
        run_rows = conn.execute(sa.select(r.c.id, r.c.name, r.c.recorded_at).order_by(r.c.id)).all()
        task_rows = _rows(conn, sa.select(t.c.id, t.c.name, t.c.group_name).order_by(t.c.id))
        quar = conn.execute(sa.select(q.c.task, q.c.at, q.c.lifted_at)).all()
        if k is None:
            common = conn.execute(sa.select(tr.c.trials, sa.func.count().label("c")).where(tr.c.trials > 0)
                                  .group_by(tr.c.trials).order_by(sa.desc("c"), tr.c.trials).limit(1)).first()
            k = int(common[0]) if common is not None else 1
    ids = np.array([row[0] for row in task_rows], dtype=np.int64)
    names = [row[1] for row in task_rows]
    groups = [row[2] for row in task_rows]
    shown_from = max(0, len(run_rows) - last) if last > 0 else 0
    pick = np.arange(len(ids)) if tasks is None else np.array(
        [i for i, name in enumerate(names) if name in set(tasks)], dtype=np.int64)
    p_hat = np.full((len(pick), len(run_rows) - shown_from), np.nan)
    ev = lifecycle.Evidence.empty(len(ids))
    states = lifecycle.states(ev, cap, flaky_cap)
    quarantines = [(task, _aware(at), _aware(lifted)) for task, at, lifted in quar]
    # One run's results at a time, in recorded order (a range of the primary key): the fold needs
    # every run, but never more than one run's rows in memory. (A run's results never change once
    # recorded, so a run recorded meanwhile changes nothing here.)
    with store.reading() as conn:
        out = []
        for j, row in enumerate(run_rows):
            part = _matrix(_rows(conn, sa.select(tr.c.task_id, tr.c.trials, tr.c.passes)
                                 .where(tr.c.run_id == row.id).order_by(tr.c.task_id)), 3, np.int64)
            at = np.searchsorted(ids, part[:, 0])
            sub = lifecycle.Evidence(*(c[at] for c in ev.columns()))
            folded = lifecycle.fold(sub, int(row.id), part[:, 1], part[:, 2])
            for f in lifecycle.FIELDS:
                getattr(ev, f)[at] = getattr(folded, f)
            before = states
            states = lifecycle.states(ev, cap, flaky_cap)
            if j < shown_from:
                continue
            moved = lifecycle.changed(before, states)
            n, c = part[:, 1], part[:, 2]
            with np.errstate(invalid="ignore", divide="ignore"):
                p = np.where(n > 0, c / np.maximum(n, 1), np.nan)
            in_pick = np.isin(at, pick)
            if tasks is None:
                p_hat[at, j - shown_from] = p
            elif in_pick.any():
                p_hat[np.searchsorted(pick, at[in_pick]), j - shown_from] = p[in_pick]
            g = [groups[i] for i in at.tolist()]
            g_used = g if any(x is not None for x in g) else None
            hat = np.where(n >= k, pass_hat_k(np.maximum(n, k), c, k), np.nan) if len(n) else np.zeros(0)
            when = _aware(row.recorded_at)
            active = {task for task, start, lifted in quarantines if start is not None and when is not None
                      and start <= when and (lifted is None or lifted > when)}
            seen = ev.runs_seen > 0
            by_state = {s: int(np.count_nonzero(seen & (states == s)))
                        for s in lifecycle.STATES if s != lifecycle.QUARANTINED}
            run_cls = np.asarray(evidence_classes(n, c, flaky_cap), dtype=object) if len(n) else np.zeros(0, object)
            by_class = {s: int(np.count_nonzero(run_cls == s)) for s in CLASSES}
            counts = {s: by_class[s] if s in RUN_CLASSES else by_state[s] for s in by_state}
            counts[lifecycle.QUARANTINED] = len(active)
            out.append(TrendRun(
                int(row.id), row.name, _when(row.recorded_at), int(len(part)), mean_estimate(p, g_used),
                mean_estimate(hat, g_used), counts,
                [{"task": names[i], "kind": lifecycle.NOTIFIED[str(states[i])], "from": str(before[i])}
                 for i in moved.tolist()], by_class, by_state))
    return Trend(k, cap, out, len(run_rows), [names[i] for i in pick.tolist()], p_hat,
                 [str(s) for s in states[pick].tolist()], flaky_cap)


def _estimate(e: MeanEstimate) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if x != x else round(float(x), 6)

    return {"value": num(e.value), "ci": [num(e.ci[0]), num(e.ci[1])], "tasks": e.tasks}


def trend_doc(tr: Trend) -> dict[str, Any]:
    """``history trend --format json``: ``k``, ``cap``, ``flaky_cap``, ``runs_recorded``, ``runs``
    (oldest first: ``run``, ``run_id``, ``recorded_at``, ``tasks``, ``pass_at_1`` and
    ``pass_hat_k`` each ``{value, ci, tasks}``, ``counts`` (:attr:`TrendRun.counts`),
    ``classes`` by report class, ``states`` by lifecycle state, ``changes``), and ``tasks``
    (``task``, ``state``, ``p_hat``: one per run shown, null where not in the run)."""
    p = np.round(tr.p_hat, 6).tolist()
    return {
        "k": tr.k, "cap": tr.cap, "flaky_cap": tr.flaky_cap, "runs_recorded": tr.runs_recorded,
        "runs": [{"run": r.name, "run_id": r.run_id, "recorded_at": r.recorded_at, "tasks": r.tasks,
                  "pass_at_1": _estimate(r.pass_at_1), "pass_hat_k": _estimate(r.pass_hat_k),
                  "counts": r.counts, "classes": r.classes, "states": r.states, "changes": r.changes}
                 for r in tr.runs],
        "tasks": [{"task": name, "state": st, "p_hat": [None if x != x else x for x in row]}
                  for name, st, row in zip(tr.tasks, tr.states, p, strict=True)],
    }


def date_of(recorded_at: str) -> str:
    """The date part of a recorded time (``2026-12-07``), for an axis label."""
    try:
        return dt.datetime.fromisoformat(recorded_at).date().isoformat()
    except ValueError:
        return recorded_at[:10]
