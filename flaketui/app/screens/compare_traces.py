"""Run A's trace beside run B's trace of one task, from the comparison pane (``enter``).

For a broken task (p̂ fell) a passing trial of A is shown beside a failing trial
of B; for a fixed task, a failing trial of A beside a passing trial of B. Of the
candidates, the pair sharing the longest normalised prefix is shown first (the
most informative pair, as on the trace screen). The traces are normalised,
aligned and highlighted by the same
:class:`~flaketui.app.widgets.trace_view.TraceDiffView` as the trace screen.

The review keys work here too (``space`` reviewed, ``l`` label, ``w`` note),
and ``n`` / ``N`` move to the next / previous flip without going back (after a
``/`` search, to the next / previous match, counted ``3/17``, until ``escape``). ``v`` switches the
divergence mode, ``i`` / ``I`` inspect A's / B's trial, ``]`` / ``[`` move between
differing steps and ``z`` unfolds identical ones, as on the task trace screen.

:class:`AcrossTracesScreen` is the same screen on one task across runs: the reference trial
beside one run's (``enter`` on the across-runs screen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Header, Input, Static
from textual.worker import Worker, WorkerState

from flaketui.app.screens import triage_dialogs as dialogs
from flaketui.app.screens.base import HEAD_KEYS, CollapsibleHead, FlakeScreen, back_key
from flaketui.app.trace_keys import SEARCH_KEYS, TRACE_KEYS, TraceKeys, trial_label
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import ERRORED, RunOutcomes, Trial
from flaketui.output import formatting as fmt
from flaketui.output import review
from flaketui.output.review import BROKEN, FIXED, UNCHANGED, FlipRow
from flaketui.sanitize import visible
from flaketui.traces import ACTIONS, ALL, Normaliser, default_mode
from flaketui.traces.task_view import pair_across
from flaketui.traces.trace_diff import PairDiff, pair_diff
from flaketui.triage import TriageKey

if TYPE_CHECKING:
    from flaketui.traces.task_view import RunTrials, TaskAcrossRuns

MAX_CANDIDATES = 50
"""Trials per side scored for the most informative pair (all are still reachable with a / b)."""


def wanted_outcomes(row: FlipRow, a: list[Trial], b: list[Trial]) -> tuple[bool, bool]:
    """Which outcome to show on side A and on side B (True: passing).

    Broken: A passing, B failing. Fixed: A failing, B passing. Unchanged: a
    pass/fail pair if the trials allow one, else what each side has.
    """
    if row.change == BROKEN:
        return True, False
    if row.change == FIXED:
        return False, True
    has = {(side, ok) for side, trials in (("a", a), ("b", b)) for ok in (t.passed for t in trials)}
    for want in ((True, False), (False, True), (True, True), (False, False)):
        if ("a", want[0]) in has and ("b", want[1]) in has:
            return want
    return True, False


def shown_pair(a: list[Trial], b: list[Trial], pair: tuple[int, int]) -> tuple[Trial | None, Trial | None]:
    """The trials the view shows of positions ``pair``: A's and B's, or the one side there is (on the left)."""
    ta = a[pair[0]] if a else None
    tb = b[pair[1]] if b else None
    return (tb, None) if ta is None else (ta, tb)


@dataclass
class FlipTrials(Message):
    """Both runs' traced trials of one task, and the pair to show first (from a worker)."""

    position: int
    a: list[Trial]
    """Side A's candidates (trials of run A with the wanted outcome and a trace)."""
    b: list[Trial]
    pair: tuple[int, int]
    """Positions in ``a`` and ``b`` of the most informative pair."""
    untraced: int
    """Non-errored trials of the task (both runs) that have no trace."""
    mode: str = ACTIONS
    """The divergence mode the pair was chosen in."""
    rows: dict[int, int] | None = None
    """``id(trial)`` -> its log row (for the inspector's raw record)."""
    diff: PairDiff | None = None
    """The first pair aligned for the view (None: nothing to show, or the view aligns it)."""


