"""``report``'s per-task rows written in chunks: memory stays flat however many tasks a run has.

A million-task run printed as one Rich table took minutes and gigabytes (issue 15). Here the
rows are cut into chunks of :data:`CHUNK` tasks; each chunk's cells are computed a column at
a time (:func:`~flaketui.output.cells.cell_texts`) and written before the next
is made. Three writers:

- :func:`table_chunks`: the terminal table as Rich draws it (``report_table``), character for
  character when piped (the widths come from one vectorised pass over the columns);
- :func:`csv_chunks` and :func:`markdown_rows`: the CSV and Markdown rows, byte for byte as the
  whole-document writers made them.

Every task name goes through :func:`~flaketui.sanitize.visible` (via the columns) and is
written as text, never parsed as markup.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from flaketui.model import natural_ranks
from flaketui.output.cells import cell_texts, cell_width, csv_columns, widest
from flaketui.output.columns import TaskColumn
from flaketui.stats.estimators import Interval
from flaketui.stats.suite import TaskStats

CHUNK = 8192
"""Tasks per chunk: big enough that per-column work is vectorised, small enough to stay flat."""

TASK_MAX_WIDTH = 40
"""The task column's widest (longer names are cut with …), as in ``report_table``."""

ELLIPSIS = "…"


def chunk_stats(st: TaskStats, rows: np.ndarray) -> TaskStats:
    """The statistics of the tasks ``rows`` of ``st`` (in that order): every per-task array
    and list picked, the rest kept."""
    picked = rows.tolist()
    n = len(st)
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(st):
        value = getattr(st, f.name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (n,):
            changes[f.name] = value[rows]
        elif isinstance(value, Interval):
            changes[f.name] = Interval(np.asarray(value.low)[rows], np.asarray(value.high)[rows])
        elif isinstance(value, list) and len(value) == n:
            changes[f.name] = list(map(value.__getitem__, picked))
    return dataclasses.replace(st, **changes)


def chunks(st: TaskStats, order: np.ndarray | Sequence[int]) -> Iterator[TaskStats]:
    """``st`` cut into consecutive pieces of :data:`CHUNK` tasks, following ``order``."""
    rows = np.asarray(order, dtype=np.int64)
    size = CHUNK
    for start in range(0, rows.size, size):
        yield chunk_stats(st, rows[start:start + size])


# --- order --------------------------------------------------------------------


NAMES_STEP = 1 << 16
"""Names turned into numpy strings at a time by :func:`fast_natural_ranks` (bounded memory)."""


def fast_natural_ranks(names: Sequence[str]) -> np.ndarray:
    """:func:`flaketui.model.natural_ranks`, vectorised for the common shape of task ids: ASCII
    names whose only digits are at the end (``task-000123``, ``q17``, ``checkout``). Each then
    sorts by (the text before the digits, the number), which is :func:`~flaketui.model.natural_key`
    order (equal keys, e.g. ``a01`` and ``a1``, keep their order); other names fall back to it.
    A million ids in about 0.6 s instead of 2.5 s."""
    joined = "".join(names)
    if not len(names) or not joined.isascii() or "\x00" in joined:  # numpy strings drop NULs
        return natural_ranks(list(names))
    del joined
    number = np.full(len(names), -1, dtype=np.int64)  # no digits: first (a shorter natural key)
    stems: list[np.ndarray] = []
    for start in range(0, len(names), NAMES_STEP):
        part = names[start:start + NAMES_STEP]
        arr = np.fromiter(part, dtype=f"U{max(map(len, part)) or 1}", count=len(part))
        stem = np.strings.rstrip(arr, "0123456789")
        cut = np.strings.str_len(stem)
        has = cut < np.strings.str_len(arr)
        if (np.strings.str_len(arr) - cut).max() > 18 or any(
                (np.strings.find(stem, d) >= 0).any() for d in "0123456789"):
            return natural_ranks(list(names))  # a number inside, or too long for an int64
        if has.any():
            number[start:start + len(part)][has] = np.strings.slice(arr[has], cut[has], None).astype(np.int64)
        stems.append(stem)
    if all((st == stems[0][0]).all() for st in stems):
        order = np.argsort(number, kind="stable")  # one stem (``task-``): by number
    else:
        _, stem_rank = np.unique(np.concatenate(stems), return_inverse=True)
        order = np.lexsort((number, stem_rank.ravel()))
    ranks = np.empty(len(names), dtype=np.int64)
    ranks[order] = np.arange(len(names))
    return ranks


def flakiest_order(st: TaskStats) -> np.ndarray:
    """Task indices most dangerous first: flakiness descending, then p̂ ascending (so among
    equally flaky tasks the one failing more comes first, and stable-fail before stable-pass),
    then natural task order (``task-2`` before ``task-10``); tasks without a trial last. Every
    key ties only on equal names, so the order is the same on every run (a stable sort)."""
    flak = np.nan_to_num(np.asarray(st.flakiness, dtype=np.float64), nan=-1.0)
    phat = np.nan_to_num(np.asarray(st.p_hat, dtype=np.float64), nan=2.0)
    return np.lexsort((fast_natural_ranks(st.tasks), phat, -flak))


# --- the terminal table --------------------------------------------------------


@dataclass(frozen=True)
class TableLayout:
    """How the streamed table draws: each column's header, width and side, and the styles
    of a terminal (none when piped)."""

    headers: list[str]
    widths: list[int]
    right: list[bool]
    task: int
    """Which column holds the task name (cut with … when too long)."""
    styled: dict[int, dict[str, str]] = dataclasses.field(default_factory=dict)
    """Per column, a cell's text (padded) → the same drawn with its colour (terminal only)."""
    bold: tuple[str, str] = ("", "")
    """Escape codes around the header line (terminal only)."""

    def header_lines(self) -> str:
        cells = [pad(h, w, r) for h, w, r in zip(self.headers, self.widths, self.right, strict=True)]
        head = self.bold[0] + " ┃ ".join(cells) + self.bold[1]
        return head + "\n" + "━╇━".join("━" * w for w in self.widths) + "\n"


def pad(text: str, width: int, right: bool) -> str:
    """``text`` padded with spaces to ``width`` terminal cells, on the left when ``right``."""
    gap = " " * (width - cell_width(text))
    return gap + text if right else text + gap


def _fit(text: str, width: int) -> str:
    """A cell of exactly ``width`` cells, left-aligned, cut with … as Rich cuts it."""
    if text.isascii():
        return text.ljust(width) if len(text) <= width else text[:width - 1] + ELLIPSIS
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return pad(text, width, False)
    return set_cell_size(text, width - 1) + ELLIPSIS


def table_layout(st: TaskStats, columns: Sequence[TaskColumn], headers: Sequence[str],
                 min_widths: Sequence[int], rows: np.ndarray | None = None,
                 max_total: int | None = None) -> TableLayout:
    """The widths Rich gives ``report_table``'s columns over the tasks ``rows`` (default:
    every task): each column as wide as its widest cell or header, at least its minimum; the
    task column at most :data:`TASK_MAX_WIDTH`, and narrower (down to its minimum) when the
    table would pass ``max_total`` cells (a terminal). The widest cells come from each
    column's distinct values (:func:`~flaketui.output.cells.widest`), or else a pass over the
    cells a chunk at a time."""
    widths = [max(cell_width(h), m) for h, m in zip(headers, min_widths, strict=True)]
    keys = [c.key for c in columns]
    task = keys.index("task")
    sub = st if rows is None else chunk_stats(st, np.asarray(rows, dtype=np.int64))
    measured = [widest(col, sub) for col in columns]
    for j, width in enumerate(measured):
        widths[j] = max(widths[j], width or 0)
    others = [j for j, width in enumerate(measured) if width is None]
    for piece in chunks(sub, np.arange(len(sub))) if others else ():  # columns known only cell by cell
        for j in others:
            widths[j] = max(widths[j], max(map(cell_width, set(cell_texts(columns[j], piece))), default=0))
    longest_name = max(map(len, sub.tasks), default=0)
    floor = min(12, longest_name) if len(sub) else 4
    widths[task] = max(min(widths[task], TASK_MAX_WIDTH), floor)
    if max_total is not None:
        over = sum(widths) + 3 * (len(widths) - 1) - max_total
        if over > 0:
            widths[task] = max(floor, widths[task] - over)
    right = [c.key in RIGHT_ALIGNED for c in columns]
    return TableLayout(list(headers), widths, right, task)


RIGHT_ALIGNED = frozenset({"n", "passes", "errored", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k",
                           "pass_hat_k_ci", "flakiness"})
"""The figures' columns: right-aligned, as numbers are."""


def table_chunks(st: TaskStats, columns: Sequence[TaskColumn], layout: TableLayout,
                 order: np.ndarray | Sequence[int]) -> Iterator[str]:
    """The table's header, then its rows in ``order``, :data:`CHUNK` rows per string."""
    yield layout.header_lines()
    for piece in chunks(st, order):
        cells = []
        for j, col in enumerate(columns):
            texts = cell_texts(col, piece)
            width, right = layout.widths[j], layout.right[j]
            if j == layout.task:
                texts = [_fit(t, width) for t in texts]
            else:
                padded = {t: pad(t, width, right) for t in set(texts)}  # few distinct cells
                styled = layout.styled.get(j)
                if styled:
                    padded = {t: styled.get(p, p) for t, p in padded.items()}
                texts = list(map(padded.__getitem__, texts))
            cells.append(texts)
        yield "".join(map(_row, zip(*cells, strict=True)))


def _row(cells: tuple[str, ...]) -> str:
    return " │ ".join(cells) + "\n"


# --- CSV and Markdown -------------------------------------------------------------


def csv_chunks(st: TaskStats, k: int, run_cell: str, columns: Sequence[TaskColumn]) -> Iterator[str]:
    """The CSV rows of one run (``run_cell``, ``k``, then each column's cells), in task order,
    :data:`CHUNK` rows per string."""
    for piece in chunks(st, np.arange(len(st))):
        cells = [cells for col in columns for cells in csv_columns(col, piece)]
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerows(zip(itertools.repeat(run_cell), itertools.repeat(k), *cells))
        yield out.getvalue()


def markdown_rows(st: TaskStats, columns: Sequence[TaskColumn], order: np.ndarray | Sequence[int]) -> Iterator[str]:
    """The Markdown table rows of one run in ``order`` (``| a | b |``, ``|`` in cells escaped),
    :data:`CHUNK` rows per string."""
    for piece in chunks(st, order):
        cells = [_md_cells(cell_texts(col, piece)) for col in columns]
        yield "".join(map(_md_row, zip(*cells, strict=True)))


def _md_cells(texts: list[str]) -> list[str]:
    """Cells (already visible) with ``|`` escaped for a Markdown table."""
    if not any("|" in t for t in set(texts)):
        return texts
    return [t.replace("|", "\\|") for t in texts]


def _md_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |\n"
