"""The C driver: JSON Lines read a block at a time by the C scanner, the lines it is unsure
of by the per-line parser.

Two engines read JSON Lines, and one rule says what a trial is:

- the per-line parser (:class:`~flaketui.loading.jsonl.LineParser` fed by
  :func:`~flaketui.loading.jsonl.read_range`): each line decoded loosely (the trial fields
  only, traces skipped unbuilt) and judged by :meth:`RecordSink.add
  <flaketui.loading.records.RecordSink.add>`, the one statement of the rule, which names
  every line it refuses;
- the C scanner (``flaketui/_linescan.c``, driven through :mod:`~flaketui.loading.scanned`),
  an accelerator for the lines it is sure of: each line validated as one JSON object, its
  trial fields read and judged without the GIL (about 0.4–0.5 µs of CPU a line against the
  per-line parser's 3.5–5 µs). Every line it is not sure of (a field of another kind, a
  line the rule might refuse, not JSON, not UTF-8, a byte-order mark) is *deferred* to the
  per-line parser, alone, and its trial or problem put back in line order. The
  differential tests (``tests/unit/test_linescan.py``, ``test_scan.py``) hold the two to
  the same trials, name tables, metric columns and problems.

:func:`parse_range` runs the scanner where it is built and takes the field map
(:func:`scans`), else the per-line parser. With the scanner:

- a reader thread reads the blocks (:meth:`_Scan.blocks`) and ``threads`` threads
  (:class:`_Ahead`) scan them, without the GIL;
- the calling thread keeps the blocks in file order: it numbers the names (``Names``, in
  C) and writes the columns once into arrays sized from the first block (:class:`_Column`).
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from flaketui._runtime import gc_paused
from flaketui.loading.jsonl import BLOCK, MAX_NAMED, NOT_JSON, NOT_UTF8, LineParser, Progress, next_newline, read_range
from flaketui.loading.pages import populated, populated_buffer
from flaketui.loading.parsed import NAMED, Parsed
from flaketui.loading.records import RecordSink, marks
from flaketui.loading.scanned import Part, Scanner, Status, available, renumber
from flaketui.model import PARSED_COLUMNS, FieldMap

MIN_TRIAL_BYTES = len(b'{"task":0,"score":0}\n')
"""The fewest bytes a line holding a trial takes."""
GUESS_AHEAD = 64
"""The most trials reserved for, as a multiple of those read, when the guess is made from
fewer than :data:`GUESS_BYTES` bytes."""
GUESS_BYTES = 1 << 20

_ROLES = ("run", "task", "trial", "passed", "score", "group")
"""The roles whose fields the scanner reads, in the order of its keys (then ``error``,
``metrics`` and the trace fields)."""


class Block(NamedTuple):
    """Whole lines in ``buf[:stop]``, ``buf`` at file offset ``base``."""

    buf: Any
    stop: int
    base: int
    nbytes: int
    """Bytes read from the file for this event (for the progress bar)."""


class Scanned(NamedTuple):
    """A :class:`Block` scanned: its parts in place of its ``stop``."""

    parts: list[Part]
    buf: Any
    base: int
    nbytes: int


class Long(NamedTuple):
    """A line longer than a block's buffer, at ``base``: the per-line parser reads it."""

    base: int
    nbytes: int


class Tail(NamedTuple):
    """A last line without a newline, at ``base``: the per-line parser reads it."""

    base: int
    nbytes: int


class End(NamedTuple):
    """The range read."""

    nbytes: int


Event = Block | Scanned | Long | Tail | End


