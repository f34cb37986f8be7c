"""Per-task status rows of a history: state, evidence, owner, quarantine, p̂ in recent runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flaketui.history import lifecycle
from flaketui.history.owners import Rule, owners_of
from flaketui.history.store import HistoryData


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
