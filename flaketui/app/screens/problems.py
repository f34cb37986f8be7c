"""A modal list of the run's warnings and of what loading met: the lines skipped, grouped by
kind with their counts (``80 × duplicate trial … kept the first``), and the notes (a Harbor job's
trial count, merged jobs: nothing skipped), each then named as file:line: reason."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from flaketui.model import Problem
from flaketui.output.report import problems_line
from flaketui.sanitize import visible

MAX_SHOWN = 2000
"""Problems listed one by one; the rest are counted."""


def example_of(group_kind: str, problems: Sequence[Problem]) -> str:
    """A kind's heading: the one reason itself when the kind has one problem named (a kind is the
    reason with its numbers and names taken out, ``the job lists N trials …``: never shown alone)."""
    return problems[0].reason if len(problems) == 1 else group_kind


class ProblemsScreen(ModalScreen[None]):
    """The run's warnings, then every skipped or suspicious line, named by file and line."""

    BINDINGS = [Binding("escape,e,q", "dismiss", "Close", id="close-problems")]

    def __init__(self, problems: Sequence[Problem], warnings: Sequence[str] = ()) -> None:
        super().__init__()
        self.problems = list(problems)
        self.warnings = list(warnings)

    def compose(self) -> ComposeResult:
        with Vertical(id="problems-box", classes="modal-box"):
            line = problems_line(self.problems)
            title = line[:1].upper() + line[1:] if line else "Nothing was skipped"
            if self.warnings:
                title = f"{len(self.warnings)} warning{'s' if len(self.warnings) != 1 else ''}" + \
                    (f"; {line}" if line else "")
            yield Static(Text(title, style="bold"), classes="modal-title")
            from flaketui.loading.loader import problem_kinds

            text = Text()
            for warning in self.warnings:
                text.append("⚠ " + visible(warning) + "\n", style="yellow")
            if self.warnings and self.problems:
                text.append("\n")
            room = MAX_SHOWN
            for group in problem_kinds(self.problems):
                label = "note: " if group.notice else ""
                text.append(f"{group.count} × {label}{visible(example_of(group.kind, group.problems))}\n",
                            style="bold")
                for p in group.problems[:room]:
                    text.append("  " + visible(str(p)) + "\n")
                listed = min(len(group.problems), room)
                room -= listed
                if group.count > listed:
                    text.append(f"  … and {group.count - listed} more\n", style="dim")
            if not self.problems:
                text.append("Every line of the logs was read.", style="dim")
            with VerticalScroll():
                yield Static(text)
            yield Static(Text("escape: close", style="dim"))
