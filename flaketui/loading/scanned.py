"""The C scanner's Python side: its settings, its outputs as named arrays, the columns kept.

:class:`flaketui._linescan.Scanner` (C, ``_linescan.c``) validates each line of a block as
one JSON object, reads the values of the trial's keys and judges the line by the rule of
:meth:`RecordSink.add <flaketui.loading.records.RecordSink.add>` where it is sure of it: a
line it takes has its trial's values in a row of a :class:`Part`; any other line is
*deferred* to the per-line parser (:meth:`LineParser.feed
<flaketui.loading.jsonl.LineParser.feed>`), which keeps its trial or names its problem. So
the C only has to agree with the rule on the lines it takes: the tests check every line of
hostile, mutated and generated logs against the per-line parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from flaketui.model import ERRORED, FAIL, PASS

try:
    from flaketui import _linescan
except ImportError:  # not compiled (setup.py builds it where a C compiler is): the per-line parser alone
    _linescan = None
if _linescan is not None and "defer" not in getattr(_linescan, "ROLES", ()):
    _linescan = None  # built before the role "defer": it would take lines the rule reads otherwise

if _linescan is not None:
    Status = _linescan.Status
    """A scanned line's status (the C's enum): ``OK`` taken; ``DEFER`` deferred to the per-line
    parser; ``GIL`` to scan again with the GIL (:meth:`Scanner.number` does); ``BAD``
    deferred and certainly not JSON."""
else:
    from enum import IntEnum

    Status = IntEnum("Status", [("OK", 0), ("DEFER", 1), ("GIL", 2), ("BAD", 3)])  # type: ignore[misc]

ROWS = 16384
"""Lines scanned into one part at most (a block with more takes several)."""

METRIC_COLUMNS = 16
"""Distinct metric names the scanner keeps columns for; a line with more is deferred."""


def available() -> bool:
    """Whether the C scanner was compiled."""
    return _linescan is not None


@dataclass
class Columns:
    """One part's lines, numbered: ``keep`` says which lines the columns hold (the rest are
    deferred); the columns hold the kept lines only."""

    keep: np.ndarray
    ids: np.ndarray
    """Each kept line's run, task and group as ids in :attr:`Scanner.tables` (columns 0, 1, 2, as
    in :attr:`Outputs.sids`; a group -1 for none)."""
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    has_trace: np.ndarray
    metrics: dict[str, np.ndarray]


class Outputs:
    """A C part's fields as numpy arrays over its buffer (made once per part; they keep it)."""

    starts: np.ndarray
    ends: np.ndarray
    status: np.ndarray
    utf8: np.ndarray
    """Whether each line is valid UTF-8 (one that is not is deferred)."""
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    trace: np.ndarray
    sids: np.ndarray
    """Each line's run, task and group ids (columns 0, 1, 2; -1: none)."""
    mvals: np.ndarray

    def __init__(self, part: Any) -> None:
        self.part = part
        rows = part.rows
        for name, (offset, fmt, cols) in part.layout.items():
            shape = (rows, cols) if cols else (rows,)
            array = np.frombuffer(part, dtype=np.dtype(fmt), count=rows * max(cols, 1), offset=offset)
            setattr(self, name, array.reshape(shape))


class Part(NamedTuple):
    """Lines scanned into one part."""

    out: Outputs
    n: int
    alone: np.ndarray
    """Lines that are not UTF-8: left to the per-line parser."""


