"""The trace screens: a task's passing and failing traces side by side, and its fork map.

:class:`TaskTraceScreen` opens from the task table (``enter``). It reads the
task's trials in a thread worker, picks the most informative pair (the passing
and failing traces that share the longest normalised prefix) and shows them in
a :class:`~flaketui.app.widgets.trace_view.TraceDiffView`; the fork map tab
shows every trial as a tree of shared steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from flaketui.app.screens.base import FlakeScreen
from flaketui.app.widgets.fork_map import ForkMap
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import ERRORED, PASS, RunOutcomes, Trial
from flaketui.output import formatting as fmt
from flaketui.stats import TaskStats
from flaketui.traces import ForkNode, Normaliser, best_pair, build_fork_map


def trial_label(side: str, trial: Trial, position: int, total: int, kind: str) -> str:
    """``A: trial 3 (pass) · 1 of 10 passing``."""
    outcome = "pass" if trial.passed else "fail"
    return f"{side}: {trial.run} trial {trial.trial} ({outcome}) · {position + 1} of {total} {kind}"


@dataclass
class TaskTrials(Message):
    """A task's trials, read from disk by the trace screen's worker."""

    trials: list[Trial]
    fork_map: ForkNode
    pair: tuple[int, int] | None


TRACE_STEPS = 2000
"""Steps read of each trace when a task opens: a 100 MB trace opens in a moment, cut."""


class TaskTraceScreen(FlakeScreen[None]):
    """A task's passing and failing traces, the first divergence, and the fork map.

    Args:
        outcomes: The run's trials grouped by task.
        row: The task's index in ``outcomes`` (and ``stats``).
        stats: The run's statistics at the current k.
    """

    STATUS = "#trace-status"
    """Says "reading…" until the trials are read; a failed read's error replaces it."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="back",
                tooltip="Back to the task table, as it was"),
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
    ]

    def __init__(self, outcomes: RunOutcomes, row: int, stats: TaskStats) -> None:
        super().__init__()
        self.max_steps = TRACE_STEPS
        """Steps read of each trace; ``m`` multiplies it by four."""
        self.outcomes = outcomes
        self.row = row
        self.stats = stats
        self.task_name = outcomes.tasks[row]
        self.trials: list[Trial] = []
        self.passing: list[Trial] = []
        """Non-errored passing trials that have a trace, in trial order."""
        self.failing: list[Trial] = []
        """Non-errored failing trials that have a trace, in trial order."""
        self.pass_pos = 0
        self.fail_pos = 0
        self.loaded = False

    @property
    def normaliser(self) -> Normaliser:
        return self.flake_app.normaliser

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.head_text(), id="trace-head")
        with TabbedContent(initial="traces-tab", id="trace-tabs"):
            with TabPane("Traces", id="traces-tab"):
                yield Static(Text("reading the task's trials…", style="dim"), id="trace-status")
            with TabPane("Fork map", id="fork-tab"):
                yield Static(Text(
                    "Every trial as a tree of shared steps (after normalisation). Each branch "
                    "counts the passing ✓ and failing ✗ trials that took it; ◆ marks the fork "
                    "where the outcomes separate.", style="dim"), id="fork-legend")
                yield ForkMap(id="fork-map")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.outcomes.run} · {self.task_name}"
        self.read_trials()

    def head_text(self) -> Text:
        """Task name, n, p̂ with its CI, pass^k and flakiness."""
        st, i = self.stats, self.row
        text = Text()
        text.append(self.task_name, style="bold")
        text.append(f"   {self.outcomes.run}", style="dim")
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
        return text

    @work(thread=True, exclusive=True, exit_on_error=False, group="traces",
          description="Reading traces")
    def read_trials(self) -> None:
        """Read the task's trials from disk, build the fork map and pick the default pair."""
        from flaketui.loading import read_trial

        app = self.flake_app
        log = app.trial_log
        assert log is not None
        rows = self.outcomes.task_rows(self.row).tolist()
        trials = [read_trial(log, r, max_steps=self.max_steps) for r in rows]
        cut = [t for t in trials if t.trace is not None and (t.trace_steps or 0) > len(t.trace)]
        if cut:
            longest = max(t.trace_steps or 0 for t in cut)
            self.app.call_from_thread(
                self.notify, f"{len(cut)} trace(s) cut to their first {self.max_steps:,} steps "
                f"(the longest has {longest:,}); press m to read more", title="Huge traces",
                timeout=10)
        norm = app.normaliser
        fork = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials], norm)
        passing = [t for t in trials if t.outcome == PASS and t.trace is not None]
        failing = [t for t in trials if t.outcome not in (PASS, ERRORED) and t.trace is not None]
        best = best_pair([norm.signatures(t.trace) for t in passing],
                         [norm.signatures(t.trace) for t in failing])
        self.post_message(TaskTrials(trials, fork, None if best is None else best[:2]))

    def action_more_steps(self) -> None:
        """Read the task's traces again with four times more steps each."""
        if any(t.trace is not None and (t.trace_steps or 0) > len(t.trace) for t in self.trials):
            self.max_steps *= 4
            self.read_trials()
        else:
            self.notify("every trace is shown whole", timeout=3)

    @on(TaskTrials)
    async def trials_read(self, event: TaskTrials) -> None:
        self.trials = event.trials
        self.passing = [t for t in self.trials if t.outcome == PASS and t.trace is not None]
        self.failing = [t for t in self.trials
                        if t.outcome not in (PASS, ERRORED) and t.trace is not None]
        if event.pair is not None:
            self.pass_pos, self.fail_pos = event.pair
        no_trace = sum(1 for t in self.trials if t.trace is None)
        self.query_one(ForkMap).show_map(event.fork_map, no_trace)
        status = self.query_one("#trace-status", Static)
        if not self.passing and not self.failing:
            status.update(Text(
                f"no trial of {self.task_name} has a trace ({len(self.trials)} trial(s) read): "
                "there is nothing to compare. The log would need a trace field per trial "
                "(trace, traj or messages; --trace-field to name another).", style="yellow"))
            self.loaded = True
            return
        status.display = False
        a, b, la, lb, note = self.current_pair()
        await self.query("#trace-diff").remove()  # read again (m: more steps): replace the view
        view = TraceDiffView(a, b, la, lb, self.normaliser, note, id="trace-diff")
        await self.query_one("#traces-tab", TabPane).mount(view)
        if self.query_one(TabbedContent).active == "traces-tab":
            view.focus_rows()
        self.loaded = True

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

    def _show_pair(self) -> None:
        view = self.diff_view
        if view is not None:
            view.set_pair(*self.current_pair())

    def action_next_passing(self, step: int) -> None:
        """Show the next (or previous) passing trial on side A."""
        if not self.passing:
            self.notify("this task has no passing trial with a trace", timeout=3)
            return
        self.pass_pos = (self.pass_pos + step) % len(self.passing)
        self._show_pair()

    def action_next_failing(self, step: int) -> None:
        """Show the next (or previous) failing trial on side B."""
        if not self.failing:
            self.notify("this task has no failing trial with a trace", timeout=3)
            return
        self.fail_pos = (self.fail_pos + step) % len(self.failing)
        self._show_pair()

    def action_jump_to_divergence(self) -> None:
        """Scroll the trace to its first divergent step."""
        self.query_one(TabbedContent).active = "traces-tab"
        view = self.diff_view
        if view is not None:
            view.focus_rows()
        if view is None or not view.jump_to_divergence():
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

    def action_toggle_expand(self) -> None:
        """Show long step contents in full, or cut them again."""
        view = self.diff_view
        if view is not None:
            view.expanded = not view.expanded

