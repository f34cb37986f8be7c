"""Reading JSON Lines a block at a time: the per-line work done column by column.

The per-line reader (:class:`~flaketui.loading.jsonl.LineParser` fed by
:func:`~flaketui.loading.jsonl.read_range`) runs Python for every line (issue 15;
3.5–5 µs of CPU a line on the benchmark shapes, a third of it in msgspec).
:func:`parse_range` reads the same lines and gives the same
:class:`~flaketui.loading.parsed.Parsed` (the same trials, name tables, metric
columns and ``file:line`` problems), but per block of lines:

1. the block's newlines are found with numpy, giving each line's offset, length and
   number at once;
2. every line is decoded by one C-level ``map`` of the fast path's typed decoder
   (:meth:`FastDecoder.typed <flaketui.loading.fastpath.FastDecoder.typed>`: the trial
   fields only, traces kept as raw bytes), with the garbage collector paused, since a
   block allocates thousands of objects that cannot form cycles;
3. the checks of :func:`~flaketui.loading.fastpath.typed_adder` run on whole columns
   (numpy, or a set of the types present before any per-row work);
4. every line this can't take for certain (it fails to decode as a whole, or a check
   declines it, or it is not valid UTF-8, or starts the file with a byte-order mark)
   goes through :meth:`LineParser.feed <flaketui.loading.jsonl.LineParser.feed>` as
   today, alone, and its trial or problem is put back in line order;
5. run, task and group names are numbered in the order first seen, as
   :class:`~flaketui.loading.records.RecordSink` numbers them, with one C-level dict call
   per row (:class:`_Names`).

Each line is decoded on its own (never a joined ``[...]`` of lines), so a line can
never lend its brackets or strings to its neighbours. Field maps the typed tier does
not take (dotted names, one name in two roles) are read by the per-line reader.

Where the C scanner is built (``flaketui/_linescan.c``, :mod:`~flaketui.loading.scanned`;
about 0.4–0.5 µs of CPU a line on the benchmark shapes, against the 2–2.5 µs of the steps
above), steps 1–3 and 5 are the scanner's instead:

- a reader thread reads the blocks (:meth:`_Batch.blocks`) and ``threads`` threads
  (:class:`_Ahead`) scan them, without the GIL: each line validated as one JSON object,
  the typed struct's keys described (kind, number, string span) and the typed tier's
  rules applied, as :class:`~flaketui.loading.scanned.Scanner` states them;
- the calling thread keeps the blocks in file order: it numbers the names (``Names``, in
  C) and writes the columns once into arrays sized from the first block (:class:`_Column`);
- step 4 is unchanged: every line the scanner or the rules are unsure of goes to
  :meth:`LineParser.feed <flaketui.loading.jsonl.LineParser.feed>`, which names it.
"""

from __future__ import annotations

import gc
import math
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from itertools import chain, count, repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any

import msgspec
import numpy as np

from flaketui.loading.fastpath import _INT_MAX, _INT_MIN, FastDecoder, _trace_stand_in
from flaketui.loading.jsonl import (
    BLOCK,
    BOM,
    NOT_JSON,
    NOT_UTF8,
    LineParser,
    Progress,
    is_utf8,
    next_newline,
    read_range,
)
from flaketui.loading.pages import populated, populated_buffer
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import MAX_TRIAL, RecordSink
from flaketui.loading.scanned import BAD, Part, Scanner, available, renumber
from flaketui.model import ERRORED, FAIL, PASS, FieldMap

BATCH_BYTES = 1 << 19
"""Bytes of lines decoded and checked together (a block of the file holds several batches):
the objects of a batch's lines stay in the CPU's caches while its columns are made."""

MIN_TRIAL_BYTES = len(b'{"task":0,"score":0}\n')
"""The fewest bytes a line holding a trial takes."""
GUESS_AHEAD = 64
"""The most trials reserved for, as a multiple of those read, when the guess is made from
fewer than :data:`GUESS_BYTES` bytes."""
GUESS_BYTES = 1 << 20

_NO_TRACE, _EMPTY, _FULL, _BAD = 0, 1, 2, 3
"""What a line's trace fields say, as :func:`typed_adder` reads them."""