def parse_range(path: str, start: int, end: int, fields: FieldMap, default_run: str,
                first_line: int = 1, progress: Progress | None = None, threads: int = 1) -> tuple[Parsed, int]:
    """Parse the lines of plain JSONL file ``path`` that start in ``[start, end)``, numbered
    from ``first_line``: (what they hold, the number of lines seen).

    The contract of :func:`~flaketui.loading.jsonl.read_range` feeding a
    :class:`~flaketui.loading.jsonl.LineParser` into a :class:`RecordSink` and
    :meth:`Parsed.from_sink` (``start`` starts a line; a last line without a newline
    counts if it ends the file; ``progress`` gets the bytes read). With the C scanner
    (:func:`scans`), ``threads`` threads scan blocks ahead; without it, the per-line parser
    reads the range.
    """
    layout = _layout(fields) if available() else None
    if layout is not None and Scanner.takes(layout[0]):
        scan = _Scan(path, fields, default_run, *layout, rows=Scanner.rows_for(end - start))
        lines = scan.read(start, end, first_line, progress, threads)
        return scan.parsed(), lines
    sink = RecordSink(fields, default_run)
    parser = LineParser(path, sink)
    lines = read_range(path, start, end, parser, first_line=first_line, progress=progress) if end > start else 0
    return Parsed.from_sink(sink, parser.problems), lines


def scans(fields: FieldMap) -> bool:
    """Whether the C scanner reads lines for this field map (it is compiled, and every field
    name is plain and has one role): then one process reads a file, with threads."""
    layout = _layout(fields) if available() else None
    return layout is not None and Scanner.takes(layout[0])


def _layout(fields: FieldMap) -> tuple[list[str], dict[str, tuple[int, ...]]] | None:
    """The keys the scanner looks for and each role's positions among them (``run``, ...,
    ``group``, ``error``, ``metrics``, ``trace``, and ``defer``: the fields only the rule reads,
    :func:`~flaketui.loading.records.marks`); ``None`` when a name is dotted (the rule
    walks nested objects) or has two roles (the scanner reads a key once)."""
    roles = {role: list(dict.fromkeys(getattr(fields, role))) for role in _ROLES}
    roles["error"], roles["metrics"] = ["error"], ["metrics"]
    roles["trace"] = list(dict.fromkeys(fields.trace))
    roles["defer"] = list(marks(fields))  # read by the rule alone: a line that gives one is deferred to it
    keys = [name for names in roles.values() for name in names]
    if len(keys) != len(set(keys)) or any("." in k for k in keys):
        return None
    where: dict[str, tuple[int, ...]] = {}
    at = 0
    for role, names in roles.items():
        where[role] = tuple(range(at, at + len(names)))
        at += len(names)
    return keys, where


class _RowSink(RecordSink):
    """A :class:`RecordSink` that keeps the trials of deferred lines as plain values, to be
    put in line order among a block's scanned trials (see :meth:`_Scan.merge_rows`)."""

    def __init__(self, fields: FieldMap, default_run: str) -> None:
        super().__init__(fields, default_run)
        self.rows: list[tuple[Any, ...]] = []

    def append(self, run: str, task: str, group: str | None, trial: int, outcome: int,
               score: float, offset: int, length: int, line: int, has_trace: bool,
               metrics: dict[str, Any] | None) -> None:
        kept = None
        if metrics:  # as RecordSink.append: finite ints and floats only
            kept = {}
            for k, v in metrics.items():
                if type(v) is float or type(v) is int:
                    with suppress(OverflowError):  # an int past the double range is no metric
                        if math.isfinite(v):
                            kept[k] = float(v)
        self.rows.append((line, run, task, group, trial, outcome, score, offset, length,
                          has_trace, kept))  # as _ROW_FIELDS names them