class CompareTracesScreen(TraceKeys, CollapsibleHead, FlakeScreen[int]):
    """Run A's trace beside run B's of one task; dismissed with the position shown last.

    Args:
        run_a: Run A's name.
        run_b: Run B's name.
        outcomes: Both runs' trials grouped by task.
        rows: The rows of the comparison pane, in its order (n / N move along them).
        position: Which of ``rows`` to show first.
    """

    DEFAULT_CSS = """
    CompareTracesScreen #compare-trace-head {
        height: auto;
        padding: 0 1;
        background: $boost;
    }
    CompareTracesScreen #compare-trace-status { height: auto; padding: 1 2; }
    CompareTracesScreen #trace-search { dock: bottom; display: none; }
    CompareTracesScreen #trace-match { display: none; height: 1; padding: 0 1; background: $boost; }
    """

    STATUS = "#compare-trace-status"
    """Says "reading…" until the trials are read; a failed read's error replaces it."""

    BINDINGS = [
        back_key("compare-traces-back", "the comparison pane"),
        Binding("n", "step_flip(1)", "Next flip", id="compare-traces-next",
                tooltip="The next flip's traces"),
        Binding("N", "step_flip(-1)", "Prev flip", id="compare-traces-previous",
                tooltip="The previous flip's traces"),
        *SEARCH_KEYS,
        Binding("d", "jump_to_divergence", "Divergence", id="compare-traces-divergence",
                tooltip="Scroll to the first divergent step"),
        Binding("a", "cycle('a', 1)", "Next A", id="compare-traces-next-a",
                tooltip="Next trial of run A on the left"),
        Binding("A", "cycle('a', -1)", "Prev A", id="compare-traces-previous-a", show=False,
                tooltip="Previous trial of run A on the left"),
        Binding("b", "cycle('b', 1)", "Next B", id="compare-traces-next-b",
                tooltip="Next trial of run B on the right"),
        Binding("B", "cycle('b', -1)", "Prev B", id="compare-traces-previous-b", show=False,
                tooltip="Previous trial of run B on the right"),
        Binding("space", "toggle_reviewed", "Reviewed", id="compare-traces-reviewed",
                tooltip="Mark the flip reviewed, or not"),
        Binding("l", "pick_label", "Label", id="compare-traces-label",
                tooltip="Give the flip a cause label (also marks it reviewed)"),
        Binding("w", "edit_note", "Note", id="compare-traces-note",
                tooltip="Write a note"),
        Binding("x", "toggle_expand", "Expand", id="compare-traces-expand", show=False,
                tooltip="Show long step contents in full (toggle)"),
        *TRACE_KEYS,
        *HEAD_KEYS,
    ]

    def __init__(self, run_a: str, run_b: str, outcomes: tuple[RunOutcomes, RunOutcomes],
                 rows: list[FlipRow], position: int) -> None:
        super().__init__()
        self.run_a, self.run_b = run_a, run_b
        self.outcomes = outcomes
        self.rows = rows
        self.position = position
        self.side_a: list[Trial] = []
        self.side_b: list[Trial] = []
        self.pos_a = 0
        self.pos_b = 0
        self.untraced = 0
        self.mode = ACTIONS
        """The divergence mode of the view."""
        self.log_rows: dict[int, int] = {}
        self.loaded = False
        """True once the shown task's trials are read."""

    @property
    def normaliser(self) -> Normaliser:
        return self.flake_app.normaliser

    @property
    def row(self) -> FlipRow:
        return self.rows[self.position]

    @property
    def key(self) -> TriageKey:
        return review.flip_key(self.flake_app.triage_store, self.run_a, self.run_b, self.row.task)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="compare-trace-head")
        yield Static(Text("reading both runs' trials…", style="dim"), id="compare-trace-status")
        yield TraceDiffView(None, None, normaliser=self.normaliser, id="compare-trace-diff")
        yield Input(placeholder="search both traces (enter: find, escape: cancel)", id="trace-search")
        yield Static(id="trace-match")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(TraceDiffView).display = False
        self.apply_head()
        self.show_position(self.position)

    # -- loading a task -------------------------------------------------------------------

    def show_position(self, position: int) -> None:
        """Read and show the traces of ``rows[position]``."""
        self.position = position
        self.loaded = False
        self.sub_title = visible(f"{self.row.task}: {self.run_a} → {self.run_b}")
        self.update_head()
        self.query_one(TraceDiffView).loading = True  # until the pair is read and drawn (show_pair)
        self.read_trials(position)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare-traces",
          description="Reading traces")
    def read_trials(self, position: int) -> None:
        """Read the task's trials of both runs and choose the first pair to show."""
        from flaketui.loading import read_trial

        log = self.flake_app.trial_log
        assert log is not None
        row = self.rows[position]
        sides: list[list[Trial]] = []
        untraced = 0
        log_rows: dict[int, int] = {}
        for outcomes in self.outcomes:
            rows = [r for r in outcomes.task_rows(outcomes.index(row.task)).tolist()
                    if int(log.outcome[r]) != ERRORED]
            trials = [read_trial(log, r) for r in rows]
            log_rows.update((id(t), r) for t, r in zip(trials, rows, strict=True))
            untraced += sum(1 for t in trials if t.trace is None)
            sides.append([t for t in trials if t.trace is not None])
        want_a, want_b = wanted_outcomes(row, *sides)
        a = [t for t in sides[0] if t.passed == want_a]
        b = [t for t in sides[1] if t.passed == want_b]
        norm = self.normaliser
        mode = self.flake_app.divergence_mode or default_mode(*(t.trace for t in a + b))
        pair = pair_across(a[:MAX_CANDIDATES], b[:MAX_CANDIDATES], want_a, norm, mode) or (0, 0)
        first = shown_pair(a, b, pair)
        diff = None if first[0] is None else pair_diff(*first, norm, mode)
        self.post_message(FlipTrials(position, a, b, pair, untraced, mode, log_rows, diff))

    @on(FlipTrials)
    def trials_read(self, event: FlipTrials) -> None:
        if event.position != self.position:
            return
        self.side_a, self.side_b = event.a, event.b
        self.pos_a, self.pos_b = event.pair
        self.untraced = event.untraced
        self.mode = event.mode
        self.log_rows = event.rows or {}
        self.loaded = True
        self.show_pair(event.diff)

    def no_trace(self) -> str:
        """Why this comparison's trials have no trace, in their harness's words."""
        import numpy as np

        from flaketui.loading.formats import no_trace_reason

        log = self.flake_app.trial_log
        if log is None:
            return "the log holds none"
        return no_trace_reason(log, np.flatnonzero(log.task == log.tasks.index(self.row.task))[:1].tolist()
                               if self.row.task in log.tasks else [])

    def show_pair(self, diff: PairDiff | None = None) -> None:
        """Put the current pair of trials in the trace view (``diff``: its model, from the worker)."""
        status = self.query_one("#compare-trace-status", Static)
        view = self.query_one(TraceDiffView)
        if not self.side_a and not self.side_b:
            status.update(Text(
                f"no trial of {self.row.task} with the outcome to compare has a trace in either run"
                f" ({self.untraced} trial(s) without a trace): {self.no_trace()}", style="yellow"))
            status.display = True
            view.display = False
            view.loading = False
            return
        status.display = False
        view.display = True
        view.focus_rows()
        a = self.side_a[self.pos_a] if self.side_a else None
        b = self.side_b[self.pos_b] if self.side_b else None
        label_a = self._label("A", a, self.pos_a, self.side_a)
        label_b = self._label("B", b, self.pos_b, self.side_b)
        note = ""
        if a is None or b is None:
            missing = self.run_a if a is None else self.run_b
            note = f"{missing} has no traced trial with the outcome to compare"
        if a is None:
            a, b, label_a, label_b = b, None, label_b, ""
        view.mode_choice = self.mode
        view.set_pair(a, b, label_a, label_b, note, diff)
        if view.query_text:
            self.search_changed()
        view.call_later(self._drawn)  # runs after the rebuild set_pair queued (a long pair takes seconds)

    def _drawn(self) -> None:
        """The pair is drawn: the loading indicator goes."""
        self.query_one(TraceDiffView).loading = False

    @on(Worker.StateChanged)
    def _reading_ended(self, event: Worker.StateChanged) -> None:
        """A failed read leaves no loading indicator spinning (its error shows as on every screen)."""
        if event.worker.group == "compare-traces" and event.state == WorkerState.ERROR:
            self.query_one(TraceDiffView).loading = False

    def _label(self, side: str, trial: Trial | None, pos: int, trials: list[Trial]) -> str:
        if trial is None:
            return ""
        kind = "passing" if trial.passed else "failing"
        return trial_label(side, trial, pos, len(trials), kind)

    def update_head(self) -> None:
        """Task, change, both p̂ and n, the flip's review, and where we are in the list."""
        r = self.row
        entry = self.flake_app.triage_store.get(self.key)
        text = Text()
        text.append(r.task, style="bold")
        text.append(f"  {r.change}", style={BROKEN: "bold red", FIXED: "bold green"}.get(
            r.change, "dim"))
        text.append(f"   p̂ {review.change_text(r)}   n {r.n_a} / {r.n_b}   |Δ| "
                    f"{fmt.rate(r.abs_delta)}")
        text.append(f"   {self.position + 1} of {len(self.rows)}", style="dim")
        text.append("   " if self.compact_head else "\n")
        text.append("review: ", style="dim")
        text.append("reviewed " if entry.reviewed else "not reviewed ",
                    style="bold green" if entry.reviewed else "yellow")
        if entry.label:
            text.append(entry.label, style=dialogs.LABEL_STYLES.get(entry.label, "cyan"))
        if entry.note:
            text.append("  ")
            text.append_text(dialogs.note_text(entry))
        text.append("   (space: reviewed · l: label · w: note)", style="dim")
        self.query_one("#compare-trace-head", Static).update(text)

    def head_changed(self) -> None:
        """The header's form changed: its line and the trace view's labels are drawn again."""
        self.update_head()
        self.query_one(TraceDiffView).compact = self.compact_head or self.maximised

    # -- actions ----------------------------------------------------------------------------

    @property
    def trace_view(self) -> TraceDiffView | None:  # type: ignore[override]
        return self.query_one(TraceDiffView)

    def row_of(self, trial: Trial) -> int | None:
        return self.log_rows.get(id(trial))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While a search is active, ``n`` / ``N`` are its (``Next match``), not the flips'."""
        if action == "step_flip":
            return not self.searching
        return super().check_action(action, parameters)

    async def action_step_flip(self, step: int) -> None:
        """Show the next (or previous) row's traces (during a search ``n`` / ``N`` move along
        its matches instead: :meth:`check_action`)."""
        new = self.position + step
        if not 0 <= new < len(self.rows):
            self.notify("no more flips that way", timeout=3)
            return
        self.show_position(new)

    def action_cycle(self, side: str, step: int) -> None:
        """Show the next (or previous) trial on side ``a`` or ``b``."""
        trials = self.side_a if side == "a" else self.side_b
        if len(trials) < 2:
            self.notify(f"no other trial to show on side {side.upper()}", timeout=3)
            return
        if side == "a":
            self.pos_a = (self.pos_a + step) % len(trials)
        else:
            self.pos_b = (self.pos_b + step) % len(trials)
        self.show_pair()

    async def action_jump_to_divergence(self) -> None:
        """Scroll to the first divergent step."""
        if not await self.query_one(TraceDiffView).jump_to_divergence():
            self.notify("no divergent step to jump to", timeout=3)

    def action_toggle_mode(self) -> None:
        """Switch the divergence mode (actions / all) of the view and the app."""
        self.mode = ALL if self.mode == ACTIONS else ACTIONS
        self.flake_app.divergence_mode = self.mode  # every screen that shows divergences watches it
        self.query_one(TraceDiffView).set_mode(self.mode)
        self.notify(f"divergence mode: {self.mode}", timeout=3)

    def _changed(self, key: TriageKey) -> None:
        self.update_head()

    def action_toggle_reviewed(self) -> None:
        """Mark the flip reviewed, or not."""
        dialogs.toggle_reviewed(self, self.key, self._changed)

    def action_pick_label(self) -> None:
        """Choose a cause label for the flip."""
        dialogs.choose_label(self, self.key, self._changed)

    def action_edit_note(self) -> None:
        """Write a note on the flip."""
        dialogs.edit_note(self, self.key, self._changed)

    async def action_back(self) -> None:
        """Close the search (box or matches), or go back to the comparison pane, its cursor on
        the task shown last."""
        if self.close_search() or await self.clear_search():
            return
        self.dismiss(self.position)


