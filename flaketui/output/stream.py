"""``report``'s per-task rows written in chunks: memory stays flat however many tasks a run has.

A million-task run printed as one Rich table took minutes and gigabytes. Here the
rows are cut into chunks of :data:`CHUNK` tasks; each chunk's cells are computed a column at
a time (:mod:`flaketui.output.cells`), the cells after a row's name once per distinct
combination, and the chunk is written before the next is made. Three writers:

- :func:`table_chunks`: the terminal table as Rich draws it (``report_table``), character for
  character when piped (the widths come from each column's distinct values: :func:`table_layout`);
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
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from flaketui.model import natural_ranks
from flaketui.output.cells import cell_codes, cell_texts, cell_width, csv_codes, csv_columns, cut_names, widest
from flaketui.output.columns import TaskColumn
from flaketui.output.distinct import Coded
from flaketui.sanitize import markdown_text
from flaketui.stats.estimators import Interval
from flaketui.stats.scores import ScoreStats
from flaketui.stats.suite import TaskStats

CHUNK = 8192
"""Tasks per chunk: big enough that per-column work is vectorised, small enough to stay flat."""

TASK_MAX_WIDTH = 40
"""The task column's widest (longer names are cut with …), as in ``report_table``."""

ELLIPSIS = "…"


def chunk_stats(st: TaskStats, rows: np.ndarray, objects: dict[str, np.ndarray] | None = None) -> TaskStats:
    """The statistics of the tasks ``rows`` of ``st`` (in that order): every per-task array
    and list picked, the rest kept (``objects``: the lists as numpy object arrays, to pick
    from at C speed; see :func:`chunks`)."""
    n = len(st)
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(st):
        value = getattr(st, f.name)
        if isinstance(value, np.ndarray) and value.shape[:1] == (n,):
            changes[f.name] = value[rows]
        elif isinstance(value, Interval):
            changes[f.name] = Interval(np.asarray(value.low)[rows], np.asarray(value.high)[rows])
        elif isinstance(value, ScoreStats):
            changes[f.name] = value.take(rows)
        elif isinstance(value, list) and len(value) == n:
            held = objects.get(f.name) if objects is not None else None
            changes[f.name] = held[rows].tolist() if held is not None else list(map(value.__getitem__, rows.tolist()))
    return dataclasses.replace(st, **changes)


def chunks(st: TaskStats, order: np.ndarray | Sequence[int]) -> Iterator[TaskStats]:
    """``st`` cut into consecutive pieces of :data:`CHUNK` tasks, following ``order``."""
    rows = np.asarray(order, dtype=np.int64)
    objects: dict[str, np.ndarray] = {}
    if rows.size > CHUNK:  # many pieces: pick the names and labels from object arrays
        for f in dataclasses.fields(st):
            value = getattr(st, f.name)
            if isinstance(value, list) and len(value) == len(st):
                objects[f.name] = np.empty(len(value), dtype=object)
                objects[f.name][:] = value
    for start in range(0, rows.size, CHUNK):
        yield chunk_stats(st, rows[start:start + CHUNK], objects)


# --- order --------------------------------------------------------------------


def flakiest_order(st: TaskStats, name_rank: np.ndarray | None = None) -> np.ndarray:
    """Task indices most dangerous first: flakiness descending, then p̂ ascending (so among
    equally flaky tasks the one failing more comes first, and stable-fail before stable-pass),
    then natural task order (``task-2`` before ``task-10``); tasks without a trial last. Every
    key ties only on equal names, so the order is the same on every run (a stable sort).

    The one tie-break rule of task tables: the CLI's report, and the app's task table
    (sorted by any column, ties in this order). ``name_rank``: the tasks'
    :func:`~flaketui.model.natural_ranks`, when the caller has them already.

    When trials are few (:meth:`~flaketui.stats.suite.TaskStats.few_trials`: most tasks have fewer
    than a clean task needs to be called stable), the empirical-Bayes P(flaky) comes first: with
    few trials p̂ alone cannot tell a stable task's bad luck from flakiness, and the suite's prior
    weighs it; the keys above then break its ties."""
    flak = np.nan_to_num(np.asarray(st.flakiness, dtype=np.float64), nan=-1.0)
    phat = np.nan_to_num(np.asarray(st.p_hat, dtype=np.float64), nan=2.0)
    names = natural_ranks(st.tasks) if name_rank is None else name_rank
    if st.few_trials():
        chance = np.nan_to_num(np.asarray(st.p_flaky, dtype=np.float64), nan=-1.0)
        return np.lexsort((names, phat, -flak, -chance))
    return np.lexsort((names, phat, -flak))


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


