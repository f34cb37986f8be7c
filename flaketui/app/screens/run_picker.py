"""A modal list of the loaded runs (``r`` on the task table): pick one to show."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from flaketui.sanitize import visible


class RunPicker(ModalScreen[int | None]):
    """Every loaded run, one a line, the shown one highlighted; enter picks, escape closes.

    Dismisses with the index of the picked run (None: closed without picking).
    """

    BINDINGS = [Binding("escape,q", "dismiss_none", "Close", id="close-run-picker")]

    def __init__(self, runs: Sequence[tuple[str, int, int]], current: int) -> None:
        """``runs``: (name, tasks, trials) of each loaded run; ``current``: the one shown."""
        super().__init__()
        self.runs = list(runs)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="run-picker-box", classes="modal-box"):
            yield Static(Text(f"{len(self.runs)} runs loaded: pick one", style="bold"),
                         classes="modal-title")
            options = []
            for i, (name, tasks, trials) in enumerate(self.runs):
                label = Text(visible(name), style="bold" if i == self.current else "")
                label.append(f"  {tasks:,} tasks · {trials:,} trials", style="dim")
                if i == self.current:
                    label.append("  (shown)", style="dim")
                options.append(Option(label, id=str(i)))
            yield OptionList(*options, id="run-list")
            yield Static(Text("enter: show · escape: close", style="dim"))

    def on_mount(self) -> None:
        run_list = self.query_one(OptionList)
        run_list.highlighted = self.current
        run_list.focus()

    @on(OptionList.OptionSelected, "#run-list")
    def picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_dismiss_none(self) -> None:
        """Close without changing the run."""
        self.dismiss(None)
