"""The batch parser's C path: the scanner's settings, its outputs, and the columns kept.

:func:`~flaketui._linescan.scan_block` (C, ``_linescan.c``) validates each line of a block
as one JSON object, describes the top-level values of the typed struct's keys
(:meth:`FastDecoder.typed <flaketui.loading.fastpath.FastDecoder.typed>`: their kind,
number and string, the metrics object as columns) and applies the rules of
:func:`~flaketui.loading.fastpath.typed_adder` as :class:`Scanner` states them
(:attr:`Scanner.rules`: the kinds each key's type takes, each role's keys, the threshold):

- a key whose kind the typed struct does not take (a task that is a float, a trace that is
  a string, ...) makes msgspec decline the whole line: the line is *deferred*;
- each role takes the first of its fields that is neither absent nor null;
- what ``typed_adder`` declines (an empty task, a trial below 0, ``passed`` of 2, no
  outcome) is deferred too.

A deferred line is read by the per-line parser (:meth:`LineParser.feed
<flaketui.loading.jsonl.LineParser.feed>`), which keeps its trial or names its problem,
so the C path only has to agree with msgspec on the lines it keeps: the tests check every
line of hostile and generated logs against the per-line parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from flaketui.loading.jsonl import is_utf8
from flaketui.loading.pages import populated
from flaketui.model import ERRORED, FAIL, PASS

try:
    from flaketui import _linescan
except ImportError:  # not compiled (setup.py builds it where a C compiler is): msgspec alone
    _linescan = None

ABSENT, NULL, FALSE, TRUE, INT, FLOAT, STRING, ARRAY, OBJECT, OTHER = range(10)
"""The kinds of value ``scan_block`` tells apart (``OTHER``: an integer past 18 digits)."""

TAKEN, DEFERRED, AGAIN, BAD = range(4)
"""A scanned line's status: taken; deferred (to the per-line parser); to scan again with
the GIL (:meth:`Scanner.number` does); deferred and certainly not JSON."""

ROWS = 16384
"""Lines scanned into one set of outputs at most (a block with more takes several)."""

METRIC_COLUMNS = 16
"""Distinct metric names the scanner keeps columns for; a line with more is deferred."""

_ALLOWED: dict[str, tuple[int, ...]] = {
    "run": (STRING,), "group": (STRING,), "task": (STRING, INT), "trial": (INT,),
    "passed": (FALSE, TRUE, INT), "score": (INT, FLOAT), "trace": (ARRAY,),
    "metrics": (OBJECT,),
    "error": (FALSE, TRUE, INT, FLOAT, STRING, ARRAY, OBJECT),
}
"""The kinds each role's fields may have besides absent and null, as the typed struct's
field types take them (``error`` is ``Any``; an integer past 18 digits is left to msgspec)."""

_ROLES = ("run", "task", "trial", "passed", "score", "group", "trace", "error")
"""The roles in the order ``scan_block``'s rules take their keys."""


def available() -> bool:
    """Whether the C scanner was compiled."""
    return _linescan is not None


@dataclass
class Columns:
    """One block's lines, scanned: ``keep`` says which lines the columns hold (the rest are
    deferred); the columns hold the kept lines only, names as ids in :attr:`Scanner.tables`
    (a group -1 for none)."""

    keep: np.ndarray
    run: np.ndarray
    task: np.ndarray
    group: np.ndarray
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    has_trace: np.ndarray
    metrics: dict[str, np.ndarray]


@dataclass
class Part:
    """Lines scanned into one set of outputs."""

    out: Outputs
    n: int
    alone: np.ndarray
    """Lines that are not UTF-8: left to the per-line parser."""


