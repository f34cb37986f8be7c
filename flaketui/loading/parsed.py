"""What reading a log file, or a piece of one, gives: :class:`Parsed`, and :class:`Merger`,
which joins pieces into one. Every log format returns a :class:`Parsed`; the index cache
keeps one; the loader and ``--watch`` merge them into a :class:`~flaketui.model.TrialLog`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from operator import eq

import numpy as np

from flaketui.loading.records import RecordSink
from flaketui.model import PARSED_COLUMNS, FieldMap, Problem

COLUMNS = tuple(PARSED_COLUMNS)
"""The per-trial columns of :class:`Parsed` (:data:`~flaketui.model.PARSED_COLUMNS`), in the
order the index cache stores them."""
NAMED = tuple(name for name, col in PARSED_COLUMNS.items() if col.names)
"""The columns that index a name table (``run``, ``task``, ``group``)."""


@dataclass
class Parsed:
    """The trials read from one file (or one piece of it), one array entry per trial.

    ``run``, ``task`` and ``group`` index this piece's own name tables ``runs``,
    ``tasks`` and ``groups`` (``group`` is -1 for none); ``outcome``, ``score``,
    ``trial`` (-1 where the log gave none), ``offset``, ``length``, ``line`` and
    ``has_trace`` are as in :class:`~flaketui.model.TrialLog`. ``metrics`` maps each
    metric's name to a float column, NaN where a trial has none. ``problems`` are the
    records and file-level faults that gave no trial.
    """

    runs: list[str]
    tasks: list[str]
    groups: list[str]
    run: np.ndarray
    task: np.ndarray
    group: np.ndarray
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    line: np.ndarray
    has_trace: np.ndarray
    metrics: dict[str, np.ndarray]
    problems: list[Problem]

    def __len__(self) -> int:
        return int(self.run.shape[0])

    def take(self, which: np.ndarray) -> Parsed:
        """The trials ``which`` selects (a boolean mask or row indices), every column of
        :data:`COLUMNS` and every metric taken alike; name tables and problems kept (as
        :meth:`~flaketui.model.TrialLog.take` does for the loaded table)."""
        return replace(self, metrics={k: v[which] for k, v in self.metrics.items()},
                       **{name: getattr(self, name)[which] for name in COLUMNS})

    @classmethod
    def from_sink(cls, sink: RecordSink, problems: list[Problem]) -> Parsed:
        """The columns a :class:`RecordSink` collected, copied out of its arrays."""
        columns = {}
        for name in COLUMNS:
            col = getattr(sink, name)
            columns[name] = (np.frombuffer(col, dtype=col.typecode).copy() if len(col)
                             else np.empty(0, dtype=col.typecode))
        return cls(
            runs=list(sink.runs),
            tasks=list(sink.tasks),
            groups=list(sink.groups),
            metrics={k: np.frombuffer(v, dtype="d").copy() for k, v in sink.metrics.items()},
            problems=problems,
            **columns,
        )

    @classmethod
    def empty(cls, problems: list[Problem]) -> Parsed:
        """No trials, only ``problems`` (a file that is empty, damaged or unreadable)."""
        return cls.from_sink(RecordSink(FieldMap(), ""), problems)


def intern(tables: list[list[str]]) -> tuple[list[str], list[np.ndarray]]:
    """Merge name tables (each a piece's own: distinct names): the names numbered in the
    order first seen across the tables, and for each table its names' merged numbers.

    Vectorised over the names' hashes (a dict lookup per name was a third of a
    many-task load): names whose hashes are all distinct are all distinct, so each table's
    numbers are its own moved on by the names before it; equal hashes are checked name by
    name (a collision of unequal names falls back to a dict).
    """
    sizes = [len(t) for t in tables]
    if sum(1 for n in sizes if n) <= 1:  # one table with names: nothing to merge
        names = next((t for t in tables if t), [])
        return list(names), [np.arange(n, dtype=np.int32) for n in sizes]
    every = list(chain.from_iterable(tables))
    hashes = np.fromiter(map(hash, every), dtype=np.int64, count=len(every))
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    starts = np.cumsum([0, *sizes])
    if first.size == len(every):  # all distinct
        return every, [np.arange(a, b, dtype=np.int32) for a, b in zip(starts, starts[1:], strict=False)]
    home = first[inverse.ravel()]  # where each name's hash was first seen
    again = np.flatnonzero(home != np.arange(len(every)))
    if not all(map(eq, map(every.__getitem__, again.tolist()),
                   map(every.__getitem__, home[again].tolist()))):
        return _intern_by_dict(tables)
    kept = np.sort(first)  # first seen, first numbered
    number = np.empty(len(every), dtype=np.int32)
    number[kept] = np.arange(kept.size, dtype=np.int32)
    merged = number[home]
    return (list(map(every.__getitem__, kept.tolist())),
            [merged[a:b] for a, b in zip(starts, starts[1:], strict=False)])


def _intern_by_dict(tables: list[list[str]]) -> tuple[list[str], list[np.ndarray]]:
    """:func:`intern` with a dict (one lookup per name)."""
    index: dict[str, int] = {}
    ids = [np.array([index.setdefault(n, len(index)) for n in t], dtype=np.int32) for t in tables]
    return list(index), ids


class Merger:
    """Joins :class:`Parsed` pieces into one: the name tables are merged (first seen,
    first numbered, :func:`intern`), each piece's ids are mapped onto them and the columns
    concatenated in the order the pieces were added. :attr:`lengths` keeps each piece's
    trial count."""

    def __init__(self) -> None:
        self.pieces: list[Parsed] = []
        self.problems: list[Problem] = []

    @property
    def lengths(self) -> list[int]:
        """The number of trials of each piece added, in order."""
        return [len(p) for p in self.pieces]

    def add(self, piece: Parsed, line_base: int = 0) -> None:
        """Add ``piece``, its line numbers (and its problems') moved on by ``line_base``."""
        line = piece.line + line_base if line_base else piece.line
        self.pieces.append(replace(piece, line=line) if line_base else piece)
        for p in piece.problems:
            self.problems.append(p if p.line is None or not line_base else replace(p, line=p.line + line_base))

    def _ids(self, key: str) -> tuple[list[str], list[np.ndarray]]:
        """The merged names of column ``key`` and each piece's ids mapped onto them."""
        if len(self.pieces) == 1:  # one piece: its names and ids as they are
            piece = self.pieces[0]
            return list(getattr(piece, key + "s")), [getattr(piece, key).astype(np.int32, copy=False)]
        names, maps = intern([getattr(p, key + "s") for p in self.pieces])
        ids = []
        for piece, mapping in zip(self.pieces, maps, strict=True):
            col = getattr(piece, key).astype(np.int32, copy=False)
            if key == "group":
                ids.append(np.where(col >= 0, mapping[np.maximum(col, 0)] if mapping.size else -1, -1)
                           .astype(np.int32, copy=False))
            else:
                ids.append(mapping[col] if len(piece) else col)
        return names, ids

    def parsed(self) -> Parsed:
        """The pieces added so far as one :class:`Parsed` (a single piece's columns as they are)."""
        pieces = self.pieces
        tables: dict[str, list[str]] = {}
        ids: dict[str, list[np.ndarray]] = {}
        for key in NAMED:
            tables[key], ids[key] = self._ids(key)
        if len(pieces) == 1:
            columns = {name: ids[name][0] if name in ids else getattr(pieces[0], name) for name in COLUMNS}
        elif pieces:
            columns = {name: np.concatenate(ids[name] if name in ids else [getattr(p, name) for p in pieces])
                       for name in COLUMNS}
        else:
            empty = Parsed.empty([])
            columns = {name: getattr(empty, name) for name in COLUMNS}
        metric_names = sorted({k for p in pieces for k in p.metrics})
        metrics = {  # one piece's columns as they are
            name: pieces[0].metrics[name] if len(pieces) == 1 else
            np.concatenate([p.metrics.get(name, np.full(len(p), np.nan)) for p in pieces])
            for name in metric_names
        }
        return Parsed(runs=tables["run"], tasks=tables["task"], groups=tables["group"],
                      metrics=metrics, problems=list(self.problems), **columns)