def parse_range(path: str, start: int, end: int, fields: FieldMap, default_run: str,
                first_line: int = 1, progress: Progress | None = None, threads: int = 1) -> tuple[Parsed, int]:
    """Parse the lines of plain JSONL file ``path`` that start in ``[start, end)``, numbered
    from ``first_line``: (what they hold, the number of lines seen).

    The same contract as :func:`~flaketui.loading.jsonl.read_range` feeding a
    :class:`~flaketui.loading.jsonl.LineParser` into a :class:`RecordSink` and
    :meth:`Parsed.from_sink` (``start`` starts a line; a last line without a newline
    counts if it ends the file; ``progress`` gets the bytes read). With the C scanner
    (:func:`scans`), ``threads`` threads scan blocks ahead.
    """
    sink = _RowSink(fields, default_run)
    parser = LineParser(path, sink)
    if parser.fast.typed_roles:
        batch = _Batch(path, parser, sink)
        lines = batch.read(start, end, first_line, progress, threads)
        return batch.parsed(), lines
    plain = RecordSink(fields, default_run)  # a field map the typed tier does not take
    parser = LineParser(path, plain)
    lines = read_range(path, start, end, parser, first_line=first_line, progress=progress) if end > start else 0
    return Parsed.from_sink(plain, parser.problems), lines


def scans(fields: FieldMap) -> bool:
    """Whether the C scanner reads lines for this field map (it is compiled, and the typed
    tier takes the map): then one process reads a file, with threads."""
    fast = FastDecoder(fields)
    return available() and fast._typed is not None and Scanner.takes(_keys(fast))


def _keys(fast: FastDecoder) -> list[str]:
    """The JSON names of the typed tier's struct, in its order."""
    assert fast._typed is not None
    return [f.encode_name for f in msgspec.structs.fields(fast._typed.type)]


def parse_job(args: tuple[str, int, int, FieldMap, str]) -> tuple[Parsed, int]:
    """A process pool's job, as ``json_lines._parse_range`` takes it: ``(path, start, end,
    fields, default_run)``, lines numbered from 1."""
    path, start, end, fields, default_run = args
    return parse_range(path, start, end, fields, default_run)


class _RowSink(RecordSink):
    """A :class:`RecordSink` that keeps the trials it is given as plain values, to be put
    in line order among a block's batch-read trials (see :meth:`_Batch.block`)."""

    def __init__(self, fields: FieldMap, default_run: str) -> None:
        super().__init__(fields, default_run)
        self.rows: list[tuple[Any, ...]] = []

    def append(self, run: str, task: str, group: str | None, trial: int, outcome: int,
               score: float, offset: int, length: int, line: int, has_trace: bool,
               metrics: dict[str, Any] | None) -> None:
        kept = None
        if metrics:  # as RecordSink.append: finite ints and floats only
            kept = {k: float(v) for k, v in metrics.items()
                    if (type(v) is float or type(v) is int) and math.isfinite(v)}
        self.rows.append((line, run, task, group, trial, outcome, score, offset, length,
                          has_trace, kept))


def _trace_code(raw: msgspec.Raw | None) -> int | None:
    """The code of one trace field: ``None`` when absent or null (the next field decides)."""
    if raw is None:
        return None
    if len(raw) >= 64:  # too long for null or an empty list: a full list, or no list at all
        return _FULL if memoryview(raw)[0] == 0x5B else _BAD
    stand_in = _trace_stand_in(raw)
    if stand_in is None:
        return None
    if stand_in is False:
        return _BAD
    return _FULL if stand_in else _EMPTY


def _has_none(values: list[Any]) -> bool:
    """Whether ``values`` holds ``None`` (by identity: ``==`` on a struct is slow)."""
    return any(map(is_, values, repeat(None)))


def _all_none(values: list[Any]) -> bool:
    return all(map(is_, values, repeat(None)))


