"""Per-task status rows of a history: state, evidence, owner, quarantine, p̂ in recent runs;
and one task's timeline across the recorded runs (:func:`task_timeline`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flaketui.history import lifecycle
from flaketui.history.owners import Rule, owners_of
from flaketui.history.snapshot import HistoryData
from flaketui.history.snapshot import when as _when

if TYPE_CHECKING:
    from flaketui.history.store import Store


def status_doc(data: HistoryData, cap: float = lifecycle.DEFAULT_CAP, rules: Sequence[Rule] = (),
               states: Sequence[str] = (), owner: str | None = None,
               flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> dict[str, Any]:
    """The ``history status`` document (``--format json``): ``runs``, ``cap``, ``flaky_cap``,
    ``trials_needed``, ``recent_runs``, ``counts`` by state, ``by_owner`` (with ``rules``: per
    owner, a task with several counted under each, ``null`` for no owner, the tasks and their
    counts by state; like ``counts``, over every task, not only those shown), and ``tasks`` (one
    object each, filtered to ``states`` and ``owner`` when given; ``class`` of its pooled trials
    against ``flaky_cap``, ``trials``, ``passes``, and ``trials_to_decide`` when undetermined)."""
    from flaketui.stats.classes import trials_to_decide

    ev = data.evidence
    cls = lifecycle.evidence_class(ev, flaky_cap) if len(ev) else np.zeros(0, dtype=object)
    computed = lifecycle.states(ev, cap, flaky_cap, cls)
    need = lifecycle.trials_needed(cap)
    state = current_states(data, computed=computed)
    owners = owners_of(data.tasks, rules, data.groups) if rules else [()] * len(data.tasks)
    names = data.run_names
    counts = {s: int(np.count_nonzero(state == s)) for s in lifecycle.STATES}
    ever_bad = ev.last_bad >= 0
    to_fixed = np.where(ever_bad & (computed != lifecycle.FIXED), np.maximum(need - ev.clean_since, 0), 0)
    keep = np.ones(len(data.tasks), dtype=bool)
    if states:
        keep &= np.isin(state, list(states))
    if owner is not None:
        keep &= np.array([owner in o for o in owners], dtype=bool)
    # Columns to Python lists once: indexing numpy arrays element by element costs more than the rest.
    picked = np.flatnonzero(keep)
    first, last, last_bad = (ev.first_flaky[picked].tolist(), ev.last_flaky[picked].tolist(),
                             ev.last_bad[picked].tolist())
    clean, need_more, seen = (ev.clean_since[picked].tolist(), to_fixed[picked].tolist(),
                              ev.runs_seen[picked].tolist())
    trials, passes, cls_of = ev.trials[picked].tolist(), ev.passes[picked].tolist(), cls[picked].tolist()
    und = computed[picked] == lifecycle.UNDETERMINED
    decide = np.full(len(picked), np.nan)
    if und.any():
        decide[und] = trials_to_decide(ev.trials[picked][und], ev.passes[picked][und], flaky_cap)
    decide_list = [None if x != x else int(x) for x in decide.tolist()]
    p = np.round(data.recent_p_hat[picked], 6)
    p_lists = p.tolist()
    for j in np.flatnonzero(np.isnan(p).any(axis=1)).tolist():  # not in the run, or no trial: null
        p_lists[j] = [None if x != x else x for x in p_lists[j]]
    tasks = []
    for j, i in enumerate(picked.tolist()):
        name = data.tasks[i]
        row: dict[str, Any] = {
            "task": name,
            "group": data.groups[i],
            "state": state[i],
            "computed_state": computed[i],
            "class": cls_of[j],
            "trials": trials[j],
            "passes": passes[j],
            "trials_to_decide": decide_list[j],
            "first_seen_flaky": names.get(first[j]),
            "last_seen_flaky": names.get(last[j]),
            "last_bad_run": names.get(last_bad[j]),
            "clean_trials_since": clean[j],
            "trials_to_fixed": need_more[j],
            "runs_seen": seen[j],
            "owner": list(owners[i]),
            "p_hat": p_lists[j],
            "quarantine": None,
        }
        q = data.quarantines.get(name)
        if q is not None:
            row["quarantine"] = {**q, "ready_to_lift": computed[i] == lifecycle.FIXED}
        tasks.append(row)
    doc: dict[str, Any] = {"runs": data.runs, "cap": cap, "flaky_cap": flaky_cap, "trials_needed": need,
                           "recent_runs": data.recent_runs, "counts": counts}
    if rules:
        doc["by_owner"] = by_owner(owners, state.tolist())
    doc["tasks"] = tasks
    doc["ending"] = ending(data.quarantines)
    return doc


def ending(quarantines: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The active quarantines that end by themselves, the soonest date first (then those
    waiting on clean runs, the nearest first): ``task``, ``until``, ``until_clean``,
    ``clean_runs`` and ``ends`` (one line with the evidence so far)."""
    out = []
    for task, q in quarantines.items():
        if q.get("until") is None and q.get("until_clean") is None:
            continue
        parts = []
        if q.get("until") is not None:
            parts.append(f"at {q['until']}")
        if q.get("until_clean") is not None:
            parts.append(f"after {q['until_clean']} clean runs ({q['clean_runs'] or 0} so far)")
        line = " or ".join(parts) + (f"; {q['progress']}" if q.get("progress") else "")
        out.append({"task": task, "until": q.get("until"), "until_clean": q.get("until_clean"),
                    "clean_runs": q.get("clean_runs"), "ends": line})
    out.sort(key=lambda e: (e["until"] is None, e["until"] or "",
                            (e["until_clean"] or 0) - (e["clean_runs"] or 0)))
    return out


