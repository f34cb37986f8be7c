"""Per-task status rows of a history: state, evidence, owner, quarantine, p̂ in recent runs;
and one task's timeline across the recorded runs (:func:`task_timeline`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from flaketui.history import lifecycle
from flaketui.history.owners import Rule, owners_of
from flaketui.history.store import HistoryData, Store, _when


def status_doc(data: HistoryData, cap: float = lifecycle.DEFAULT_CAP, rules: Sequence[Rule] = (),
               states: Sequence[str] = (), owner: str | None = None) -> dict[str, Any]:
    """The ``history status`` document (``--format json``): ``runs``, ``cap``,
    ``trials_needed``, ``recent_runs``, ``counts`` by state, and ``tasks`` (one object each,
    filtered to ``states`` and ``owner`` when given)."""
    ev = data.evidence
    computed = lifecycle.states(ev, cap)
    need = lifecycle.trials_needed(cap)
    quarantined = np.array([t in data.quarantines for t in data.tasks], dtype=bool)
    state = computed.copy()
    state[quarantined] = lifecycle.QUARANTINED
    owners = owners_of(data.tasks, rules) if rules else [()] * len(data.tasks)
    names = data.run_names
    counts = {s: int(np.count_nonzero(state == s)) for s in lifecycle.STATES}
    ever_bad = ev.last_bad >= 0
    to_fixed = np.where(ever_bad & (computed != lifecycle.FIXED), np.maximum(need - ev.clean_since, 0), 0)
    keep = np.ones(len(data.tasks), dtype=bool)
    if states:
        keep &= np.isin(state, list(states))
    if owner is not None:
        keep &= np.array([owner in o for o in owners], dtype=bool)
    p = data.recent_p_hat
    tasks = []
    for i in np.flatnonzero(keep).tolist():
        name = data.tasks[i]
        row: dict[str, Any] = {
            "task": name,
            "state": state[i],
            "computed_state": computed[i],
            "first_seen_flaky": names.get(int(ev.first_flaky[i])),
            "last_seen_flaky": names.get(int(ev.last_flaky[i])),
            "last_bad_run": names.get(int(ev.last_bad[i])),
            "clean_trials_since": int(ev.clean_since[i]),
            "trials_to_fixed": int(to_fixed[i]),
            "runs_seen": int(ev.runs_seen[i]),
            "owner": list(owners[i]),
            "p_hat": [None if x != x else round(float(x), 6) for x in p[i].tolist()],
            "quarantine": None,
        }
        q = data.quarantines.get(name)
        if q is not None:
            row["quarantine"] = {**q, "ready_to_lift": computed[i] == lifecycle.FIXED}
        tasks.append(row)
    return {"runs": data.runs, "cap": cap, "trials_needed": need, "recent_runs": data.recent_runs,
            "counts": counts, "tasks": tasks}


@dataclass(frozen=True)
class TimelineRun:
    """One recorded run of a task: its counts, and the task's state after it."""

    run_id: int
    name: str
    recorded_at: str
    trials: int
    passes: int
    errored: int
    p_hat: float | None
    state: str
    """The computed state once this run is folded in (never ``quarantined``)."""


@dataclass(frozen=True)
class TaskTimeline:
    """A task's story in the history (:func:`task_timeline`)."""

    task: str
    runs_recorded: int
    """Runs in the history (the task may be in fewer)."""
    runs: list[TimelineRun]
    """The runs the task is in, oldest first (empty: no recorded run has it)."""
    state: str
    """Its state now (``quarantined`` overrides the computed one)."""
    computed_state: str
    evidence: str
    """One sentence: clean trials since the last bad run, and what is still needed to be fixed."""
    cap: float
    trials_needed: int
    owner: tuple[str, ...] = ()
    quarantine: dict[str, Any] | None = None
    """who, at, why, ticket, ready_to_lift; None when not quarantined."""


def history_exists(url: str) -> bool:
    """Whether the history at ``url`` was ever written: a SQLite file is on disk (a server
    history is assumed to be). Looking does not create it, as :func:`~flaketui.history.open_store` would."""
    from sqlalchemy.engine import make_url

    try:
        u = make_url(url)
    except Exception:  # noqa: BLE001  (a bad URL: let open_store say why)
        return True
    if u.get_backend_name() != "sqlite":
        return True
    db = u.database or ""
    return db not in ("", ":memory:") and Path(db).expanduser().is_file()


def task_timeline(store: Store, task: str, cap: float = lifecycle.DEFAULT_CAP,
                  rules: Sequence[Rule] = ()) -> TaskTimeline:
    """``task`` 's recorded runs (counts, p̂, the state after each), its state now with its
    evidence in one sentence, owner (from ``rules``) and quarantine, read in one snapshot."""
    import sqlalchemy as sa

    from flaketui.history import schema

    r, t, tr, q = schema.runs, schema.tasks, schema.task_results, schema.quarantines
    need = lifecycle.trials_needed(cap)
    with store.reading() as conn:
        runs_recorded = conn.execute(sa.select(sa.func.count()).select_from(r)).scalar() or 0
        names = dict(conn.execute(sa.select(r.c.id, r.c.name)).all())
        rows = conn.execute(
            sa.select(r.c.id, r.c.name, r.c.recorded_at, tr.c.trials, tr.c.passes, tr.c.errored, tr.c.p_hat)
            .join(tr, tr.c.run_id == r.c.id).join(t, t.c.id == tr.c.task_id)
            .where(t.c.name == task).order_by(r.c.id)).all()
        qrow = conn.execute(sa.select(q).where(q.c.task == task, q.c.lifted_at.is_(None))).first()
    ev = lifecycle.Evidence.empty(1)
    runs = []
    for row in rows:  # fold as recording did: the runs the task is in, in recorded order
        ev = lifecycle.fold(ev, int(row.id), np.array([row.trials]), np.array([row.passes]))
        runs.append(TimelineRun(int(row.id), row.name, _when(row.recorded_at), int(row.trials),
                                int(row.passes), int(row.errored),
                                None if row.p_hat is None else float(row.p_hat),
                                str(lifecycle.states(ev, cap)[0])))
    computed = str(lifecycle.states(ev, cap)[0])
    quarantine = None
    if qrow is not None:
        quarantine = {"who": qrow.who, "at": _when(qrow.at), "why": qrow.why, "ticket": qrow.ticket,
                      "ready_to_lift": computed == lifecycle.FIXED}
    owner = owners_of([task], rules)[0] if rules else ()
    return TaskTimeline(task, int(runs_recorded), runs,
                        lifecycle.QUARANTINED if quarantine else computed, computed,
                        _evidence(ev, computed, names, cap, need), cap, need, tuple(owner), quarantine)


def _evidence(ev: lifecycle.Evidence, computed: str, names: dict[int, str], cap: float, need: int) -> str:
    clean = int(ev.clean_since[0])
    last_bad = int(ev.last_bad[0])
    if int(ev.runs_seen[0]) == 0:
        return "in no recorded run"
    if last_bad < 0:
        return f"{clean} clean trials, never flaky or failing"
    since = f"{clean} clean trials since run {names.get(last_bad, f'#{last_bad}')}"
    if computed == lifecycle.FIXED:
        return f"{since}: fixed at cap {cap:g} ({need} needed)"
    return f"{since}: {max(need - clean, 0)} more to call it fixed at cap {cap:g}"

