"""A modal list of the lines skipped while loading, grouped by kind with their counts
(``80 × duplicate trial … kept the first``), each then named as file:line: reason."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from flaketui.model import Problem
from flaketui.sanitize import visible

MAX_SHOWN = 2000
"""Problems listed one by one; the rest are counted."""


class ProblemsScreen(ModalScreen[None]):
    """Every skipped or suspicious line, named by file and line."""

    BINDINGS = [Binding("escape,e,q", "dismiss", "Close", id="close-problems")]

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__()
        self.problems = list(problems)

    def compose(self) -> ComposeResult:
        with Vertical(id="problems-box", classes="modal-box"):
            n = len(self.problems)
            title = f"{n} line(s) skipped while loading" if n else "Nothing was skipped"
            yield Static(Text(title, style="bold"), classes="modal-title")
            from flaketui.loading.loader import problem_kinds

            text = Text()
            room = MAX_SHOWN
            for group in problem_kinds(self.problems):
                label = "note: " if group.notice else ""
                text.append(f"{group.count} × {label}{visible(group.kind)}\n", style="bold")
                for p in group.problems[:room]:
                    text.append("  " + visible(str(p)) + "\n")
                listed = min(len(group.problems), room)
                room -= listed
                if group.count > listed:
                    text.append(f"  … and {group.count - listed} more\n", style="dim")
            with VerticalScroll():
                yield Static(text or Text("Every line of the logs was read.", style="dim"))
            yield Static(Text("escape: close", style="dim"))
