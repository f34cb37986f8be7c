"""The task table's columns: the report's per-task statistics as the app shows them, and the app's own.

What a statistic is (label, tooltip, plain text, sort) is declared once, in
:data:`flaketui.output.columns.TASK_COLUMNS`; :data:`STATISTICS` says only how the table
shows each one it shows (width, alignment, colour, a bar). The app's own columns — the review,
the history's state, the owners, the first divergence, the suggested cause, the trajectory
consistency and the metrics' medians — read what the session's jobs have found so far in the
run's :class:`~flaketui.session.state.RunState`: ``…`` while a job is still reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text

from flaketui.app.run_view import PENDING, RunView
from flaketui.app.widgets.task_table import Column
from flaketui.output import formatting as fmt
from flaketui.output.columns import (
    TASK_COLUMNS,
    TaskColumn,
    cause_column,
    class_style,
    consistency_column,
    label_ranks,
)
from flaketui.sanitize import visible
from flaketui.session.state import CAUSES_FAILED
from flaketui.stats.classes import CLASSES, UNDETERMINED
from flaketui.stats.estimators import FLAKY, STABLE_FAIL, STABLE_PASS, UNREPEATED
from flaketui.triage import TriageKey

if TYPE_CHECKING:
    from flaketui.session.state import RunState
    from flaketui.stats import TaskStats
    from flaketui.triage import TriageStore

METRIC_LABELS = {"tokens": "tokens", "cost_usd": "cost $", "duration_s": "dur s"}
"""Short column labels for common metrics (others show their own name)."""

SCORE_METRICS = frozenset({"reward"})
"""Metrics that repeat the trial's score (Harbor's reward): shown as the ``mean score`` column of a
graded run, never as a median of their own."""

CLASS_LABELS = {STABLE_PASS: "pass", STABLE_FAIL: "fail", FLAKY: "flaky", UNREPEATED: "once", UNDETERMINED: "undet."}
"""Short class names in the table (the reports spell them stable-pass, stable-fail, flaky, unrepeated,
undetermined)."""

NARROW_TABLE = 120
"""Screen width under which the task table shows the class right after the task's name (the
columns after the first few are past the edge of an 80-column terminal until scrolled to)."""

BAR = " ▏▎▍▌▋▊▉█"


def bar(value: float, cells: int = 4) -> str:
    """A horizontal bar of ``cells`` cells for a value in [0, 1], in eighths."""
    if fmt.is_missing(value):
        return " " * cells
    eighths = round(max(0.0, min(1.0, float(value))) * cells * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (BAR[part] if part else "")).ljust(cells)


def flakiness_cell(f: float) -> Text:
    """``0.556 ██▎`` : the flakiness and a bar, amber when the task is flaky."""
    style = class_style(FLAKY) if not fmt.is_missing(f) and f > 0 else "dim"
    return Text(f"{fmt.rate(f)} ") + Text(bar(f), style=style)


def metric_cell(medians: np.ndarray, whole: bool, row: int) -> Text:
    """A metric column's cell: the task's median, compactly; a count (``whole``) as a
    whole number (``678``, not ``678.0`` beside ``1,976``)."""
    value = medians[row]
    if whole and not fmt.is_missing(value):
        return Text(f"{value:,.0f}")
    return Text(fmt.number(value))


def rate_style(p: float) -> str:
    """Colour of a pass rate: green when always passing, red when always failing, else amber."""
    if fmt.is_missing(p):
        return "dim"
    if p >= 1:
        return "green"
    if p <= 0:
        return "red"
    return "bold yellow"


def name_cap(screen_width: int) -> int:
    """The widest the task column gets: a third of the screen, 24 to 64 cells (the
    highlighted task's full name is shown below the table)."""
    return max(24, min(64, screen_width // 3))


def cut_names(st: TaskStats, width: int) -> dict[int, str]:
    """The run's names longer than ``width``, cut so that they stay apart
    (:func:`~flaketui.output.cells.cut_names`: τ² telecom ids that share their start and end
    are cut round the part that differs), by data row."""
    from flaketui.output.cells import cut_names as cut

    long = [i for i, t in enumerate(st.tasks) if len(t) > width]
    return dict(zip(long, cut([visible(st.tasks[i]) for i in long], width), strict=True))


@dataclass(frozen=True)
class Look:
    """How the table shows one statistic of :data:`~flaketui.output.columns.TASK_COLUMNS`."""

    width: int | Callable[[TaskStats, RunView, int], int]
    """Its width, or how to find it from the run's statistics, its view and the task column's cap."""
    align: str = "right"
    style: Callable[[TaskStats, int], str] | None = None
    """The style of data row ``i``'s text (None: plain)."""
    render: Callable[[TaskStats, RunView, dict[int, str]], Callable[[int], Text]] | None = None
    """Its cells drawn otherwise than as styled text (given the cut names)."""
    tooltip: Callable[[TaskStats], str] | None = None
    """A tooltip of the app's own (None: the statistic's)."""
    when: Callable[[TaskStats, RunView], bool] = lambda st, view: True
    """Whether the run shows it."""


def _k_width(st: TaskStats, view: RunView, cap: int) -> int:
    return max(6, len(TASK_COLUMNS["pass_at_k"].header(st.k)))


def _dim(st: TaskStats, row: int) -> str:
    return "dim"


def _graded(st: TaskStats, view: RunView) -> bool:
    return st.scores is not None


def _name_cells(st: TaskStats, view: RunView, cut: dict[int, str]) -> Callable[[int], Text]:
    flaky = class_style(FLAKY)
    return lambda row: Text(cut.get(row) or visible(st.tasks[row]), style=flaky if st.classes[row] == FLAKY else "")


def _class_cells(st: TaskStats, view: RunView, cut: dict[int, str]) -> Callable[[int], Text]:
    return lambda row: Text(CLASS_LABELS.get(st.classes[row], st.classes[row]), style=class_style(st.classes[row]))


STATISTICS: tuple[tuple[str, Look], ...] = (
    ("task", Look(lambda st, view, cap: min(cap, view.name_width), "left", render=_name_cells,
                  tooltip=lambda st: "task name (bold amber when flaky)")),
    ("n", Look(lambda st, view, cap: max(3, len(str(int(st.n.max(initial=0))))))),
    ("p_hat", Look(5, style=lambda st, row: rate_style(st.p_hat[row]))),
    ("p_hat_ci", Look(12, style=_dim)),
    ("mean_score", Look(10, when=_graded)),
    ("mean_score_ci", Look(12, style=_dim, when=_graded)),
    ("score_sd", Look(8, when=_graded)),
    ("pass_at_k", Look(_k_width)),
    ("pass_hat_k", Look(_k_width)),
    ("flakiness", Look(10, "left", tooltip=lambda st: "4·p̂·(1−p̂), with a bar",
                       render=lambda st, view, cut: lambda row: flakiness_cell(st.flakiness[row]))),
    ("class", Look(lambda st, view, cap: max(5, *(len(CLASS_LABELS.get(c, c)) for c in set(st.classes)))
                   if len(st) else 5, "left", render=_class_cells,
                   tooltip=lambda st: f"against the flakiness cap {st.flaky_cap:g}: flaky (its exact interval rules "
                   "out flakiness at or below the cap), pass / fail (stable: rules out flakiness above it), undet. "
                   "(undetermined: more trials decide), or once (one trial); /class:NAME filters")),
    ("mixed", Look(5, "left", style=_dim,
                   tooltip=lambda st: "the task both passed and failed (a fact, not its class); /mixed filters")),
    ("p_flaky", Look(8)),
)
"""The statistics the table shows, in its order, and how (the app's one list of them)."""


def stat_column(key: str, look: Look, st: TaskStats, view: RunView, cap: int, cut: dict[int, str]) -> Column:
    """The table's column of statistic ``key`` (:data:`~flaketui.output.columns.TASK_COLUMNS`) as ``look`` shows it."""
    spec = TASK_COLUMNS[key]
    if look.render is not None:
        render = look.render(st, view, cut)
    else:
        style = look.style
        render = ((lambda row: Text(spec.text(st, row))) if style is None else
                  (lambda row: Text(spec.text(st, row), style=style(st, row))))
    width = look.width if isinstance(look.width, int) else look.width(st, view, cap)
    column = Column(key, spec.header(st.k), width, look.align,
                    spec.tooltip if look.tooltip is None else look.tooltip(st), render,
                    sort=lambda: spec.sort(st), descending=spec.descending)
    if key == "task":
        column = replace(column, sort=lambda: view.name_rank.astype(np.float64), cut="middle")
    return column


@dataclass
class RunColumns:
    """The columns of one run's table: its view (statistics at k, orders), its state (what the
    jobs found) and the triage notes (a confirmed cause is not dim)."""

    view: RunView
    state: RunState
    store: TriageStore

    def columns(self, screen_width: int, extra: Sequence[Column] = (), owners: bool = False) -> list[Column]:
        """Every column the run shows at ``screen_width`` (``extra``: the review column, after the
        statistics; ``owners``: an owners file was given)."""
        view, state = self.view, self.state
        st = view.stats
        assert st is not None
        cap = name_cap(screen_width)
        cut = cut_names(st, min(cap, view.name_width))
        cols = [stat_column(key, look, st, view, cap, cut) for key, look in STATISTICS if look.when(st, view)]
        if screen_width < NARROW_TABLE:
            at = next(i for i, c in enumerate(cols) if c.key == "class")
            cols.insert(1, cols.pop(at))  # the class beside the name, never past the screen's edge
        cols.extend(extra)
        if view.group_width is not None:
            cols.append(stat_column("group", Look(view.group_width, "left", style=_dim),
                                    st, view, cap, cut))
        if state.history_states is not None:
            cols.append(state_column(st.tasks, state.history_states))
        if owners:
            cols.append(owner_column(state.owners))
        if view.has_traces.any():
            cols.append(Column("divergence", "div", 4, "right",
                               "first divergence step of the most informative pass/fail pair",
                               self.divergence_cell, self.divergence_values))
            spec = cause_column(state.causes)
            cols.append(Column(spec.key, spec.label, 19, "left", spec.tooltip + "; l confirms it",
                               self.cause_cell, self.cause_values, descending=spec.descending))
            consist = consistency_column(state.consistency)
            cols.append(Column(consist.key, consist.label, 8, "right", consist.tooltip,
                               partial(self.consistency_cell, consist), lambda: consist.sort(st),
                               descending=consist.descending))
        for name, medians in view.medians.items():
            if name in SCORE_METRICS:
                continue
            label = METRIC_LABELS.get(name, name[:10])
            cols.append(Column(f"metric:{name}", label, max(6, len(label)), "right",
                               f"median {name} over the task's trials",
                               partial(metric_cell, medians, view.whole[name]),
                               partial(np.asarray, medians, dtype=np.float64)))
        return cols

    def divergence_of(self, row: int) -> int | None:
        """First divergence of data row ``row``: a step, None, or :data:`~flaketui.app.run_view.PENDING`."""
        return self.view.divergence_of(row, self.state.divergences)

    def divergence_cell(self, row: int) -> Text:
        """The divergence column's cell: the step, ``—`` for none, ``…`` while pending."""
        step = self.divergence_of(row)
        if step == PENDING:
            return Text("…", style="dim")
        return Text(fmt.DASH if step is None else str(step), style="" if step else "dim")

    def divergence_values(self) -> np.ndarray:
        """Sort values of the divergence column (:meth:`RunView.divergence_values`)."""
        return self.view.divergence_values(self.state.divergences)

    def _pending(self) -> bool:
        return (self.state.causes_progress or CAUSES_FAILED) != CAUSES_FAILED

    def cause_cell(self, row: int) -> Text:
        """The cause? column's cell: the suggestion, dim until a label confirms it; ``…`` while pending."""
        st, run = self.view.stats, self.state.name
        assert st is not None
        cause = self.state.causes.get(st.tasks[row])
        if cause is None:
            return Text("…" if self._pending() and self.divergence_of(row) is not None else "", style="dim")
        label = self.store.get(TriageKey(run, st.tasks[row])).label
        return Text(cause, style="" if label == cause else "dim")

    def cause_values(self) -> np.ndarray:
        """Sort values of the cause? column (:meth:`RunView.cause_values`)."""
        return self.view.cause_values(self.state.causes)

    def consistency_cell(self, spec: TaskColumn, row: int) -> Text:
        """The consist. column's cell: the number; ``…`` while a flaky task with traces waits for
        the worker; blank for any other task (or too few passing trials with actions)."""
        st = self.view.stats
        assert st is not None
        if st.tasks[row] not in self.state.consistency:
            pending = self._pending() and bool(st.mixed[row]) and bool(self.view.has_traces[row])
            return Text("…" if pending else "", style="dim")
        return Text(spec.text(st, row))

    def field_mask(self, text: str, owners: bool) -> np.ndarray | None:
        """The rows a ``state:NAME``, ``owner:NAME``, ``class:NAME`` or ``mixed`` filter keeps (None: ``text``
        is a name filter; ``owners``: an owners file was given)."""
        st = self.view.stats
        if st is not None and text.strip().lower() == "mixed":
            return st.mixed
        field_name, _, value = text.partition(":")
        if st is not None and field_name == "class" and value:
            wanted = value.strip().lower()
            names = {CLASS_LABELS.get(c, c): c for c in CLASSES}
            cls = names.get(wanted, wanted)
            return np.fromiter(map(cls.__eq__, st.classes), dtype=bool, count=len(st))
        if st is None or not value or field_name not in ("state", "owner"):
            return None
        value = value.strip().lower()
        if field_name == "state":
            states = self.state.history_states or {}
            return np.array([states.get(t, "-") == value for t in st.tasks], dtype=bool)
        if not owners:
            return None
        return np.array([value in o.lower() for o in self.state.owners], dtype=bool)


def state_column(tasks: list[str], states: dict[str, str]) -> Column:
    """Each task's lifecycle state in the history (``-``: never recorded); sorted in the
    lifecycle's order, most urgent first."""
    from flaketui.app.states import STATE_ORDER, STATE_STYLES

    shown = [states.get(t) for t in tasks]
    rank = np.array([STATE_ORDER.get(s, len(STATE_ORDER)) for s in shown], dtype=np.float64)
    width = max([5, *(len(s) for s in shown if s)])  # "undetermined" whole, as the class column
    return Column("history_state", "state", width, "left",
                  "the task's state in the history (flaky, fixed, regressed, quarantined…); /state:NAME filters",
                  lambda row: Text(shown[row] or "-", style=STATE_STYLES.get(shown[row] or "", "dim")),
                  lambda: rank, descending=False)


def owner_column(owners: list[str]) -> Column:
    """Each task's owners by the ``--owners`` file (``-``: none); /owner:NAME filters."""
    width = min(24, max([5, *map(len, owners)]))
    return Column("owner", "owner", width, "left", "the task's owners (--owners); /owner:NAME filters",
                  lambda row: Text(visible(owners[row]) or "-", style="" if owners[row] else "dim"),
                  lambda: label_ranks(owners), descending=False)
