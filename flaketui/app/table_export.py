"""The task table as shown (filtered, sorted) in CSV or Markdown, and written to a file
(``ctrl+s`` on the task table; the prompt for the file name is
:class:`flaketui.app.screens.export.ExportPrompt`). A module of its own, not a screen's: the
task table writes the file the prompt names, and no screen imports another."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from flaketui.output.columns import TASK_COLUMNS
from flaketui.safefile import atomic_write
from flaketui.sanitize import csv_cell, markdown_text
from flaketui.stats import TaskStats
from flaketui.triage import TriageKey, TriageStore

EXPORT_KEYS = ("task", "n", "passes", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k", "flakiness",
               "class", "group")
"""Columns written, from :data:`flaketui.output.columns.TASK_COLUMNS` (group only when the
run has groups), after the run's name and before each task's triage label and note."""

TEXT_KEYS = {"task", "class", "group"}
"""Columns of text from the log (written through :func:`flaketui.sanitize.csv_cell`)."""

NOTE_KEYS = ("label", "note")
"""The triage columns written after :data:`EXPORT_KEYS`: each task's cause label and note in
the run (empty when it has none)."""

def triage_cells(st: TaskStats, rows: Sequence[int], notes: TriageStore | None) -> list[tuple[str, str]]:
    """(label, note) of each of ``rows`` in ``st``'s run, as the log's text (empty: none)."""
    out = []
    for i in rows:
        entry = notes.get(TriageKey(st.run, st.tasks[i])) if notes is not None else None
        out.append(("", "") if entry is None else (entry.label or "", entry.note or ""))
    return out


def export_keys(st: TaskStats) -> list[str]:
    """The keys written for ``st``: :data:`EXPORT_KEYS`, less group when there is none."""
    has_groups = any(g is not None for g in st.groups)
    return [k for k in EXPORT_KEYS if k != "group" or has_groups]


def table_csv(st: TaskStats, rows: Sequence[int], notes: TriageStore | None = None) -> str:
    """The data ``rows`` of ``st`` (in this order) as CSV: the run, one column per CSV name,
    then each task's triage label and note from ``notes`` (None: no labels or notes)."""
    keys = export_keys(st)
    rows = list(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header: list[str] = ["run"]
    columns: list[list[object]] = []
    for key in keys:
        spec = TASK_COLUMNS[key]
        header += list(spec.csv_names)
        for cells in spec.csv_cells(spec.json(st)):
            columns.append([csv_cell(c or "") if key in TEXT_KEYS else c for c in cells])
    writer.writerow([*header, *NOTE_KEYS])
    run = csv_cell(st.run)
    for i, (label, note) in zip(rows, triage_cells(st, rows, notes), strict=True):
        writer.writerow([run, *(col[i] for col in columns), csv_cell(label), csv_cell(note)])
    return out.getvalue()


def md_cell(text: str) -> str:
    """A Markdown table cell: visible characters, pipes and markup characters escaped."""
    return markdown_text(text)


def table_markdown(st: TaskStats, rows: Sequence[int], notes: TriageStore | None = None) -> str:
    """The data ``rows`` of ``st`` (in this order) as a Markdown table under a title: the run,
    the columns, then each task's triage label and note (``notes``; None: none)."""
    specs = [TASK_COLUMNS[k] for k in export_keys(st)]
    rows = list(rows)
    run = md_cell(st.run)
    lines = [f"# {run} (k = {st.k})", "",
             "| run | " + " | ".join(s.header(st.k) for s in specs) + " | " + " | ".join(NOTE_KEYS) + " |",
             "|" + "---|" * (len(specs) + 1 + len(NOTE_KEYS))]
    lines += ["| " + " | ".join([run, *(md_cell(s.text(st, i)) for s in specs), md_cell(label),
                                 md_cell(note.replace("\n", " "))]) + " |"
              for i, (label, note) in zip(rows, triage_cells(st, rows, notes), strict=True)]
    return "\n".join(lines) + "\n"


def write_export(path: Path, st: TaskStats, rows: Sequence[int],
                 notes: TriageStore | None = None) -> Path:
    """Write the table to ``path`` (Markdown for ``.md``, else CSV) with the atomic writer: never
    through a symlink, never a half-written file (:func:`flaketui.safefile.atomic_write`). The
    triage labels and notes come from ``notes`` (None: none).

    Returns the absolute path written. Raises OSError when it cannot be written.
    """
    markdown = path.suffix.lower() in (".md", ".markdown")
    text = table_markdown(st, rows, notes) if markdown else table_csv(st, rows, notes)
    atomic_write(path, text.encode("utf-8"))
    return path.resolve()


def default_name(run: str) -> str:
    """``flaketui-RUN.csv`` in the current folder (the run name made safe for a file name)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run).strip("._") or "run"
    return f"flaketui-{safe[:60]}.csv"