def flip_row(task: str, a: RunTrials, b: RunTrials) -> FlipRow:
    """The comparison's row of ``task`` between run ``a`` (the reference's) and run ``b``, for the
    trace screen's header: p̂ and n of both, broken / fixed by the sign of the change (never a
    tested flip: this view runs no test)."""
    change = UNCHANGED if a.p_hat == b.p_hat or a.n == 0 or b.n == 0 else BROKEN if b.p_hat < a.p_hat else FIXED

    def flakiness(p: float) -> float:
        return 4 * p * (1 - p)

    return FlipRow(task, change, a.p_hat, b.p_hat, a.n, b.n, flakiness(a.p_hat), flakiness(b.p_hat), tested=False)


class AcrossTracesScreen(CompareTracesScreen):
    """The comparison's trace screen on the reference trial (side A) and one run's trial (side B).

    Side A holds the reference's run's traced trials, the reference first shown; side B the
    other run's, its representative first shown (``a`` / ``b`` step through the others). The
    trials are the ones the across-runs model read: nothing is read again.
    """

    def __init__(self, model: TaskAcrossRuns, ref_run: RunTrials, run: RunTrials) -> None:
        # the sides come from the model (read_trials below), not from the runs' outcomes
        super().__init__(ref_run.run, run.run, cast(Any, ()), [flip_row(model.task, ref_run, run)], 0)
        self.model = model
        self.ref_run, self.other = ref_run, run

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare-traces", description="Aligning traces")
    def read_trials(self, position: int) -> None:
        """Align the reference with the run's trial (the first pair shown), in a thread."""
        m = self.model
        assert m.reference is not None
        ref, rep = m.reference_trial, self.other.representative_trial
        assert ref is not None and rep is not None
        a = [t for t in self.ref_run.trials if t.outcome != ERRORED and t.trace is not None]
        b = [t for t in self.other.trials if t.outcome != ERRORED and t.trace is not None]
        untraced = sum(1 for t in [*self.ref_run.trials, *self.other.trials]
                       if t.outcome != ERRORED and t.trace is None)
        rows = {id(t): r for run in (self.ref_run, self.other) for t, r in zip(run.trials, run.rows, strict=True)}
        pair = (next(i for i, t in enumerate(a) if t is ref), next(i for i, t in enumerate(b) if t is rep))
        diff = pair_diff(ref, rep, self.normaliser, m.mode)
        self.post_message(FlipTrials(position, a, b, pair, untraced, m.mode, rows, diff))

    async def action_step_flip(self, step: int) -> None:
        """One pair is shown here: the other runs are one ``escape`` away."""
        self.notify("one run at a time here: escape, then another run", timeout=3)
