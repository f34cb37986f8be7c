"""Export the task table as shown (filtered, sorted) to CSV or Markdown, and the prompt
that asks for the file name (``ctrl+s`` on the task table)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from flaketui.output.columns import TASK_COLUMNS
from flaketui.sanitize import csv_cell, visible
from flaketui.stats import TaskStats
from flaketui.triage import atomic_write

EXPORT_KEYS = ("task", "n", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k", "flakiness", "class", "group")
"""Columns written, from :data:`flaketui.output.columns.TASK_COLUMNS` (group only when the
run has groups)."""

TEXT_KEYS = {"task", "class", "group"}
"""Columns of text from the log (written through :func:`flaketui.sanitize.csv_cell`)."""


def export_keys(st: TaskStats) -> list[str]:
    """The keys written for ``st``: :data:`EXPORT_KEYS`, less group when there is none."""
    has_groups = any(g is not None for g in st.groups)
    return [k for k in EXPORT_KEYS if k != "group" or has_groups]


def table_csv(st: TaskStats, rows: Sequence[int]) -> str:
    """The data ``rows`` of ``st`` (in this order) as CSV, one column per CSV name."""
    keys = export_keys(st)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header: list[str] = []
    columns: list[list[object]] = []
    for key in keys:
        spec = TASK_COLUMNS[key]
        header += list(spec.csv_names)
        for cells in spec.csv_cells(spec.json(st)):
            columns.append([csv_cell(c or "") if key in TEXT_KEYS else c for c in cells])
    writer.writerow(header)
    for i in rows:
        writer.writerow([col[i] for col in columns])
    return out.getvalue()


def md_cell(text: str) -> str:
    """A Markdown table cell: visible characters, pipes and markup characters escaped."""
    out = visible(text)
    for ch in "\\|*_`[]<>":
        out = out.replace(ch, "\\" + ch)
    return out


def table_markdown(st: TaskStats, rows: Sequence[int]) -> str:
    """The data ``rows`` of ``st`` (in this order) as a Markdown table under a title."""
    specs = [TASK_COLUMNS[k] for k in export_keys(st)]
    lines = [f"# {md_cell(st.run)} (k = {st.k})", "",
             "| " + " | ".join(s.header(st.k) for s in specs) + " |",
             "|" + "---|" * len(specs)]
    lines += ["| " + " | ".join(md_cell(s.text(st, i)) for s in specs) + " |" for i in rows]
    return "\n".join(lines) + "\n"


def write_export(path: Path, st: TaskStats, rows: Sequence[int]) -> Path:
    """Write the table to ``path`` (Markdown for ``.md``, else CSV) with the atomic writer: never
    through a symlink, never a half-written file (:func:`flaketui.triage.atomic_write`).

    Returns the absolute path written. Raises OSError when it cannot be written.
    """
    text = table_markdown(st, rows) if path.suffix.lower() in (".md", ".markdown") else table_csv(st, rows)
    atomic_write(path, text.encode("utf-8"))
    return path.resolve()


def default_name(run: str) -> str:
    """``flaketui-RUN.csv`` in the current folder (the run name made safe for a file name)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run).strip("._") or "run"
    return f"flaketui-{safe[:60]}.csv"


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