class Outputs:
    """One set of the buffers ``scan_block`` fills, for ``rows`` lines."""

    def __init__(self, keys: int, rows: int) -> None:
        self.starts = populated(rows, np.int64)
        self.ends = populated(rows, np.int64)
        self.status = populated(rows, np.uint8)
        self.kinds = populated((rows, keys), np.uint8)
        self.ints = populated((rows, keys), np.int64)
        self.floats = populated((rows, keys), np.float64)
        self.soffs = populated((rows, keys), np.int64)
        self.sids = populated((rows, keys), np.int32)
        self.hashes = populated((rows, keys), np.int64)
        """A numbered name's hash, found by the scan (-1: none, or the line before's name)."""
        self.mvals = populated((rows, METRIC_COLUMNS), np.float64)
        # the typed tier's verdict on a line taken
        self.trial = populated(rows, np.int64)
        self.outcome = populated(rows, np.int8)
        self.score = populated(rows, np.float64)
        self.trace = populated(rows, np.int8)
        self.at = populated((rows, 3), np.int8)
        """The keys a line's run, task and group are read from (-1: none)."""
        self.buffers = (self.starts, self.ends, self.status, self.kinds, self.ints, self.floats, self.soffs,
                        self.sids, self.hashes, self.mvals, self.trial, self.outcome, self.score, self.trace, self.at)