def _trace_codes(raws: list[msgspec.Raw | None]) -> np.ndarray:
    """:func:`_trace_code` of each of ``raws``, as int8 (-1 for ``None``); a long value is
    told by its first byte without a Python call."""
    n = len(raws)
    if not _has_none(raws):
        long = np.fromiter(map(len, raws), dtype=np.int64, count=n) >= 64
        if long.all():
            heads = np.fromiter(map(itemgetter(0), map(memoryview, raws)), dtype=np.uint8, count=n)
            if (heads == 0x5B).all():
                return np.full(n, _FULL, dtype=np.int8)
    return np.fromiter((-1 if c is None else c for c in map(_trace_code, raws)), dtype=np.int8, count=n)


class _Names:
    """Numbers the names of a column (runs, tasks or groups) in the order first seen, with one
    C-level dict call per row: each name maps to the row where it first appeared, and the
    ids are the ranks of those rows (no sort)."""

    def __init__(self) -> None:
        self.table: dict[Any, int] = {}
        self.firsts: list[np.ndarray] = []
        self.rows = 0

    def add(self, values: list[Any]) -> None:
        """The next rows' names."""
        n = len(values)
        start = self.rows
        head = values[0]
        if values.count(head) == n:  # one name (one run, no groups): one lookup
            first = np.full(n, self.table.setdefault(head, start), dtype=np.int64)
        else:
            first = np.fromiter(map(self.table.setdefault, values, count(start)), dtype=np.int64, count=n)
        self.firsts.append(first)
        self.rows += n

    def ids(self, none: bool = False) -> tuple[list[Any], np.ndarray]:
        """The names in the order first seen and each row's id, as int32; with ``none``,
        ``None`` is no name and its rows get -1 (groups)."""
        first = np.concatenate(self.firsts) if self.firsts else np.empty(0, dtype=np.int64)
        rank = np.cumsum(first == np.arange(len(first))) - 1
        ids = rank[first].astype(np.int32)
        names = list(self.table)
        if none and None in self.table:
            gone = int(rank[self.table[None]])
            ids[ids == gone] = -1
            ids[ids > gone] -= 1
            del names[gone]
        return names, ids


