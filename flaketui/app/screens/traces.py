"""The trace screens: a task's passing and failing traces side by side, and its fork map.

:class:`TaskTraceScreen` opens from the task table (``enter``). It reads the
task's trials in a thread worker, picks the most informative pair (the passing
and failing traces that share the longest prefix of agent actions, or of steps
in ``all`` mode) and shows them in a
:class:`~flaketui.app.widgets.trace_view.TraceDiffView`; the fork map tab
shows every trial as a tree of shared steps. ``v`` switches the divergence mode
(``actions`` / ``all``) for every trace view and the task table's ``div`` column;
``i`` / ``I`` open the trial inspector on side A / B. A task without traces
lists its trials instead, each one ``enter`` away from the inspector. ``/`` searches
both traces (a counter says ``3/17``; ``n`` / ``N`` move along the matches and
``escape`` clears the search); ``h`` collapses the header (compact at small sizes)
and ``Z`` maximises the traces.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Header, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option
from textual.worker import Worker

from flaketui.app.screens import triage_dialogs as dialogs
from flaketui.app.screens.base import HEAD_KEYS, CollapsibleHead, FlakeScreen, back_key
from flaketui.app.trace_keys import SEARCH_KEYS, TRACE_KEYS, TraceKeys, trial_label
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.fork_map import ForkMap
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import ERRORED, PASS, RunOutcomes, Trial
from flaketui.output import formatting as fmt
from flaketui.sanitize import visible
from flaketui.stats import TaskStats
from flaketui.traces import (
    ACTIONS,
    ALL,
    CauseSuggestion,
    Evidence,
    ForkNode,
    ForkTest,
    Normaliser,
    build_fork_map,
    classify_pair,
    suggest_task,
)
from flaketui.traces.normalise import one_line
from flaketui.traces.task_view import RememberingNormaliser, task_traces, traced_sides
from flaketui.traces.trace_diff import PairDiff, pair_diff
from flaketui.triage import TriageKey

if TYPE_CHECKING:
    from flaketui.app.app import FlakeApp

def trial_option_text(trial: Trial) -> Text:
    """One trial in the list of a task without traces: number, outcome, score, error."""
    outcome = {PASS: ("pass", "green"), ERRORED: ("errored", "dim")}.get(trial.outcome, ("fail", "red"))
    text = Text(f"trial {trial.trial:<4} ")
    text.append(f"{outcome[0]:<8}", style=outcome[1])
    if trial.score is not None:
        text.append(f" score {trial.score:g}")
    if trial.error is not None:
        text.append(f"  error: {visible(str(trial.error))[:80]}", style="dim")
    return text


@dataclass
class TaskTrials(Message):
    """A task's trials, read from disk by the trace screen's worker."""

    trials: list[Trial]
    fork_map: ForkNode
    pair: tuple[int, int] | None
    """The most informative (passing, failing) pair (:class:`~flaketui.traces.task_view.TaskTraces`)."""
    mode: str
    rows: list[int]
    """The log row of each trial (for the inspector's raw record)."""
    opened: int
    """The screen's :attr:`~TaskTraceScreen.opened` when the read began (an earlier task's is dropped)."""
    cut: str | None = None
    """Says which traces were cut to their first steps (None: every trace is whole)."""
    evidence: TaskEvidence | None = None
    """A small task's suggestion and its default pair's evidence, found with the read (None:
    the screen looks for them)."""
    diff: PairDiff | None = None
    """The default pair (or the task's one side) aligned for the view (None: the view aligns it)."""


def read_task(app: FlakeApp, task: str, rows: list[int], max_steps: int, opened: int) -> TaskTrials:
    """Read the trials of ``task`` (log ``rows``) from disk, at most ``max_steps`` steps of each
    trace; build their fork map and pick the default pair; for a small task, find its
    suggestion and the pair's evidence too. The trace screen's read, run in a thread."""
    from flaketui.loading import read_trial

    log = app.trial_log
    assert log is not None
    trials = [read_trial(log, r, max_steps=max_steps) for r in rows]
    cut = [t for t in trials if t.trace is not None and (t.trace_steps or 0) > len(t.trace)]
    note = None
    if cut:
        longest = max(t.trace_steps or 0 for t in cut)
        note = (f"{len(cut)} trace(s) cut to their first {max_steps:,} steps "
                f"(the longest has {longest:,}); press m to read more")
    norm = RememberingNormaliser.like(app.normaliser)  # the pair, the fork map and the alignment share it
    found = task_traces(trials, norm, app.divergence_mode)
    pair = found.pair_trials
    evidence = None
    if pair is not None and sum(len(t.trace or ()) for t in trials) <= EVIDENCE_AT_ONCE:
        a, b = pair
        # A search that fails must not hide the traces: the screen's own search (a worker) then
        # runs it again and says how it failed, on the evidence line.
        with suppress(Exception):
            evidence = TaskEvidence(suggest_task(task, trials, norm), (a, b), classify_pair(a, b, norm),
                                    True, opened)
    shown = pair or ((found.passing or found.failing or [None])[0], None)
    diff = None if shown[0] is None else pair_diff(*shown, norm, found.mode)
    return TaskTrials(trials, found.fork_map, found.pair, found.mode, rows, opened, note, evidence, diff)


@dataclass
class TaskEvidence(Message):
    """The task's suggested source of flakiness (with its decisive fork) and the shown pair's evidence."""

    suggestion: CauseSuggestion | None
    pair: tuple[Trial, Trial]
    """The (passing, failing) pair ``evidence`` is about."""
    evidence: Evidence
    whole: bool
    """``suggestion`` is new (the task's trials were read again), not only the pair's evidence."""
    opened: int
    """The screen's :attr:`~TaskTraceScreen.opened` when the search began."""


EVIDENCE_VALUE_WIDTH = 18
"""Longest value (a tool result, an error) on the evidence line; the trace view has them whole."""


def _short(value: str | None) -> str | None:
    return None if value is None else one_line(value, EVIDENCE_VALUE_WIDTH)


def _call_name(call: str | None) -> str | None:
    """``searchRunbook(…)`` of ``searchRunbook(query="…", top_k=3)`` (the trace view shows the arguments)."""
    if call is None or "(" not in call:
        return _short(call)
    return one_line(call.split("(", 1)[0], EVIDENCE_VALUE_WIDTH) + "(…)"


def fork_line(test: ForkTest) -> str:
    """The decisive fork with its exact test first (so a narrow terminal cuts only the branch's
    step): ``at step 3: 0 of 2 pass, otherwise 10 of 10 (Fisher p = 0.015, Holm 0.045 over 3
    tests), when step 3 returns `[1] Restart…```; ``ForkTest.text`` says the same in one sentence."""
    b = test.branch
    holm = f", Holm {test.p_adjusted:.2g} over {test.tests} tests" if test.tests > 1 else ""
    sentence = test.text()  # "when step 3 returns `…`: 0 of 2 pass; …" (the label may hold a colon)
    when = sentence[:sentence.rindex(f": {b.passes} of {b.n} pass")]
    return (f"at step {test.step}: {b.passes} of {b.n} pass, otherwise {test.rest_passes} of "
            f"{test.rest_n} (Fisher p = {test.p_value:.2g}{holm}), {when}")


def evidence_text(suggestion: CauseSuggestion | None, evidence: Evidence | None) -> Text:
    """Two lines under the trace screen's header: the suggested source (``cause?``, as in the task
    table) with its share and the shown pair's evidence (values cut; its own cause if another);
    the decisive fork with its exact test. Log text goes through ``visible``, as plain text."""
    text = Text()
    text.append("cause? ", style="dim")
    if suggestion is not None:
        text.append(suggestion.cause, style="bold magenta")
        text.append(f", {suggestion.agree} of {suggestion.pairs} pairs"
                    + (" (a sample)" if suggestion.sampled else ""))
    else:
        text.append("none (not flaky)", style="dim")
    if evidence is not None:
        own = "" if suggestion is not None and evidence.cause == suggestion.cause else f"this pair: {evidence.cause}, "
        text.append(f" · {own}", style="dim")
        short = replace(evidence, a=_short(evidence.a), b=_short(evidence.b), error=_short(evidence.error),
                        call=_call_name(evidence.call))
        text.append(visible(short.text()))
    text.append("\n")
    fork = None if suggestion is None else suggestion.decisive_fork
    if fork is None:
        text.append("decisive fork: none (no split point separates the outcomes)", style="dim")
    else:
        text.append("◆ decisive fork ", style="bold yellow")
        text.append(visible(fork_line(fork)))
    return text


@dataclass
class ForkMapBuilt(Message):
    """The fork map built again in another divergence mode."""

    fork_map: ForkNode
    mode: str
    opened: int
    """The screen's :attr:`~TaskTraceScreen.opened` when the build began."""


TRACE_STEPS = 2000
"""Steps read of each trace when a task opens: a 100 MB trace opens in a moment, cut."""
READ_WAIT = 0.05
"""Seconds a refilled trace screen waits for its task's trials before it is shown reading them."""
EVIDENCE_AT_ONCE = 1000
"""Steps of a task's traces up to which its evidence is looked for while the traces are drawn
(a few milliseconds: 3 ms for 20 trials of 20 steps), to be shown in the same frame."""


class TaskTraceScreen(TraceKeys, CollapsibleHead, FlakeScreen[None]):
    """A task's passing and failing traces, the first divergence, and the fork map.

    Args:
        outcomes: The run's trials grouped by task.
        row: The task's index in ``outcomes`` (and ``stats``).
        stats: The run's statistics at the current k.

    The task table keeps one (see :func:`show_task_traces`): :meth:`show_task` refills it
    with another task, as a new screen would show it, without composing it again.
    """

    DEFAULT_CSS = """
    TaskTraceScreen #trace-search { dock: bottom; display: none; }
    TaskTraceScreen #trace-match { display: none; height: 1; padding: 0 1; background: $boost; }
    TaskTraceScreen #trial-list { height: 1fr; }
    TaskTraceScreen #trace-evidence { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    STATUS = "#trace-status"
    """Says "reading…" until the trials are read; a failed read's error replaces it."""

    BINDINGS = [
        back_key("back", "the task table, as it was"),
        *SEARCH_KEYS,
        Binding("d", "jump_to_divergence", "Divergence", id="jump-divergence",
                tooltip="Scroll to the first divergent step"),
        Binding("a", "next_passing(1)", "Next pass", id="next-passing",
                tooltip="Next passing trial on the left (A)"),
        Binding("A", "next_passing(-1)", "Prev pass", id="prev-passing", show=False,
                tooltip="Previous passing trial on the left (A)"),
        Binding("b", "next_failing(1)", "Next fail", id="next-failing",
                tooltip="Next failing trial on the right (B)"),
        Binding("B", "next_failing(-1)", "Prev fail", id="prev-failing", show=False,
                tooltip="Previous failing trial on the right (B)"),
        Binding("f", "toggle_fork_map", "Fork map", id="fork-map",
                tooltip="Switch between the traces and the fork map"),
        Binding("x", "toggle_expand", "Expand", id="expand",
                tooltip="Show long step contents in full (toggle)"),
        Binding("m", "more_steps", "More steps", id="more-steps", show=False,
                tooltip="Read four times more steps of traces cut short (huge traces)"),
        *TRACE_KEYS,
        # n / N without a search say how to search (system: listed by neither the footer nor ?).
        Binding("n", "no_search", "Next match", id="no-search", show=False, system=True,
                tooltip="Without a search: says that / searches both traces"),
        Binding("N", "no_search", "Prev match", id="no-search-back", show=False, system=True,
                tooltip="Without a search: says that / searches both traces"),
        Binding("space", "triage('reviewed')", "Reviewed", id="trace-reviewed", show=False,
                tooltip="Mark the task reviewed, or not"),
        Binding("l", "triage('label')", "Label", id="trace-label", show=False,
                tooltip="Give the task a cause label (also marks it reviewed)"),
        Binding("w", "triage('note')", "Note", id="trace-note", show=False,
                tooltip="Write a note"),
        *HEAD_KEYS,
    ]

    def __init__(self, outcomes: RunOutcomes, row: int, stats: TaskStats,
                 reading: asyncio.Future[TaskTrials] | None = None) -> None:
        super().__init__()
        self.opened = 0
        """How many tasks the screen has shown: a worker's message from an earlier one is dropped."""
        self._take_task(outcomes, row, stats)
        self._reading = reading
        """The task's read, begun before the screen was made (None: the screen reads them)."""

    def _take_task(self, outcomes: RunOutcomes, row: int, stats: TaskStats) -> None:
        """Make ``row`` of ``outcomes`` the task shown, nothing of it read yet."""
        self.opened += 1
        self.max_steps = TRACE_STEPS
        """Steps read of each trace; ``m`` multiplies it by four."""
        self.outcomes = outcomes
        self.row = row
        self.stats = stats
        self.task_name = outcomes.tasks[row]
        self.trials: list[Trial] = []
        self.log_rows: list[int] = []
        self.passing: list[Trial] = []
        """Non-errored passing trials that have a trace, in trial order."""
        self.failing: list[Trial] = []
        """Non-errored failing trials that have a trace, in trial order."""
        self.pass_pos = 0
        self.fail_pos = 0
        self.mode = ACTIONS
        """The divergence mode of the view and the fork map."""
        self.trials_shown = asyncio.Event()
        """Set once the task's trials are shown (:attr:`loaded`)."""
        self._queued: list[str] = []
        """Keys' actions pressed while the trials were read, run once they are shown."""
        self.suggestion: CauseSuggestion | None = None
        """The task's suggested source of flakiness and decisive fork (None: not found yet, or not flaky)."""
        self.evidence: Evidence | None = None
        """What the shown (passing, failing) pair shows."""
        self.suggested = False
        """The task's suggestion was found (:attr:`suggestion` is final)."""

    @property
    def loaded(self) -> bool:
        """The task's trials are read and shown."""
        return self.trials_shown.is_set()

    def deferred(self, action: str) -> bool:
        """While the trials are read, a key that needs them is queued (run once they are shown,
        :meth:`trials_read`) and answered at once: pressed right after ``enter`` it is not lost."""
        if self.loaded:
            return False
        if action not in self._queued:
            self._queued.append(action)
        self.notify("still reading the traces…; the key runs once they are shown", timeout=2)
        return True

    @property
    def normaliser(self) -> Normaliser:
        return self.flake_app.normaliser

    @property
    def key(self) -> TriageKey:
        return TriageKey(self.outcomes.run, self.task_name)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.head_text(), id="trace-head")
        yield Static(Text("finding the evidence…", style="dim"), id="trace-evidence")
        with TabbedContent(initial="traces-tab", id="trace-tabs"):
            with TabPane("Traces", id="traces-tab"):
                yield Static(Text("reading the task's trials…", style="dim"), id="trace-status")
            with TabPane("Fork map", id="fork-tab"):
                yield Static(Text(
                    "Every trial as a tree of shared steps (after normalisation). Each branch "
                    "counts the passing ✓ and failing ✗ trials that took it; ◆ marks the fork "
                    "where the outcomes separate, and the decisive one (smallest Fisher p).", style="dim"),
                    id="fork-legend")
                yield ForkMap(id="fork-map")
        yield Input(placeholder="search both traces (enter: find, escape: cancel)", id="trace-search")
        yield Static(id="trace-match")
        yield KeyFooter()

    async def on_mount(self) -> None:
        self.sub_title = self.task_title()
        self.apply_head()
        self._place_tab_underline()
        reading, self._reading = self._reading, None
        if reading is None:
            self.read_trials()
        elif reading.done() and reading.exception() is None:
            await self.trials_read(reading.result())  # in the screen's first frame
        else:
            self._await_read(reading)

    def _place_tab_underline(self) -> None:
        """Put the tab bar's underline under the first tab now, where Textual puts it only once
        the tabs are laid out, a frame after the screen's first: that frame then shows it. The
        first tab starts the bar, so its place is its label's cells inside its gutter. (A
        Textual whose tabs are made otherwise places it itself, a frame later.)"""
        with suppress(NoMatches, AttributeError):
            tab = self.query_one(TabbedContent).get_tab("traces-tab")
            underline = self.query_one(TabbedContent).query_one("Underline")
            start = tab.styles.gutter.left
            underline.highlight_start = start  # type: ignore[attr-defined]
            underline.highlight_end = start + tab.label.cell_length  # type: ignore[attr-defined]

    def task_title(self) -> str:
        """The header's subtitle: run · task."""
        return f"{visible(self.outcomes.run)} · {visible(self.task_name)}"

    async def show_task(self, outcomes: RunOutcomes, row: int, stats: TaskStats) -> None:
        """Show another task (the screen off the stack): every widget as :meth:`compose` made
        it, the last task's workers cancelled and their messages dropped, its trials read."""
        self.workers.cancel_node(self)
        self._take_task(outcomes, row, stats)
        await self.query("#trace-diff, #trial-list").remove()
        await self.query_one(ForkMap).remove()
        await self.query_one("#fork-tab", TabPane).mount(ForkMap(id="fork-map"))
        self.query_one("#trace-head", Static).update(self.head_text())
        evidence = self.query_one("#trace-evidence", Static)
        evidence.update(Text("finding the evidence…", style="dim"))
        evidence.display = True
        status = self.query_one("#trace-status", Static)
        status.update(Text("reading the task's trials…", style="dim"))
        status.display = True
        search = self._search_input()
        search.value = ""
        search.display = False
        self.query_one("#trace-match", Static).display = False
        tabbed = self.query_one(TabbedContent)
        if tabbed.active != "traces-tab":  # as a new screen shows it: the tab underline does not slide
            level, self.app.animation_level = self.app.animation_level, "none"
            try:
                tabbed.active = "traces-tab"
            finally:
                self.app.animation_level = level
        self.set_focus(None)  # a new screen focuses its first focusable widget when shown
        self.sub_title = self.task_title()
        self.read_trials()
        # Trials read in a moment are in the screen's first frame, with no frame of "reading…"
        # (and its layout) before them; a longer read shows the screen saying so.
        with suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.trials_shown.wait(), READ_WAIT)

    def on_screen_suspend(self) -> None:
        """Popped (kept for the next task): its readers stop; a screen pushed over it leaves them."""
        if self not in self.app.screen_stack:
            self.workers.cancel_node(self)

    def head_text(self) -> Text:
        """Task name, n, p̂ with its CI, pass^k and flakiness; the review and note below."""
        st, i = self.stats, self.row
        if self.compact_head:
            return self.compact_head_text()
        text = Text()
        text.append(visible(self.task_name), style="bold")
        text.append(f"   {visible(self.outcomes.run)}", style="dim")
        text.append(f"   n = {int(st.n[i])}, {int(st.passes[i])} passed")
        if st.errored[i]:
            text.append(f", {int(st.errored[i])} errored", style="dim")
        text.append("   p̂ ")
        text.append(fmt.rate(st.p_hat[i]), style="bold")
        text.append(f" {fmt.interval(st.p_hat_ci.low[i], st.p_hat_ci.high[i])}", style="dim")
        text.append(f"   pass^{st.k} ")
        text.append(fmt.rate(st.pass_hat_k[i]), style="bold")
        text.append("   flakiness ")
        text.append(fmt.rate(st.flakiness[i]), style="bold yellow" if st.flakiness[i] > 0 else "")
        text.append_text(self.review_text())
        return text

    def compact_head_text(self) -> Text:
        """The header's compact form, one line (the run is in the title): task, n, p̂, pass^k,
        flakiness, then the review."""
        st, i = self.stats, self.row
        text = Text()
        text.append(visible(self.task_name), style="bold")
        text.append(f"  n {int(st.n[i])}, {int(st.passes[i])} passed")
        if st.errored[i]:
            text.append(f", {int(st.errored[i])} errored", style="dim")
        text.append("  p̂ ")
        text.append(fmt.rate(st.p_hat[i]), style="bold")
        text.append(f"  pass^{st.k} ")
        text.append(fmt.rate(st.pass_hat_k[i]), style="bold")
        text.append("  flakiness ")
        text.append(fmt.rate(st.flakiness[i]), style="bold yellow" if st.flakiness[i] > 0 else "")
        review = self.review_text()
        if review.plain:
            text.append("  ")
            text.append_text(review[1:])  # on the line, not under it
        return text

    def head_changed(self) -> None:
        """The header's form changed: its line and the trace view's labels are drawn again."""
        self.query_one("#trace-head", Static).update(self.head_text())
        view = self.diff_view
        if view is not None:
            view.compact = self.compact_head or self.maximised

    def review_text(self) -> Text:
        """``review: reviewed real-regression  the note…`` (empty when there is no note or mark)."""
        try:
            entry = self.flake_app.triage_store.get(self.key)
        except Exception:  # no app yet (a unit test building the screen alone)
            return Text()
        if entry.empty:
            return Text()
        text = Text("\nreview: ", style="dim")
        text.append("reviewed " if entry.reviewed else "not reviewed ",
                    style="bold green" if entry.reviewed else "yellow")
        if entry.label:
            text.append(visible(entry.label), style=dialogs.LABEL_STYLES.get(entry.label, "cyan"))
        if entry.note:
            text.append("  ")
            text.append(visible(dialogs.note_text(entry).plain), style="italic")
        return text

    def action_triage(self, what: str) -> None:
        """``space`` / ``l`` / ``w``: review the task, as on the task table."""
        action = {"reviewed": dialogs.toggle_reviewed, "label": dialogs.choose_label,
                  "note": dialogs.edit_note}[what]

        def changed(_: TriageKey) -> None:
            self.query_one("#trace-head", Static).update(self.head_text())

        action(self, self.key, changed)

    def read_trials(self) -> None:
        """Read the task's trials in a thread (:meth:`_read_trials`)."""
        self._read_trials(self.outcomes.task_rows(self.row).tolist(), self.max_steps, self.opened)

    @work(thread=True, exclusive=True, exit_on_error=False, group="traces",
          description="Reading traces")
    def _read_trials(self, rows: list[int], max_steps: int, opened: int) -> None:
        """Read the trials of log ``rows`` (:func:`read_task`)."""
        self.post_message(read_task(self.flake_app, self.task_name, rows, max_steps, opened))

    @work(exclusive=True, exit_on_error=False, group="traces", description="Reading traces")
    async def _await_read(self, reading: asyncio.Future[TaskTrials]) -> None:
        """Wait for the read :func:`show_task_traces` began before the screen was shown."""
        self.post_message(await reading)

    def action_more_steps(self) -> None:
        """Read the task's traces again with four times more steps each."""
        if any(t.trace is not None and (t.trace_steps or 0) > len(t.trace) for t in self.trials):
            self.max_steps *= 4
            self.read_trials()
        else:
            self.notify("every trace is shown whole", timeout=3)

    def no_trace(self) -> str:
        """Why this task's trials have no trace, in their harness's words."""
        from flaketui.loading.formats import no_trace_reason

        log = self.flake_app.trial_log
        return no_trace_reason(log, self.log_rows) if log is not None else "the log holds none"

    @on(TaskTrials)
    async def trials_read(self, event: TaskTrials) -> None:
        if event.opened != self.opened:
            return
        if event.cut is not None:
            self.notify(event.cut, title="Huge traces", timeout=10)
        self.trials = event.trials
        self.log_rows = event.rows
        self.mode = event.mode
        self.passing, self.failing = traced_sides(self.trials)
        if event.pair is not None:
            self.pass_pos, self.fail_pos = event.pair
        self.query_one(ForkMap).show_map(event.fork_map, sum(1 for t in self.trials if t.trace is None))
        status = self.query_one("#trace-status", Static)
        if not self.passing and not self.failing:
            why = self.no_trace()
            status.update(Text(
                f"no trial of {visible(self.task_name)} has a trace ({len(self.trials)} trial(s) read): "
                f"there is nothing to compare. {why[:1].upper()}{why[1:]}. The trials are listed "
                "below: enter (or i) opens the inspector.", style="yellow"))
            await self.query("#trial-list").remove()
            options = OptionList(*(Option(trial_option_text(t), id=str(n)) for n, t in enumerate(self.trials)),
                                 id="trial-list")
            await self.query_one("#traces-tab", TabPane).mount(options)
            options.focus()
            self.query_one("#trace-evidence", Static).display = False
            self._shown()
            return
        status.display = False
        # A small task's evidence came with its trials, to be drawn in the same frame as the
        # traces; a big task's is looked for once its traces are shown (its thread would slow
        # their mounting).
        small = sum(len(t.trace or ()) for t in self.trials) <= EVIDENCE_AT_ONCE
        if event.evidence is not None:
            self.query_one("#trace-evidence", Static).display = True
            self.evidence_found(event.evidence)
        elif small:
            self.find_evidence(True)
        a, b, la, lb, note = self.current_pair()
        await self.query("#trace-diff").remove()  # read again (m: more steps): replace the view
        built = (self.passing[event.pair[0]], self.failing[event.pair[1]]) if event.pair is not None \
            else ((self.passing or self.failing)[0], None)
        same = built[0] is a and built[1] is b
        diff = event.diff if same else None  # read again with another pair shown: the view aligns that one
        view = TraceDiffView(a, b, la, lb, self.normaliser, note, mode=self.mode, id="trace-diff", diff=diff)
        view.set_reactive(TraceDiffView.compact, self.compact_head or self.maximised)
        await self.query_one("#traces-tab", TabPane).mount(view)
        if self.query_one(TabbedContent).active == "traces-tab":
            view.focus_rows()
        self._shown()
        if not small:
            self.call_after_refresh(self.find_evidence, True)

    def _shown(self) -> None:
        """The trials are shown: say so, and run the keys pressed while they were read, in order."""
        self.trials_shown.set()
        queued, self._queued = self._queued, []
        for action in queued:
            self.call_after_refresh(self.run_action, action)

    @on(OptionList.OptionSelected, "#trial-list")
    def trial_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.open_inspector(self.trials[int(event.option_id or 0)])

    def row_of(self, trial: Trial) -> int | None:
        for t, r in zip(self.trials, self.log_rows, strict=False):
            if t is trial:
                return r
        return None

    def action_inspect(self, side: str) -> None:
        """Open the trial inspector on side A's (or B's) trial, or the highlighted one of the list."""
        if self.deferred(f"inspect({side!r})"):
            return
        lists = self.query("#trial-list")
        if lists and self.diff_view is None:
            highlighted = lists.first(OptionList).highlighted
            if highlighted is not None:
                self.open_inspector(self.trials[highlighted])
            return
        super().action_inspect(side)

    def current_pair(self) -> tuple[Trial | None, Trial | None, str, str, str]:
        """The trials to show and their labels; one side only when the task has one outcome."""
        if self.passing and self.failing:
            a, b = self.passing[self.pass_pos], self.failing[self.fail_pos]
            return (a, b, trial_label("A", a, self.pass_pos, len(self.passing), "passing"),
                    trial_label("B", b, self.fail_pos, len(self.failing), "failing"), "")
        if self.passing:
            a = self.passing[self.pass_pos]
            note = (f"no failing trial: all {len(self.passing)} traced trials passed; "
                    f"showing one passing trace{self._rule_of_three('failure')}")
            return a, None, trial_label("A", a, self.pass_pos, len(self.passing), "passing"), "", note
        b = self.failing[self.fail_pos]
        note = (f"no passing trial: all {len(self.failing)} traced trials failed; "
                f"showing one failing trace{self._rule_of_three('pass')}")
        return b, None, trial_label("A", b, self.fail_pos, len(self.failing), "failing"), "", note

    def _rule_of_three(self, what: str) -> str:
        """The rule-of-three bound of a task whose trials all passed or all failed."""
        bound = float(self.stats.rule_of_three[self.row])
        if bound != bound:
            return ""
        n = int(self.stats.n[self.row])
        return f"; rule of three: its {what} rate is below {bound:.3f} (95%, 1 − 0.05^(1/{n}))"

    @property
    def diff_view(self) -> TraceDiffView | None:
        views = self.query(TraceDiffView)
        return views.first() if views else None

    @property
    def trace_view(self) -> TraceDiffView | None:  # type: ignore[override]
        return self.diff_view

    def _show_pair(self) -> None:
        view = self.diff_view
        if view is not None:
            view.set_pair(*self.current_pair())
            self.find_evidence(whole=False)
            if view.query_text:
                self.search_changed()

    def find_evidence(self, whole: bool) -> None:
        """Find the shown pair's evidence (and, if ``whole``, the task's suggestion and decisive
        fork) in a thread; a task without both a passing and a failing trace has none."""
        line = self.query_one("#trace-evidence", Static)
        if not (self.passing and self.failing):
            line.display = False
            return
        line.display = True
        self._evidence_worker(self.task_name, list(self.trials), self.passing[self.pass_pos],
                              self.failing[self.fail_pos], whole, self.opened)

    @work(thread=True, exit_on_error=False, group="evidence", description="Finding the evidence")
    def _evidence_worker(self, task: str, trials: list[Trial], a: Trial, b: Trial, whole: bool,
                         opened: int) -> None:
        norm = self.normaliser
        suggestion = suggest_task(task, trials, norm) if whole else None
        self.post_message(TaskEvidence(suggestion, (a, b), classify_pair(a, b, norm), whole, opened))

    def show_worker_error(self, worker: Worker[object]) -> None:
        """A failed evidence search says so on the evidence line (the traces stay shown)."""
        if worker.group != "evidence":
            super().show_worker_error(worker)
            return
        message = f"{type(worker.error).__name__}: {worker.error}"
        self.notify(message, title=worker.description, severity="error", timeout=30, markup=False)
        self.query_one("#trace-evidence", Static).update(
            Text(f"{worker.description} failed: {visible(message)}", style="bold red"))

    @on(TaskEvidence)
    def evidence_found(self, event: TaskEvidence) -> None:
        if event.opened != self.opened:
            return
        if event.whole:
            self.suggestion = event.suggestion
            self.suggested = True
            self.query_one(ForkMap).set_decisive(None if event.suggestion is None else event.suggestion.decisive_fork)
        if self.passing and self.failing:
            a, b = event.pair
            if a is self.passing[self.pass_pos] and b is self.failing[self.fail_pos]:
                self.evidence = event.evidence
        if self.suggested:  # else the task's suggestion is still on its way: keep "finding…"
            self.query_one("#trace-evidence", Static).update(evidence_text(self.suggestion, self.evidence))

    async def action_back(self) -> None:
        """Close the search box, or clear the search (found or not), or go back to the task table."""
        if not self.close_search() and not await self.clear_search():
            self.app.pop_screen()

    def action_no_search(self) -> None:
        """``n`` without a search: say how to search."""
        self.notify("no search: / searches both traces", timeout=3)

    def action_toggle_mode(self) -> None:
        """Switch the divergence mode (actions / all) of the view, the fork map and the table."""
        self.mode = ALL if self.mode == ACTIONS else ACTIONS
        self.flake_app.divergence_mode = self.mode  # every screen that shows divergences watches it
        view = self.diff_view
        if view is not None:
            view.set_mode(self.mode)
        if self.trials:
            self.rebuild_fork_map(self.mode, self.opened)
        self.notify(f"divergence mode: {self.mode}"
                    + (" (the agent's tool calls and final answer)" if self.mode == ACTIONS else " (every step)"),
                    timeout=3)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fork-map",
          description="Building the fork map")
    def rebuild_fork_map(self, mode: str, opened: int) -> None:
        fork = build_fork_map([(t.trial, t.outcome, t.trace) for t in self.trials], self.normaliser, mode)
        self.post_message(ForkMapBuilt(fork, mode, opened))

    @on(ForkMapBuilt)
    def fork_map_built(self, event: ForkMapBuilt) -> None:
        if event.mode == self.mode and event.opened == self.opened:
            self.query_one(ForkMap).show_map(event.fork_map, sum(1 for t in self.trials if t.trace is None))

    def action_next_passing(self, step: int) -> None:
        """Show the next (or previous) passing trial on side A."""
        if self.deferred(f"next_passing({step})"):
            return
        if not self.passing:
            self.notify("this task has no passing trial with a trace", timeout=3)
            return
        self.pass_pos = (self.pass_pos + step) % len(self.passing)
        self._show_pair()

    def action_next_failing(self, step: int) -> None:
        """Show the next (or previous) failing trial on side B."""
        if self.deferred(f"next_failing({step})"):
            return
        if not self.failing:
            self.notify("this task has no failing trial with a trace", timeout=3)
            return
        self.fail_pos = (self.fail_pos + step) % len(self.failing)
        self._show_pair()

    async def action_jump_to_divergence(self) -> None:
        """Scroll the trace to its first divergent step (drawing the rows up to it)."""
        if self.deferred("jump_to_divergence"):
            return
        self.query_one(TabbedContent).active = "traces-tab"
        view = self.diff_view
        if view is not None:
            view.focus_rows()
        if view is None or not await view.jump_to_divergence():
            self.notify("no divergent step to jump to", timeout=3)

    def action_toggle_fork_map(self) -> None:
        """Switch between the traces tab and the fork map tab."""
        tabs = self.query_one(TabbedContent)
        tabs.active = "fork-tab" if tabs.active == "traces-tab" else "traces-tab"
        self.focus_active_tab()

    @on(TabbedContent.TabActivated)
    def focus_active_tab(self) -> None:
        """Focus what the active tab shows, so the arrow keys scroll it (not the tab bar)."""
        if self.query_one(TabbedContent).active == "fork-tab":
            self.query_one(ForkMap).focus()
        elif self.diff_view is not None:
            self.diff_view.focus_rows()