class Scanner:
    """Scans blocks of lines for one typed struct; keeps the metric names across blocks."""

    def __init__(self, keys: list[str], roles: dict[str, tuple[int, ...]], threshold: float,
                 default_run: str) -> None:
        """``keys``: the typed struct's JSON names in order; ``roles``: each role's positions
        among them (``run``, ``task``, ..., ``trace``, ``error``, ``metrics``)."""
        assert _linescan is not None
        self.keys = tuple(k.encode() for k in keys)
        self.tables = {role: _linescan.Names() for role in ("run", "task", "group")}
        """Each role's names, numbered in the order the scanner met them."""
        self.irregular = dict.fromkeys(self.tables, False)
        """Whether a role's ids may not be in the order of first use by the trials kept (a name
        numbered for a line later deferred, or numbered here after the scan): then
        :func:`renumber` puts them in order."""
        by_key: dict[int, Any] = {i: self.tables[role] for role in self.tables for i in roles[role]}
        self.by_key = tuple(by_key.get(i) for i in range(len(keys)))
        self.metrics_at = roles["metrics"][0] if roles["metrics"] else -1
        self.default_run = default_run
        self.metric_names: dict[str, int] = {}
        self._free: list[Outputs] = []
        self.rows = ROWS
        """Lines an output set holds (fewer for a small range: see :meth:`size_for`)."""
        allowed = [(1 << (OTHER + 1)) - 1] * len(keys)
        for role, where in roles.items():
            for i in where:
                allowed[i] = sum(1 << kind for kind in (ABSENT, NULL, *_ALLOWED[role]))
        self.rules = (tuple(allowed), *(tuple(roles.get(role, ())) for role in _ROLES), float(threshold),
                      PASS, FAIL, ERRORED)
        """The typed tier's rules as ``scan_block`` applies them (``judge_line`` in the C):
        per key a bit for each kind its role's type takes (absent and null always), each
        role's keys, the score that passes and the outcomes' codes."""

    @staticmethod
    def takes(keys: list[str]) -> bool:
        """Whether the scanner can match these keys as the bytes of a line spell them: no
        quote, backslash or control character (those are escaped in JSON), at most 64."""
        return (_linescan is not None and 0 < len(keys) <= _linescan.MAX_KEYS
                and not any(ch in '"\\' or ch < " " for k in keys for ch in k))

    def scan(self, buf: Any, stop: int, limit: int) -> list[Part]:
        """Scan and judge the lines of ``buf[:stop]`` (``stop`` just past a newline) that start
        before ``limit``, a part per set of outputs filled. Safe to call from several threads
        at once: the C scan runs without the GIL and touches only its own outputs."""
        assert _linescan is not None
        parts = []
        pos = 0
        while pos < stop and pos < limit:
            out = self._free.pop() if self._free else Outputs(len(self.keys), self.rows)
            n, is_ascii = _linescan.scan_block(buf, pos, stop, limit, self.keys, self.by_key, self.metrics_at,
                                               self.metric_names, out.buffers, self.rules)
            alone = np.zeros(n, dtype=bool)  # lines left to the per-line parser
            if not is_ascii:
                alone = _not_utf8(buf, out.starts[:n], out.ends[:n])
                out.status[:n][alone] = DEFERRED  # their names are not numbered
            parts.append(Part(out, n, alone))
            pos = int(out.ends[n - 1]) + 1
        return parts

    def number(self, buf: Any, part: Part) -> Columns:
        """Number the names of the part's lines (in line order: the reading thread, one part
        after another; lines the scan left for the GIL are scanned again first) and give the
        columns of the lines taken."""
        assert _linescan is not None
        out, n = part.out, part.n
        if _linescan.number_block(buf, n, self.keys, self.by_key, self.metrics_at, self.metric_names,
                                  out.buffers, self.rules):
            # a name that is not UTF-8 deferred its line: its other names may stay numbered
            self.irregular = dict.fromkeys(self.tables, True)
        keep = out.status[:n] == TAKEN
        every = bool(keep.all())
        take = None if every else np.flatnonzero(keep)

        def kept(column: np.ndarray, dtype: Any = None) -> np.ndarray:
            """The kept lines' values, in an array of their own (``out`` is filled again)."""
            return np.array(column[:n] if every else column[take], dtype=dtype, copy=True)

        at = kept(out.at)
        rows: Any = slice(0, n) if every else take

        def pick(array: np.ndarray, role: int) -> np.ndarray:
            """Each kept line's value of ``array`` at the key its ``role`` is read from (-1
            where it has none): a column when every line reads the same key."""
            where = at[:, role]
            key = int(where[0]) if len(where) else -1
            if key >= 0 and bool((where == key).all()):
                return np.array(array[rows, key], copy=True)
            if not (where >= 0).any():  # no line has one (no group in the log)
                return np.full(len(where), -1, dtype=np.int64).astype(array.dtype)
            where = where.astype(np.intp)
            got = array[rows][np.arange(len(where)), np.maximum(where, 0)]
            return np.where(where >= 0, got, -1).astype(array.dtype)

        task, run = pick(out.sids, 1), pick(out.sids, 0)
        task_int = pick(out.kinds, 1) == INT
        if task_int.any():  # a task id that is a number: its text
            values = pick(out.ints, 1)
            for r in np.flatnonzero(task_int).tolist():
                task[r] = self.add("task", str(int(values[r])))
        without = at[:, 0] < 0
        if without.any():
            run[without] = self.add("run", self.default_run)
        metrics: dict[str, np.ndarray] = {}
        for name, j in self.metric_names.items():  # NaN where a line has none
            column = kept(out.mvals[:, j])
            if not np.isnan(column).all():
                metrics[name] = column
        return Columns(keep=keep, run=run, task=task, group=pick(out.sids, 2), trial=kept(out.trial),
                       outcome=kept(out.outcome), score=kept(out.score), has_trace=kept(out.trace),
                       metrics=metrics)

    def size_for(self, nbytes: int) -> None:
        """Output sets for a range of ``nbytes`` bytes: no more rows than it can have lines of
        60 bytes (a small file, or a few lines appended under ``--watch``, is not given
        megabytes; a range of shorter lines takes more sets)."""
        self.rows = int(min(ROWS, max(64, nbytes // 60)))

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


def _not_utf8(buf: Any, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which lines ``buf[starts:ends]`` are not valid UTF-8 (a newline ends any multi-byte
    character, so the span of them all is valid when each line is)."""
    view = memoryview(buf)
    try:
        try:
            str(view[int(starts[0]): int(ends[-1])], "utf-8")
            return np.zeros(len(starts), dtype=bool)
        except UnicodeDecodeError:
            return np.array([not is_utf8(view[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)],
                            dtype=bool)
    finally:
        view.release()


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