class _Batch:
    """The state of one :func:`parse_range`: decoder, name tables, and columns per block."""

    def __init__(self, path: str, parser: LineParser, sink: _RowSink) -> None:
        self.path = path
        self.parser = parser
        self.sink = sink
        fast: FastDecoder = parser.fast
        assert fast._typed is not None
        info = msgspec.structs.fields(fast._typed.type)
        names = [f.name for f in info]
        keys = _keys(fast)
        self.scanner = Scanner(keys, {**fast.typed_roles, "error": (names.index("error"),),
                                      "metrics": (names.index("metrics"),)},
                               sink.fields.threshold, sink.default_run) if Scanner.takes(keys) else None
        if self.scanner is None:  # msgspec decodes the lines
            # the typed tier's struct, untracked by the garbage collector (it holds no cycles)
            struct = msgspec.defstruct("BatchTrial", [(f.name, f.type, f.default) for f in info],
                                       rename={f.name: f.encode_name for f in info}, gc=False)
            self.decode = msgspec.json.Decoder(struct).decode
            self.getters = {role: [attrgetter(names[i]) for i in where]
                            for role, where in fast.typed_roles.items()}
            self.get_error, self.get_metrics = attrgetter("error"), attrgetter("metrics")
        self.fields = sink.fields
        self.default_run = sink.default_run
        self.runs, self.tasks, self.groups = _Names(), _Names(), _Names()
        self.cols: dict[str, _Column] = {}
        """The trials' columns, written block by block (made with the first trials)."""
        self.metrics: dict[str, _Column] = {}
        """The metric columns, in the order first seen."""
        self.rows = 0
        self.start = self.end = 0

    # reading ---------------------------------------------------------------------------

    def read(self, start: int, end: int, first_line: int, progress: Progress | None, threads: int = 1) -> int:
        """Read the lines starting in ``[start, end)`` block by block, as ``read_range`` does;
        with the C scanner and more than one thread, a reader thread reads the blocks and
        ``threads`` threads scan them ahead while this thread keeps them in file order."""
        if end <= start:
            return 0
        self.line = first_line
        self.start, self.end = start, end
        size = min(BLOCK, max(1 << 16, end - start + 1))  # a small range: a small buffer
        if self.scanner is None:  # msgspec: each block decoded before the buffer is read into again
            buf = bytearray(BLOCK)
            data = np.frombuffer(buf, dtype=np.uint8)
            newline = np.empty(len(buf), dtype=bool)

            def keep(event: tuple[Any, ...]) -> None:
                _, _, stop, base, _ = event
                # the whole buffer's isascii: bytes past the block may make it False (its lines
                # are then checked one by one), never a wrong True
                with memoryview(buf) as view:
                    self.decoded(buf, view, data, newline, stop - 1, end - base, base, buf.isascii())

            self.follow(self.blocks(start, end, len(buf), lambda: buf), keep, progress)
            del data
            return self.line - first_line
        self.scanner.size_for(end - start)
        ahead = _Ahead(self, threads, size)
        try:
            self.follow(ahead.events(self.blocks(start, end, size, ahead.buffer)),
                        lambda event: ahead.keep(*event[1:4]), progress)
        finally:
            ahead.close()
        return self.line - first_line

    def follow(self, events: Iterator[tuple[Any, ...]], keep: Callable[[tuple[Any, ...]], None],
               progress: Progress | None) -> None:
        """Take :meth:`blocks`' events in order: a block by ``keep``, a long or last line by
        the per-line reader; then tell ``progress`` the bytes each read."""
        for event in events:
            if event[0] == "block":
                keep(event)
            elif event[0] == "long":
                self.line += read_range(self.path, event[1], event[1] + 1, self.parser, first_line=self.line)
                self.flush_rows()
            elif event[0] == "tail":
                self.line += read_range(self.path, event[1], self.end, self.parser, first_line=self.line)
                self.flush_rows()
            if progress:
                progress(event[-1])

    def blocks(self, start: int, end: int, size: int, fresh: Callable[[], Any]) -> Iterator[tuple[Any, ...]]:
        """The range's lines as events in file order, each ending with the bytes it read:
        ``("block", buf, stop, base, n)`` (whole lines in ``buf[:stop]``, ``buf`` at file
        offset ``base``), ``("long", base, n)`` (a line longer than ``size`` bytes at
        ``base``), ``("tail", base, n)`` (a last line without a newline), ``("end", n)``.
        ``fresh()`` gives the buffer for the next block: the same one when a block is used
        up before the next is read, else another."""
        buf = fresh()
        view = memoryview(buf)
        filled, base, read = 0, start, 0
        try:
            with open(self.path, "rb", buffering=0) as fh:
                fh.seek(start)
                while True:
                    if filled == size:  # one line fills the buffer: the per-line reader takes it
                        stop = next_newline(fh, base + size)
                        yield "long", base, read + max(0, stop + 1 - base - size)
                        read, base, filled = 0, stop + 1, 0
                        fh.seek(base)
                        if base < end:
                            continue
                        break
                    got = fh.readinto(view[filled:size])
                    if not got:  # a last line without a newline: the per-line reader's rules
                        if filled and base < end:
                            yield "tail", base, read
                            read = 0
                        break
                    filled += got
                    read += got
                    last = buf.rfind(b"\n", 0, filled)
                    if last < 0:
                        continue
                    consumed = last + 1
                    yield "block", buf, consumed, base, read
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
        yield "end", read

    def decoded(self, buf: bytearray, view: memoryview, data: np.ndarray, newline: np.ndarray, last: int,
                limit: int, base: int, is_ascii: bool) -> None:
        """Parse the lines of ``buf`` up to its newline at ``last`` that start before
        ``limit`` with msgspec, a batch at a time (``base``: the block's file offset)."""
        # the lines are decoded where they lie in the buffer: no copy of the block
        ends = np.flatnonzero(np.equal(data[: last + 1], 0x0A, out=newline[: last + 1]))
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        taken = int(np.searchsorted(starts, limit))  # lines that start before `limit`
        offsets, lengths = starts[:taken] + base, ends[:taken] - starts[:taken]
        # batches of about BATCH_BYTES, so that a batch's objects stay in the CPU's caches
        # (and only one batch's line views and records are held at a time)
        cuts = np.unique(np.searchsorted(starts[:taken], np.arange(0, last + 1, BATCH_BYTES))).tolist()
        for a, b in zip(cuts, [*cuts[1:], taken], strict=True):
            lines = list(map(view.__getitem__, map(slice, starts[a:b].tolist(), ends[a:b].tolist())))
            self.block(lines, offsets[a:b], lengths[a:b], self.line + a, is_ascii)
            for piece in lines:
                piece.release()
            del lines
        self.line += taken

    def scanned_rows(self, buf: bytearray, part: Part, base: int) -> None:
        """Keep the lines of ``buf`` (at file offset ``base``) the scanner put in ``part``, the
        next lines of the range."""
        scanner = self.scanner
        assert scanner is not None
        line, n, out = self.line, part.n, part.out
        if not self.cols and n:  # the first lines: room for the task names the range may hold
            trials = int(np.count_nonzero(out.status[:n] != BAD))  # blank lines and garbage hold none
            if trials:
                scanner.tables["task"].reserve(self.expected(trials, int(out.ends[n - 1]) + 1 - int(out.starts[0]))
                                               // 2)
        with _gc_paused():
            cols = scanner.number(buf, part)
            starts, ends = out.starts[:n], out.ends[:n]
            keep = cols.keep
            every = bool(keep.all())
            if not every:
                self.deferred(buf, part, np.flatnonzero(~keep), base, line)
            idx: Any = slice(None) if every else np.flatnonzero(keep)
            rows = {"run": cols.run, "task": cols.task, "group": cols.group, "trial": cols.trial,
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
        the scanner found not to be JSON, or one that is not UTF-8, is a count of its reason
        (a file of garbage costs about what an honest log costs)."""
        parser, out = self.parser, part.out
        starts, ends = out.starts, out.ends
        bad = (out.status[rows] == BAD).tolist()
        alone = part.alone[rows].tolist()
        with memoryview(buf) as view:
            for i, not_json, not_utf8 in zip(rows.tolist(), bad, alone, strict=True):
                a = int(starts[i])
                # feed's own counting, without its parse (the file's first line may start with a BOM)
                if base + a and (not_utf8 or not_json) and parser.counted(NOT_UTF8 if not_utf8 else NOT_JSON):
                    continue
                parser.feed(view[a: int(ends[i])], base + a, line + i)  # feed checks its UTF-8

    # one block -------------------------------------------------------------------------

    def block(self, lines: list[memoryview], offsets: np.ndarray, lengths: np.ndarray, first_line: int,
              is_ascii: bool) -> None:
        """Parse ``lines`` (without their newlines; at file ``offsets``, of ``lengths`` bytes),
        the first numbered ``first_line``; ``is_ascii`` says they are all ASCII."""
        n = len(lines)
        if n == 0:
            return
        alone = np.zeros(n, dtype=bool)  # lines left to LineParser.feed
        if not is_ascii:
            try:  # a newline ends any multi-byte character: the join is valid iff each line is
                str(b"\n".join(lines), "utf-8")
            except UnicodeDecodeError:  # find the lines at fault; the rest are read in batch
                alone |= [not is_utf8(raw) for raw in lines]
        if offsets[0] == 0 and bytes(lines[0][:3]) == BOM:
            alone[0] = True
        with _gc_paused():
            recs = self.decode_all(lines, alone)
            # the columns are made of the records that decoded only (garbage lines cost no
            # per-row work there): `got` are their places in the block
            decoded = np.fromiter(map(is_not, recs, repeat(None)), dtype=bool, count=n)
            got: Any = slice(None) if decoded.all() else np.flatnonzero(decoded)
            if not isinstance(got, slice):
                recs = [r for r in recs if r is not None]
            if recs:
                taken, cols = self.columns(recs, np.zeros(len(recs), dtype=bool))
            else:  # nothing decoded: every line goes to feed
                taken, cols = np.zeros(0, dtype=bool), {"run": [], "task": [], "group": [], "metrics": [],
                                                        **{k: np.empty(0, dtype=_DTYPES[k]) for k in _COLUMN_NUMS}}
            del recs
            keep = np.zeros(n, dtype=bool)
            keep[got] = taken
            every = bool(keep.all())
            for i in () if every else np.flatnonzero(~keep).tolist():
                self.parser.feed(lines[i], int(offsets[i]), first_line + i, is_ascii)
            sub: Any = slice(None) if taken.all() else np.flatnonzero(taken)  # into the columns
            idx: Any = slice(None) if every else np.flatnonzero(keep)  # into the block
            out = {"run": cols["run"], "task": cols["task"], "group": cols["group"],
                   "trial": cols["trial"][sub], "outcome": cols["outcome"][sub], "score": cols["score"][sub],
                   "offset": offsets[idx], "length": lengths[idx],
                   "line": np.arange(first_line, first_line + n)[idx],
                   "has_trace": cols["has_trace"][sub], "metrics": cols["metrics"]}
            if self.sink.rows:
                out = self.merge_rows(out)
            self.add_chunk(out)

    def decode_all(self, lines: list[memoryview], alone: np.ndarray) -> list[Any]:
        """Each line's struct, ``None`` where a line doesn't decode or is left alone."""
        decode = self.decode
        if not alone.any():
            try:
                return list(map(decode, lines))
            except (msgspec.DecodeError, RecursionError):
                pass  # some line doesn't decode: try them one by one
        recs: list[Any] = []
        for raw, skip in zip(lines, alone.tolist(), strict=True):
            if skip:
                recs.append(None)
                continue
            try:
                recs.append(decode(raw))
            except (msgspec.DecodeError, RecursionError):
                recs.append(None)
        return recs

    def pick(self, role: str, recs: list[Any]) -> list[Any]:
        """The first non-null value of the role's fields, per record."""
        getters = self.getters[role]
        values = list(map(getters[0], recs))
        for get in getters[1:]:
            if _has_none(values):
                values = [v if v is not None else get(r) for v, r in zip(values, recs, strict=True)]
        return values

    def columns(self, recs: list[Any], alone: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """Which records ``typed_adder`` would take (the rest go to ``feed``), and their
        columns: numeric ones for every record, names and metrics for those taken."""
        n = len(recs)
        bad = alone.copy()
        missing = np.fromiter(map(is_, recs, repeat(None)), dtype=bool, count=n)
        if missing.any():
            bad |= missing
            stub = _Stub()
            recs = [stub if r is None else r for r in recs]

        task = self.pick("task", recs)
        kinds = set(map(type, task))
        if kinds != {str} or "" in task:
            bad |= [not ((type(t) is str and t != "") or (type(t) is int and _INT_MIN <= t <= _INT_MAX))
                    for t in task]
            task = [str(t) if type(t) is int else t for t in task]
        run = self.pick("run", recs)
        if _has_none(run):
            run = [self.default_run if r is None else r for r in run]
        if "" in run:
            bad |= [r == "" for r in run]
        group = self.pick("group", recs)
        if "" in group:
            bad |= [g == "" for g in group]

        passed = np.array(self.pick("passed", recs), dtype=np.float64)  # null: NaN
        has_passed = ~np.isnan(passed)
        bad |= has_passed & (passed != 0) & (passed != 1)
        score = np.array(self.pick("score", recs), dtype=np.float64)
        has_score = ~np.isnan(score)
        trial_v = self.pick("trial", recs)
        try:
            trial = np.fromiter(trial_v, dtype=np.int64, count=n)
            bad |= trial < 0
        except (TypeError, OverflowError):  # nulls (no trial: -1), or numbers past 63 bits
            trial = np.fromiter((-1 if t is None else (t if 0 <= t <= MAX_TRIAL else -2) for t in trial_v),
                                dtype=np.int64, count=n)
            bad |= trial < -1

        trace = np.full(n, _NO_TRACE, dtype=np.int8)
        undecided = np.ones(n, dtype=bool)
        for get in self.getters["trace"]:
            raws = list(map(get, recs))
            if _all_none(raws):
                continue
            code = _trace_codes(raws)
            now = undecided & (code >= 0)
            trace[now] = code[now]
            undecided &= code < 0
        bad |= trace == _BAD

        errors = list(map(self.get_error, recs))
        if _all_none(errors):
            errored = np.zeros(n, dtype=bool)
        else:
            errored = np.fromiter((e is not None and bool(e) for e in errors), dtype=bool, count=n)
        ok = np.where(has_passed, passed == 1, has_score & (score >= self.fields.threshold))
        bad |= ~has_passed & ~has_score & ~errored  # no outcome: the general rules name it
        outcome = np.where(errored, ERRORED, np.where(ok, PASS, FAIL)).astype(np.int8)

        keep = ~bad
        metrics = list(map(self.get_metrics, recs))
        if bad.any():
            take = np.flatnonzero(keep).tolist()
            task, run, group, metrics = ([col[i] for i in take] for col in (task, run, group, metrics))
        return keep, {"task": task, "run": run, "group": group, "trial": trial, "outcome": outcome,
                      "score": score, "has_trace": (trace == _FULL).astype(np.int8), "metrics": metrics}

    def merge_rows(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the trials ``feed`` kept for this block put in line order."""
        rows = self.sink.rows
        self.sink.rows = []
        (line, run, task, group, trial, outcome, score, offset, length, has_trace,
         metrics) = (list(c) for c in zip(*rows, strict=True))
        order = np.argsort(np.concatenate([out["line"], np.array(line, dtype=np.int64)]), kind="stable")
        merged: dict[str, Any] = {}
        for name, extra, dtype in (("trial", trial, np.int64), ("outcome", outcome, np.int8),
                                   ("score", score, np.float64), ("offset", offset, np.int64),
                                   ("length", length, np.int64), ("line", line, np.int64),
                                   ("has_trace", has_trace, np.int8)):
            merged[name] = np.concatenate([out[name], np.array(extra, dtype=dtype)])[order]
        scanner = self.scanner
        for name, extra in (("run", run), ("task", task), ("group", group)):
            if scanner is None:  # names as they are, numbered in add_chunk
                both = out[name] + extra
                merged[name] = [both[i] for i in order.tolist()]
            else:  # names as ids in the scanner's tables
                ids = [-1 if x is None else scanner.add(name, x) for x in extra]
                merged[name] = np.concatenate([out[name], np.array(ids, dtype=np.int32)])[order]
                scanner.irregular[name] = True  # a deferred line's names may come before the block's
        if scanner is None:  # metrics as each trial's dict: their keys give the order first seen
            both = out["metrics"] + metrics
            merged["metrics"] = [both[i] for i in order.tolist()]
            return merged
        theirs = _metric_columns(metrics)
        n = len(out["line"])
        merged["metrics"] = {
            name: np.concatenate([out["metrics"].get(name, _nan(n)), theirs.get(name, _nan(len(line)))])[order]
            for name in (*out["metrics"], *(k for k in theirs if k not in out["metrics"]))}
        return merged

    def flush_rows(self) -> None:
        """Add the trials ``feed`` kept outside any block (long lines, a last line)."""
        if self.sink.rows:
            names: Any = [] if self.scanner is None else np.empty(0, dtype=np.int32)
            empty = {"run": names, "task": names, "group": names, "metrics": [] if self.scanner is None else {},
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
        """Number the names of a block's trials and keep its columns."""
        n = len(out["line"])
        if n == 0:
            return
        cols = self.cols
        if not cols:  # the first trials: room for the range's
            expect = int(self.expected(n, int(out["offset"][-1] + out["length"][-1]) + 1 - self.start) * 1.02) + 16
            names: tuple[tuple[str, Any], ...] = ((("run", np.int32), ("task", np.int32), ("group", np.int32))
                                                  if self.scanner is not None else ())
            for name, dt in (*_DTYPES.items(), *names):
                cols[name] = _Column(dt, expect)
        for name in _DTYPES:
            cols[name].add(out[name])
        if self.scanner is None:
            self.runs.add(out["run"])
            self.tasks.add(out["task"])
            self.groups.add(out["group"])
        else:  # ids already
            for name in ("run", "task", "group"):
                cols[name].add(out[name])
        columns = out["metrics"]
        if isinstance(columns, list):  # the msgspec path's dicts, in line order: names as their keys come
            columns = _metric_columns(columns)
            firsts = [0] * len(columns)
        else:  # by the first trial that has each name (stable: a trial's own order)
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
        if self.scanner is None:
            runs, columns["run"] = self.runs.ids()
            tasks, columns["task"] = self.tasks.ids()
            groups, columns["group"] = self.groups.ids(none=True)
        else:
            scanner = self.scanner
            named = {}
            for role in ("run", "task", "group"):
                ids = cols[role].array() if cols else np.empty(0, dtype=np.int32)
                names = scanner.tables[role].names
                if scanner.irregular[role]:
                    names, ids = renumber(ids, names)
                named[role], columns[role] = names, ids
            runs, tasks, groups = named["run"], named["task"], named["group"]
        return Parsed(runs=runs, tasks=tasks, groups=groups, metrics=metrics,
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


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The garbage collector paused: a block allocates thousands of objects that cannot form
    cycles, and a collection pass would walk them all."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _nan(n: int) -> np.ndarray:
    return np.full(n, math.nan)


class _Ahead:
    """Blocks scanned ahead by a pool of threads (the C scan runs without the GIL) and read
    by a thread of their own, kept in file order by the reading thread: names are numbered,
    and trials kept, as one thread would. At most ``threads`` blocks wait to be kept (more
    were measured no faster and cost their memory); with one thread, each block is scanned
    in turn, here."""

    def __init__(self, batch: _Batch, threads: int, size: int) -> None:
        self.batch = batch
        self.scanner = batch.scanner
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

    def events(self, blocks: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        """``blocks``' events in order, a block's with its scanned parts in place of its
        ``stop``: scanned here with one thread; else read and scanned by the other threads."""
        assert self.scanner is not None
        scan = self.scanner.scan
        if self.pool is None:
            for event in blocks:
                if event[0] == "block":
                    _, buf, stop, base, nbytes = event
                    event = ("block", scan(buf, stop, self.batch.end - base), buf, base, nbytes)
                yield event
            return
        pool, end = self.pool, self.batch.end
        items: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=self.threads)

        def put(item: tuple[Any, ...]) -> bool:
            while not self.stop.is_set():
                with suppress(queue.Full):
                    items.put(item, timeout=0.05)
                    return True
            return False

        def read() -> None:
            try:
                for event in blocks:
                    if event[0] == "block":
                        _, buf, stop, base, nbytes = event
                        event = ("block", pool.submit(scan, buf, stop, end - base), buf, base, nbytes)
                    if not put(event):
                        return
            except BaseException as exc:  # the reading thread raises it
                put(("error", exc))

        self.reader = threading.Thread(target=read, name="flaketui-read", daemon=True)
        self.reader.start()
        while True:
            event = items.get()
            if event[0] == "error":
                raise event[1]
            if event[0] == "block":
                event = ("block", event[1].result(), *event[2:])
            yield event
            if event[0] == "end":
                return

    def keep(self, parts: list[Part], buf: Any, base: int) -> None:
        assert self.scanner is not None
        for part in parts:
            self.batch.scanned_rows(buf, part, base)
            self.scanner.release(part.out)
        self.buffers.append(buf)

    def close(self) -> None:
        """Stop the reader (at its next block) and wait for the scans under way."""
        self.stop.set()
        if self.reader is not None:
            self.reader.join()
        if self.pool is not None:
            self.pool.shutdown(wait=True)


_DTYPES: dict[str, Any] = {"trial": np.int64, "outcome": np.int8, "score": np.float64, "offset": np.int64,
                           "length": np.int64, "line": np.int64, "has_trace": np.int8}
"""The numeric columns and the types :class:`RecordSink` stores them in."""
_COLUMN_NUMS = ("trial", "outcome", "score", "has_trace")
"""The numeric columns :meth:`_Batch.columns` makes."""
_NO_METRICS: dict[str, float] = {}


def _metric_columns(dicts: list[dict[str, float] | None]) -> dict[str, np.ndarray]:
    """Metrics per trial (``None``: none) as a column per name, NaN where a trial has none;
    names in the order first seen."""
    dicts = [m or _NO_METRICS for m in dicts]
    n = len(dicts)
    return {name: np.fromiter(map(dict.get, dicts, repeat(name), repeat(math.nan)), dtype=np.float64, count=n)
            for name in dict.fromkeys(chain.from_iterable(dicts))}


class _Stub:
    """Stands in for a record that did not decode: every field absent."""

    def __getattr__(self, name: str) -> None:
        return None
