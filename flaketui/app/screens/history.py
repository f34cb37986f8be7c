"""A task's history across recorded runs: opened with ``H`` from the task table.

Above the runs, a chart of the last :data:`CHART_RUNS` recorded runs (:mod:`flaketui.history.trend`,
drawn by :func:`flaketui.output.trend.text_chart`): the suite's pass@1 and pass^k and this
task's p̂, y ticked, each run numbered, named and dated, where the task turned flaky, regressed
or was fixed marked. ``s`` switches to the suite's view: ``history trend`` 's text (the chart,
a line per run with its intervals and its flaky / undetermined / quarantined tasks, the changes).

Per recorded run the task is in: the run's name, when it was recorded, trials, passes,
errored, p̂, the task's lifecycle state after that run and the triage note on the task in
that run (label and note, from the app's triage notes); above, its state now, the evidence for
it ("24 clean trials since run X: 5 more to call it fixed at cap 0.1"), its owner (from the
app's ``options.owners``, set by ``flaketui open --owners FILE``) and its quarantine. The history
(``--history``, else the one ``flaketui history`` uses) is read in a thread worker by
:func:`flaketui.history.status.task_timeline`; this screen only renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.states import STATE_STYLES
from flaketui.app.widgets.trend_chart import TrendChart
from flaketui.app.widgets.footer import KeyFooter
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.history.owners import Rule
    from flaketui.history.status import TaskTimeline

NO_HISTORY = "no history recorded yet: flaketui history record LOG…"
"""What the screen says when the history has no file on disk (or no run)."""

NOTE_WIDTH = 48
"""The most characters of a triage note shown in a run's row."""

CHART_RUNS = 30
"""The recorded runs the chart draws (the newest)."""


@dataclass
class TimelineRead(Message):
    """The worker read the task's timeline (None: no history recorded yet)."""

    timeline: TaskTimeline | None


@dataclass
class ChartRead(Message):
    """The worker folded the recorded runs into the chart (after the timeline: on a big history
    it reads every recorded result, which takes longer)."""

    chart: list[str]
    """The chart's lines."""
    suite: list[str]
    """The suite view's lines (``history trend`` 's text)."""