class _Scan:
    """The state of one :func:`parse_range` with the scanner: name tables and columns."""

    def __init__(self, path: str, fields: FieldMap, default_run: str, keys: list[str],
                 roles: dict[str, tuple[int, ...]], rows: int) -> None:
        self.path = path
        self.sink = _RowSink(fields, default_run)
        self.parser = LineParser(path, self.sink)
        self.scanner = Scanner(keys, roles, fields.threshold, default_run, rows)
        self.fields = fields
        self.default_run = default_run
        self.cols: dict[str, _Column] = {}
        """The trials' columns, written block by block (made with the first trials)."""
        self.metrics: dict[str, _Column] = {}
        """The metric columns, in the order first seen."""
        self.rows = 0
        self.start = self.end = 0
        self.line = 1

    # reading ---------------------------------------------------------------------------

    def read(self, start: int, end: int, first_line: int, progress: Progress | None, threads: int = 1) -> int:
        """Read the lines starting in ``[start, end)`` block by block, as ``read_range`` does;
        with more than one thread, a reader thread reads the blocks and ``threads`` threads
        scan them ahead while this thread keeps them in file order."""
        if end <= start:
            return 0
        self.line = first_line
        self.start, self.end = start, end
        size = min(BLOCK, max(1 << 16, end - start + 1))  # a small range: a small buffer
        ahead = _Ahead(self, threads, size)
        try:
            self.follow(ahead.events(self.blocks(start, end, size, ahead.buffer)), ahead.keep, progress)
        finally:
            ahead.close()
        return self.line - first_line

    def follow(self, events: Iterator[Event], keep: Callable[[Scanned], None], progress: Progress | None) -> None:
        """Take the events in order: a scanned block by ``keep``, a long or last line by the
        per-line reader; then tell ``progress`` the bytes each read."""
        for event in events:
            if isinstance(event, Scanned):
                keep(event)
            elif isinstance(event, Long):
                self.line += read_range(self.path, event.base, event.base + 1, self.parser, first_line=self.line)
                self.flush_rows()
            elif isinstance(event, Tail):
                self.line += read_range(self.path, event.base, self.end, self.parser, first_line=self.line)
                self.flush_rows()
            if progress:
                progress(event.nbytes)

    def blocks(self, start: int, end: int, size: int, fresh: Callable[[], Any]) -> Iterator[Event]:
        """The range's lines as events in file order: :class:`Block`, :class:`Long` (a line
        longer than ``size`` bytes), :class:`Tail`, then :class:`End`. ``fresh()`` gives the
        buffer for the next block: the same one when a block is used up before the next is
        read, else another."""
        buf = fresh()
        view = memoryview(buf)
        filled, base, read = 0, start, 0
        try:
            with open(self.path, "rb", buffering=0) as fh:
                fh.seek(start)
                while True:
                    if filled == size:  # one line fills the buffer: the per-line reader takes it
                        stop = next_newline(fh, base + size)
                        yield Long(base, read + max(0, stop + 1 - base - size))
                        read, base, filled = 0, stop + 1, 0
                        fh.seek(base)
                        if base < end:
                            continue
                        break
                    got = fh.readinto(view[filled:size])
                    if not got:  # a last line without a newline: the per-line reader's rules
                        if filled and base < end:
                            yield Tail(base, read)
                            read = 0
                        break
                    filled += got
                    read += got
                    last = buf.rfind(b"\n", 0, filled)
                    if last < 0:
                        continue
                    consumed = last + 1
                    yield Block(buf, consumed, base, read)
                    read = 0
                    if base + consumed >= end:  # the range ends in this block
                        break
                    rest = filled - consumed
                    nxt = fresh()
                    if nxt is buf:
                        if rest:
                            view[:rest] = view[consumed:filled]
                    else:
                        nxt[:rest] = view[consumed:filled]
                        view.release()
                        buf, view = nxt, memoryview(nxt)
                    base += consumed
                    filled = rest
        finally:
            view.release()
        yield End(read)

    def scanned_rows(self, buf: bytearray, part: Part, base: int) -> None:
        """Keep the lines of ``buf`` (at file offset ``base``) the scanner put in ``part``, the
        next lines of the range."""
        scanner = self.scanner
        line, n, out = self.line, part.n, part.out
        if not self.cols and n:  # the first lines: room for the task names the range may hold
            status = out.status[:n]  # lines that may be taken: blank lines and garbage hold no names
            trials = int(np.count_nonzero((status == Status.OK) | (status == Status.GIL)))
            if trials:
                scanner.tables["task"].reserve(self.expected(trials, int(out.ends[n - 1]) + 1 - int(out.starts[0]))
                                               // 2)
        with gc_paused():  # flaketui._runtime: a block makes thousands of objects that form no cycle
            cols = scanner.number(buf, part)
            starts, ends = out.starts[:n], out.ends[:n]
            keep = cols.keep
            every = bool(keep.all())
            if not every:
                self.deferred(buf, part, np.flatnonzero(~keep), base, line)
            idx: Any = slice(None) if every else np.flatnonzero(keep)
            rows = {"run": cols.ids[:, 0], "task": cols.ids[:, 1], "group": cols.ids[:, 2], "trial": cols.trial,
                    "outcome": cols.outcome, "score": cols.score, "offset": starts[idx] + base,
                    "length": (ends - starts)[idx], "line": np.arange(line, line + n)[idx],
                    "has_trace": cols.has_trace, "metrics": cols.metrics}
            if self.sink.rows:
                rows = self.merge_rows(rows)
            self.add_chunk(rows)
        self.line += n

    def deferred(self, buf: Any, part: Part, rows: np.ndarray, base: int, line: int) -> None:
        """Have the per-line parser read the part's lines ``rows`` (in order), but count at once
        the lines it would only count: once it has named ``MAX_NAMED`` problems, a line
        the scanner found not to be JSON, or one that is not UTF-8, is a count of its reason,
        a run of them counted in one step (a file of garbage costs about what an honest log
        costs)."""
        parser, out = self.parser, part.out
        starts, ends = out.starts, out.ends
        not_utf8 = part.alone[rows]
        quick = not_utf8 | (out.status[rows] == Status.BAD)
        others = np.flatnonzero(~quick)  # the lines the per-line parser reads, past the lines named too
        at, n = 0, len(rows)
        with memoryview(buf) as view:
            while at < n:
                i = int(rows[at])
                a = int(starts[i])
                if quick[at] and base + a and len(parser.named) >= MAX_NAMED:
                    # up to the next line to read, each only counted by its reason, in the order
                    # the reasons first come (the summary's order among equal counts)
                    to = int(others[np.searchsorted(others, at)]) if len(others) and others[-1] > at else n
                    utf8_bad = int(np.count_nonzero(not_utf8[at:to]))
                    counts = ((NOT_UTF8, utf8_bad), (NOT_JSON, to - at - utf8_bad))
                    for reason, count in counts if not_utf8[at] else counts[::-1]:
                        if count:
                            parser.count(reason, count)
                    at = to
                    continue
                # feed's own counting, without its parse (the file's first line may start with a BOM)
                if not (quick[at] and base + a and parser.counted(NOT_UTF8 if not_utf8[at] else NOT_JSON)):
                    parser.feed(view[a: int(ends[i])], base + a, line + i)  # feed checks its UTF-8
                at += 1

    def merge_rows(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the trials ``feed`` kept for this block put in line order."""
        rows = self.sink.rows
        self.sink.rows = []
        given = dict(zip(_ROW_FIELDS, (list(c) for c in zip(*rows, strict=True)), strict=True))
        line, metrics = given["line"], given["metrics"]
        order = np.argsort(np.concatenate([out["line"], np.array(line, dtype=np.int64)]), kind="stable")
        merged: dict[str, Any] = {}
        for name, dtype in _DTYPES.items():
            merged[name] = np.concatenate([out[name], np.array(given[name], dtype=dtype)])[order]
        scanner = self.scanner
        for name in NAMED:  # names as ids in the tables
            ids = [-1 if x is None else scanner.add(name, x) for x in given[name]]
            merged[name] = np.concatenate([out[name], np.array(ids, dtype=np.int32)])[order]
            scanner.irregular[name] = True  # a deferred line's names may come before the block's
        ours, theirs = out["metrics"], _metric_columns(metrics)
        n = len(out["line"])
        columns = {name: np.concatenate([ours.get(name, _nan(n)), theirs.get(name, _nan(len(line)))])[order]
                   for name in dict.fromkeys((*ours, *theirs))}
        # by the first trial that has each name, and the names first seen in one trial in that
        # trial's own order (a deferred trial's keys, or the scanner's columns: see add_chunk)
        rank = {name: i for i, name in enumerate(ours)}
        their_rank = {name: i for i, name in enumerate(theirs)}

        def first(name: str) -> tuple[int, int]:
            at = int(np.argmin(np.isnan(columns[name])))
            return at, their_rank[name] if order[at] >= n else rank[name]

        merged["metrics"] = {name: columns[name] for name in sorted(columns, key=first)}
        return merged

    def flush_rows(self) -> None:
        """Add the trials ``feed`` kept outside any block (long lines, a last line)."""
        if self.sink.rows:
            names = np.empty(0, dtype=np.int32)
            empty = {"run": names, "task": names, "group": names, "metrics": {},
                     **{name: np.empty(0, dtype=dt) for name, dt in _DTYPES.items()}}
            self.add_chunk(self.merge_rows(empty))

    def expected(self, lines: int, nbytes: int) -> int:
        """The trials the range may hold, ``lines`` having come in its first ``nbytes`` bytes:
        never more than the rest of the range can hold (a trial takes :data:`MIN_TRIAL_BYTES`
        at least), nor, from fewer than :data:`GUESS_BYTES` bytes, :data:`GUESS_AHEAD` times
        the lines seen (one short line before long ones reserved 688 MB for a 157 MB file; the
        columns grow when the guess is short)."""
        rest = max(0, self.end - self.start - nbytes)
        guess = min(lines * max(1.0, (self.end - self.start) / max(nbytes, 1)), lines + rest // MIN_TRIAL_BYTES)
        if nbytes < GUESS_BYTES:
            guess = min(guess, GUESS_AHEAD * max(lines, 1))
        return int(guess)

    def add_chunk(self, out: dict[str, Any]) -> None:
        """Keep a block's columns (names as ids already); metric columns by the first trial
        that has each name (stable: a trial's own order)."""
        n = len(out["line"])
        if n == 0:
            return
        cols = self.cols
        if not cols:  # the first trials: room for the range's
            expect = int(self.expected(n, int(out["offset"][-1] + out["length"][-1]) + 1 - self.start) * 1.02) + 16
            for name, dt in (*_DTYPES.items(), *((name, np.int32) for name in NAMED)):
                cols[name] = _Column(dt, expect)
        for name in (*_DTYPES, *NAMED):
            cols[name].add(out[name])
        columns = out["metrics"]
        firsts = [int(np.argmin(np.isnan(col))) for col in columns.values()]
        for _, name in sorted(zip(firsts, columns, strict=True), key=itemgetter(0)):
            if name not in self.metrics:  # NaN for the trials before
                self.metrics[name] = _Column(np.float64, cols["line"].capacity, self.rows)
        for name, column in self.metrics.items():
            column.add(columns.get(name, _nan(n)))
        self.rows += n

    def parsed(self) -> Parsed:
        """Everything read, as :meth:`Parsed.from_sink` would give it."""
        self.flush_rows()
        cols = self.cols
        columns = {name: cols[name].array() if cols else np.empty(0, dtype=dt) for name, dt in _DTYPES.items()}
        metrics = {name: column.array() for name, column in self.metrics.items()}
        scanner = self.scanner
        named = {}
        for role in NAMED:
            ids = cols[role].array() if cols else np.empty(0, dtype=np.int32)
            names = scanner.tables[role].names
            if scanner.irregular[role]:
                names, ids = renumber(ids, names)
            named[role], columns[role] = names, ids
        return Parsed(runs=named["run"], tasks=named["task"], groups=named["group"], metrics=metrics,
                      problems=list(self.parser.problems), **columns)


class _Column:
    """A column written block by block into one array (grown, when the guess of its length
    was short, by half again): no per-block arrays to join at the end."""

    def __init__(self, dtype: Any, capacity: int, nans: int = 0) -> None:
        """``nans``: rows of NaN it starts with (a metric first seen after them)."""
        self.data = populated(max(capacity, nans, 16), dtype)
        if nans:
            self.data[:nans] = np.nan
        self.n = nans

    @property
    def capacity(self) -> int:
        return len(self.data)

    def add(self, values: np.ndarray) -> None:
        end = self.n + len(values)
        if end > len(self.data):
            grown = populated(max(end, len(self.data) * 3 // 2), self.data.dtype)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n: end] = values
        self.n = end

    def array(self) -> np.ndarray:
        """The rows written (a copy when the array is much longer, so as not to hold the rest)."""
        if self.n < len(self.data) * 0.9:
            return self.data[: self.n].copy()
        return self.data[: self.n]


def _nan(n: int) -> np.ndarray:
    return np.full(n, math.nan)


class _Ahead:
    """Blocks scanned ahead by a pool of threads (the C scan runs without the GIL) and read
    by a thread of their own, kept in file order by the reading thread: names are numbered,
    and trials kept, as one thread would. At most ``threads`` blocks wait to be kept (more
    were measured no faster and cost their memory); with one thread, each block is scanned
    in turn, here."""

    def __init__(self, scan: _Scan, threads: int, size: int) -> None:
        self.scan = scan
        self.scanner = scan.scanner
        self.threads = max(1, threads)
        self.size = size
        """Bytes of a block's buffer (fewer for a small range)."""
        self.pool = (ThreadPoolExecutor(self.threads, thread_name_prefix="flaketui-scan")
                     if self.threads > 1 else None)
        self.buffers: list[Any] = []
        self.stop = threading.Event()
        self.reader: threading.Thread | None = None

    def buffer(self) -> Any:
        """A block's buffer, one whose lines have been kept if there is one."""
        return self.buffers.pop() if self.buffers else populated_buffer(self.size)

    def events(self, blocks: Iterator[Event]) -> Iterator[Event]:
        """``blocks``' events in order, each :class:`Block` as :class:`Scanned`: scanned here
        with one thread; else read and scanned by the other threads."""
        scan = self.scanner.scan
        end = self.scan.end
        if self.pool is None:
            for event in blocks:
                if isinstance(event, Block):
                    buf, stop, base, nbytes = event
                    yield Scanned(scan(buf, stop, end - base), buf, base, nbytes)
                else:
                    yield event
            return
        pool = self.pool
        items: queue.Queue[Any] = queue.Queue(maxsize=self.threads)

        def put(item: Any) -> bool:
            while not self.stop.is_set():
                with suppress(queue.Full):
                    items.put(item, timeout=0.05)
                    return True
            return False

        def read() -> None:
            try:
                for event in blocks:
                    if isinstance(event, Block):
                        buf, stop, base, nbytes = event
                        event = _Pending(pool.submit(scan, buf, stop, end - base), buf, base, nbytes)
                    if not put(event):
                        return
            except BaseException as exc:  # the reading thread raises it
                put(exc)

        self.reader = threading.Thread(target=read, name="flaketui-read", daemon=True)
        self.reader.start()
        while True:
            event = items.get()
            if isinstance(event, BaseException):
                raise event
            if isinstance(event, _Pending):
                event = Scanned(event.parts.result(), event.buf, event.base, event.nbytes)
            yield event
            if isinstance(event, End):
                return

    def keep(self, event: Scanned) -> None:
        for part in event.parts:
            self.scan.scanned_rows(event.buf, part, event.base)
            self.scanner.release(part.out)
        self.buffers.append(event.buf)

    def close(self) -> None:
        """Stop the reader (at its next block) and wait for the scans under way."""
        self.stop.set()
        if self.reader is not None:
            self.reader.join()
        if self.pool is not None:
            self.pool.shutdown(wait=True)


_DTYPES: dict[str, Any] = {name: np.dtype(col.code) for name, col in PARSED_COLUMNS.items() if not col.names}
"""The numeric columns and the types :class:`RecordSink` stores them in."""
_ROW_FIELDS = ("line", *NAMED, *(name for name in _DTYPES if name != "line"), "metrics")
"""What each row :class:`_RowSink` keeps holds, in order: its line first (rows are put in line
order), then the columns of :data:`~flaketui.model.PARSED_COLUMNS`, then its metrics."""
_NO_METRICS: dict[str, float] = {}


def _metric_columns(dicts: list[dict[str, float] | None]) -> dict[str, np.ndarray]:
    """Metrics per trial (``None``: none) as a column per name, NaN where a trial has none;
    names in the order first seen."""
    dicts = [m or _NO_METRICS for m in dicts]
    n = len(dicts)
    return {name: np.fromiter(map(dict.get, dicts, repeat(name), repeat(math.nan)), dtype=np.float64, count=n)
            for name in dict.fromkeys(chain.from_iterable(dicts))}




class _Pending(NamedTuple):
    """A :class:`Block` being scanned by the pool."""

    parts: Future[list[Part]]
    buf: Any
    base: int
    nbytes: int
