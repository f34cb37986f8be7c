"""A loaded log's runs as history records, recorded in one call that says what it did; and the
states a history gives a log's tasks — for the callers that are not ``flaketui history``: the
app's ``--record`` and its ``state`` column. No Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flaketui.model import TrialLog
from flaketui.sanitize import mask_secrets, mask_text, visible


def run_records(log: TrialLog, found: Mapping[str, Mapping[str, Any]] | None = None) -> list[Any]:
    """A :class:`~flaketui.history.RunRecord` for each run of ``log``; with ``found`` (run → task →
    :class:`~flaketui.traces.causes.CauseSuggestion`), each flaky task's suggested source and first
    divergence step too."""
    from flaketui.history import RunRecord

    records = []
    for name in log.runs:
        o = log.run_outcomes(name)
        by_task = (found or {}).get(name, {})
        source = [by_task[t].cause if t in by_task else None for t in o.tasks] if by_task else None
        step = ([divergence_step(by_task[t].evidence) if t in by_task else None for t in o.tasks]
                if by_task else None)
        records.append(RunRecord(name=name, tasks=o.tasks, n=o.n, passes=o.passes, errored=o.errored,
                                 meta=mask_secrets(dict(log.run_meta.get(name, {}))), suggested_source=source,
                                 first_divergence=step,
                                 groups=o.groups if any(g is not None for g in o.groups) else None))
    return records


def divergence_step(evidence: Any) -> int | None:
    """The step a task's passing and failing trials part at, as the history keeps it: the harness's
    own whole-number step id (ATIF ``step_id``, τ²'s ``turn_idx``) when it numbers its steps, else
    the 1-based row — the number the report and the trace view show."""
    if evidence is None:
        return None
    own = evidence.id_a
    return own if isinstance(own, int) and not isinstance(own, bool) else evidence.step_a


def record_said(log: TrialLog, url: str | None) -> tuple[str, bool]:
    """Record every run of ``log`` in the history at ``url`` (None: the default) and say what
    was done in one line, and whether it was done. Never raises: a history that cannot be used,
    or anything else, is the line said, with False (the app shows it as a notification)."""
    from flaketui.history import HistoryError, open_store

    try:
        records = run_records(log)
        with open_store(url) as store:
            done = store.record(records)
    except HistoryError as exc:
        return visible(mask_text(str(exc))), False
    except Exception as exc:  # noqa: BLE001  (a notification, never a traceback in the app)
        return visible(mask_text(f"recording the runs failed: {type(exc).__name__}: {exc}".splitlines()[0])), False
    new = [r for r in done if r.new]
    again = len(done) - len(new)
    parts = [f"recorded {len(new)} run{'s' if len(new) != 1 else ''}"]
    if new:
        parts[0] += " (" + ", ".join(visible(r.name) for r in new[:3]) + (", …" if len(new) > 3 else "") + ")"
    if again:
        parts.append(f"{again} already recorded")
    return "; ".join(parts), True


def task_states(url: str | None, flaky_cap: float | None = None) -> dict[str, str] | None:
    """Each recorded task's lifecycle state now (quarantine included, at the default cap, the
    class against ``flaky_cap``: None, the default), or None when the history at ``url`` has no
    file or no run yet."""
    from flaketui.history import default_url, open_store
    from flaketui.history.status import current_states, history_exists

    url = url or default_url()
    if not history_exists(url):
        return None
    with open_store(url) as store:
        data = store.data(recent=0)
    if not data.runs:
        return None
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    cap = DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap
    return dict(zip(data.tasks, current_states(data, flaky_cap=cap).tolist(), strict=True))
