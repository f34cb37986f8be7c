"""Streaming readers for JSONL (plain or gzip) and JSON-array trial logs.

Every line is parsed with orjson; a line that can't be used becomes a
:class:`~flaketui.model.Problem` naming the file and line, and reading goes on.
Plain files are read in blocks by byte range, so a large file can be split
between processes (see :mod:`flaketui.loading.loader`).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from typing import Any

import orjson

from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem

BLOCK = 8 << 20
"""Bytes read at a time from a plain JSONL file."""
BOM = b"\xef\xbb\xbf"

Progress = Callable[[int], None]
"""Called with the number of bytes just consumed."""


def _json_error(exc: Exception, raw: bytes | memoryview | None = None) -> str:
    msg = str(exc)
    if "utf-8" in msg.lower() or "utf8" in msg.lower():
        return "not valid UTF-8"
    pos = getattr(exc, "pos", None)
    if raw is not None and isinstance(pos, int):
        rest = bytes(raw[pos : pos + 9])
        if rest.startswith((b"NaN", b"Infinity", b"-Infinity")):
            return f"not valid JSON ({msg}; NaN and Infinity are not JSON)"
    return f"not valid JSON ({msg})"


class LineParser:
    """Feeds the lines of one file into a :class:`RecordSink`, collecting problems."""

    def __init__(self, path: str, sink: RecordSink) -> None:
        self.path = path
        self.sink = sink
        self.problems: list[Problem] = []

    def feed(self, raw: bytes | memoryview, offset: int, line: int) -> None:
        """Parse one line (without its newline) that starts at byte ``offset``."""
        if offset == 0 and bytes(raw[:3]) == BOM:
            raw = raw[3:]
            offset = 3
        text = raw
        try:
            obj: Any = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            if not bytes(raw).strip():
                return  # blank line: nothing to say
            self.problems.append(Problem(self.path, line, _json_error(exc, raw)))
            return
        reason = self.sink.add(obj, offset, len(raw), line)
        if reason is not None:
            self.problems.append(Problem(self.path, line, reason))


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
    """
    line = first_line
    with open(path, "rb") as fh:
        fh.seek(start)
        pos = start
        carry = b""
        while True:
            block = fh.read(BLOCK)
            if not block:
                if carry.strip() and pos - len(carry) < end:
                    parser.feed(carry, pos - len(carry), line)
                    line += 1
                break
            data = carry + block if carry else block
            base = pos - len(carry)
            pos += len(block)
            view = memoryview(data)
            i = 0
            while True:
                j = data.find(b"\n", i)
                if j < 0 or base + i >= end:
                    break
                parser.feed(view[i:j], base + i, line)
                line += 1
                i = j + 1
            carry = data[i:]
            if progress:
                progress(len(block))
            if base + i >= end:
                break
    return line - first_line


def read_gzip(path: str, parser: LineParser, progress: Progress | None = None) -> None:
    """Parse a gzip-compressed JSONL file; offsets are in the decompressed stream.

    A truncated or corrupt stream keeps every complete line read before the
    damage and names the damage as a problem.
    """
    offset = 0
    line = 1
    try:
        with gzip.open(path, "rb") as fh:
            for raw in fh:
                body = raw[:-1] if raw.endswith(b"\n") else raw
                parser.feed(body, offset, line)
                offset += len(raw)
                line += 1
                if progress and line % 4096 == 0:
                    progress(0)
    except EOFError:
        parser.problems.append(
            Problem(path, line, "gzip stream is truncated; lines before this one were kept")
        )
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        parser.problems.append(Problem(path, line, f"not a readable gzip file ({exc})"))


def read_json_array(path: str, parser: LineParser, data: bytes) -> None:
    """Parse a ``.json`` file holding one array of trial objects (τ-bench's results).

    A trial's "line" is its 1-based position in the array and its offset the
    0-based index, used to read its trace back.
    """
    if data.startswith(BOM):
        data = data[3:]
    try:
        items = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        parser.problems.append(Problem(path, None, _json_error(exc)))
        return
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        parser.problems.append(Problem(path, None, "a .json log must hold an array of trial objects"))
        return
    for i, obj in enumerate(items):
        reason = parser.sink.add(obj, i, -1, i + 1)
        if reason is not None:
            parser.problems.append(Problem(path, i + 1, f"item {i + 1}: {reason}"))


def read_line_at(path: str, kind: str, offset: int, length: int) -> Any:
    """Read back the JSON object stored at ``offset`` (see :class:`~flaketui.model.Source`)."""
    if kind == "jsonl":
        with open(path, "rb") as fh:
            fh.seek(offset)
            return orjson.loads(fh.read(length))
    if kind == "jsonl.gz":
        with gzip.open(path, "rb") as fh:
            fh.seek(offset)
            return orjson.loads(fh.readline())
    if kind == "json":
        with open(path, "rb") as fh:
            data = fh.read()
        if data.startswith(BOM):
            data = data[3:]
        items = orjson.loads(data)
        return items[offset] if isinstance(items, list) else items
    raise ValueError(f"kind ({kind!r}) must be one of jsonl, jsonl.gz, json")