class HistoryScreen(FlakeScreen[None]):
    """The timeline of one task in the history.

    Args:
        task: The task whose history is shown.
    """

    DEFAULT_CSS = """
    HistoryScreen #history-head { height: auto; padding: 0 1; background: $boost; }
    HistoryScreen #history-table { height: 1fr; }
    """

    BINDINGS = [back_key("history-back", "the task table"),
                Binding("s", "suite", "Suite trend", id="history-suite",
                        tooltip="Switch between this task's history and the suite's trend over the recorded runs")]

    STATUS = "#history-head"
    AUTO_FOCUS = "#history-table"

    def __init__(self, task: str) -> None:
        super().__init__()
        self.task_name = task
        self.timeline: TaskTimeline | None = None
        """The timeline read (None until read, or with no history)."""
        self.suite_lines: list[str] = []
        """The suite view's lines (empty until read)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("reading the task's history…", style="dim"), id="history-head")
        yield TrendChart(id="history-chart")
        yield TrendChart(id="history-suite")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.sub_title = f"history · {visible(self.task_name)}"
        for chart in self.query(TrendChart):
            chart.display = False  # until the worker has drawn it
        table = self.query_one(DataTable)
        for label, key in (("run", "run"), ("recorded", "recorded"), ("trials", "trials"),
                           ("pass", "passes"), ("err", "errored"), ("p̂", "p_hat"), ("state", "state"),
                           ("note", "note")):
            table.add_column(label, key=key)
        self.read()

    @property
    def url(self) -> str:
        """The history read: ``--history``, else ``flaketui history`` 's default."""
        from flaketui.history import default_url

        return self.flake_app.options.history or default_url()

    @property
    def owner_rules(self) -> tuple[Rule, ...]:
        """The owners file's rules the app holds (``flaketui open --owners``; none: no owner shown)."""
        return self.flake_app.options.owners

    def note_of(self, run: str) -> Text:
        """The triage label and note on this task in ``run`` (empty: none), as text: the note's
        first line, cut at :data:`NOTE_WIDTH` characters (the triage screen has the rest)."""
        from flaketui.triage import TriageKey

        entry = self.flake_app.triage_store.get(TriageKey(run, self.task_name))
        text = Text()
        if entry.label:
            text.append(visible(entry.label), style="bold")
        if entry.note:
            line = visible(entry.note.splitlines()[0])
            if len(line) > NOTE_WIDTH:
                line = line[:NOTE_WIDTH - 1] + "…"
            text.append((": " if entry.label else "") + line)
        return text

    @work(thread=True, exclusive=True, exit_on_error=False, group="history",
          description="Reading the history")
    def read(self) -> None:
        """Read the task's timeline from the history, in a thread."""
        from flaketui.history import open_store
        from flaketui.history.status import history_exists, task_timeline

        from flaketui.stats.classes import DEFAULT_FLAKY_CAP

        url = self.url
        rules = self.owner_rules
        flaky_cap = self.flake_app.options.flaky_cap or DEFAULT_FLAKY_CAP
        if not history_exists(url):
            self.post_message(TimelineRead(None))
            return
        with open_store(url) as store:
            timeline = task_timeline(store, self.task_name, rules=rules, flaky_cap=flaky_cap)
            self.post_message(TimelineRead(timeline if timeline.runs_recorded else None))
            if timeline.runs_recorded:
                self.post_message(ChartRead(*chart_lines(store, self.task_name, flaky_cap=flaky_cap)))

    @on(ChartRead)
    def chart_read(self, event: ChartRead) -> None:
        self.suite_lines = event.suite
        if not self.query_one("#history-suite", TrendChart).display:
            self.query_one("#history-chart", TrendChart).show(event.chart)

    @on(TimelineRead)
    def timeline_read(self, event: TimelineRead) -> None:
        head = self.query_one("#history-head", Static)
        tl = event.timeline
        self.query_one("#history-suite", TrendChart).display = False
        if tl is None:
            head.update(Text(NO_HISTORY, style="bold"))
            return
        self.timeline = tl
        text = Text()
        text.append(visible(tl.task), style="bold")
        text.append("  ")
        text.append(tl.state, style=STATE_STYLES.get(tl.state, ""))
        if tl.state != tl.computed_state:
            text.append(f" (computed: {tl.computed_state})", style="dim")
        text.append(f"  in {len(tl.runs)} of {tl.runs_recorded} recorded runs\n")
        text.append(visible(tl.evidence))
        if tl.owner:
            text.append("\nowner: " + visible(" ".join(tl.owner)))
        if tl.group is not None:
            text.append(("  " if tl.owner else "\n") + "group: " + visible(tl.group))
        q = tl.quarantine
        if q is not None:
            ticket = f" {q['ticket']}" if q["ticket"] else ""
            lift = " (ready to lift)" if q["ready_to_lift"] else ""
            text.append("\nquarantined" + lift + ": ", style="magenta")
            text.append(visible(f"by {q['who']} at {q['at']}: {q['why']}{ticket}"))
        head.update(text)
        table = self.query_one(DataTable)
        table.clear()
        for run in tl.runs:
            table.add_row(Text(visible(run.name)), Text(visible(run.recorded_at)),
                          Text(str(run.trials), justify="right"), Text(str(run.passes), justify="right"),
                          Text(str(run.errored), justify="right"),
                          Text("-" if run.p_hat is None else f"{run.p_hat:.2f}", justify="right"),
                          Text(run.state, style=STATE_STYLES.get(run.state, "")), self.note_of(run.name),
                          key=str(run.run_id))
        if not tl.runs:
            table.display = False

    def action_suite(self) -> None:
        """Show the suite's trend instead of the task's history, or back."""
        suite = self.query_one("#history-suite", TrendChart)
        to_suite = not suite.display and bool(self.suite_lines)
        if to_suite:
            suite.show(self.suite_lines)
            suite.styles.max_height = None
            suite.styles.height = "1fr"
        else:
            suite.display = False
        self.query_one("#history-chart", TrendChart).display = not to_suite and bool(self.timeline)
        table = self.query_one(DataTable)
        table.display = not to_suite and bool(self.timeline and self.timeline.runs)
        self.sub_title = ("suite trend" if to_suite else "history") + f" · {visible(self.task_name)}"

    def action_back(self) -> None:
        """Return to the task table."""
        self.dismiss()


def chart_lines(store: object, task: str, last: int = CHART_RUNS,
                flaky_cap: float | None = None) -> tuple[list[str], list[str]]:
    """The chart of the suite's pass@1 and pass^k and ``task`` 's p̂ over the last ``last``
    recorded runs, its changes marked; and the suite view (``history trend`` 's text) over the
    same runs, the classes against ``flaky_cap`` (None: the default; run in a worker: it folds
    every recorded run)."""
    from flaketui.history.trend import trend, trend_doc
    from flaketui.output.trend import MARKS, text_chart, trend_lines
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    doc = trend_doc(trend(store, last=last, flaky_cap=flaky_cap or DEFAULT_FLAKY_CAP))
    runs = doc["runs"]
    if not runs:
        return [], []
    mine = next((t["p_hat"] for t in doc["tasks"] if t["task"] == task), [None] * len(runs))
    marks = ["".join(sorted({MARKS.get(c["kind"], "?") for c in r["changes"] if c["task"] == task})) for r in runs]
    k = doc["k"]
    chart = text_chart([("suite pass@1", "●", [r["pass_at_1"]["value"] for r in runs]),
                        (f"suite pass^{k}", "○", [r["pass_hat_k"]["value"] for r in runs]),
                        (f"p̂ of {visible(task)}", "✕", mine)],
                       [r["run"] for r in runs], [r["recorded_at"] for r in runs], marks, height=6)
    return chart, trend_lines(doc)