def columns_env() -> int | None:
    """The width the user gave in ``COLUMNS`` (a positive number), else None."""
    try:
        given = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return given if given > 0 else None


def table_layout(st: TaskStats, columns: Sequence[TaskColumn], headers: Sequence[str],
                 min_widths: Sequence[int], rows: np.ndarray | None = None,
                 max_total: int | None = None) -> TableLayout:
    """The widths Rich gives ``report_table``'s columns over the tasks ``rows`` (default:
    every task): each column as wide as its widest cell or header, at least its minimum; the
    task column at most :data:`TASK_MAX_WIDTH`, or what ``COLUMNS`` leaves it when that
    is more (piped too: ``COLUMNS=300`` shows long names whole), and narrower (down to its
    minimum) when the table would pass ``max_total`` cells (a terminal). The widest cells
    come from each column's distinct texts (:func:`~flaketui.output.cells.widest`)."""
    widths = [max(cell_width(h), m) for h, m in zip(headers, min_widths, strict=True)]
    keys = [c.key for c in columns]
    task = keys.index("task")
    sub = st if rows is None or len(rows) == len(st) else chunk_stats(st, np.asarray(rows, dtype=np.int64))
    widths = [max(w, widest(col, sub)) for w, col in zip(widths, columns, strict=True)]
    longest_name = max(map(len, sub.tasks), default=0)
    floor = min(12, longest_name) if len(sub) else 4
    cap = TASK_MAX_WIDTH
    given = columns_env()
    if given is not None:  # COLUMNS wider than the table needs: the names may take the room
        cap = max(cap, given - (sum(widths) - widths[task]) - 3 * (len(widths) - 1))
    widths[task] = max(min(widths[task], cap), floor)
    if max_total is not None:
        over = sum(widths) + 3 * (len(widths) - 1) - max_total
        if over > 0:
            widths[task] = max(floor, widths[task] - over)
    right = [c.key in RIGHT_ALIGNED for c in columns]
    return TableLayout(list(headers), widths, right, task)


RIGHT_ALIGNED = frozenset({"n", "passes", "errored", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k",
                           "pass_hat_k_ci", "flakiness", "trajectory_consistency", "excluded",
                           "mean_score", "mean_score_ci", "score_sd", "p_flaky", "eb_flakiness", "to_decide"})
"""The figures' columns: right-aligned, as numbers are."""


def table_chunks(st: TaskStats, columns: Sequence[TaskColumn], layout: TableLayout,
                 order: np.ndarray | Sequence[int]) -> Iterator[str]:
    """The table's header, then its rows in ``order``, :data:`CHUNK` rows per string."""
    yield layout.header_lines()

    def cell(j: int, text: str) -> str:
        padded = pad(text, layout.widths[j], layout.right[j])
        return layout.styled.get(j, {}).get(padded, padded)

    for piece in chunks(st, order):
        names = _fit_all(cell_texts(columns[layout.task], piece), layout.widths[layout.task])
        yield from _rows(piece, columns, layout.task, names, cell, " │ ", "{} │ {}\n")


def _rows(piece: TaskStats, columns: Sequence[TaskColumn], name: int, names: list[str],
          cell: Callable[[int, str], str], sep: str, row: str) -> Iterator[str]:
    """The rows of a chunk: ``row`` filled with the name's cell and the other cells joined by
    ``sep`` (``cell(j, text)`` draws column ``j``'s text). The name's column comes first; the
    other cells of a row are made once per distinct combination (most tasks share theirs)."""
    if name != 0:  # not the usual layout: each row made cell by cell
        cells = [names if j == name else [cell(j, t) for t in cell_texts(col, piece)]
                 for j, col in enumerate(columns)]
        yield "".join(row.format(r[0], sep.join(r[1:])) for r in zip(*cells, strict=True))
        return
    coded = [cell_codes(col, piece) for col in columns[1:]]
    which, first = _combinations(coded, len(piece))
    drawn = [[cell(j, t) for t in c.texts] for j, c in enumerate(coded, 1)]
    # each distinct rest of a row drawn once with the template's text around it (and the next
    # row's start): the chunk is then its names and those texts, joined in one call
    head, mid, end = row.split("{}")
    tails = [mid + sep.join(d[c.codes[i]] for d, c in zip(drawn, coded, strict=True)) + end + head
             for i in first]
    text = head + "".join(itertools.chain.from_iterable(zip(names, map(tails.__getitem__, which), strict=True)))
    yield text[: len(text) - len(head)] if head else text


