"""One run as the task table shows it: the headless state behind :class:`~flaketui.app.screens.tasks.TasksScreen`.

A :class:`RunView` holds what the table needs of the shown run, computed once per run rather
than per key, over the session's :class:`~flaketui.session.state.RunState` (which keeps the
run's trials by task, its statistics at k — a k change recomputes only the three figures k
moves — and what the jobs found): every column's sorted order with the one tie-break order of
every sort, the flaky mask, the name filter and the summary's facts. The screen holds one and
renders it; the view never draws and never imports Textual (it names the summary widget's facts
type only), so it is tested on its own.

It lives in the app (not the core) because it is made of the app's own parts — the table's
name filter (:mod:`flaketui.app.name_filter`) and its sorting (:mod:`flaketui.app.sorting`) —
and of the CLI report's tie-break order (:func:`~flaketui.output.stream.flakiest_order`), which
the layers put above the core.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from flaketui.app.name_filter import NameFilter
from flaketui.app.sorting import sorted_order
from flaketui.model import ERRORED, natural_ranks, who_ran
from flaketui.output.cells import widest_names
from flaketui.output.stream import flakiest_order
from flaketui.sanitize import mask_text, visible
from flaketui.stats import SuiteSummary, TaskStats, gate, summarise
from flaketui.stats.curves import KCurve, histogram, k_curve

if TYPE_CHECKING:
    from flaketui.model import RunOutcomes
    from flaketui.session.state import RunState

PENDING = -1
"""Divergence not computed yet (the table shows an ellipsis)."""

NAMES_MEASURED = 20000
"""Names measured for the task and group columns' widths (a million names would take a while)."""

ORDERS_KEPT = 6
"""Sorted orders kept (the most recent): each holds a column's values and the rows in order, 16 MB
at a million tasks, so sorting by every column in turn would otherwise hold hundreds of MB; one
not kept is sorted again when asked for (about a tenth of a second at a million tasks)."""


def any_per_task(flags: np.ndarray, outcomes: RunOutcomes) -> np.ndarray:
    """Per task of ``outcomes``, whether any of its trials has ``flags`` (one per trial row)."""
    if not flags.size:
        return np.zeros(len(outcomes.tasks), dtype=bool)
    return (np.add.reduceat(flags.astype(np.int64), outcomes.bounds[:-1]) > 0) & (np.diff(outcomes.bounds) > 0)


def whole_valued(medians: np.ndarray) -> bool:
    """Whether a metric counts whole things (tokens): every median is a whole number or a
    half (the median of an even number of whole values)."""
    finite = medians[~np.isnan(medians)]
    return bool(finite.size) and bool(np.all(finite * 2 == np.round(finite * 2)))


@dataclass(frozen=True)
class SummaryFacts:
    """What the summary says of the shown run (all computed before it is drawn)."""

    summary: SuiteSummary
    position: int
    """The run's place among the loaded runs (0-based)."""
    runs: int
    """How many runs are loaded."""
    ran: str
    """Who ran it (agent, model, harness; secrets masked), or empty."""
    k_is_default: bool
    gate: tuple[bool, Sequence[str]] | None
    """The gate's verdict and its reasons (None: no gate asked for)."""
    causes_line: str | None
    """The flaky tasks' suspected sources, or the causes job's progress (None: the run has no traces)."""
    alerts: list[str]
    """The run's warnings and what loading met, each one line (shown visible)."""
    problems: bool
    """Loading met problems (``e`` lists them)."""


