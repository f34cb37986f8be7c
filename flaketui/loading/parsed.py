"""What reading a log file, or a piece of one, gives: :class:`Parsed`, and :class:`Merger`,
which joins pieces into one. Every log format returns a :class:`Parsed`; the index cache
keeps one; the loader and ``--watch`` merge them into a :class:`~flaketui.model.TrialLog`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem

COLUMNS = ("run", "task", "group", "trial", "outcome", "score", "offset", "length", "line",
           "has_trace")
"""The per-trial columns of :class:`Parsed`, in the order the index cache stores them."""


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


class Merger:
    """Joins :class:`Parsed` pieces into one: the name tables are merged (first seen,
    first numbered), each piece's ids are mapped onto them and the columns concatenated
    in the order the pieces were added. :attr:`lengths` keeps each piece's trial count."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.tasks: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        self.pieces: list[Parsed] = []
        self.problems: list[Problem] = []

    @property
    def lengths(self) -> list[int]:
        """The number of trials of each piece added, in order."""
        return [len(p) for p in self.pieces]

    @staticmethod
    def _remap(table: dict[str, int], names: list[str]) -> np.ndarray:
        return np.array([table.setdefault(n, len(table)) for n in names], dtype=np.int32)

    def add(self, piece: Parsed, line_base: int = 0) -> None:
        """Add ``piece``, its line numbers (and its problems') moved on by ``line_base``."""
        count = len(piece)
        ids: dict[str, np.ndarray] = {}
        for key, names, table in (("run", piece.runs, self.runs), ("task", piece.tasks, self.tasks),
                                  ("group", piece.groups, self.groups)):
            col: np.ndarray = getattr(piece, key)
            if not table:  # the first piece with names: its ids are the merged ids
                table.update(zip(names, range(len(names)), strict=True))
                ids[key] = col.astype(np.int32, copy=False)
                continue
            mapping = self._remap(table, names)
            idx = col.astype(np.int32)
            if key == "group":
                ids[key] = np.where(idx >= 0, mapping[np.maximum(idx, 0)] if mapping.size else -1, -1)
            else:
                ids[key] = mapping[idx] if count else idx
        line = piece.line + line_base if line_base else piece.line
        self.pieces.append(replace(piece, line=line, **ids))
        for p in piece.problems:
            self.problems.append(p if p.line is None or not line_base else replace(p, line=p.line + line_base))

    def parsed(self) -> Parsed:
        """The pieces added so far as one :class:`Parsed` (a single piece's columns as they are)."""
        pieces = self.pieces
        if len(pieces) == 1:
            columns = {name: getattr(pieces[0], name) for name in COLUMNS}
        elif pieces:
            columns = {name: np.concatenate([getattr(p, name) for p in pieces]) for name in COLUMNS}
        else:
            empty = Parsed.empty([])
            columns = {name: getattr(empty, name) for name in COLUMNS}
        metric_names = sorted({k for p in pieces for k in p.metrics})
        metrics = {
            name: np.concatenate([p.metrics.get(name, np.full(len(p), np.nan)) for p in pieces])
            for name in metric_names
        }
        return Parsed(runs=list(self.runs), tasks=list(self.tasks), groups=list(self.groups),
                      metrics=metrics, problems=list(self.problems), **columns)
