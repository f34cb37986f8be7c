"""What the report leaves out, pairs or counts apart before its statistics: the trials of
``--exclude-window``'s windows, ``--rescored``'s grades paired with the trials, errored trials by
kind, each run's retry audit, and ``--baseline``'s comparisons. Headless: both faces may ask
for them; what is wrong with the input is an :class:`~flaketui.model.InputError` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flaketui.model import InputError, TrialLog
from flaketui.sanitize import visible

if TYPE_CHECKING:  # the core's modules load when a report with these options runs
    from flaketui.stats.baseline import BaselineComparisons
    from flaketui.traces.burst import Exclusion
    from flaketui.traces.causes import Rescoring


@dataclass(frozen=True)
class ReportInputs:
    """What a report states its statistics of, and says beside them (:func:`report_inputs`)."""

    log: TrialLog
    """The trials the rates are of: without metrics (the report shows none), without the
    excluded windows' trials, and without their byte spans unless traces are still to be read."""
    retries: dict[str, Any] | None
    """Each run's retry audit (:func:`retry_audits`)."""
    errored: Mapping[str, Mapping[str, int]] | None
    """The errored trials by kind (:func:`errored_kinds`)."""
    exclusion: Exclusion | None = None
    """What ``--exclude-window`` left out (:func:`exclude_windows`); None: no window."""
    rescoring: dict[str, Rescoring] | None = None
    """``--rescored``'s grades paired with the trials (:func:`pair_rescored`); None: none given."""


def report_inputs(loaded: TrialLog, runs: Sequence[str], windows: Sequence[tuple[float, float]] = (),
                  rescored: TrialLog | None = None, keep_locations: bool = False) -> ReportInputs:
    """The report's filters in their one order, from the log as loaded: the retry audits (before
    the metrics, an attempt being one, are let go), the windows left out, the re-scored grades
    paired, the errored trials counted by kind (read back from their records: before their byte
    spans are let go, unless ``keep_locations``, for traces still to be read; 1M trials: 48 MB)."""
    retries = retry_audits(loaded, runs)
    log = loaded.without_metrics()
    exclusion = None
    if windows:
        log, exclusion = exclude_windows(log, windows)
    rescoring = pair_rescored(log, rescored) if rescored is not None else None
    errored = errored_kinds(log, runs)
    if not keep_locations:
        log = log.without_locations()
    return ReportInputs(log, retries, errored, exclusion, rescoring)


def retry_audits(log: TrialLog, runs: Sequence[str]) -> dict[str, Any] | None:
    """Each run's retry audit (:func:`flaketui.stats.retries.retry_audit`) where its trials carry
    an attempt (the metric :data:`~flaketui.loading.records.ATTEMPT`) and some were retried;
    None when no trial carries one."""
    from flaketui.loading.records import ATTEMPT

    attempt = log.metrics.get(ATTEMPT)
    if attempt is None:
        return None
    import numpy as np

    from flaketui.stats.retries import retry_audit

    out = {}
    for name in runs:
        r = log.runs.index(name)
        rows = np.flatnonzero(log.run == r)
        audit = retry_audit(log.task[rows], log.outcome[rows], attempt[rows], log.tasks,
                            errored_as=log.fields.errored_as)
        if audit is not None:
            out[name] = audit
    return out


def errored_kinds(log: TrialLog, runs: Sequence[str]) -> Mapping[str, Mapping[str, int]] | None:
    """The errored trials of ``runs`` (those reported), by kind (:func:`~flaketui.loading.error_types.errored_by_type`)."""
    from flaketui.loading import error_types

    return error_types.errored_by_type(log, runs, limit=error_types.MAX_READS)


def exclude_windows(log: TrialLog, windows: Sequence[tuple[float, float]]) -> tuple[TrialLog, Exclusion]:
    """``log`` without the trials that started in one of ``windows``, and what was left out.

    Each trial's start time is read back from its record (its trace is not built: about
    0.3 ms a trial); a trial without one is kept and counted as untimed.
    """
    import numpy as np

    from flaketui.loading import read_trial
    from flaketui.traces.burst import Exclusion, in_windows, trial_time

    times = [trial_time(read_trial(log, r, max_steps=0).extra) for r in range(len(log))]
    out = in_windows(times, windows)
    by_task: dict[str, dict[str, int]] = {}
    for r in np.flatnonzero(out).tolist():
        counts = by_task.setdefault(log.runs[int(log.run[r])], {})
        name = log.tasks[int(log.task[r])]
        counts[name] = counts.get(name, 0) + 1
    kept = log.take(~out)
    emptied: dict[str, tuple[str, ...]] = {}
    for name, counts in by_task.items():
        left = set(kept.run_outcomes(name).tasks)
        emptied[name] = tuple(t for t in counts if t not in left)
    untimed = sum(t is None for t in times)
    return kept, Exclusion(tuple(windows), by_task, emptied, untimed)


def pair_rescored(log: TrialLog, again: TrialLog) -> dict[str, Rescoring]:
    """Each run's re-scored grades (task → trial → 1 pass / 0 fail), paired by task and trial number.

    A run of ``log`` is paired with the run of ``again`` of its name, else, when ``again`` has
    one run, with that one; no run pairing: an :class:`~flaketui.model.InputError`. An errored
    re-scored trial gives no grade.
    """
    import numpy as np

    from flaketui.model import ERRORED, PASS
    from flaketui.traces.causes import Rescoring

    out: dict[str, Rescoring] = {}
    for name in log.runs:
        other = name if name in again.runs else (again.runs[0] if len(again.runs) == 1 else None)
        if other is None:
            raise InputError(f"--rescored: no run of the re-scored log pairs with run {visible(name)!r} "
                             f"(its runs: {visible(', '.join(again.runs))})")
        rows = np.flatnonzero(again.run == again.runs.index(other))
        grades: dict[tuple[str, int], float] = {}
        for r in rows.tolist():
            if int(again.outcome[r]) != ERRORED:
                grades[(again.tasks[int(again.task[r])], int(again.trial[r]))] = \
                    1.0 if int(again.outcome[r]) == PASS else 0.0
        mine = np.flatnonzero(log.run == log.runs.index(name))
        by_task: dict[str, dict[int, float]] = {}
        paired = 0
        seen = set()
        for r in mine.tolist():
            key = (log.tasks[int(log.task[r])], int(log.trial[r]))
            if key in grades and int(log.outcome[r]) != ERRORED:
                by_task.setdefault(key[0], {})[key[1]] = grades[key]
                paired += 1
                seen.add(key)
        unpaired = int((log.outcome[mine] != ERRORED).sum()) - paired
        out[name] = Rescoring(by_task, paired, unpaired, len(grades) - len(seen), other)
    return out


def baseline_comparisons(log: TrialLog, baseline: str, alpha: float) -> BaselineComparisons:
    """Every other run of ``log`` against ``baseline`` (an unknown run, or a single one: an
    :class:`~flaketui.model.InputError`)."""
    from flaketui.stats import task_stats
    from flaketui.stats.baseline import against_baseline

    if baseline not in log.runs:
        raise InputError(f"no run named {visible(baseline)!r}; runs: {', '.join(visible(r) for r in log.runs)}")
    if len(log.runs) < 2:
        raise InputError(f"--baseline needs at least two runs; the logs hold one ({visible(log.runs[0])})")
    return against_baseline([task_stats(log.run_outcomes(r), 1) for r in log.runs], baseline, alpha)
