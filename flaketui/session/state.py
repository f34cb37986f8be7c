"""What both faces share: a :class:`Session` (the options, the loaded log) and a :class:`RunState` per run.

A run's parts — its trials by task, its statistics at k, its owners, and what the jobs of
:mod:`flaketui.session.jobs` find in its traces (first divergences, suggested causes, trajectory
consistency) — are each computed once and kept on its :class:`RunState`: the task table, the
plan, the comparison and the CLI read the same object instead of regrouping the trials each.
A new log (``--watch``) makes new run states; nothing here knows of Textual or Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from flaketui.loading.options import LoadOptions
from flaketui.model import RunOutcomes, TrialLog
from flaketui.stats import TaskStats, task_stats
from flaketui.stats.classes import DEFAULT_FLAKY_CAP
from flaketui.stats.suite import k_figures
from flaketui.traces.normalise import Normaliser

if TYPE_CHECKING:
    from flaketui.history.owners import Rule
    from flaketui.triage import TriageStore

CAUSES_FAILED = "failed (see the notification)"
"""A run's :attr:`RunState.causes_progress` when its causes job raised."""


class RunState:
    """One run of the session's log and every part computed for it so far.

    Args:
        session: The session whose log holds the run (its options: the flakiness cap, the owners).
        name: The run's name.
    """

    def __init__(self, session: Session, name: str) -> None:
        self.session = session
        self.name = name
        log = session.log
        assert log is not None, "a run state needs a loaded log"
        self.log: TrialLog = log
        self._outcomes: RunOutcomes | None = None
        self._stats: TaskStats | None = None
        self._owners: list[str] | None = None
        self.divergences: dict[str, int | None] = {}
        """Flaky task with traces → its first divergence step (None: none), as the divergence job finds them."""
        self.divergence_mode: str | None = None
        """The divergence mode :attr:`divergences` were found in (None: each pair's default)."""
        self.divergences_started = False
        """Whether a divergence job was started for the run (its steps fill in as it goes)."""
        self.causes: dict[str, str] = {}
        """Flaky task → its suggested source of flakiness (kept in the triage file, or found by the
        causes job); a suggestion, never a label."""
        self.suggestions: dict[str, Any] = {}
        """Flaky task → its whole :class:`~flaketui.traces.causes.CauseSuggestion`, for the tasks the
        causes job read (a cause kept in the triage file has none)."""
        self.consistency: dict[str, float | None] = {}
        """Flaky task with traces → its trajectory consistency (None: fewer than two passing trials
        with actions), found beside the causes."""
        self.causes_started = False
        """Whether a causes job was started for the run."""
        self.causes_progress: str | None = None
        """While the causes job runs: "3 of 10" (tasks read), "…" before its first batch, or
        :data:`CAUSES_FAILED`; None once done (or never started)."""

    @property
    def outcomes(self) -> RunOutcomes:
        """The run's trials grouped by task (grouped once)."""
        if self._outcomes is None:
            self._outcomes = self.log.run_outcomes(self.name)
        return self._outcomes

    def stats(self, k: int) -> TaskStats:
        """The run's statistics at ``k``: :func:`~flaketui.stats.task_stats` the first time, then the
        same statistics with only the three that depend on k computed again (the classes, intervals
        and rates are kept: a million tasks' classes alone take 0.1 s); the same object while k is."""
        st = self._stats
        if st is None:
            st = task_stats(self.outcomes, k, flaky_cap=self.session.flaky_cap)
        elif st.k != k:
            at, hat, hat_ci = k_figures(self.outcomes.n, self.outcomes.passes, k)
            st = replace(st, k=k, pass_at_k=at, pass_hat_k=hat, pass_hat_k_ci=hat_ci)
        self._stats = st
        return st

    @property
    def owners(self) -> list[str]:
        """Each task's owners by the session's owners rules, space-separated (empty: none)."""
        if self._owners is None:
            from flaketui.history.owners import owners_of

            outcomes = self.outcomes
            self._owners = [" ".join(o) for o in owners_of(outcomes.tasks, self.session.owners, outcomes.groups)]
        return self._owners

    @property
    def history_states(self) -> dict[str, str] | None:
        """Task → its lifecycle state in the history (the session's, read once for every run)."""
        return self.session.history_states

    def forget_divergences(self) -> None:
        """The divergence mode changed: the steps found are the other mode's."""
        self.divergences = {}
        self.divergences_started = False


@dataclass
class Session:
    """The options both faces share, the loaded log and its run states.

    The CLI makes one from its options and runs the jobs it needs to the end; the app holds one
    for its life and runs the jobs in workers.
    """

    k: int | None = None
    """k for pass@k and pass^k; None until chosen (the app: the trials most tasks have, once loaded)."""
    k_is_default: bool = True
    """True while k is the default (the trials most tasks have), not chosen by the user."""
    divergence: str | None = None
    """The divergence mode every trace comparison uses (``actions`` / ``all``); None: each pair's
    default (:func:`flaketui.traces.default_mode`)."""
    normaliser: Normaliser = field(default_factory=Normaliser)
    """Drops ids, timestamps, durations and the ignored keys from trace steps."""
    flaky_cap: float = DEFAULT_FLAKY_CAP
    """The flakiness cap the task classes are stated against."""
    owners: Sequence[Rule] = ()
    """The owners file's rules (``--owners``)."""
    history_url: str | None = None
    """The history the task states are read from (None: the default one)."""
    load: LoadOptions = field(default_factory=LoadOptions)
    """How logs are read (sources roots, problem display, cache…)."""
    triage_store: TriageStore | None = None
    """The triage notes, once opened (the face decides where)."""
    history_states: dict[str, str] | None = None
    """Task → its lifecycle state in the history, once read (None: not read, or none recorded)."""
    log: TrialLog | None = field(default=None, repr=False)
    """Every loaded trial (None: not loaded yet)."""
    _runs: dict[str, RunState] = field(default_factory=dict, repr=False)

    @classmethod
    def with_keys(cls, ignore_keys: Sequence[str] = (), flaky_cap: float | None = None, **options: Any) -> Session:
        """A session whose normaliser also drops ``ignore_keys`` (``--ignore-key``), at ``flaky_cap``
        (None: the default cap)."""
        return cls(normaliser=Normaliser.with_keys(tuple(ignore_keys)),
                   flaky_cap=DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap, **options)

    def set_log(self, log: TrialLog) -> None:
        """Make ``log`` the session's log: every run state is made afresh from it."""
        self.log = log
        self._runs = {}

    def run(self, name: str) -> RunState:
        """Run ``name``'s state (made on first ask, kept until the log changes; two threads asking
        at once get the same one: ``setdefault`` is atomic)."""
        state = self._runs.get(name)
        return self._runs.setdefault(name, RunState(self, name)) if state is None else state

    def usual_k(self) -> int:
        """The trials most tasks have (:func:`~flaketui.stats.default_k` over every run): k when not given."""
        from flaketui.stats import default_k

        return default_k([state.outcomes for state in self.runs()])

    def follow_usual_k(self) -> bool:
        """A new log arrived (``--watch``): while k is the default, it follows the trials most tasks
        have up, never down (new tasks with one trial each are counted below k, as the summary says,
        until they catch up: not a reason to drop to k = 1 for every task). True when k rose."""
        if not self.k_is_default:
            return False
        usual = self.usual_k()
        if self.k is not None and usual <= self.k:
            return False
        self.k = usual
        return True

    def runs(self) -> list[RunState]:
        """Every run's state, in the log's order."""
        assert self.log is not None
        return [self.run(name) for name in self.log.runs]
