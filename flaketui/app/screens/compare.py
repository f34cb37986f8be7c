"""The comparison pane: run B against run A, task by task, and the review of each flip.

At the top, the paired summary (tasks in both runs, fixed / broken / unchanged,
the primary test the verdict rests on, the mean difference of p̂ with its paired
95% CI and the secondary tests where valid, the verdict, the flipped and moved
tasks, the flakiness delta, a confound warning) and the review's progress. Below, the changed
tasks: **flipped** first (significant after Holm over Tarone's family, Fisher's
exact test per task), then **moved** (p̂ changed, not significant; dim and
marked), broken before fixed; ``f`` shows every common task. From :data:`WIDE` columns
each flip also shows its first divergence and suggested source (the pair its traces open on,
:func:`flaketui.output.review.flip_divergences`, found in a worker once the comparison is in). The progress
counts the flipped tasks (with one trial per task nothing can be tested: every
change is reviewed, marked ``changed``, never flipped). ``n`` / ``N`` step
through the changed tasks; ``enter`` opens run A's trace beside run B's; ``space`` marks one reviewed,
``l`` gives it a cause label, ``w`` a note. ``/`` filters by task name or
label, ``u`` shows only the unreviewed; ``A`` opens the task across every loaded run.
Every change is saved to the triage file at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Header, Input, Static
from textual.worker import Worker

from flaketui.app.messages import Open
from flaketui.app.screens import triage_dialogs as dialogs
from flaketui.app.screens.base import HEAD_KEYS, CollapsibleHead, FlakeScreen, back_key
from flaketui.app.sorting import SortActions, sorted_rows
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.task_table import Column, TaskTable
from flaketui.model import RunOutcomes, natural_ranks
from flaketui.output import formatting as fmt
from flaketui.output import review
from flaketui.output.review import BROKEN, FIXED, FlipRow
from flaketui.sanitize import visible
from flaketui.stats.paired import PairedComparison
from flaketui.stats.pertask import PerTaskTests
from flaketui.stats.verdict import evidence, short_verdict_text
from flaketui.triage import TriageEntry, TriageKey

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp
    from flaketui.traces.task_view import FlipDivergence

WIDE = 140
"""Columns from which the flip list also shows each flip's first divergence and suggested source (the
note keeps at least 12 cells; below, ``A`` shows the divergence of every run)."""

NARROW = 120
"""Columns under which the flip list shows the label right after the task (else past the edge)."""

CHANGE_STYLES = {BROKEN: "bold red", FIXED: "bold green"}
"""Colour of a flip's change (unchanged: dim)."""


def change_cell(r: FlipRow) -> Text:
    """``broken`` / ``fixed`` in colour when flipped; dim with ``~`` when only moved."""
    if r.moved:
        return Text(f"~{r.change}", style="dim " + CHANGE_STYLES[r.change].split()[-1])
    return Text(r.change, style=CHANGE_STYLES.get(r.change, "dim"))


def flakiness_change(r: FlipRow) -> Text:
    """``0.556 → 0.000``, amber when the flakiness changed."""
    return Text(f"{fmt.rate(r.flakiness_a)} → {fmt.rate(r.flakiness_b)}",
                style="yellow" if r.flakiness_a != r.flakiness_b else "dim")


@dataclass
class ComparisonReady(Message):
    """The paired comparison of two runs is computed (posted from a worker)."""

    comparison: PairedComparison
    outcomes_a: RunOutcomes
    outcomes_b: RunOutcomes
    tests: PerTaskTests
    confound: str | None


@dataclass
class FlipDivergencesFound(Message):
    """Each flip's first divergence and suggested source, by task (posted from a worker)."""

    divergences: dict[str, FlipDivergence]


