"""The prompt that asks for the file to export the task table to (``ctrl+s`` on the task
table; what is written: :mod:`flaketui.app.table_export`)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportPrompt(ModalScreen[str | None]):
    """Asks for the file to write (``.md``: Markdown, else CSV); dismisses with the name
    typed (None: cancelled)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="cancel-export")]

    def __init__(self, default: str, rows: int) -> None:
        super().__init__()
        self.default = default
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box", classes="modal-box"):
            yield Static(Text(f"Export the {self.rows:,} task(s) shown", style="bold"),
                         classes="modal-title")
            yield Input(value=self.default, id="export-path")
            yield Static(Text("enter: write (.md for Markdown, else CSV) · escape: cancel",
                              style="dim"))

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#export-path")
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        """Close without writing."""
        self.dismiss(None)
