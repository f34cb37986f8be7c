"""A task's lifecycle across recorded runs: stable, failing, flaky, undetermined, fixed, regressed,
quarantined.

Each run a task appears in is *clean* (it passed every one of its n > 0 trials), *mixed*
(0 < passes < n: the report's ``mixed``, a fact about the run) or *failing* (no pass in n > 0
trials); a run with no usable trial (n = 0) is counted as seen and changes nothing else. A
mixed or failing run is a *bad* run. Whether a task is flaky is not a fact about one run but
the report's class (:func:`flaketui.stats.classes.evidence_classes`, against a flakiness cap)
of the task's trials pooled over every recorded run.

The evidence is folded run by run, in the order the runs were recorded, into a few numbers
per task (:class:`Evidence`), so that ``history status`` reads one row per task whatever the
number of runs, and recording a run updates only its tasks' rows:

- ``clean_since``: clean trials since the last bad run (every trial, if none was bad);
- ``max_gap``: the most clean trials between two consecutive bad runs (-1: fewer than two);
- ``first_flaky`` / ``last_flaky`` / ``last_bad``: run ids of mixed and bad runs (-1: none);
- ``runs_seen``;
- ``trials`` / ``passes``: usable trials and passes over every run, the evidence the class
  is stated on.

The states, from these (:func:`states`), at a cap on the failure rate (the fixed rule) and a
flakiness cap (the class, default the report's ``--flaky-cap``, given when read: the history
stores the trials, not a class, so a history read at another cap needs no new recording):

- ``fixed``: a bad run, then enough clean trials that the one-sided 95% upper bound of the
  failure rate (zero failures in ``clean_since`` trials: ``1 − 0.05^(1/n)``, the exact
  Clopper–Pearson bound, :func:`flaketui.stats.estimators.rule_of_three`) is at most the cap:
  29 clean trials at cap 0.1 (28 give 0.1015);
- ``regressed``: not fixed now, but fixed once (``max_gap`` met the rule) and bad since;
- ``flaky``: mixed in some run, not fixed, and its pooled trials' class is ``flaky`` (their
  exact interval rules out flakiness at or below the cap);
- ``failing``: bad, not fixed, and never mixed in a run (only runs failing every trial: a task
  that passed in some runs and failed in others changed between them, which the fixed and
  regressed rules follow, rather than varied within one), or its class is ``stable-fail``;
- ``undetermined``: mixed in some run, not fixed, and its class neither flaky nor stable (more
  trials decide: :func:`flaketui.stats.classes.trials_to_decide`): one mixed run is no longer
  enough to be called flaky;
- ``stable``: never bad, or mixed but its class is ``stable-pass`` (its trials rule out
  flakiness above the cap); a task with no usable trial in any run is ``undetermined``.

A history recorded before the classes keeps its numbers; only what ``flaky`` means changed,
and a migration backfills the pooled trials from the recorded results.

``quarantined`` is set by a person and overrides all of these (the computed state is still
reported, and a quarantined task that meets the fixed rule is ``ready_to_lift``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flaketui.stats import classes
from flaketui.stats.classes import DEFAULT_FLAKY_CAP, UNDETERMINED
from flaketui.stats.estimators import CONFIDENCE, STABLE_FAIL, STABLE_PASS, rule_of_three

STABLE, FAILING, FLAKY, FIXED, REGRESSED, QUARANTINED = (
    "stable", "failing", "flaky", "fixed", "regressed", "quarantined")
STATES = (STABLE, FAILING, FLAKY, UNDETERMINED, FIXED, REGRESSED, QUARANTINED)
"""Every state ``history status`` reports."""

DEFAULT_CAP = 0.1
"""Default cap on the failure rate's upper bound for a task to be called fixed."""

FIELDS = ("runs_seen", "first_flaky", "last_flaky", "last_bad", "clean_since", "max_gap", "last_run", "trials",
          "passes")
"""The per-task evidence columns, in the order of :class:`Evidence` and the summary table."""


@dataclass
class Evidence:
    """Per task (aligned int64 arrays), what the runs recorded so far say; see the module."""

    runs_seen: np.ndarray
    first_flaky: np.ndarray
    last_flaky: np.ndarray
    last_bad: np.ndarray
    clean_since: np.ndarray
    max_gap: np.ndarray
    last_run: np.ndarray
    trials: np.ndarray
    passes: np.ndarray

    @classmethod
    def empty(cls, size: int) -> Evidence:
        """The evidence of ``size`` tasks no run has seen."""
        none = np.full(size, -1, dtype=np.int64)
        return cls(np.zeros(size, np.int64), none.copy(), none.copy(), none.copy(),
                   np.zeros(size, np.int64), none.copy(), none.copy(), np.zeros(size, np.int64),
                   np.zeros(size, np.int64))

    def __len__(self) -> int:
        return int(self.runs_seen.shape[0])

    def columns(self) -> tuple[np.ndarray, ...]:
        """The arrays in :data:`FIELDS` order."""
        return tuple(getattr(self, f) for f in FIELDS)


