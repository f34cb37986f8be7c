"""The typed tier's rules on whole columns of scanned lines: the batch parser's C path.

:func:`~flaketui._linescan.scan_block` (C, ``_linescan.c``) validates each line
of a block as one JSON object and describes the top-level values of the typed struct's
keys (:meth:`FastDecoder.typed <flaketui.loading.fastpath.FastDecoder.typed>`): their
kind, number and string, and the metrics object as columns. :class:`Scanner` turns that
into the columns :class:`~flaketui.loading.batch._Batch` keeps, by the rules of
:func:`~flaketui.loading.fastpath.typed_adder`, with numpy:

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

_TRACE_SHORT = 64
"""``_trace_stand_in`` calls a list empty only below this many bytes (see fastpath)."""


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
    """Lines scanned into one set of outputs, judged unless some wait for the GIL."""

    out: Outputs
    n: int
    alone: np.ndarray
    """Lines that are not UTF-8: left to the per-line parser."""
    judged: Judged | None


@dataclass
class Judged:
    """:meth:`Scanner.judge`'s verdict on a part's lines: all but the names. Arrays are of
    the kept lines (``take``: their places among the part's; ``None``: every line)."""

    keep: np.ndarray
    take: np.ndarray | None
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    has_trace: np.ndarray
    metrics: dict[str, np.ndarray]
    at: dict[str, Any]
    """Per role, the key its name is read from: a position, or one per kept line."""
    has: dict[str, np.ndarray]
    """Whether a kept line has a run, a group."""
    task_ints: tuple[np.ndarray, np.ndarray]
    """The kept lines whose task id is a number, and the numbers."""


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
        self.mvals = populated((rows, METRIC_COLUMNS), np.float64)
        self.buffers = (self.starts, self.ends, self.status, self.kinds, self.ints, self.floats, self.soffs,
                        self.sids, self.mvals)


class Scanner:
    """Scans blocks of lines for one typed struct; keeps the metric names across blocks."""

    def __init__(self, keys: list[str], roles: dict[str, tuple[int, ...]], threshold: float,
                 default_run: str) -> None:
        """``keys``: the typed struct's JSON names in order; ``roles``: each role's positions
        among them (``run``, ``task``, ..., ``trace``, ``error``, ``metrics``)."""
        assert _linescan is not None
        self.keys = tuple(k.encode() for k in keys)
        self.roles = roles
        self.tables = {role: _linescan.Names() for role in ("run", "task", "group")}
        """Each role's names, numbered in the order the scanner met them."""
        self.irregular = dict.fromkeys(self.tables, False)
        """Whether a role's ids may not be in the order of first use by the trials kept (a name
        numbered for a line later deferred, or numbered here after the scan): then
        :func:`renumber` puts them in order."""
        by_key: dict[int, Any] = {i: self.tables[role] for role in self.tables for i in roles[role]}
        self.by_key = tuple(by_key.get(i) for i in range(len(keys)))
        self.metrics_at = roles["metrics"][0] if roles["metrics"] else -1
        self.threshold = threshold
        self.default_run = default_run
        self.metric_names: dict[str, int] = {}
        self._free: list[Outputs] = []
        self.rows = ROWS
        """Lines an output set holds (fewer for a small range: see :meth:`size_for`)."""
        self.allowed = np.full(len(keys), (1 << (OTHER + 1)) - 1, dtype=np.uint16)
        """Per key, a bit for each kind its role's type takes (absent and null always)."""
        for role, where in roles.items():
            for i in where:
                self.allowed[i] = sum(1 << kind for kind in (ABSENT, NULL, *_ALLOWED[role]))
        self.truthy = np.zeros(256, dtype=bool)
        """The kinds an ``error`` of which is truthy when its value is (strings apart)."""
        self.truthy[[TRUE, INT, FLOAT, ARRAY, OBJECT]] = True

    @staticmethod
    def takes(keys: list[str]) -> bool:
        """Whether the scanner can match these keys as the bytes of a line spell them: no
        quote, backslash or control character (those are escaped in JSON), at most 64."""
        return (_linescan is not None and 0 < len(keys) <= _linescan.MAX_KEYS
                and not any(ch in '"\\' or ch < " " for k in keys for ch in k))

    def scan(self, buf: Any, stop: int, limit: int) -> list[Part]:
        """Scan and judge the lines of ``buf[:stop]`` (``stop`` just past a newline) that start
        before ``limit``, a part per set of outputs filled. Safe to call from several threads
        at once: the C scan runs without the GIL, and judging reads the scanner's state only."""
        assert _linescan is not None
        parts = []
        pos = 0
        while pos < stop and pos < limit:
            out = self._free.pop() if self._free else Outputs(len(self.keys), self.rows)
            n, is_ascii = _linescan.scan_block(buf, pos, stop, limit, self.keys, self.by_key, self.metrics_at,
                                               self.metric_names, out.buffers)
            alone = np.zeros(n, dtype=bool)  # lines left to the per-line parser
            if not is_ascii:
                alone = _not_utf8(buf, out.starts[:n], out.ends[:n])
            rescan = bool((out.status[:n] == AGAIN).any())  # judged again once number_block has scanned them
            parts.append(Part(out, n, alone, None if rescan else self.judge(out, n, alone)))
            pos = int(out.ends[n - 1]) + 1
        return parts

    def number(self, buf: Any, part: Part) -> Columns:
        """Number the names of the part's lines and give their columns (in line order: the
        reading thread, one part after another). Lines the scan left for the GIL are
        scanned again first."""
        assert _linescan is not None
        out, n = part.out, part.n
        changed = _linescan.number_block(buf, n, self.keys, self.by_key, self.metrics_at, self.metric_names,
                                         out.buffers)
        if changed:  # a name that is not UTF-8 deferred its line: its other names may stay
            self.irregular = dict.fromkeys(self.tables, True)
        judged = part.judged if part.judged is not None and not changed else self.judge(out, n, part.alone)
        return self.name(out, n, judged)

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

    def judge(self, out: Outputs, n: int, alone: np.ndarray) -> Judged:
        """The typed tier's rules on the first ``n`` lines of ``out``, but those ``alone``
        marks (left to the per-line parser, as every line this defers): everything but the
        names. Safe in a scanning thread: it reads the scanner's state only."""
        kinds, ints, floats, roles = out.kinds[:n], out.ints[:n], out.floats[:n], self.roles
        # a kind the typed struct does not take, in any key: msgspec declines the line
        ok = (out.status[:n] == TAKEN) & ~alone & ((self.allowed >> kinds) & 1).astype(bool).all(axis=1)

        def first(role: str) -> tuple[Any, np.ndarray]:
            """Where each line's first non-null field of ``role`` is (a key's position, or one
            per line), and whether a line has one."""
            where = roles[role]
            if not where:
                return -1, np.zeros(n, dtype=bool)
            present = kinds[:, where] > NULL
            if len(where) == 1 or not present[:, 1:].any():  # only the first field is there
                return where[0], present[:, 0]
            return np.asarray(where)[present.argmax(axis=1)], present.any(axis=1)

        def value(array: np.ndarray, at: Any) -> np.ndarray:
            if isinstance(at, int):
                return array[:, at] if at >= 0 else np.zeros(n, dtype=array.dtype)
            return array[np.arange(n), at]

        task_at, has_task = first("task")
        task_kind = value(kinds, task_at)
        ok &= has_task & ~((task_kind == STRING) & (value(ints, task_at) == 0))  # an empty task
        run_at, has_run = first("run")
        ok &= ~(has_run & (value(ints, run_at) == 0))  # an empty run (a string's length is in ints)
        group_at, has_group = first("group")
        ok &= ~(has_group & (value(ints, group_at) == 0))
        trial_at, has_trial = first("trial")
        trial = np.where(has_trial, value(ints, trial_at), -1)
        ok &= ~has_trial | (trial >= 0)
        passed_at, has_passed = first("passed")
        passed_kind, passed_int = value(kinds, passed_at), value(ints, passed_at)
        is_int = passed_kind == INT
        ok &= ~(is_int & (passed_int != 0) & (passed_int != 1))
        passed = (passed_kind == TRUE) | (is_int & (passed_int == 1))
        score_at, has_score = first("score")
        score = np.where(has_score, value(floats, score_at), np.nan)
        trace_at, has_trace = first("trace")  # a full list: the first non-null trace field decides
        trace = has_trace & ((value(ints, trace_at) >= _TRACE_SHORT) | (value(floats, trace_at) != 0))

        errored = np.zeros(n, dtype=bool)
        for i in roles["error"]:  # is_error: truthy (a string's length is in ints, an item in floats)
            kind = kinds[:, i]
            errored |= np.where(kind == STRING, ints[:, i] > 0,
                                self.truthy[kind] & ((kind == TRUE) | (floats[:, i] != 0)))
        ok &= has_passed | has_score | errored  # no outcome: the general rules name it
        good = np.where(has_passed, passed, score >= self.threshold)
        outcome = np.where(errored, ERRORED, np.where(good, PASS, FAIL)).astype(np.int8)

        take = np.flatnonzero(ok)
        every = len(take) == n

        def kept(column: np.ndarray, dtype: Any = None) -> np.ndarray:
            """The kept lines' values, in an array of their own (``out`` is filled again)."""
            return np.array(column if every else column[take], dtype=dtype, copy=True)

        metrics: dict[str, np.ndarray] = {}
        for name, j in list(self.metric_names.items()):  # NaN where a line has none
            column = kept(out.mvals[:n, j])
            if not np.isnan(column).all():
                metrics[name] = column
        task_ints = (task_kind == INT)[take]
        return Judged(
            keep=ok, take=None if every else take, trial=kept(trial), outcome=kept(outcome), score=kept(score),
            has_trace=kept(trace, np.int8), metrics=metrics,
            at={"run": run_at if isinstance(run_at, int) else kept(run_at),
                "task": task_at if isinstance(task_at, int) else kept(task_at),
                "group": group_at if isinstance(group_at, int) else kept(group_at)},
            has={"run": kept(has_run), "group": kept(has_group)},
            task_ints=(np.flatnonzero(task_ints), kept(value(ints, task_at))[task_ints]))

    def name(self, out: Outputs, n: int, judged: Judged) -> Columns:
        """The columns of the lines ``judged`` keeps, with their names' ids (the lines numbered:
        in line order, in the reading thread)."""
        if judged.take is not None and (judged.keep != (out.status[:n] == TAKEN)).any():
            self.irregular = dict.fromkeys(self.tables, True)  # names numbered for lines deferred here
        sids = out.sids[:n] if judged.take is None else out.sids[judged.take]

        def ids(role: str) -> np.ndarray:
            at = judged.at[role]
            if isinstance(at, int):
                return sids[:, at].copy() if at >= 0 else np.full(len(sids), -1, dtype=np.int32)
            return sids[np.arange(len(sids)), at]

        task = ids("task")
        rows, values = judged.task_ints
        for r, v in zip(rows.tolist(), values.tolist(), strict=True):  # a task id that is a number: its text
            task[r] = self.add("task", str(v))
        run = ids("run")
        without = ~judged.has["run"]
        if without.any():
            run[without] = self.add("run", self.default_run)
        group = np.where(judged.has["group"], ids("group"), -1).astype(np.int32)
        return Columns(keep=judged.keep, run=run, task=task, group=group, trial=judged.trial,
                       outcome=judged.outcome, score=judged.score, has_trace=judged.has_trace,
                       metrics=judged.metrics)


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