class RunView:
    """The shown run's table state (see the module's docstring).

    Args:
        state: The run's state in the session (its trials by task, its statistics at k, what
            the jobs found).
    """

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.run = state.name
        log = state.log
        self.outcomes = outcomes = state.outcomes
        traced = log.has_trace[outcomes.rows] & (log.outcome[outcomes.rows] != ERRORED)
        self.has_traces: np.ndarray = any_per_task(traced, outcomes)
        """Per task, whether a non-errored trial of it has a trace."""
        self.medians: dict[str, np.ndarray] = log.metric_medians(outcomes)
        self.whole = {name: whole_valued(medians) for name, medians in self.medians.items()}
        """Per metric, whether it counts whole things (:func:`whole_valued`)."""
        tasks = outcomes.tasks
        self.name_rank = natural_ranks(tasks)
        self.names = NameFilter(tasks)
        self.name_width = max(4, widest_names(tasks[:NAMES_MEASURED]))
        groups = outcomes.groups
        self.group_width: int | None = (None if groups.count(None) == len(groups) else
                                        min(14, max(5, *(len(g or "") for g in groups[:NAMES_MEASURED]))))
        """Width of the group column (None: no task of the run has a group)."""
        self.stats: TaskStats | None = None
        """The run's statistics at the k of :meth:`at_k` (None: before the first)."""
        self.summary: SuiteSummary | None = None
        self._orders: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
        """Per (key, descending), a column's sort values and every data row sorted by them:
        the filters pick from it."""
        self._ties: tuple[np.ndarray, np.ndarray] | None = None
        """The flakiness it was computed from, and every data row in the one tie-break order."""
        self._flaky: tuple[list[str], np.ndarray] | None = None
        """A list of classes and, per task, whether it is flaky."""
        self._suite_curves: tuple[np.ndarray, int, KCurve, np.ndarray] | None = None
        """The run's n with its suite curve and histogram of p̂ (neither moves with the cursor)."""
        self._task_index: dict[str, int] | None = None

    # -- statistics -------------------------------------------------------------------------

    def at_k(self, k: int) -> TaskStats:
        """Make the statistics those at ``k`` (:meth:`RunState.stats
        <flaketui.session.state.RunState.stats>`, which keeps what k does not move)."""
        st = self.state.stats(k)
        self.stats, self.summary = st, summarise(st)
        return st

    def summary_facts(self, position: int, k_is_default: bool, min_pass_hat_k: float | None,
                      max_flakiness: float | None) -> SummaryFacts:
        """What the summary says of the run at the current k (``position``: its place among the
        loaded runs; the gate's floor and cap, None: not asked for)."""
        from flaketui.output.report import problems_line

        st, sm, log = self._st(), self.summary, self.state.log
        assert sm is not None
        who = who_ran(dict(log.run_meta.get(sm.run, {})))
        ran = " ".join(who[p] for p in ("agent", "model", "harness") if p in who)
        verdict = None
        if min_pass_hat_k is not None or max_flakiness is not None:
            found = gate(st, sm, min_pass_hat_k, max_flakiness)
            verdict = (found.passed, found.reasons)
        alerts = [visible(w) for w in sm.warnings]
        if log.problems:
            alerts.append(problems_line(log.problems))
        return SummaryFacts(sm, position, len(log.runs), visible(mask_text(ran)) if ran else "", k_is_default,
                            verdict, self.causes_line() if self.has_traces.any() else None, alerts,
                            bool(log.problems))

    def causes_line(self) -> str:
        """The summary's breakdown of the mixed tasks by suspected source, or the causes job's progress."""
        from flaketui.traces.causes import CauseSuggestion, breakdown_line

        progress = self.state.causes_progress
        if progress is not None:
            return f"suspected sources: reading the mixed tasks' traces, {progress}"
        found = self.state.causes
        return breakdown_line(CauseSuggestion(t, found[t], 0, 0) for t in self.flaky_tasks_in(found))

    def _st(self) -> TaskStats:
        assert self.stats is not None, "at_k() first"
        return self.stats

    def flaky_mask(self) -> np.ndarray:
        """Per task, whether it is classed flaky (:meth:`TaskStats.flaky`; kept while the classes are)."""
        st = self._st()
        if self._flaky is None or self._flaky[0] is not st.classes:
            self._flaky = (st.classes, st.flaky())
        return self._flaky[1]

    def mixed_mask(self) -> np.ndarray:
        """Per task, whether it both passed and failed: the tasks whose traces can be told apart
        (a passing and a failing trial), whatever their class."""
        return self._st().mixed

    def curves(self, row: int | None) -> tuple[KCurve, np.ndarray, KCurve | None]:
        """The suite's pass@k / pass^k curve, its histogram of p̂, and task ``row``'s curve (None: no row).

        The suite's are kept while n and k are (the chosen k is always a point of the curve).
        """
        st = self._st()
        if self._suite_curves is None or self._suite_curves[0] is not st.n or self._suite_curves[1] != st.k:
            self._suite_curves = (st.n, st.k, k_curve(st.n, st.passes, include=st.k), histogram(st.p_hat))
        _, _, suite, spread = self._suite_curves
        task = None if row is None else k_curve(st.n[row], st.passes[row], include=st.k)
        return suite, spread, task

    # -- the divergence and cause? columns --------------------------------------------------

    def divergence_of(self, row: int, found: Mapping[str, int | None]) -> int | None:
        """First divergence of data row ``row`` among the steps ``found``: a step, None (not a
        flaky task with traces, or no divergence), or :data:`PENDING`."""
        st = self._st()
        if not self.has_traces[row] or not st.mixed[row]:
            return None
        return found.get(st.tasks[row], PENDING)

    def divergence_values(self, found: Mapping[str, int | None]) -> np.ndarray:
        """Sort values of the divergence column (no step or pending: NaN); only flaky tasks
        with traces have one."""
        st = self._st()
        rows = np.flatnonzero(self.has_traces & self.mixed_mask())
        steps = [found.get(task, PENDING) for task in map(st.tasks.__getitem__, rows.tolist())]
        values = np.full(len(st), np.nan)
        values[rows] = [np.nan if v is None or v == PENDING else v for v in steps]
        return values

    def cause_values(self, found: Mapping[str, str]) -> np.ndarray:
        """Sort values of the cause? column: each suggestion's rank A→Z (none: NaN), set task
        by task from the suggestions ``found`` (a run has far fewer than tasks)."""
        st = self._st()
        values = np.full(len(st), np.nan)
        if found:
            if self._task_index is None:
                self._task_index = dict(zip(st.tasks, range(len(st)), strict=True))
            rank = {cause: i for i, cause in enumerate(sorted(set(found.values())))}
            index = self._task_index
            hits = [(index[t], rank[c]) for t, c in found.items() if t in index]
            if hits:
                rows, ranks = zip(*hits, strict=True)
                values[list(rows)] = ranks
        return values

    def flaky_tasks_in(self, found: Mapping[str, str]) -> list[str]:
        """The tasks that passed and failed that have a suggestion in ``found``, in table row order."""
        if not found:
            return []
        tasks = self._st().tasks
        return [t for t in map(tasks.__getitem__, np.flatnonzero(self.mixed_mask()).tolist()) if t in found]

    # -- orders and filters -----------------------------------------------------------------

    def ties(self) -> np.ndarray:
        """Every data row in the tie-break order of every sort, the CLI report's
        (:func:`~flaketui.output.stream.flakiest_order`: flakiness descending, p̂ ascending,
        natural order of the names); kept while flakiness is (a k change leaves it)."""
        st = self._st()
        if self._ties is None or self._ties[0] is not st.flakiness:
            self._ties = (st.flakiness, flakiest_order(st, self.name_rank))
        return self._ties[1]

    def full_order(self, key: str, reverse: bool, values: Callable[[], np.ndarray]) -> np.ndarray:
        """Every data row sorted by column ``key``'s ``values()`` (descending when ``reverse``),
        ties in :meth:`ties` order; computed once until :meth:`forget_order` (the
        :data:`ORDERS_KEPT` most recently asked for are kept)."""
        cached = self._orders.pop((key, reverse), None)  # taken out and put back: the most recent last
        if cached is None:
            vals = values()
            cached = (vals, sorted_order(vals, reverse, self.ties()))
        self._orders[(key, reverse)] = cached
        while len(self._orders) > ORDERS_KEPT:  # the least recently asked for goes
            del self._orders[next(iter(self._orders))]
        return cached[1]

    def forget_order(self, key: str) -> None:
        """Column ``key``'s values changed (divergences or causes found): sort it again."""
        self._orders.pop((key, False), None)
        self._orders.pop((key, True), None)

    def take_orders(self) -> dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]]:
        """The columns changed: forget every sorted order, and return them for :meth:`keep_orders`."""
        kept, self._orders = self._orders, {}
        return kept

    def keep_orders(self, kept: Mapping[tuple[str, bool], tuple[np.ndarray, np.ndarray]], key: str,
                    values: Callable[[], np.ndarray]) -> None:
        """Keep column ``key``'s orders of ``kept`` (:meth:`take_orders`) when its new ``values()``
        are those it was sorted by: a sort by flakiness outlives a k change (checking the other
        columns would cost more than the k change)."""
        shown = [(k, cached) for k, cached in kept.items() if k[0] == key]
        if shown and np.array_equal(values(), shown[0][1][0], equal_nan=True):
            self._orders.update(shown)

    def shown_order(self, key: str, reverse: bool, values: Callable[[], np.ndarray], filter_text: str = "",
                    flaky_only: bool = False, mask: np.ndarray | None = None) -> np.ndarray:
        """The data rows the table shows, in order: sorted by column ``key`` (:meth:`full_order`),
        only the names holding ``filter_text`` (any case), the rows ``mask`` keeps and, with
        ``flaky_only``, flaky tasks."""
        order = self.full_order(key, reverse, values)
        shown = self.names.mask(filter_text) if filter_text else None
        if mask is not None:
            shown = mask if shown is None else shown & mask
        if flaky_only:
            shown = self.flaky_mask() if shown is None else shown & self.flaky_mask()
        return order if shown is None else order[shown[order]]