def _combinations(coded: Sequence[Coded], n: int) -> tuple[list[int], list[int]]:
    """The distinct combinations of ``coded``'s cells over ``n`` tasks: each task's
    combination, and one task of each."""
    _, inv = np.unique(_combination(coded, n), return_inverse=True)
    inv = inv.ravel()
    first = np.empty(int(inv.max()) + 1 if n else 0, dtype=np.int64)
    first[inv[::-1]] = np.arange(n)[::-1]  # the first task of each
    return inv.tolist(), first.tolist()


def _combination(coded: Sequence[Coded], n: int) -> np.ndarray:
    """One int per task that is equal exactly where all of ``coded``'s codes are equal."""
    key = np.zeros(n, dtype=np.int64)
    size = 1
    for c in coded:
        key = key * len(c.texts) + c.codes
        size *= len(c.texts)
        if size > 1 << 40:  # keep the combined key small: renumber the combinations seen
            _, key = np.unique(key, return_inverse=True)
            key, size = key.ravel(), int(key.max()) + 1
    return key


def _fit_all(texts: list[str], width: int) -> list[str]:
    """Each name padded to ``width`` cells, those too long cut in the middle keeping what
    tells them apart (:func:`~flaketui.output.cells.cut_names`: ``blind-maze-ex…ithm.easy``
    and ``…ithm.hard``, not ``blind-maze-explorer-algorit…`` twice); one call for a chunk of
    short ASCII names (the common case)."""
    if max(map(len, texts), default=0) <= width and "".join(texts).isascii():
        return list(map(str.ljust, texts, itertools.repeat(width)))
    return [pad(t, width, False) for t in cut_names(texts, width)]


# --- CSV and Markdown -------------------------------------------------------------


def csv_chunks(st: TaskStats, k: int, run_cell: str, columns: Sequence[TaskColumn]) -> Iterator[str]:
    """The CSV rows of one run (``run_cell``, ``k``, then each column's cells), in task order,
    :data:`CHUNK` rows per string. The task name comes first; the cells after it are written
    once per distinct combination (by the ``csv`` module, which quotes what needs it)."""
    prefix = _csv_line([run_cell, k, ""])[:-1]  # "run,k,"
    if columns[0].key != "task":  # not the usual layout: every row through the writer
        for piece in chunks(st, np.arange(len(st))):
            cells = [cells for col in columns for cells in csv_columns(col, piece)]
            yield "".join(prefix + _csv_line(row) for row in zip(*cells, strict=True))
        return
    for piece in chunks(st, np.arange(len(st))):
        (names,) = csv_columns(columns[0], piece)
        if "," in "".join(names) or '"' in "".join(names):  # some need quotes: the writer adds them
            names = _csv_line_each([(n, "") for n in names])
        else:
            names = [n + "," for n in names]
        coded = [c for col in columns[1:] for c in csv_codes(col, piece)]
        which, first = _combinations(coded, len(piece))
        tails = _csv_line_each([[c.texts[c.codes[i]] for c in coded] for i in first])
        yield "".join(map((prefix + "{}{}\n").format, names, map(tails.__getitem__, which)))


def _csv_line(row: Sequence[Any]) -> str:
    """One row as the ``csv`` module writes it (with its newline)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(row)
    return out.getvalue()


def _csv_line_each(rows: Sequence[Sequence[Any]]) -> list[str]:
    """Each row as the ``csv`` module writes it, without the newline (no cell holds one: log
    text is made visible first)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().split("\n")[:-1]


def markdown_rows(st: TaskStats, columns: Sequence[TaskColumn], order: np.ndarray | Sequence[int]) -> Iterator[str]:
    """The Markdown table rows of one run in ``order`` (``| a | b |``, ``|`` in cells escaped),
    :data:`CHUNK` rows per string."""
    name = [c.key for c in columns].index("task")
    for piece in chunks(st, order):
        names = [markdown_text(t) for t in cell_texts(columns[name], piece)]
        # text columns hold log strings (Markdown-escaped); the others, flaketui's own figures
        logged = [not c.descending for c in columns]
        yield from _rows(piece, columns, name, names,
                         lambda j, t: markdown_text(t) if logged[j] else _md_cell(t), " | ", "| {} | {} |\n")


def _md_cell(text: str) -> str:
    """A cell of flaketui's own figures (already visible) with ``|`` escaped for a Markdown table."""
    return text.replace("|", "\\|") if "|" in text else text
