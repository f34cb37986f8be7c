"""What the JSON-object formats share: the trials of a JSON object that sit in one of its
arrays (``--records-field``, τ²-bench's ``simulations``, Terminal-Bench's ``results``),
found with their byte spans so that each is read back alone, and :class:`HarnessJson`,
the base of the readers that turn one harness's record into a flaketui trial.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import LogFormat, Record, Tick, finish
from flaketui.loading.jsonl import BOM, loads, loads_exact, read_line_at
from flaketui.loading.location import open_binary
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem, Source

Item = tuple[int, bytes]
"""One array item: its byte offset in the file, and its bytes."""


def flat_head(head: bytes) -> bytes:
    """A file's first bytes without whitespace or a byte-order mark, to match key sequences
    (``{"resourceSpans":``) however the file is indented."""
    return b"".join(head.removeprefix(BOM).split())


class Unreadable(ValueError):
    """The file (not one record) can't be read: the message says why."""


def top_fields(data: bytes) -> dict[str, Any]:
    """The top-level fields of a JSON object, each value still raw (``msgspec.Raw``).

    Raises
    ------
    Unreadable
        If ``data`` is not one JSON object.
    """
    import msgspec

    body = data[3:] if data.startswith(BOM) else data
    try:
        return msgspec.json.decode(body, type=dict[str, msgspec.Raw])
    except RecursionError:
        raise Unreadable("nested too deeply to split into items") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        try:
            loads(body)
        except (ValueError, RecursionError) as inner:  # orjson says best what is wrong
            raise Unreadable(f"not valid JSON ({inner})") from None
        raise Unreadable(f"not a JSON object ({exc})") from None


def array_items(data: bytes, top: dict[str, Any], path: str) -> list[Item]:
    """The items of the array at the dotted field ``path`` of the object ``top`` (parsed from
    ``data``), each with its byte offset in ``data``.

    Raises
    ------
    Unreadable
        If the path leads nowhere or not to an array.
    """
    import msgspec

    fields = top
    parts = path.split(".")
    raw = None
    for i, part in enumerate(parts):
        if part not in fields:
            where = ".".join(parts[:i]) or "the top level"
            have = ", ".join(f'"{k}"' for k in list(fields)[:12])
            raise Unreadable(f'no field "{part}" at {where} (fields: {have})')
        raw = fields[part]
        if i < len(parts) - 1:
            try:
                fields = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
            except msgspec.DecodeError:
                raise Unreadable(f'"{".".join(parts[: i + 1])}" is not an object') from None
    try:
        items = msgspec.json.decode(raw, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        raise Unreadable(f'"{path}" is not an array') from None
    view = memoryview(raw)
    pos = data.find(view)
    out = []
    for item in items:
        mv = memoryview(item)
        at = data.find(mv, pos)  # the next copy of the item's bytes is the item
        out.append((at, bytes(mv)))
        pos = at + len(mv)
    return out


def trial_arrays(top: dict[str, Any]) -> list[str]:
    """The top-level fields that hold a non-empty array whose first item is an object: where
    the trials of a wrapped JSON object would be."""
    out = []
    for key, raw in top.items():
        head = bytes(memoryview(raw)[:64]).lstrip()
        if head.startswith(b"[") and head[1:].lstrip().startswith(b"{"):
            out.append(key)
    return out


Convert = Callable[[dict[str, Any]], "dict[str, Any] | str"]


class HarnessJson(LogFormat):
    """A JSON object (``.json``) whose trials sit in one array field (:attr:`records`), or one
    trial alone (a per-trial file); a subclass's :meth:`convert` turns one harness record into
    flaketui's field names (``task``, ``trial``, ``passed``/``score``, ``error``, ``metrics``,
    ``trace``, ``run``). A trial's line is its 1-based position in the array."""

    suffixes: ClassVar[tuple[str, ...]] = (".json",)
    records: ClassVar[str] = ""
    """The top-level field holding the array of trial records."""

    def convert(self, obj: dict[str, Any], fields: FieldMap) -> dict[str, Any] | str:
        """One harness record in flaketui's field names, or the reason it can't be a trial."""
        raise NotImplementedError

    def single(self, top: dict[str, Any]) -> bool:
        """Whether the object is one trial record itself (a per-trial file)."""
        return False

    def file_run(self, path: Path, top: dict[str, Any], fields: FieldMap, default_run: str) -> str:
        """The run of every trial of this file that names none itself."""
        return default_run

    def items(self, path: Path, data: bytes, top: dict[str, Any]) -> list[Item]:
        """The records of the file, with their byte offsets."""
        if self.single(top):
            start = 3 if data.startswith(BOM) else 0
            body = data[start:]
            return [(start + len(body) - len(body.lstrip()), body.strip())]
        return array_items(data, top, self.records)

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if size == 0:
            return Parsed.empty([Problem(spath, None, "empty file, no trials")])
        with open_binary(path) as fh:
            data = fh.read()
        tick(size)
        try:
            top = top_fields(data)
            items = self.items(path, data, top)
            run = self.file_run(path, top, fields, default_run)
        except Unreadable as exc:
            return Parsed.empty([Problem(spath, None, str(exc))])
        sink = RecordSink(FieldMap(threshold=fields.threshold), run)
        problems: list[Problem] = []
        for i, (offset, raw) in enumerate(items, start=1):
            reason = self._add(sink, raw, offset, i, fields)
            if reason is not None:
                problems.append(Problem(spath, i, f"item {i}: {reason}"))
        return finish(spath, sink, problems)

    def _add(self, sink: RecordSink, raw: bytes, offset: int, line: int, fields: FieldMap) -> str | None:
        try:
            obj = loads_exact(raw)  # an id past 64 bits stays that number
        except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError, and bad UTF-8
            return f"not valid JSON ({exc})"
        if not isinstance(obj, dict):
            return "not a JSON object"
        rec = self.convert(obj, fields)
        if isinstance(rec, str):
            return rec
        return sink.add(rec, offset, len(raw), line)

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        obj = read_line_at(source.path, "json", offset, length)
        rec = self.convert(obj, FieldMap()) if isinstance(obj, dict) else {}
        if isinstance(rec, str):
            rec = {}
        merged = {k: v for k, v in obj.items() if k not in rec}
        merged.update(rec)
        return Record(merged, None)


def error_text(value: Any) -> str:
    """A harness's error, as one short line of text."""
    text = value if isinstance(value, str) else str(value)
    line = text.strip().splitlines()[0] if text.strip() else "error"
    return line[:300]