class CompareScreen(SortActions, CollapsibleHead, FlakeScreen[None]):
    """Run B against run A: the paired summary and the list of flips to review.

    Args:
        run_a: The run before the change.
        run_b: The run after it.
    """

    DEFAULT_CSS = """
    CompareScreen #compare-summary {
        height: auto;
        padding: 0 1;
        background: $boost;
    }
    """

    BINDINGS = [
        Binding("n", "next_flip", "Next flip", id="next-flip",
                tooltip="Move to the next flipped task (j / down also move)"),
        Binding("N", "previous_flip", "Prev flip", id="previous-flip",
                tooltip="Move to the previous flipped task (k / up also move)"),
        Binding("enter", "show_traces", "A vs B traces", id="compare-traces", priority=True,
                tooltip="Run A's trace beside run B's (broken: A passing, B failing)"),
        Binding("space", "toggle_reviewed", "Reviewed", id="toggle-reviewed",
                tooltip="Mark the flip reviewed, or not"),
        Binding("l", "pick_label", "Label", id="pick-label",
                tooltip="Give the flip a cause label (also marks it reviewed)"),
        Binding("w", "edit_note", "Note", id="edit-note",
                tooltip="Write a free-text note"),
        Binding("f", "toggle_all", "All tasks", id="toggle-all-tasks",
                tooltip="Show every common task, or only the changed ones"),
        Binding("slash", "filter", "Filter", id="compare-filter",
                tooltip="Show only tasks whose name or label contains the text"),
        Binding("u", "toggle_unreviewed", "Unreviewed", id="compare-unreviewed",
                tooltip="Show only the tasks not yet reviewed (toggle)"),
        Binding("s", "sort_next", "Sort", id="compare-sort-next",
                tooltip="Sort by the next column"),
        Binding("S", "sort_reverse", "Reverse", id="compare-sort-reverse", show=False,
                tooltip="Reverse the sort order"),
        Binding("A", "across_runs", "Across runs", id="compare-across-runs", show=False,
                tooltip="The highlighted task in every loaded run, each run's first divergence from a reference"),
        Binding("p", "pick_runs", "Runs", id="pick-runs", show=False,
                tooltip="Choose runs A and B (when more than two are loaded)"),
        Binding("X", "swap_runs", "Swap A/B", id="swap-runs", show=False,
                tooltip="Compare A against B instead (shift+x; the reviews stay)"),
        back_key("close-compare", "the task table", "close", keys="escape,c"),
        *HEAD_KEYS,
    ]

    show_all: reactive[bool] = reactive(False, init=False)
    """Show every common task, not only the flips."""
    unreviewed_only: reactive[bool] = reactive(False, init=False)
    """Show only the tasks not marked reviewed."""
    filter_text: reactive[str] = reactive("", init=False)
    """Case-insensitive text a task's name or label must contain."""
    sort_key: reactive[str] = reactive("change", init=False)
    """Column the flip list is sorted by (a key of :meth:`columns`)."""
    sort_reverse: reactive[bool] = reactive(False, init=False)
    """Descending when True."""

    STATUS = "#compare-summary"
    """Says "Comparing…" until the comparison is computed; a failed one's error replaces it."""
    AUTO_FOCUS = "#flip-table"
    """The flip list has the keys from the start (the footer does not change when it loads)."""

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b
        self.comparison: PairedComparison | None = None
        """The paired comparison (None while it is computed)."""
        self.rows: list[FlipRow] = []
        """Every common task, in the default order (broken, fixed, unchanged)."""
        self.outcomes: tuple[RunOutcomes, RunOutcomes] | None = None
        """Both runs' trials grouped by task (for reading traces)."""
        self._name_rank = np.empty(0, dtype=np.int64)
        self.tests: PerTaskTests | None = None
        """Fisher per task, Holm and BH across tasks: flipped vs moved."""
        self.confound: str | None = None
        """A warning when the runs' configurations differ in more than one field."""
        self.divergences: dict[str, FlipDivergence] | None = None
        """Each flip's first divergence and suggested source (None while they are found)."""

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Comparing…", id="compare-summary")
        yield Input(placeholder="filter by task name or label (enter: keep, escape: clear)", id="compare-filter-box")
        yield TaskTable(id="flip-table").data_bind(CompareScreen.sort_key, CompareScreen.sort_reverse)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"{visible(self.run_b)} vs {visible(self.run_a)}"
        self.query_one(TaskTable).empty_text = "comparing the runs…"
        self.query_one("#compare-filter-box", Input).display = False
        self.apply_head()
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare",
          description="Comparing runs")
    def compute(self) -> None:
        """Per-task p̂ of both runs and their paired comparison, in a thread."""
        from flaketui.loading import read_trial
        from flaketui.stats import compare_runs, task_stats
        from flaketui.stats.confounds import DEFAULT_CONFIG_FIELDS, confound_note, run_config
        from flaketui.stats.pertask import per_task_tests

        log = self.flake_app.trial_log
        assert log is not None
        session = self.flake_app.session  # each run grouped once, shared with the task table
        outcomes_a, outcomes_b = session.run(self.run_a).outcomes, session.run(self.run_b).outcomes
        cmp = compare_runs(task_stats(outcomes_a, 1), task_stats(outcomes_b, 1))
        # the configurations' difference with its values: a warning for two or more fields, a note for one
        confound = confound_note(run_config(log, self.run_a, DEFAULT_CONFIG_FIELDS, read_trial),
                                 run_config(log, self.run_b, DEFAULT_CONFIG_FIELDS, read_trial))
        self.post_message(ComparisonReady(cmp, outcomes_a, outcomes_b, per_task_tests(cmp), confound))

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare-divergence",
          description="Finding the flips' divergences")
    def find_divergences(self) -> None:
        """Each flip's first divergence and suggested source (:func:`review.flip_divergences`), in a thread."""
        from flaketui.loading import read_trial

        log, cmp = self.flake_app.trial_log, self.comparison
        assert log is not None and cmp is not None
        found = review.flip_divergences(log, cmp, partial(read_trial, log), self.flake_app.normaliser,
                                        self.flake_app.divergence_mode)
        self.post_message(FlipDivergencesFound(found))

    @on(FlipDivergencesFound)
    def divergences_found(self, event: FlipDivergencesFound) -> None:
        self.divergences = event.divergences
        if self.size.width >= WIDE:
            self.query_one(TaskTable).set_columns(self.columns())

    def show_worker_error(self, worker: Worker[object]) -> None:
        """The error replaces "Comparing…" (:attr:`STATUS`) and "comparing the runs…"; a failed
        search for the divergences is only notified (the comparison stands)."""
        if worker.group == "compare-divergence":
            error = worker.error
            self.notify(f"{type(error).__name__}: {error}", title=worker.description, severity="error",
                        timeout=30, markup=False)
            return
        super().show_worker_error(worker)
        if self.comparison is None:
            self.query_one(TaskTable).empty_text = "the runs could not be compared"
            self.query_one(TaskTable).refresh()

    @on(ComparisonReady)
    def comparison_ready(self, event: ComparisonReady) -> None:
        self.comparison = event.comparison
        self.outcomes = (event.outcomes_a, event.outcomes_b)
        self.tests, self.confound = event.tests, event.confound
        self.rows = review.paired_rows(event.comparison, flips_only=False, tests=event.tests)
        self._name_rank = natural_ranks([r.task for r in self.rows])
        table = self.query_one(TaskTable)
        self.update_empty_text()
        table.set_columns(self.columns())
        if not self.flips:
            self.show_all = True
        self.refresh_order()
        self.update_summary()
        table.focus()
        self.find_divergences()

    # -- rows -------------------------------------------------------------------------------

    @property
    def flips(self) -> list[int]:
        """Data rows of the flipped tasks (significant after Holm; the review's progress counts them), or
        of every change where nothing could be tested per task."""
        return [i for i, r in enumerate(self.rows) if r.to_review]

    def key_of(self, row: int) -> TriageKey:
        """The triage key of data row ``row``: its task's flip between A and B, under the direction
        its review was written in (a swap keeps the reviews; :func:`review.flip_key`)."""
        return review.flip_key(self.flake_app.triage_store, self.run_a, self.run_b, self.rows[row].task)

    def columns(self) -> list[Column]:
        """The flip list's columns, each with its cells and sort values; the note takes the
        width that is left (at least 12)."""
        rows = self.rows
        store = self.flake_app.triage_store

        def entry(row: int) -> TriageEntry:
            return store.get(self.key_of(row))

        def text_ranks(texts: list[str]) -> np.ndarray:
            """Rank of each text A→Z; an empty text sorts last (NaN)."""
            _, inv = np.unique(np.array(texts, dtype=object).astype(str), return_inverse=True)
            return np.where(np.array(texts, dtype=object) == "", np.nan, inv.astype(np.float64))

        def values(get: Callable[[FlipRow], float]) -> Callable[[], np.ndarray]:
            return lambda: np.array([get(r) for r in rows], dtype=np.float64)

        name_w = min(28, max([4, *(len(r.task) for r in rows[:20000])]))
        cols = [
            Column("reviewed", "✓", 1, "left", "reviewed",
                   lambda i: Text("✓", style="bold green") if entry(i).reviewed
                   else Text("·", style="dim"),
                   lambda: np.array([float(entry(i).reviewed) for i in range(len(rows))])),
            Column("change", "change", 9, "left",
                   "flipped first (significant after Holm), then moved (dim: p̂ changed, not significant); "
                   "broken (p̂ fell) or fixed (p̂ rose)",
                   lambda i: change_cell(rows[i]),
                   lambda: np.arange(len(rows), dtype=np.float64), descending=False),
            Column("flip", "flip", 7, "left", "flipped (significant after Holm over Tarone's family) or moved",
                   lambda i: Text(rows[i].kind if rows[i].is_flip else "",
                                  style="bold" if rows[i].flipped else "dim italic"),
                   lambda: np.array([0.0 if r.flipped else 1.0 if r.is_flip else 2.0 for r in rows]),
                   descending=False),
            Column("task", "task", name_w, "left", "task name",
                   lambda i: Text(visible(rows[i].task), style="bold" if rows[i].flipped else ""),
                   lambda: self._name_rank.astype(np.float64), descending=False),
            Column("p_hat", "p̂ A → p̂ B", 13, "right", "pass rate in run A and in run B",
                   lambda i: Text(review.change_text(rows[i]), style="" if rows[i].is_flip else "dim"),
                   values(lambda r: r.delta)),
            Column("n_a", "n A", 4, "right", "non-errored trials in run A",
                   lambda i: Text(str(rows[i].n_a)), values(lambda r: r.n_a)),
            Column("n_b", "n B", 4, "right", "non-errored trials in run B",
                   lambda i: Text(str(rows[i].n_b)), values(lambda r: r.n_b)),
            Column("p_adj", "p adj.", 8, "right", "Fisher's p, Holm-adjusted across the tasks",
                   lambda i: Text(fmt.pvalue(rows[i].p_adjusted), style="bold" if rows[i].flipped else "dim"),
                   values(lambda r: r.p_adjusted), descending=False),
            Column("delta", "|Δ|", 5, "right", "size of the change of p̂",
                   lambda i: Text(fmt.rate(rows[i].abs_delta),
                                  style="bold" if rows[i].abs_delta >= 0.5 else ""),
                   values(lambda r: r.abs_delta)),
            Column("flakiness", "flaky A → B", 13, "right", "flakiness 4·p̂·(1−p̂) in A and B",
                   lambda i: flakiness_change(rows[i]),
                   values(lambda r: r.flakiness_b - r.flakiness_a)),
            Column("label", "label", 20, "left", "cause label",
                   lambda i: Text(entry(i).label or "",
                                  style=dialogs.LABEL_STYLES.get(entry(i).label or "", "cyan")),
                   lambda: text_ranks([entry(i).label or "" for i in range(len(rows))]),
                   descending=False),
        ]
        if self.size.width >= WIDE:
            cols[-1:-1] = self.divergence_columns()
        elif self.size.width < NARROW:
            cols.insert(4, cols.pop())  # the label beside the task, on an 80-column screen too
        used = sum(c.width + 1 for c in cols) + 1 + 1 + 2  # gaps, the note's gap, scrollbar
        note_w = max(12, self.size.width - used)
        return [*cols, Column("note", "note", note_w, "left", "free-text note",
                              lambda i: dialogs.note_text(entry(i)),
                              lambda: text_ranks([entry(i).note or "" for i in range(len(rows))]),
                              descending=False)]

    def divergence_columns(self) -> list[Column]:
        """Each flip's first divergence (the step in A's trace of the pair the trace screen shows
        first) and the pair's suggested source; ``…`` while they are found."""
        rows = self.rows

        def found(i: int) -> FlipDivergence | None:
            return None if self.divergences is None else self.divergences.get(rows[i].task)

        def step_cell(i: int) -> Text:
            if self.divergences is None:
                return Text("…" if rows[i].is_flip else "", style="dim")
            d = found(i)
            if d is None:
                return Text("")
            return Text("none", style="dim") if d.step is None else Text(str(d.step), style="bold")

        def steps() -> np.ndarray:
            return np.array([np.nan if (d := found(i)) is None or d.step is None else d.step
                             for i in range(len(rows))], dtype=np.float64)

        def source_cell(i: int) -> Text:
            d = found(i)
            return Text("" if d is None else d.cause, style="magenta")

        def source_ranks() -> np.ndarray:
            texts = [(d.cause if (d := found(i)) is not None else "") for i in range(len(rows))]
            _, inv = np.unique(np.array(texts, dtype=object).astype(str), return_inverse=True)
            return np.where(np.array(texts, dtype=object) == "", np.nan, inv.astype(np.float64))

        return [
            Column("divergence", "div", 4, "right",
                   "first divergence of the flip: the step of A's trace where its pair with B parts", step_cell,
                   steps, descending=False),
            Column("source", "source", 19, "left", "suggested source of the flip, from its pair of traces",
                   source_cell, source_ranks, descending=False),
        ]

    def on_resize(self) -> None:
        if self.comparison is not None:
            self.query_one(TaskTable).set_columns(self.columns())

    def sort_values(self, key: str) -> np.ndarray:
        """Values to sort by (NaN sort last)."""
        return self.column_sort_values(key, len(self.rows))

    def sort_table(self) -> TaskTable:
        return self.query_one(TaskTable)

    def refresh_order(self, keep: int | None = None) -> None:
        """Filter (flips or all) and sort the rows, keeping the cursor on ``keep`` if shown."""
        if self.comparison is None:
            return
        table = self.query_one(TaskTable)
        keep = table.cursor_data_row if keep is None else keep
        idx = np.arange(len(self.rows))
        if not self.show_all:
            idx = idx[[self.rows[i].is_flip for i in idx]] if len(idx) else idx
        if self.unreviewed_only and len(idx):
            store = self.flake_app.triage_store
            idx = idx[[not store.get(self.key_of(int(i))).reviewed for i in idx]]
        if self.filter_text and len(idx):
            idx = idx[[self.matches(int(i), self.filter_text.lower()) for i in idx]]
        order = sorted_rows(idx, self.sort_values(self.sort_key)[idx], self.sort_reverse, idx)
        table.show(order, keep=keep)

    def matches(self, row: int, text: str) -> bool:
        """The task's name or cause label contains ``text`` (lower case)."""
        label = self.flake_app.triage_store.get(self.key_of(row)).label or ""
        return text in self.rows[row].task.lower() or text in label.lower()

    # -- summary ----------------------------------------------------------------------------

    def reviewed_count(self) -> int:
        """How many flips are marked reviewed."""
        store = self.flake_app.triage_store
        return sum(1 for i in self.flips if store.get(self.key_of(i)).reviewed)

    def review_what(self) -> str:
        """What the review counts, as the summary names it: ``flips`` (tasks that flipped), or
        ``changed tasks`` when nothing could be tested per task (the list then holds every change)."""
        return "flips" if self.tests is None or self.tests.tested else "changed tasks"

    def progress(self) -> str:
        """``9 of 11 flips reviewed`` (``0 of 17 changed tasks reviewed``: see :meth:`review_what`)."""
        return review.progress_line(self.reviewed_count(), len(self.flips), self.review_what())

    def update_summary(self) -> None:
        cmp, tests = self.comparison, self.tests
        if cmp is None or tests is None:
            return
        lines = review.compare_lines(cmp, tests.alpha, tests, self.confound)
        if self.compact_head:
            self.query_one("#compare-summary", Static).update(self.compact_summary(lines))
            self.sub_title = f"{visible(cmp.run_b)} vs {visible(cmp.run_a)} · {self.progress()}"
            return
        text = Text()
        text.append(visible(cmp.run_b), style="bold")
        text.append(" (B) vs ", style="dim")
        text.append(visible(cmp.run_a), style="bold")
        text.append(" (A)\n", style="dim")
        text.append(lines[0] + " · p̂ moved: ")
        text.append(f"fixed {len(cmp.fixed)}", style="green")
        text.append(" · ")
        text.append(f"broken {len(cmp.broken)}", style="red")
        text.append(f" · unchanged {cmp.unchanged}{review.uncompared_text(cmp)}\n")
        text.append(lines[5] + "\n", style="bold" if tests.flipped.any() else "")
        text.append(lines[2] + " · " + lines[3] + "\n")
        text.append("verdict: " + visible(short_verdict_text(evidence(cmp, tests.alpha))) + "\n", style="bold")
        if self.confound:
            text.append(visible(self.confound) + "\n",
                        style="bold yellow" if self.confound.startswith("confounded") else "dim")
        text.append(review.flakiness_line(review.flakiness_delta(cmp)) + "\n", style="dim")
        for extra in lines[6 + (1 if self.confound else 0):]:
            text.append(extra + "\n", style="dim")
        done, total = self.reviewed_count(), len(self.flips)
        text.append(review.progress_line(done, total, self.review_what()),
                    style="bold green" if total and done == total else "bold yellow")
        store = self.flake_app.triage_store
        if store.path is None or not store.persistent:
            text.append("   notes kept in memory only (not saved)", style="bold red")
        else:
            text.append(f"   notes: {visible(store.path)}", style="dim")
        self.query_one("#compare-summary", Static).update(text)
        self.sub_title = f"{visible(cmp.run_b)} vs {visible(cmp.run_a)} · {self.progress()}"

    def compact_summary(self, lines: list[str]) -> Text:
        """The summary's compact form (``h``, or a small terminal), one line each (cut to the
        width): the counts and the runs (also in the title), the flipped tasks, the verdict, a
        confound warning, the review's progress."""
        cmp, tests = self.comparison, self.tests
        assert cmp is not None and tests is not None
        text = Text()
        text.append(f"fixed {len(cmp.fixed)}", style="green")
        text.append(" · ")
        text.append(f"broken {len(cmp.broken)}", style="red")
        text.append(f" · unchanged {cmp.unchanged}{review.uncompared_text(cmp)} · {lines[0]} · ")
        text.append(visible(cmp.run_b), style="bold")
        text.append(" (B) vs ", style="dim")
        text.append(visible(cmp.run_a), style="bold")
        text.append(" (A)\n", style="dim")
        text.append(lines[5] + "\n", style="bold" if tests.flipped.any() else "")
        text.append("verdict: " + visible(short_verdict_text(evidence(cmp, tests.alpha))) + "\n", style="bold")
        if self.confound:
            text.append(visible(self.confound) + "\n",
                        style="bold yellow" if self.confound.startswith("confounded") else "dim")
        done, total = self.reviewed_count(), len(self.flips)
        text.append(review.progress_line(done, total, self.review_what()),
                    style="bold green" if total and done == total else "bold yellow")
        text.append("   h: the whole summary", style="dim")
        return text

    def head_changed(self) -> None:
        """The summary's form changed: draw it again."""
        self.update_summary()

    def triage_changed(self, key: TriageKey | None) -> None:
        """Redraw after a label, note or reviewed mark changed."""
        self.query_one(TaskTable).invalidate()
        if self.sort_key in ("reviewed", "label", "note") or self.unreviewed_only or self.filter_text:
            self.refresh_order()
        self.update_summary()

    # -- actions ----------------------------------------------------------------------------

    @property
    def current_row(self) -> int | None:
        """Data row under the cursor."""
        if self.comparison is None:
            return None
        return self.query_one(TaskTable).cursor_data_row

    def _step_flip(self, direction: int) -> None:
        table = self.query_one(TaskTable)
        order = table.order
        if not len(order):
            return
        pos = table.cursor_row
        steps = range(pos + 1, len(order)) if direction > 0 else range(pos - 1, -1, -1)
        for p in steps:
            if self.rows[int(order[p])].is_flip:
                table.cursor_row = p
                return
        where = "below" if direction > 0 else "above"
        self.notify(f"no more flips {where} · {self.progress()}", timeout=3)

    def action_next_flip(self) -> None:
        """Move the cursor to the next flipped task."""
        self._step_flip(1)

    def action_previous_flip(self) -> None:
        """Move the cursor to the previous flipped task."""
        self._step_flip(-1)

    def action_toggle_reviewed(self) -> None:
        """Mark the flip under the cursor reviewed, or not."""
        row = self.current_row
        if row is not None:
            dialogs.toggle_reviewed(self, self.key_of(row), self.triage_changed)

    def action_pick_label(self) -> None:
        """Choose a cause label for the flip under the cursor."""
        row = self.current_row
        if row is not None:
            dialogs.choose_label(self, self.key_of(row), self.triage_changed)

    def action_edit_note(self) -> None:
        """Write a note on the flip under the cursor."""
        row = self.current_row
        if row is not None:
            dialogs.edit_note(self, self.key_of(row), self.triage_changed)

    def action_toggle_all(self) -> None:
        """Show every common task, or only the flips."""
        self.show_all = not self.show_all

    def action_toggle_unreviewed(self) -> None:
        """Show only the tasks not yet reviewed, or every one."""
        self.unreviewed_only = not self.unreviewed_only

    def watch_unreviewed_only(self) -> None:
        self.refresh_order()
        self.update_empty_text()

    def action_filter(self) -> None:
        """Show the filter box and focus it."""
        box = self.query_one("#compare-filter-box", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#compare-filter-box")
    def filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    def watch_filter_text(self) -> None:
        self.refresh_order()
        self.update_empty_text()

    def watch_show_all(self) -> None:
        self.refresh_order()
        self.update_empty_text()

    def update_empty_text(self) -> None:
        """What the flip list says when it shows no row: why (the filter, the reviewed tasks
        hidden by ``u``, or no flip at all)."""
        table = self.query_one(TaskTable)
        if self.comparison is None:
            return
        if self.filter_text:
            table.empty_text = f'no task matches "{visible(self.filter_text)}"'
        elif self.unreviewed_only:
            table.empty_text = "every task shown is reviewed (u: show the reviewed ones too)"
        else:
            table.empty_text = "no common tasks" if self.show_all else \
                "no task flipped (f: show every common task)"
        table.refresh()

    def watch_sort_key(self) -> None:
        self.refresh_order()

    def watch_sort_reverse(self) -> None:
        if not self.sort_settling:  # a new key's direction: the key's watcher sorts
            self.refresh_order()

    @on(TaskTable.TaskSelected)
    def task_selected(self, event: TaskTable.TaskSelected) -> None:
        event.stop()
        self.action_show_traces()

    def action_show_traces(self) -> None:
        """Open run A's trace beside run B's trace of the task under the cursor.

        ``n`` / ``N`` on the trace screen step through the rows shown here (the
        flips, or every task with ``f``), and the cursor follows on return.
        """
        box = self.query_one("#compare-filter-box", Input)
        if box.has_focus:  # enter in the filter box keeps the filter (the binding has priority)
            if not box.value.strip():
                box.display = False
            self.query_one(TaskTable).focus()
            return
        row = self.current_row
        if row is None or self.outcomes is None:
            return
        table = self.query_one(TaskTable)
        shown = [int(i) for i in table.order]
        rows = [self.rows[i] for i in shown]

        def back(position: int | None) -> None:
            if position is not None and 0 <= position < len(shown):
                table.move_cursor_to_row(shown[position])
            self.triage_changed(None)

        self.post_message(Open("compare-traces", back, run_a=self.run_a, run_b=self.run_b,
                               outcomes=self.outcomes, rows=rows, position=shown.index(row)))

    def action_across_runs(self) -> None:
        """The highlighted task in every loaded run, side by side."""
        row = self.current_row
        if row is None:
            return
        self.post_message(Open("across-runs", task=self.rows[row].task))

    def action_pick_runs(self) -> None:
        """Choose other runs A and B."""
        log = self.flake_app.trial_log
        if log is None or len(log.runs) < 3:
            self.notify("only two runs are loaded; X (shift+x) swaps A and B", timeout=3)
            return

        def chosen(pair: tuple[str, str] | None) -> None:
            if pair is not None:
                self.app.switch_screen(CompareScreen(*pair))

        self.app.push_screen(dialogs.RunPicker(log.runs, self.run_a, self.run_b), chosen)

    def action_swap_runs(self) -> None:
        """Compare the other way round (B before, A after), keeping the view's sort and filter."""
        swapped = CompareScreen(self.run_b, self.run_a)
        for name in ("show_all", "sort_key", "sort_reverse"):
            swapped.set_reactive(getattr(CompareScreen, name), getattr(self, name))
        self.app.switch_screen(swapped)

    def action_close(self) -> None:
        """Clear the filter when one is set (escape in the filter box), else back to the task table."""
        box = self.query_one("#compare-filter-box", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.filter_text = ""
            self.query_one(TaskTable).focus()
            return
        self.dismiss(None)

    def palette_commands(self) -> list[tuple[str, str, str]]:
        """(title, help, action) for the command palette."""
        return [
            ("Next flip", "Move to the next flipped task", "next_flip"),
            ("Show all common tasks", "Every task in both runs, not only flips", "toggle_all"),
            ("Swap runs A and B", "Compare the other way round", "swap_runs"),
            ("Choose runs", "Pick runs A and B", "pick_runs"),
            ("Mark reviewed", "Mark the flip under the cursor reviewed", "toggle_reviewed"),
            ("Label the cause", "Pick a cause label", "pick_label"),
            ("Add a note", "Write a note on the flip", "edit_note"),
        ]


def open_compare(app: FlakeApp, run_a: str | None = None, run_b: str | None = None) -> CompareScreen | None:
    """``Open("compare", …)``: runs ``run_a`` and ``run_b``; without them (``c`` on the task table)
    the first two runs, or, when more are loaded, the pair the user picks (None then, and when
    fewer than two runs are loaded: it says so)."""
    if run_a is not None and run_b is not None:
        return CompareScreen(run_a, run_b)
    log = app.trial_log
    if log is None:
        app.notify("the logs are still loading", timeout=3)
        return None
    runs = list(log.runs)
    if len(runs) < 2:
        app.notify("only one run is loaded: give two logs, or a log with two runs, to "
                   "compare them", severity="warning", timeout=5)
        return None
    if len(runs) == 2:
        return CompareScreen(runs[0], runs[1])

    def chosen(pair: tuple[str, str] | None) -> None:
        if pair is not None:
            app.push_screen(CompareScreen(*pair))

    app.push_screen(dialogs.RunPicker(runs, runs[0], runs[1]), chosen)
    return None


def open_compare_on_load(app: FlakeApp) -> None:
    """Once the logs are loaded, for ``flaketui compare A B --tui``: the comparison pane."""
    pair, app.compare_pending = app.compare_pending, None
    if pair is None or app.trial_log is None:
        return
    if not pair:
        screen = open_compare(app)
        if screen is not None:
            app.push_screen(screen)
        return
    missing = [r for r in pair if r not in app.trial_log.runs]
    if missing:
        app.notify(f"no run named {missing[0]!r}; runs: {', '.join(app.trial_log.runs)}",
                   severity="error", timeout=20, markup=False)
        return
    app.push_screen(CompareScreen(pair[0], pair[1]))