TRACE_SCREEN = "task-traces"
"""The name the task table's :class:`TaskTraceScreen` is installed under (kept between tasks)."""


async def show_task_traces(app: FlakeApp, outcomes: RunOutcomes, row: int, stats: TaskStats) -> TaskTraceScreen:
    """The trace screen of ``row`` of ``outcomes`` (``Open("traces", …)``): the app's one
    :class:`TaskTraceScreen`, refilled (composing a new one took most of the time of opening
    traces), or a new one while that one is on the screen stack (the command palette opens
    traces from anywhere)."""
    kept = app.get_screen(TRACE_SCREEN) if app.is_screen_installed(TRACE_SCREEN) else None
    if isinstance(kept, TaskTraceScreen) and kept not in app.screen_stack:
        await kept.show_task(outcomes, row, stats)
        return kept
    # Read the trials first: read in a moment, they are composed with the screen, in its first
    # frame and layout; a longer read shows the screen saying so.
    reading = asyncio.get_running_loop().run_in_executor(
        None, read_task, app, outcomes.tasks[row], outcomes.task_rows(row).tolist(), TRACE_STEPS, 1)
    await asyncio.wait({reading}, timeout=READ_WAIT)  # neither raises nor cancels: the screen shows how it ends
    screen = TaskTraceScreen(outcomes, row, stats, reading)
    if kept is None:
        app.install_screen(screen, TRACE_SCREEN)
    return screen
