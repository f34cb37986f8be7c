"""JSON Lines: one trial object per line (``.jsonl``, ``.ndjson``, and gzip-compressed
``.gz`` of either). Also the format of any file no other format claims.

A local plain file is read by the C scanner where it is built and takes the field map
(:mod:`flaketui.loading.scan`; from :data:`PARALLEL_BYTES` up, one thread per core scanning
blocks ahead), else by the per-line parser (:class:`~flaketui.loading.jsonl.LineParser`;
from :data:`PARALLEL_BYTES` up, the file split at line boundaries and parsed by a process
pool, one process per core). Both judge a trial by one rule
(:meth:`~flaketui.loading.records.RecordSink.add`). A trial's offset and length are the byte
span of its line (in the decompressed stream for ``.gz``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from flaketui.loading.formats.base import JsonSpans, Tick, finish
from flaketui.loading.jsonl import LineParser, next_newline, read_gzip, read_range
from flaketui.loading.location import is_url
from flaketui.loading.parsed import Merger, Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem

PARALLEL_BYTES = 64 << 20
"""Plain files at least this large are parsed by several threads (or processes)."""


class JsonLines(JsonSpans):
    """flaketui's own format (README, "The trial log"), plain or gzip-compressed."""

    suffixes: ClassVar[tuple[str, ...]] = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
    kinds: ClassVar[tuple[str, ...]] = ("jsonl", "jsonl.gz")

    def matches(self, path: Path, head: bytes) -> bool:
        """Every file: JSON Lines is the format of last resort (keep it last in ``FORMATS``)."""
        return True

    def kind_of(self, path: Path) -> str:
        return "jsonl.gz" if path.name.lower().endswith(".gz") else "jsonl"

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if size == 0:
            return Parsed.empty([Problem(spath, None, "empty file, no trials")])
        gzipped = self.kind_of(path) == "jsonl.gz"
        many = size >= PARALLEL_BYTES and (workers or os.cpu_count() or 1) > 1
        local = not gzipped and not is_url(path)
        if local:
            from flaketui.loading.scan import parse_range, scans

            if scans(fields):  # the C scanner, with a thread per core on a large file
                threads = (workers or os.cpu_count() or 1) if many else 1
                parsed, _ = parse_range(spath, 0, size, fields, default_run, progress=tick, threads=threads)
                if len(parsed) == 0 and not parsed.problems:
                    parsed.problems.append(Problem(spath, None, "no trials in this file"))
                return parsed
            if many:  # the per-line parser in a process per core
                return _read_parallel(spath, size, fields, default_run, workers, tick)
        sink = RecordSink(fields, default_run)
        parser = LineParser(spath, sink)
        if gzipped:
            read_gzip(spath, parser, progress=tick)
        else:
            read_range(spath, 0, size, parser, progress=tick)
        return finish(spath, sink, parser.problems)

    def appendable(self, path: Path) -> bool:
        return self.kind_of(path) == "jsonl"

    def read_lines(self, path: Path, start: int, end: int, first_line: int, fields: FieldMap,
                   default_run: str) -> tuple[Parsed, int]:
        if not is_url(path):  # lines appended to a local file (--watch): the C scanner where it reads them
            from flaketui.loading import scan

            return scan.parse_range(str(path), start, end, fields, default_run, first_line)
        sink = RecordSink(fields, default_run)
        parser = LineParser(str(path), sink)
        lines = read_range(str(path), start, end, parser, first_line=first_line) if end > start else 0
        return Parsed.from_sink(sink, parser.problems), lines


def _split_points(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets that start lines, cutting the file into about ``parts`` pieces."""
    points = [0]
    with open(path, "rb", buffering=0) as fh:
        for i in range(1, parts):
            pos = next_newline(fh, size * i // parts) + 1
            if points[-1] < pos < size:
                points.append(pos)
    points.append(size)
    return points


def _parse_range(args: tuple[str, int, int, FieldMap, str]) -> tuple[Parsed, int]:
    """The process pool's job: the per-line reader of ``[start, end)`` of a plain file,
    ``args`` ``(path, start, end, fields, default_run)``, lines numbered from 1."""
    path, start, end, fields, default_run = args
    sink = RecordSink(fields, default_run)
    parser = LineParser(path, sink)
    lines = read_range(path, start, end, parser)
    return Parsed.from_sink(sink, parser.problems), lines


def _read_parallel(path: str, size: int, fields: FieldMap, default_run: str,
                   workers: int | None, tick: Tick) -> Parsed:
    """Parse byte ranges of a plain file in a process pool; one result for the whole file."""
    from concurrent.futures import ProcessPoolExecutor

    nproc = workers or os.cpu_count() or 1
    points = _split_points(path, size, nproc * 4)
    jobs = [(path, a, b, fields, default_run) for a, b in zip(points, points[1:], strict=False)]
    pieces = Merger()
    with ProcessPoolExecutor(max_workers=nproc) as pool:
        line_base = 0
        for (_, a, b, _, _), (piece, lines) in zip(jobs, pool.map(_parse_range, jobs), strict=True):
            pieces.add(piece, line_base)
            line_base += lines
            tick(b - a)
    return pieces.parsed()
