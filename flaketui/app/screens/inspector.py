"""The trial inspector (``i`` on a trace pane): every field the harness recorded about one trial.

Outcome, score, group, the error (and its reason), metrics, the grader's details
first (τ-bench's ``reward`` / ``info``, τ²-bench's ``reward_info``, Terminal-Bench's
``parser_results`` / ``failure_mode``, Inspect's ``scores``), then every other extra
field, and the raw record as stored, pretty-printed JSON in a scrollable read-only
pane (``r`` switches to it). Log strings go through :func:`flaketui.sanitize.visible`
and are never read as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Header, Static, TabbedContent, TabPane, TextArea

from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.widgets.footer import KeyFooter
from flaketui.model import ERRORED, PASS, Trial
from flaketui.sanitize import visible
from flaketui.traces.steps import harness_step_count

GRADER_KEYS = ("reward", "info", "reward_info", "parser_results", "failure_mode", "scores", "score_details")
"""Extra fields that hold a grader's verdict, shown first (in this order)."""
MAX_RAW_CHARS = 5_000_000
"""Characters of the raw record shown (a 100 MB trace is cut, with a note)."""


def pretty(value: Any) -> str:
    """``value`` as indented JSON (strings as they are); repr when JSON cannot hold it."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=repr).decode()
    except (TypeError, RecursionError):
        return repr(value)


def error_reason(error: Any) -> str | None:
    """The reason an errored trial gives: ``message``/``reason``/``detail`` of an error object."""
    if isinstance(error, dict):
        for key in ("reason", "message", "detail", "type"):
            if isinstance(error.get(key), str):
                return error[key]
    return error if isinstance(error, str) else None


def details_text(trial: Trial) -> Text:
    """The inspector's summary: outcome, score, error, metrics, grader details, extra fields."""
    text = Text()

    def field(name: str, value: Any, style: str = "") -> None:
        text.append(f"{name}: ", style="bold")
        body = pretty(value)
        if "\n" in body:
            text.append("\n")
        text.append(visible(body, multiline=True), style=style)
        text.append("\n")

    outcome = {PASS: ("pass", "bold green"), ERRORED: ("errored", "bold magenta")}.get(
        trial.outcome, ("fail", "bold red"))
    text.append(visible(f"{trial.run} · {trial.task} · trial {trial.trial}"), style="bold")
    text.append(f"   {visible(trial.location)}\n", style="dim")
    field("outcome", outcome[0], outcome[1])
    field("score", "—" if trial.score is None else f"{trial.score:g}")
    if trial.group is not None:
        field("group", trial.group)
    if trial.error is not None:
        reason = error_reason(trial.error)
        if reason is not None:
            field("error reason", reason, "red")
        field("error", trial.error)
    if trial.metrics:
        field("metrics", trial.metrics)
    steps = "no trace" if trial.trace is None else harness_step_count(trial.trace, trial.trace_steps)
    field("trace", steps)
    grader = [k for k in GRADER_KEYS if k in trial.extra]
    if grader:
        text.append("\ngrader\n", style="bold underline")
        for key in grader:
            field(visible(key), trial.extra[key])
    rest = [k for k in trial.extra if k not in GRADER_KEYS]
    if rest:
        text.append("\nother fields\n", style="bold underline")
        for key in rest:
            field(visible(key), trial.extra[key])
    return text


def raw_record(trial_log: Any, row: int) -> Any:
    """The whole record of log row ``row`` as stored (every step of its trace)."""
    from flaketui.loading import formats

    src = trial_log.sources[int(trial_log.source[row])]
    obj, _ = formats.format_of_kind(src.kind).read_record(
        src, int(trial_log.offset[row]), int(trial_log.length[row]), trial_log.fields.trace, None)
    return obj


@dataclass
class RawRead(Message):
    """The raw record, pretty-printed, from the inspector's worker."""

    text: str


class InspectorScreen(FlakeScreen[None]):
    """Every field of one trial, and its raw record.

    Args:
        trial: The trial (as :func:`~flaketui.loading.read_trial` read it).
        row: Its row in the loaded log (for the raw record); None: the raw pane shows
            the fields read.
    """

    DEFAULT_CSS = """
    InspectorScreen #inspector-details { height: auto; padding: 0 1; }
    InspectorScreen #inspector-raw { height: 1fr; }
    """

    STATUS = "#inspector-status"

    BINDINGS = [
        back_key("inspector-back", "the traces", "app.pop_screen"),
        Binding("i", "app.pop_screen", "Back", id="inspector-close", show=False,
                tooltip="Back to the traces"),
        Binding("r", "toggle_raw", "Raw JSON", id="inspector-raw",
                tooltip="Switch between the trial's fields and its raw record (pretty JSON)"),
    ]

    def __init__(self, trial: Trial, row: int | None = None) -> None:
        super().__init__()
        self.trial = trial
        self.row = row

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="inspector-fields", id="inspector-tabs"):
            with TabPane("Trial", id="inspector-fields"), VerticalScroll(id="inspector-scroll"):
                yield Static(details_text(self.trial), id="inspector-details")
            with TabPane("Raw JSON", id="inspector-json"):
                yield Static(Text("reading the record…", style="dim"), id="inspector-status")
                yield TextArea("", read_only=True, show_line_numbers=True, soft_wrap=True, id="inspector-raw")
        yield KeyFooter()

    def on_mount(self) -> None:
        t = self.trial
        self.sub_title = visible(f"inspector · {t.run} · {t.task} · trial {t.trial}")
        self.query_one("#inspector-scroll").focus()
        self.read_raw()

    @work(thread=True, exclusive=True, exit_on_error=False, group="inspector",
          description="Reading the raw record")
    def read_raw(self) -> None:
        log = self.flake_app.trial_log
        if self.row is None or log is None:
            t = self.trial
            obj: Any = {"run": t.run, "task": t.task, "trial": t.trial, "score": t.score, "error": t.error,
                        "metrics": t.metrics, **t.extra, "trace": t.trace}
        else:
            obj = raw_record(log, self.row)
        text = pretty(obj)
        if len(text) > MAX_RAW_CHARS:
            text = text[:MAX_RAW_CHARS] + f"\n… ({len(text) - MAX_RAW_CHARS:,} more characters not shown)"
        self.post_message(RawRead(visible(text, multiline=True)))

    @on(RawRead)
    def raw_read(self, event: RawRead) -> None:
        self.query_one("#inspector-status", Static).display = False
        self.query_one("#inspector-raw", TextArea).load_text(event.text)

    def action_toggle_raw(self) -> None:
        """Show the raw record, or the fields again."""
        tabs = self.query_one(TabbedContent)
        tabs.active = "inspector-json" if tabs.active == "inspector-fields" else "inspector-fields"
        if tabs.active == "inspector-json":
            self.query_one("#inspector-raw").focus()
        else:
            self.query_one("#inspector-scroll").focus()
