"""JSON arrays of trial objects (``.json``, and gzip-compressed ``.json.gz``): τ-bench's
results files. A trial's "line" is its 1-based position in the array; its offset and
length are the byte span of its item (in the decompressed bytes for ``.json.gz``).
A ``.json`` file holding JSON Lines instead is read as lines (see
:func:`flaketui.loading.jsonl.read_json_array`).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from flaketui.loading.formats.base import LogFormat, Record, Tick, finish
from flaketui.loading.jsonl import LineParser, read_gzip_whole, read_json_array, read_object
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem, Source


class JsonArray(LogFormat):
    """One JSON array (or one object) per file, read whole."""

    suffixes: ClassVar[tuple[str, ...]] = (".json", ".json.gz")
    kinds: ClassVar[tuple[str, ...]] = ("json", "json.gz")

    def matches(self, path: Path, head: bytes) -> bool:
        return path.name.lower().endswith(self.suffixes)

    def kind_of(self, path: Path) -> str:
        return "json.gz" if path.name.lower().endswith(".gz") else "json"

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if size == 0:
            return Parsed.empty([Problem(spath, None, "empty file, no trials")])
        sink = RecordSink(fields, default_run)
        parser = LineParser(spath, sink)
        if self.kind_of(path) == "json.gz":
            data = read_gzip_whole(spath, parser)
            if data is not None:
                read_json_array(spath, parser, data)
        else:
            with open(spath, "rb") as fh:
                read_json_array(spath, parser, fh.read())
        tick(size)
        return finish(spath, sink, parser.problems)

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        return Record(*read_object(source.path, source.kind, offset, length, trace_names, max_steps))
