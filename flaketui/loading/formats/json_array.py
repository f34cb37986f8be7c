"""JSON arrays of trial objects (``.json``, and gzip-compressed ``.json.gz``): τ-bench's
results files. A trial's "line" is its 1-based position in the array; its offset and
length are the byte span of its item (in the decompressed bytes for ``.json.gz``).
A ``.json`` file holding JSON Lines instead is read as lines (see
:func:`flaketui.loading.jsonl.read_json_array`).

A JSON *object* is one trial, unless ``--records-field PATH`` (dotted) names the array
inside it that holds the trials; an object that is no trial but holds exactly one array
of objects is named in the problem, with the option to give.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from flaketui.loading.formats.base import JsonSpans, Tick, finish
from flaketui.loading.formats.wrapped import Unreadable, array_items, top_fields, trial_arrays
from flaketui.loading.jsonl import LineParser, read_gzip_whole, read_json_array
from flaketui.loading.location import open_binary
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem


class JsonArray(JsonSpans):
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
        else:
            with open_binary(path) as fh:
                data = fh.read()
        if data is not None and not _read_wrapped(spath, parser, data):
            read_json_array(spath, parser, data)
        tick(size)
        return finish(spath, sink, parser.problems)


def _read_wrapped(path: str, parser: LineParser, data: bytes) -> bool:
    """Read the trials of a JSON object (``--records-field``), or name the array that seems
    to hold them; ``False`` when the file is left to :func:`read_json_array`."""
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return False
    fields = parser.sink.fields
    try:
        top = top_fields(data)
    except Unreadable:
        return False  # read_json_array names the fault
    if fields.records_field is None:
        if any(name.split(".")[0] in top for name in fields.task):
            return False  # the object is one trial
        arrays = trial_arrays(top)
        if len(arrays) != 1:
            return False
        parser.named.append(Problem(
            path, None, f'no task field ({" or ".join(fields.task)}) in this JSON object; the trials '
            f'look like they are in "{arrays[0]}": add --records-field {arrays[0]}'))
        return True
    try:
        items = array_items(data, top, fields.records_field)
    except Unreadable as exc:
        parser.named.append(Problem(path, None, f"--records-field {fields.records_field}: {exc}"))
        return True
    for i, (offset, item) in enumerate(items, start=1):
        parser.feed(item, offset, i, what=f"item {i}: ")
    return True
