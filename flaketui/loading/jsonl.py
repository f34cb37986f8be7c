"""Streaming readers for JSONL (plain or gzip) and JSON-array trial logs: the per-line parser.

Each line is decoded loosely (:meth:`FastDecoder.loose
<flaketui.loading.fastpath.FastDecoder.loose>`: the trial fields only, traces skipped
unbuilt), or, where that declines, in full with orjson (:func:`loads_exact`), and judged by
:meth:`RecordSink.add <flaketui.loading.records.RecordSink.add>`; a line that can't be used
becomes a :class:`~flaketui.model.Problem` naming the file and line, and reading goes on.
Plain files are read in blocks by byte range, so a large file can be split
between processes (see :mod:`flaketui.loading.formats.json_lines`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from flaketui.loading.location import file_size, is_url, no_ranges, open_binary, open_stream, skip_then_read
from flaketui.loading.records import RecordSink
from flaketui.model import Problem

if TYPE_CHECKING:  # imported when parsing starts: a warm open from the cache needs neither
    from flaketui.loading.fastpath import FastDecoder

BLOCK = 8 << 20
"""Bytes read at a time from a plain JSONL file."""
BOM = b"\xef\xbb\xbf"
NOT_JSON, NOT_UTF8 = "not valid JSON", "not valid UTF-8"
"""The reasons of the lines that are counted, past the lines named, without being parsed."""
MAX_NAMED = 1000
"""Problems a :class:`LineParser` names one by one (``file:line: reason``); the lines
after them are counted by reason and named in one summary problem, so that a file of
garbage costs about what a file of trials costs."""
GZIP_MAX_BYTES = 16 << 30
"""The most bytes a gzip file may expand to."""
GZIP_MAX_RATIO = 400
"""The most a gzip file may expand, as decompressed bytes per compressed byte, once it has
expanded past :data:`GZIP_RATIO_FLOOR` (JSON logs compress 5 to 80 times; deflate's
limit is about 1032)."""
GZIP_RATIO_FLOOR = 8 << 20
"""Decompressed bytes a gzip file may reach before its ratio is checked."""

Progress = Callable[[int], None]
"""Called with the number of bytes just consumed."""


def _json_error(exc: Exception, raw: bytes | memoryview | None = None) -> str:
    msg = str(exc)
    if "utf-8" in msg.lower() or "utf8" in msg.lower():
        return NOT_UTF8
    pos = getattr(exc, "pos", None)
    if raw is not None and isinstance(pos, int):
        rest = bytes(raw[pos : pos + 9])
        if rest.startswith((b"NaN", b"Infinity", b"-Infinity")):
            return f"not valid JSON ({msg}; NaN and Infinity are not JSON)"
    return f"not valid JSON ({msg})"


def loads(data: bytes | memoryview) -> Any:
    """Parse JSON with orjson; numbers beyond the double range read as ±inf.

    RFC 8259 (section 6) lets a parser limit the range of numbers. orjson refuses
    such numbers, msgspec's fast skipping lets them pass; reading them as ±inf
    (as Python's json does) gives one answer for a line whichever reader saw it.
    A score of inf is then refused as not finite; an integer so read keeps its digits
    (:class:`BigInt`), so that as an id it is the log's text.

    The second parse (Python's ``json``) is held to orjson's rules on what orjson did not
    reach: a lone surrogate (``"\\ud800"``, which ``json`` accepts and no UTF-8 writer
    can write) is refused, as orjson refuses it.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "infinity" not in str(exc):
            raise
        # the second parse may find what orjson did not reach: it is named the same way
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as bad:
            raise orjson.JSONDecodeError(f"str is not valid UTF-8: {bad.reason}", "", bad.start) from None
        return _loads_stdlib(text, _int_as_orjson)


def _loads_stdlib(text: str, parse_int: Callable[[str], Any]) -> Any:
    """``text`` parsed by Python's ``json`` as orjson would: no NaN or Infinity, no lone
    surrogate; nesting deeper than ``json`` goes is a decode error, not a RecursionError."""
    try:
        obj = json.loads(text, parse_constant=_refuse_constant, parse_int=parse_int)
    except json.JSONDecodeError as bad:
        raise orjson.JSONDecodeError(bad.msg, bad.doc, bad.pos) from None
    except RecursionError:
        raise orjson.JSONDecodeError("nested too deeply", text[:0], 0) from None
    if "\\u" in text and _has_surrogate(obj):
        at = _SURROGATE_ESCAPE.search(text)
        raise orjson.JSONDecodeError(f"str is not valid UTF-8: a lone surrogate "
                                     f"({at.group(0) if at else 'escape'})", text[:0], at.start() if at else 0)
    return obj


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A ``\\u`` escape of a surrogate: where a message points when one is alone."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(obj: Any) -> bool:
    """Whether a string anywhere in ``obj`` (keys too) holds a lone surrogate (a pair
    escaped as ``\\ud83d\\ude00`` is one character by then). Walked without recursion."""
    stack = [obj]
    search = _SURROGATE.search
    while stack:
        value = stack.pop()
        if type(value) is str:
            if search(value):
                return True
        elif type(value) is dict:
            stack.extend(value)
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return False


_LONG_DIGITS = re.compile(rb"-\d{19}|\d{20}")
"""Twenty digits in a row, or nineteen after a minus: maybe an integer orjson reads as a float
(beyond 64 bits; -9223372036854775809 is the first below)."""


class BigInt(float):
    """An integer past the double range, as a log wrote it: a number, ±inf (a score of it is
    refused as not finite, as any such number is), that keeps its digits in :attr:`text`,
    so that as an id it is the log's text (``int`` can't hold one past Python's 4,300-digit
    conversion limit without raising, and a double would merge neighbours)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> BigInt:
        self = super().__new__(cls, "-inf" if text.startswith("-") else "inf")
        self.text = text
        return self

    def __repr__(self) -> str:
        digits = len(self.text.lstrip("-"))
        return f"{'-' if self.text.startswith('-') else ''}<an integer of {digits} digits>"


def loads_exact(data: bytes | memoryview) -> Any:
    """As :func:`loads`, but integers beyond 64 bits are kept exact: a task id 10**29 + 1
    stays that number, not the double next to 10**29; one beyond the double range is a
    :class:`BigInt` (its digits kept).

    orjson reads such integers as floats, so two ids that differ in their last digits
    would become one task. Only a line holding twenty digits in a row (nineteen after a
    minus) pays for the second, exact parse (Python's ``json``).
    """
    obj = loads(data)
    if _LONG_DIGITS.search(data) is None:
        return obj
    return _loads_stdlib(bytes(data).decode("utf-8"), _int_exact)


_MAX_INT_DIGITS = 400
"""Digits past which an integer is past the double range without converting it (the double
range ends at 309 digits; ``int()`` refuses more than 4,300)."""


def _int_exact(text: str) -> int | float:
    if len(text) > _MAX_INT_DIGITS:
        return BigInt(text)
    value = int(text)
    return value if abs(value) <= _DOUBLE_MAX else BigInt(text)


_DOUBLE_MAX = int(sys.float_info.max)
"""Integers beyond this are beyond the double range: read as ±inf, as :func:`loads` does."""


def _refuse_constant(name: str) -> Any:
    raise orjson.JSONDecodeError(f"{name} is not JSON", name, 0)


def _int_as_orjson(text: str) -> int | float:
    if len(text) > _MAX_INT_DIGITS:
        return BigInt(text)
    value = int(text)
    if -(1 << 63) <= value < (1 << 64):
        return value
    return float(text) if abs(value) <= _DOUBLE_MAX else BigInt(text)


class LineParser:
    """Feeds the lines of one file into a :class:`RecordSink`, collecting problems.

    Each line goes first through :mod:`flaketui.loading.fastpath`, which skips
    the trace; lines it declines, and lines that are not valid UTF-8, are parsed
    in full with orjson, so the trials kept and the problems named are the same
    either way: :meth:`RecordSink.add` judges both.
    """

    def __init__(self, path: str, sink: RecordSink) -> None:
        self.path = path
        self.sink = sink
        self.named: list[Problem] = []
        """The first :data:`MAX_NAMED` problems, and every file-level one."""
        self.unnamed: dict[str, int] = {}
        """Lines skipped after those, counted by the start of their reason."""
        from flaketui.loading.fastpath import FastDecoder

        self.fast: FastDecoder = FastDecoder(sink.fields)

    def feed(self, raw: bytes | memoryview, offset: int, line: int, is_ascii: bool = False,
             what: str = "") -> None:
        """Parse one line (without its newline) that starts at byte ``offset``.

        ``is_ascii`` says the caller knows the line is ASCII (so valid UTF-8);
        ``what`` starts the reason of a problem (e.g. ``"item 3: "``).
        """
        if offset == 0 and bytes(raw[:3]) == BOM:
            raw = raw[3:]
            offset = 3
        obj: Any = None
        text = is_ascii or is_utf8(raw)
        if text:
            fast = self.fast
            obj = fast.loose(raw)
            if obj is None and fast.malformed:  # not JSON at all
                if not bytes(raw).strip() and len(self.named) >= MAX_NAMED:
                    return  # blank, past the lines named: nothing to count
                if self.counted(NOT_JSON):  # past the lines named
                    return
        elif self.counted(NOT_UTF8):  # orjson reads UTF-8 only: past the lines named
            return
        if obj is None:
            try:
                obj = loads_exact(raw)
            except orjson.JSONDecodeError as exc:
                if not bytes(raw).strip():
                    return  # blank line: nothing to say
                if not self.counted(NOT_JSON if text else NOT_UTF8):
                    self.named.append(Problem(self.path, line, what + _json_error(exc, raw)))
                return
        reason = self.sink.add(obj, offset, len(raw), line)
        if reason is not None and not self.counted(reason.split(" (")[0].split(",")[0]):
            self.named.append(Problem(self.path, line, what + reason))

    def _count(self, reason: str) -> None:
        self.unnamed[reason] = self.unnamed.get(reason, 0) + 1

    def count(self, reason: str, lines: int) -> None:
        """Count ``lines`` lines skipped for ``reason`` past the lines named (the caller knows
        the parser names no more)."""
        self.unnamed[reason] = self.unnamed.get(reason, 0) + lines

    def counted(self, reason: str) -> bool:
        """Past the :data:`MAX_NAMED` lines named, count a line skipped for ``reason`` (as the
        summary counts it: :data:`NOT_JSON`, :data:`NOT_UTF8`, a record's reason without its
        details) and say so; before, do nothing (the caller names the line)."""
        if len(self.named) < MAX_NAMED:
            return False
        self._count(reason)
        return True

    @property
    def problems(self) -> list[Problem]:
        """The problems named, then (if more lines were skipped) one that counts the rest."""
        if not self.unnamed:
            return self.named
        more = sum(self.unnamed.values())
        summary = "; ".join(f"{n} × {r}" for r, n in sorted(self.unnamed.items(), key=lambda x: -x[1]))
        return [*self.named, Problem(self.path, None, f"{more} more lines skipped after the first "
                                     f"{MAX_NAMED} named ({summary})")]


def is_utf8(raw: bytes | memoryview) -> bool:
    try:
        str(raw, "utf-8")
    except UnicodeDecodeError:
        return False
    return True


def read_range(
    path: str,
    start: int,
    end: int,
    parser: LineParser,
    first_line: int = 1,
    progress: Progress | None = None,
) -> int:
    """Parse the lines of a plain file that start in ``[start, end)``.

    ``start`` must be the start of a line. A last line without a newline is
    parsed if it ends the file. Returns the number of lines seen.

    The file is read into one reused buffer (a fresh 8 MB ``bytes`` per read
    costs more in page faults than the parsing saves). A line longer than the
    buffer is found to its end first and read into a buffer of its own size, so
    memory stays about the size of the longest line.
    """
    line = first_line
    buf = bytearray(BLOCK)
    view = memoryview(buf)
    filled = 0  # bytes of buf holding file data, from file offset `base`
    base = start
    with open_binary(path, buffering=0) as fh:
        fh.seek(start)
        while True:
            if filled == len(buf):  # one line fills the buffer
                stop = next_newline(fh, base + filled)
                long_line = bytearray(stop - base)
                fh.seek(base)
                fh.readinto(long_line)
                if long_line.strip():
                    parser.feed(memoryview(long_line), base, line, long_line.isascii())
                line += 1
                del long_line
                if progress:  # the buffer's bytes were counted as they were read
                    progress(max(0, stop + 1 - base - filled))
                base, filled = stop + 1, 0
                fh.seek(base)
                if base >= end:
                    break
                continue
            got = fh.readinto(view[filled:])
            if not got:
                if filled and base < end and bytes(view[:filled]).strip():
                    parser.feed(bytes(view[:filled]), base, line)
                    line += 1
                break
            filled += got
            is_ascii = buf.isascii() if filled == len(buf) else bytes(view[:filled]).isascii()
            i = 0
            find = buf.find
            while base + i < end:
                j = find(b"\n", i, filled)
                if j < 0:
                    break
                parser.feed(view[i:j], base + i, line, is_ascii)
                line += 1
                i = j + 1
            if progress:
                progress(got)
            if base + i >= end:
                break
            # keep the partial last line at the front of the buffer
            rest = filled - i
            if rest and i:
                view[:rest] = view[i:filled]
            base += i
            filled = rest
    view.release()
    return line - first_line


def next_newline(fh: Any, pos: int) -> int:
    """File offset of the first newline at or after ``pos`` (the file's size if none),
    scanning in blocks so that a long line is never held whole."""
    scratch = bytearray(BLOCK)
    fh.seek(pos)
    while True:
        got = fh.readinto(scratch)
        if not got:
            return pos
        j = scratch.find(b"\n", 0, got)
        if j >= 0:
            return pos + j
        pos += got


def read_gzip(path: str, parser: LineParser, progress: Progress | None = None) -> None:
    """Parse a gzip-compressed JSONL file; offsets are in the decompressed stream.

    A truncated or corrupt stream keeps every complete line read before the
    damage and names the damage as a problem; so does a stream that expands beyond
    :data:`GZIP_MAX_BYTES` or :data:`GZIP_MAX_RATIO` (a decompression bomb is refused
    after a few megabytes, not read to its end). ``progress`` is given the
    compressed bytes consumed, the whole file's size in all.
    """
    import gzip
    import zlib

    offset = 0  # of the first byte of buf, in the decompressed stream
    line = 1
    reported = 0
    buf = bytearray()
    with open_binary(path) as packed:
        try:
            with gzip.open(packed, "rb") as fh:
                total = 0
                while True:
                    block = fh.read1(GZIP_BLOCK)  # what one read inflates: a cut stream keeps it
                    if not block:
                        break
                    total += len(block)
                    refused = _inflated_too_much(total, packed.tell())
                    if refused:
                        parser.named.append(Problem(path, line, f"{refused}; lines before this one were kept"))
                        buf.clear()
                        break
                    scan = len(buf)
                    buf += block
                    start = 0
                    find = buf.find
                    while True:
                        j = find(b"\n", scan)
                        if j < 0:
                            break
                        if j > start:
                            body = bytes(buf[start:j])
                            parser.feed(body, offset + start, line, body.isascii())
                        line += 1
                        start = scan = j + 1
                    del buf[:start]
                    offset += start
                    if progress:
                        at = packed.tell()
                        progress(at - reported)
                        reported = at
            if buf:  # a last line without a newline
                body = bytes(buf)
                parser.feed(body, offset, line, body.isascii())
        except EOFError:
            parser.named.append(
                Problem(path, line, "gzip stream is truncated; lines before this one were kept")
            )
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            parser.named.append(Problem(path, line, f"not a readable gzip file ({exc})"))
        if progress:
            progress(file_size(packed) - reported)


GZIP_BLOCK = 1 << 20
"""Decompressed bytes read at a time from a gzip file (the bomb check runs per block)."""


def _inflated_too_much(total: int, consumed: int) -> str | None:
    """Why ``total`` decompressed bytes from ``consumed`` compressed ones are refused, if they are."""
    if total > GZIP_MAX_BYTES:
        return (f"gzip stream expands beyond {GZIP_MAX_BYTES >> 30} GB; refused as a likely "
                "decompression bomb")
    if total > GZIP_RATIO_FLOOR and total > GZIP_MAX_RATIO * max(consumed, 1):
        return (f"gzip stream expands more than {GZIP_MAX_RATIO} times ({total} bytes from "
                f"{consumed}); refused as a likely decompression bomb")
    return None


def read_gzip_whole(path: str, parser: LineParser) -> bytes | None:
    """The decompressed bytes of a gzip file (a ``.json.gz`` array), or ``None`` with the
    damage (or a decompression bomb, see :func:`read_gzip`) named as a problem."""
    import gzip
    import zlib

    chunks = []
    total = 0
    try:
        with open_binary(path) as packed, gzip.open(packed, "rb") as fh:
            while block := fh.read(GZIP_BLOCK):
                total += len(block)
                refused = _inflated_too_much(total, packed.tell())
                if refused:
                    parser.named.append(Problem(path, None, refused))
                    return None
                chunks.append(block)
        return b"".join(chunks)
    except EOFError:
        parser.named.append(Problem(path, None, "gzip stream is truncated"))
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        parser.named.append(Problem(path, None, f"not a readable gzip file ({exc})"))
    return None


def read_json_array(path: str, parser: LineParser, data: bytes) -> None:
    """Parse a ``.json`` file holding one array of trial objects (τ-bench's results).

    A trial's "line" is its 1-based position in the array; its offset and length
    are the byte span of its item in the file, so that its trace is read back
    without parsing the whole file again. msgspec splits the array into items
    without building them; each item is then read like a JSONL line.

    A ``.json`` file that holds JSON Lines instead (its first line one whole
    object, more after it) is read as such: lines, numbered as lines.
    """
    import msgspec

    start = 3 if data.startswith(BOM) else 0
    body = memoryview(data)[start:]
    try:
        if not (data.isascii() or is_utf8(body)):
            raise ValueError("not UTF-8")
        items = msgspec.json.decode(body, type=list[msgspec.Raw] | dict[str, msgspec.Raw])
    except RecursionError:
        parser.named.append(Problem(path, None, "nested too deeply to split into items"))
        return
    except (msgspec.DecodeError, ValueError):
        if _holds_lines(data, start):
            view = memoryview(data)
            pos, line = start, 1
            while pos < len(data):
                end = data.find(b"\n", pos)
                end = len(data) if end < 0 else end
                parser.feed(view[pos:end], pos, line)
                pos, line = end + 1, line + 1
            return
        try:
            loads(body)  # for orjson's words about what is wrong
            reason = "a .json log must hold an array of trial objects"
        except orjson.JSONDecodeError as exc:
            reason = _json_error(exc, body)
        parser.named.append(Problem(path, None, reason))
        return
    if isinstance(items, dict):
        spans = [(start + (len(body) - len(bytes(body).lstrip())), bytes(body).strip())]
    else:
        spans = []
        pos = start
        for raw in items:
            item = memoryview(raw)
            at = data.find(item, pos)  # the next copy of the item's bytes is the item
            spans.append((at, item))
            pos = at + len(item)
    for i, (offset, item) in enumerate(spans):
        parser.feed(item, offset, i + 1, what=f"item {i + 1}: ")


def _holds_lines(data: bytes, start: int) -> bool:
    """Whether ``data`` (from ``start``) is JSON Lines: a first line that is one whole
    object, and more than blanks after it."""
    end = data.find(b"\n", start)
    if end < 0 or not data[end:].strip():
        return False
    try:
        return isinstance(loads(data[start:end]), dict)
    except orjson.JSONDecodeError:
        return False


_KINDS = ("jsonl", "jsonl.gz", "json", "json.gz")


def _read_span(path: str, kind: str, offset: int, length: int) -> bytes:
    """``length`` bytes from ``offset`` (see :class:`~flaketui.model.Source`), in the
    decompressed stream for the ``.gz`` kinds."""
    if kind not in _KINDS:
        raise ValueError(f"kind ({kind!r}) must be one of jsonl, jsonl.gz, json, json.gz")
    try:
        if kind.endswith(".gz"):
            import gzip

            with open_binary(path) as packed, gzip.open(packed, "rb") as fh:
                fh.seek(offset)
                return fh.read(length)
        with open_binary(path, stream=False) as fh:
            fh.seek(offset)
            return fh.read(length)
    except ValueError as exc:  # an HTTP server that ignores Range: read from the start instead
        if not no_ranges(path, exc):
            raise
    with open_stream(path) as raw:
        if kind.endswith(".gz"):
            import gzip

            with gzip.open(raw, "rb") as fh:
                return skip_then_read(fh, offset, length)
        return skip_then_read(raw, offset, length)


def read_line_at(path: str, kind: str, offset: int, length: int) -> Any:
    """Read back the JSON object stored at ``offset`` (see :class:`~flaketui.model.Source`):
    ``length`` bytes from ``offset``, in the decompressed stream for the ``.gz`` kinds."""
    return loads(_read_span(path, kind, offset, length))


def read_object(path: str, kind: str, offset: int, length: int, trace_names: tuple[str, ...],
                max_steps: int | None) -> tuple[Any, int | None]:
    """The object stored at ``offset`` (as :func:`read_line_at`) and, when its trace was cut
    to ``max_steps`` steps, the trace's full number of steps (else ``None``).

    With ``max_steps``, only the steps kept are built as Python objects (a 100 MB trace
    opens in its first few steps' memory). Every value is read by :func:`loads`, as
    :func:`read_fields` reads it: one answer for a field whichever route reads it.
    """
    data = _read_span(path, kind, offset, length)
    if max_steps is not None and data:
        obj, total = _cut(data, trace_names, max_steps)
        if obj is not None:
            return obj, total
    return loads(data), None


def _cut(data: bytes, trace_names: tuple[str, ...], max_steps: int) -> tuple[dict[str, Any] | None, int | None]:
    """The object of ``data`` with its trace cut to ``max_steps`` steps, and the number of
    steps; (None, None) when it can't be read that way (the caller reads it whole)."""
    import msgspec

    try:
        raw = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        obj: dict[str, Any] = {}
        total = None
        for key, value in raw.items():
            if key in trace_names and total is None and bytes(memoryview(value)[:1]) == b"[":
                steps = msgspec.json.decode(value, type=list[msgspec.Raw])
                total = len(steps)
                obj[key] = [loads(memoryview(step)) for step in steps[:max_steps]]
            else:
                obj[key] = loads(memoryview(value))  # orjson reads a buffer, not a Raw
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None, None
    return obj, total


def read_fields(path: str, kind: str, spans: list[tuple[int, int]],
                names: tuple[str, ...]) -> list[dict[str, Any] | None]:
    """The fields ``names`` of the objects stored at ``spans`` (``(offset, length)`` pairs):
    per span a dict of those present, ``None`` where it can't be read (gone, cut short, not
    an object). A local plain file is mapped once and only those fields are built (one
    :func:`read_object` per trial of a 200k-task plan opened the file 200,000 times, 12 s);
    each value is read by :func:`loads`, as :func:`read_object` reads it."""
    if not spans:
        return []
    if kind not in ("jsonl", "json") or is_url(path):
        out: list[dict[str, Any] | None] = []
        for offset, length in spans:
            try:
                obj = read_line_at(path, kind, offset, length)
            except (OSError, ValueError, RecursionError):
                obj = None
            out.append({n: obj[n] for n in names if n in obj} if isinstance(obj, dict) else None)
        return out
    import mmap

    import msgspec

    decode = _fields_decoder(names)
    found: list[dict[str, Any] | None] = [None] * len(spans)
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            size = len(mm)
            for i, (offset, length) in enumerate(spans):
                if offset < 0 or length < 0 or offset + length > size:
                    continue
                try:
                    values = msgspec.structs.astuple(decode(mm[offset:offset + length]))
                    found[i] = {n: loads(memoryview(raw)) for n, raw in zip(names, values, strict=True)
                                if raw is not None}
                except (msgspec.DecodeError, ValueError, RecursionError):
                    continue
    except (OSError, ValueError):  # gone, or empty
        pass
    return found


_FIELD_DECODERS: dict[tuple[str, ...], Any] = {}


def _fields_decoder(names: tuple[str, ...]) -> Any:
    """A decoder of an object's fields ``names`` as raw JSON (``None``: absent; a null is
    ``null``), every other field skipped unbuilt."""
    decode = _FIELD_DECODERS.get(names)
    if decode is None:
        import msgspec

        struct = msgspec.defstruct("Fields", [(f"f{i}", msgspec.Raw, None) for i in range(len(names))],
                                   rename={f"f{i}": n for i, n in enumerate(names)})
        decode = _FIELD_DECODERS[names] = msgspec.json.Decoder(struct).decode
    return decode