class Scanner:
    """Scans blocks of lines for one field map; keeps the names and metric names across blocks."""

    def __init__(self, keys: list[str], roles: dict[str, tuple[int, ...]], threshold: float,
                 default_run: str, rows: int = ROWS) -> None:
        """``keys``: the JSON names read; ``roles``: each role's positions among them (``run``,
        ``task``, ``trial``, ``passed``, ``score``, ``group``, ``trace``, ``error``,
        ``metrics``, and ``defer``: keys whose lines it leaves to the rule), first first;
        ``rows``: lines a part holds."""
        assert _linescan is not None
        self.c = _linescan.Scanner(tuple(k.encode() for k in keys), dict(roles), float(threshold),
                                   (PASS, FAIL, ERRORED), rows=rows, columns=METRIC_COLUMNS)
        run, task, group = self.c.tables
        self.tables = {"run": run, "task": task, "group": group}
        """Each role's names, numbered in the order the scanner met them."""
        self.irregular = dict.fromkeys(self.tables, False)
        """Whether a role's ids may not be in the order of first use by the trials kept (a name
        numbered for a line later deferred, or numbered here after the scan): then
        :func:`renumber` puts them in order."""
        self.metric_names: dict[str, int] = self.c.metric_names
        self.default_run = default_run
        self._free: list[Outputs] = []

    @staticmethod
    def takes(keys: list[str]) -> bool:
        """Whether the scanner can match these keys as the bytes of a line spell them: no
        quote, backslash or control character (those are escaped in JSON), at most 64."""
        return (_linescan is not None and 0 < len(keys) <= _linescan.MAX_KEYS
                and not any(ch in '"\\' or ch < " " for k in keys for ch in k))

    @staticmethod
    def rows_for(nbytes: int) -> int:
        """Lines a part holds for a range of ``nbytes`` bytes: no more than it can have lines
        of 60 bytes (a small file, or a few lines appended under ``--watch``, is not given
        megabytes; a range of shorter lines takes more parts)."""
        return int(min(ROWS, max(64, nbytes // 60)))

    def scan(self, buf: Any, stop: int, limit: int) -> list[Part]:
        """Scan and judge the lines of ``buf[:stop]`` (``stop`` just past a newline) that start
        before ``limit``, a part per set of outputs filled. Safe to call from several threads
        at once: the C scan runs without the GIL and touches only its own part."""
        parts = []
        pos = 0
        scan = self.c.scan
        while pos < stop and pos < limit:
            out = self._free.pop() if self._free else None
            part = scan(buf, pos, stop, limit, None if out is None else out.part)
            if out is None:
                out = Outputs(part)
            n = part.n
            # lines that are not UTF-8 (deferred by the scan, their names not numbered)
            alone = np.zeros(n, dtype=bool) if part.ascii else out.utf8[:n] == 0
            parts.append(Part(out, n, alone))
            pos = int(out.ends[n - 1]) + 1
        return parts

    def number(self, buf: Any, part: Part) -> Columns:
        """Number the names of the part's lines (in line order: the reading thread, one part
        after another; lines the scan left for the GIL are scanned again first) and give the
        columns of the lines taken."""
        out, n = part.out, part.n
        if self.c.number(buf, out.part):
            # a name that is not UTF-8 deferred its line: its other names may stay numbered
            self.irregular = dict.fromkeys(self.tables, True)
        keep = out.status[:n] == Status.OK
        every = bool(keep.all())
        take: Any = slice(0, n) if every else np.flatnonzero(keep)

        def kept(column: np.ndarray) -> np.ndarray:
            """The kept lines' values, in an array of their own (the part is filled again)."""
            return np.array(column[take], copy=True)

        ids = kept(out.sids)
        run = ids[:, 0]
        without = run < 0
        if without.any():
            run[without] = self.add("run", self.default_run)
        metrics: dict[str, np.ndarray] = {}
        for name, j in self.metric_names.items():  # NaN where a line has none
            column = kept(out.mvals[:, j])
            if not np.isnan(column).all():
                metrics[name] = column
        return Columns(keep=keep, ids=ids, trial=kept(out.trial), outcome=kept(out.outcome),
                       score=kept(out.score), has_trace=kept(out.trace), metrics=metrics)

    def release(self, out: Outputs) -> None:
        """``out`` may be filled again."""
        self._free.append(out)

    def add(self, role: str, name: str) -> int:
        """The id of ``name`` among the role's names, numbered here (not by the scan)."""
        table = self.tables[role]
        before = len(table)
        got = table.add(name)
        if got == before and before:  # numbered after names the scan met: maybe out of order
            self.irregular[role] = True
        return got


def renumber(ids: np.ndarray, names: list[str]) -> tuple[list[str], np.ndarray]:
    """``names`` and ``ids`` (-1: none) renumbered in the order of first use in ``ids``,
    names no id uses left out."""
    rows = np.flatnonzero(ids >= 0)
    first = np.full(len(names), len(ids), dtype=np.int64)
    np.minimum.at(first, ids[rows], rows)
    used = np.flatnonzero(first < len(ids))
    order = used[np.argsort(first[used], kind="stable")]
    new = np.full(len(names) + 1, -1, dtype=np.int32)  # the last entry: -1 stays -1
    new[order] = np.arange(len(order), dtype=np.int32)
    return [names[i] for i in order.tolist()], new[ids]