def current_states(data: HistoryData, cap: float = lifecycle.DEFAULT_CAP,
                   computed: np.ndarray | None = None, flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> np.ndarray:
    """Each task's state now: the lifecycle's (``computed``, else worked out at ``cap`` and
    ``flaky_cap``), or ``quarantined`` where a person set it."""
    state = (lifecycle.states(data.evidence, cap, flaky_cap) if computed is None else computed).copy()
    state[np.array([t in data.quarantines for t in data.tasks], dtype=bool)] = lifecycle.QUARANTINED
    return state


def by_owner(owners: Sequence[tuple[str, ...]], state: Sequence[str]) -> list[dict[str, Any]]:
    """Per owner (first seen first; None for tasks without one, last): its tasks and their counts
    by state (the states with none left out)."""
    groups: dict[str | None, dict[str, int]] = {}
    for names, st in zip(owners, state, strict=True):
        for name in names or (None,):
            counts = groups.setdefault(name, {})
            counts[st] = counts.get(st, 0) + 1
    order = [o for o in groups if o is not None] + ([None] if None in groups else [])
    return [{"owner": o, "tasks": sum(groups[o].values()),
             "counts": {st: groups[o][st] for st in lifecycle.STATES if st in groups[o]}} for o in order]


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
    group: str | None = None
    """The group the task was last recorded in (None: none)."""


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
                  rules: Sequence[Rule] = (), flaky_cap: float = lifecycle.DEFAULT_FLAKY_CAP) -> TaskTimeline:
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
        group = conn.execute(sa.select(t.c.group_name).where(t.c.name == task)).scalar()
    ev = lifecycle.Evidence.empty(1)
    runs = []
    for row in rows:  # fold as recording did: the runs the task is in, in recorded order
        ev = lifecycle.fold(ev, int(row.id), np.array([row.trials]), np.array([row.passes]))
        runs.append(TimelineRun(int(row.id), row.name, _when(row.recorded_at), int(row.trials),
                                int(row.passes), int(row.errored),
                                None if row.p_hat is None else float(row.p_hat),
                                str(lifecycle.states(ev, cap, flaky_cap)[0])))
    computed = str(lifecycle.states(ev, cap, flaky_cap)[0])
    quarantine = None
    if qrow is not None:
        quarantine = {"who": qrow.who, "at": _when(qrow.at), "why": qrow.why, "ticket": qrow.ticket,
                      "ready_to_lift": computed == lifecycle.FIXED}
    owner = owners_of([task], rules, [group])[0] if rules else ()
    return TaskTimeline(task, int(runs_recorded), runs,
                        lifecycle.QUARANTINED if quarantine else computed, computed,
                        _evidence(ev, computed, names, cap, need), cap, need, tuple(owner), quarantine, group)


def _evidence(ev: lifecycle.Evidence, computed: str, names: dict[int, str], cap: float, need: int) -> str:
    last_bad = int(ev.last_bad[0])
    return lifecycle.evidence_line(int(ev.runs_seen[0]), int(ev.clean_since[0]),
                                   None if last_bad < 0 else names.get(last_bad, f"#{last_bad}"), computed, cap, need)