def fold(ev: Evidence, run_id: int, n: np.ndarray, passes: np.ndarray) -> Evidence:
    """The evidence after one more run, whose per-task trials ``n`` and passes ``passes`` are
    aligned with ``ev`` (a new :class:`Evidence`; ``ev`` is left as it is). Vectorised."""
    n = np.asarray(n, dtype=np.int64)
    passes = np.asarray(passes, dtype=np.int64)
    if n.shape != ev.runs_seen.shape or passes.shape != n.shape:
        raise ValueError(f"a run of {n.shape[0]} tasks does not match evidence of {len(ev)} tasks")
    used = n > 0
    clean = used & (passes >= n)
    bad = used & (passes < n)
    flaky = bad & (passes > 0)
    had_bad = ev.last_bad >= 0
    max_gap = np.where(bad & had_bad, np.maximum(ev.max_gap, ev.clean_since), ev.max_gap)
    clean_since = np.where(bad, 0, np.where(clean, ev.clean_since + n, ev.clean_since))
    return Evidence(
        runs_seen=ev.runs_seen + 1,
        first_flaky=np.where(flaky & (ev.first_flaky < 0), run_id, ev.first_flaky),
        last_flaky=np.where(flaky, run_id, ev.last_flaky),
        last_bad=np.where(bad, run_id, ev.last_bad),
        clean_since=clean_since,
        max_gap=max_gap,
        last_run=np.full_like(ev.last_run, run_id),
        trials=ev.trials + np.where(used, n, 0),
        passes=ev.passes + np.where(used, passes, 0),
    )


def meets_rule(clean: np.ndarray, cap: float, confidence: float = CONFIDENCE) -> np.ndarray:
    """Whether ``clean`` trials without a failure bound the failure rate at most ``cap``
    (one-sided, at ``confidence``)."""
    clean = np.asarray(clean, dtype=np.int64)
    return (clean > 0) & (rule_of_three(np.maximum(clean, 0), confidence) <= cap)


def trials_needed(cap: float, confidence: float = CONFIDENCE) -> int:
    """The fewest clean trials that meet the fixed rule at ``cap`` (29 at 0.1, 95%)."""
    if not 0 < cap < 1:
        raise ValueError(f"cap ({cap!r}) must be between 0 and 1")
    n = max(1, int(np.floor(np.log(1 - confidence) / np.log1p(-cap))) - 1)
    while not meets_rule(np.array([n]), cap, confidence)[0]:
        n += 1
    return n


def evidence_class(ev: Evidence, flaky_cap: float = DEFAULT_FLAKY_CAP) -> np.ndarray:
    """Each task's class from its trials pooled over the recorded runs, by the report's rule
    (:func:`flaketui.stats.classes.evidence_classes`) against ``flaky_cap``."""
    return np.asarray(classes.evidence_classes(ev.trials, ev.passes, flaky_cap), dtype=object)


def states(ev: Evidence, cap: float = DEFAULT_CAP, flaky_cap: float = DEFAULT_FLAKY_CAP,
           cls: np.ndarray | None = None) -> np.ndarray:
    """The computed state of each task (an array of state names; never ``quarantined``): the
    fixed rule at ``cap``, the class against ``flaky_cap`` (see the module; ``cls``: the
    classes :func:`evidence_class` gave already, not worked out again)."""
    if not 0 < cap < 1:
        raise ValueError(f"cap ({cap!r}) must be between 0 and 1")
    if cls is None:
        cls = evidence_class(ev, flaky_cap) if len(ev) else np.zeros(0, dtype=object)
    ever_bad = ev.last_bad >= 0
    fixed = ever_bad & meets_rule(ev.clean_since, cap)
    regressed = ~fixed & meets_rule(ev.max_gap, cap)
    open_ = ever_bad & ~fixed & ~regressed
    was_mixed = ev.first_flaky >= 0
    flaky = open_ & was_mixed & (cls == FLAKY)
    failing = open_ & (~was_mixed | (cls == STABLE_FAIL))
    undetermined = open_ & was_mixed & ~flaky & ~failing & (cls != STABLE_PASS)
    out = np.full(len(ev), STABLE, dtype=object)
    # No usable trial in any run (every one errored): "never bad" says nothing, the trials decide nothing.
    out[np.asarray(ev.trials) == 0] = UNDETERMINED
    out[failing] = FAILING
    out[undetermined] = UNDETERMINED
    out[flaky] = FLAKY
    out[regressed] = REGRESSED
    out[fixed] = FIXED
    return out


NOTIFIED = {FLAKY: "flaky", REGRESSED: "regressed", FIXED: "fixed"}
"""The computed states whose arrival is a transition worth a message (newly flaky, regressed,
fixed), by the transition's kind."""
QUARANTINE_ENDED = "quarantine_ended"
KINDS = (*NOTIFIED.values(), QUARANTINE_ENDED)
"""Every kind of transition the history records (``transitions.kind``)."""


def changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The indices where a task's computed state changed into one of :data:`NOTIFIED`."""
    before = np.asarray(before, dtype=object)
    after = np.asarray(after, dtype=object)
    return np.flatnonzero((before != after) & np.isin(after, list(NOTIFIED)))


def evidence_line(runs_seen: int, clean: int, last_bad: str | None, computed: str, cap: float, need: int) -> str:
    """One sentence on a task's evidence: clean trials since its last bad run (named
    ``last_bad``; None: never bad), and what is still needed to call it fixed."""
    if runs_seen == 0:
        return "in no recorded run"
    if last_bad is None:
        return f"{clean} clean trials, never flaky or failing"
    since = f"{clean} clean trials since run {last_bad}"
    if computed == FIXED:
        return f"{since}: fixed at cap {cap:g} ({need} needed)"
    return f"{since}: {max(need - clean, 0)} more to call it fixed at cap {cap:g}"
