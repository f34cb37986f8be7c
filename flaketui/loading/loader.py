"""Load trial logs from files, directories and globs into one :class:`TrialLog`.

Plain JSONL files larger than :data:`PARALLEL_BYTES` are split at line
boundaries and parsed by a process pool (one process per core); everything else
is parsed in this process. The parsed pieces are merged in file order, trials
without a ``trial`` number are numbered by order of appearance within their run
and task, and a repeated (run, task, trial) keeps its first occurrence.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flaketui.loading import cache
from flaketui.loading.jsonl import (
    LineParser,
    next_newline,
    read_gzip,
    read_gzip_whole,
    read_json_array,
    read_line_at,
    read_range,
)
from flaketui.loading.records import RecordSink, is_error
from flaketui.model import FieldMap, InputError, Problem, Source, Trial, TrialLog

LOG_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".ndjson.gz", ".eval")
"""What a directory is searched for."""
PARALLEL_BYTES = 64 << 20
"""Plain files at least this large are parsed by several processes."""

ProgressFn = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while loading."""


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".json.gz"):
        return "json.gz"
    if name.endswith(".gz"):
        return "jsonl.gz"
    if name.endswith(".json"):
        return "json"
    return "jsonl"


def run_name_for(path: Path) -> str:
    """The default run name of a file: its name without extensions."""
    name = path.name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json", ".eval"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Expand files, directories (every log file inside, recursively) and globs.

    Raises
    ------
    InputError
        If a path does not exist, a glob matches nothing, or a directory holds no log.
    """
    out: list[Path] = []
    for raw in paths:
        text = os.fspath(raw)
        if any(ch in text for ch in "*?[") and not os.path.exists(text):
            from flaketui.triage import is_triage_file  # only here: its imports cost 8 ms

            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise InputError(f"{text}: no file matches this pattern")
            out.extend(Path(m) for m in matches if os.path.isfile(m) and not is_triage_file(m))
            continue
        path = Path(text)
        if path.is_dir():
            from flaketui.triage import is_triage_file

            found = sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.name.lower().endswith(LOG_SUFFIXES)
                and not is_triage_file(p.name)
            )
            if not found:
                raise InputError(f"{path}: directory holds no .jsonl, .jsonl.gz, .json or .eval log")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        elif path.exists():
            raise InputError(f"{path}: not a regular file")
        else:
            raise InputError(f"{path}: no such file or directory")
    seen: set[Path] = set()
    unique = []
    for p in out:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique


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


def _parse_range(args: tuple[str, int, int, FieldMap, str]) -> tuple[dict[str, Any], int]:
    """Worker: parse ``[start, end)`` of a plain file; line numbers are relative (from 1)."""
    path, start, end, fields, default_run = args
    sink = RecordSink(fields, default_run)
    parser = LineParser(path, sink)
    lines = read_range(path, start, end, parser)
    return _sink_state(sink, parser.problems), lines


def _sink_state(sink: RecordSink, problems: list[Problem]) -> dict[str, Any]:
    return {
        "runs": list(sink.runs),
        "tasks": list(sink.tasks),
        "groups": list(sink.groups),
        "columns": {
            name: np.frombuffer(getattr(sink, name), dtype=getattr(sink, name).typecode).copy()
            if len(getattr(sink, name))
            else np.empty(0, dtype=getattr(sink, name).typecode)
            for name in (
                "run", "task", "group", "trial", "outcome", "score",
                "offset", "length", "line", "has_trace",
            )
        },
        "metrics": {k: np.frombuffer(v, dtype="d").copy() for k, v in sink.metrics.items()},
        "problems": problems,
    }


class _Merger:
    """Collects parsed pieces and builds one :class:`TrialLog`."""

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self.runs: dict[str, int] = {}
        self.tasks: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        self.pieces: list[dict[str, np.ndarray]] = []
        self.metric_pieces: list[dict[str, np.ndarray]] = []
        self.problems: list[Problem] = []

    @staticmethod
    def _remap(table: dict[str, int], names: list[str]) -> np.ndarray:
        return np.array([table.setdefault(n, len(table)) for n in names], dtype=np.int32)

    def add(self, state: dict[str, Any], source: int, line_base: int = 0) -> None:
        cols = dict(state["columns"])
        count = cols["run"].shape[0]
        for key, table in (("run", self.runs), ("task", self.tasks), ("group", self.groups)):
            names = state[key + "s"]
            if not table:  # the first piece: its ids are the merged ids
                table.update(zip(names, range(len(names)), strict=True))
                cols[key] = cols[key].astype(np.int32, copy=False)
                continue
            mapping = self._remap(table, names)
            idx = cols[key].astype(np.int32)
            if key == "group":
                cols[key] = np.where(idx >= 0, mapping[np.maximum(idx, 0)] if mapping.size else -1, -1)
            else:
                cols[key] = mapping[idx] if count else idx
        if line_base:
            cols["line"] = cols["line"] + line_base
        cols["source"] = np.full(count, source, dtype=np.int32)
        self.pieces.append(cols)
        self.metric_pieces.append(state["metrics"])
        for p in state["problems"]:
            line = None if p.line is None else p.line + line_base
            self.problems.append(Problem(p.path, line, p.reason))

    def state(self) -> dict[str, Any]:
        """The pieces added so far as one parsed state (as :func:`_sink_state` gives)."""
        columns = {
            name: (self.pieces[0][name] if len(self.pieces) == 1
                   else np.concatenate([p[name] for p in self.pieces]) if self.pieces
                   else np.empty(0))
            for name in ("run", "task", "group", "trial", "outcome", "score", "offset", "length",
                         "line", "has_trace")
        }
        metric_names = sorted({k for m in self.metric_pieces for k in m})
        metrics = {
            name: np.concatenate([m.get(name, np.full(p["run"].shape[0], np.nan))
                                  for p, m in zip(self.pieces, self.metric_pieces, strict=True)])
            for name in metric_names
        }
        return {"runs": list(self.runs), "tasks": list(self.tasks), "groups": list(self.groups),
                "columns": columns, "metrics": metrics, "problems": list(self.problems)}

    def build(self) -> TrialLog:
        st = self.state()
        cols = st["columns"]
        source = (np.concatenate([p["source"] for p in self.pieces]) if self.pieces
                  else np.empty(0, dtype=np.int32))
        log = TrialLog(
            sources=self.sources,
            runs=st["runs"],
            tasks=st["tasks"],
            groups=st["groups"],
            run=cols["run"].astype(np.int32, copy=False),
            task=cols["task"].astype(np.int32, copy=False),
            trial=cols["trial"].astype(np.int64, copy=False),
            outcome=cols["outcome"].astype(np.int8, copy=False),
            score=cols["score"].astype(np.float64, copy=False),
            group=cols["group"].astype(np.int32, copy=False),
            source=source.astype(np.int32, copy=False),
            offset=cols["offset"].astype(np.int64, copy=False),
            length=cols["length"].astype(np.int64, copy=False),
            line=cols["line"].astype(np.int64, copy=False),
            has_trace=cols["has_trace"].astype(bool, copy=False),
            metrics=st["metrics"],
            problems=self.problems,
        )
        _number_trials(log)
        return _drop_duplicates(log)


def _number_trials(log: TrialLog) -> None:
    """Give trials without a number their order of appearance within (run, task), skipping
    the numbers that numbered trials of the same (run, task) already have."""
    missing = log.trial < 0
    if not missing.any():
        return
    log.trial = log.trial.copy()  # the column may be a parsed piece's own (kept by --watch)
    key = log.run.astype(np.int64) * (len(log.tasks) + 1) + log.task
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_key)) + 1]
    rank = np.arange(order.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, order.shape[0]]))
    appearance = np.empty_like(rank)
    appearance[order] = rank
    numbered = log.trial.copy()
    log.trial[missing] = appearance[missing]
    # Where a (run, task) mixes numbered and unnumbered trials, the unnumbered take the
    # numbers its numbered trials leave free, in order of appearance: none is lost as a
    # duplicate because an older shard had no trial field.
    mixed = np.intersect1d(key[missing], key[~missing])
    for group in mixed.tolist():
        rows = np.flatnonzero(key == group)
        taken = set(numbered[rows][numbered[rows] >= 0].tolist())
        free = (i for i in range(len(rows) + len(taken)) if i not in taken)
        for row in rows[numbered[rows] < 0].tolist():
            log.trial[row] = next(free)


def _drop_duplicates(log: TrialLog) -> TrialLog:
    """Keep the first of each (run, task, trial); name every later one as a problem."""
    if len(log) < 2:
        return log
    top_trial = int(log.trial.max()) + 1
    if (len(log.runs) + 1) * (len(log.tasks) + 1) * top_trial < 1 << 62:
        key = (log.run.astype(np.int64) * (len(log.tasks) + 1) + log.task) * top_trial + log.trial
        if bool(np.all(key[1:] > key[:-1])):
            return log  # already in (run, task, trial) order, each once: nothing to sort
        order = np.argsort(key, kind="stable")  # as the lexsort below, with one key
    else:
        order = np.lexsort((np.arange(len(log)), log.trial, log.task, log.run))
    r, t, k = log.run[order], log.task[order], log.trial[order]
    dup_sorted = np.r_[False, (r[1:] == r[:-1]) & (t[1:] == t[:-1]) & (k[1:] == k[:-1])]
    if not dup_sorted.any():
        return log
    first_of = np.maximum.accumulate(np.where(~dup_sorted, np.arange(order.shape[0]), 0))
    dup_rows = order[dup_sorted]
    firsts = order[first_of[dup_sorted]]
    for d, f in sorted(zip(dup_rows.tolist(), firsts.tolist(), strict=True)):
        log.problems.append(
            Problem(
                log.sources[log.source[d]].path,
                int(log.line[d]),
                f"duplicate trial {int(log.trial[d])} of task {log.tasks[log.task[d]]!r} "
                f"in run {log.runs[log.run[d]]!r}; kept the first "
                f"({log.sources[log.source[f]].path}:{int(log.line[f])})",
            )
        )
    keep = np.ones(len(log), dtype=bool)
    keep[dup_rows] = False
    for name in ("run", "task", "trial", "outcome", "score", "group", "source", "offset",
                 "length", "line", "has_trace"):
        setattr(log, name, getattr(log, name)[keep])
    log.metrics = {k: v[keep] for k, v in log.metrics.items()}
    return log


def load_logs(
    paths: Sequence[str | os.PathLike[str]],
    fields: FieldMap | None = None,
    progress: ProgressFn | None = None,
    workers: int | None = None,
    use_cache: bool | None = None,
) -> TrialLog:
    """Read every trial of ``paths`` (files, directories, globs).

    Runs with the same name in several files merge. Bad lines are skipped and
    listed in ``TrialLog.problems``; they never raise. With ``use_cache`` (default
    :data:`flaketui.loading.cache.ENABLED`), a file read before and unchanged since
    is taken from the index cache (:mod:`flaketui.loading.cache`), not parsed.

    Raises
    ------
    InputError
        If a path does not exist or no usable trial remains.
    """
    fields = fields or FieldMap()
    if use_cache is None:
        use_cache = cache.ENABLED
    files = expand_paths(paths)
    total = sum(_stat(f).st_size for f in files) or 1
    done = 0

    def tick(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        if progress:
            progress(min(done, total), total)

    merger = _Merger()
    for path in files:
        st = _stat(path)  # now: a file that grew since is read (and cached) as it is now
        size = st.st_size
        cached = None
        if use_cache and size >= cache.MIN_BYTES:
            cached = cache.load(path, st, fields)
        if cached is not None:
            kind, state = cached
            tick(size)
        else:
            try:
                kind, state = _read_file(path, size, fields, workers, tick)
            except OSError as exc:
                raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
            if use_cache and size >= cache.MIN_BYTES:
                cache.store(path, st, fields, kind, state)
        merger.sources.append(Source(str(path), kind))
        merger.add(state, len(merger.sources) - 1)
    log = merger.build()
    log.fields = fields
    if len(log) == 0:
        names = ", ".join(str(f) for f in files)
        first = f" (first problem: {log.problems[0]})" if log.problems else ""
        more = f", and {len(log.problems) - 1} more" if len(log.problems) > 1 else ""
        raise InputError(f"no usable trials in {names}{first[:-1] + more + ')' if first else ''}")
    return log


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:  # removed since it was listed, or not allowed
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _read_file(
    path: Path, size: int, fields: FieldMap, workers: int | None, tick: Callable[[int], None]
) -> tuple[str, dict[str, Any]]:
    """Parse one file: (source kind, parsed state), file-level problems included."""
    from flaketui.loading import formats

    spath = str(path)
    default_run = run_name_for(path)
    reader = formats.reader_for(path)
    if reader is not None:
        kind, state = reader(path, fields, default_run)
        tick(size)
        return kind, state
    kind = _kind(path)
    if size == 0:
        return kind, _sink_state(RecordSink(fields, default_run),
                                 [Problem(spath, None, "empty file, no trials")])
    if kind == "jsonl" and size >= PARALLEL_BYTES and (workers or os.cpu_count() or 1) > 1:
        return kind, _read_parallel(spath, size, fields, default_run, workers, tick)
    sink = RecordSink(fields, default_run)
    parser = LineParser(spath, sink)
    if kind == "jsonl":
        read_range(spath, 0, size, parser, progress=tick)
    elif kind == "jsonl.gz":
        read_gzip(spath, parser, progress=tick)
    elif kind == "json.gz":
        data = read_gzip_whole(spath, parser)
        if data is not None:
            read_json_array(spath, parser, data)
        tick(size)
    else:
        with open(spath, "rb") as fh:
            read_json_array(spath, parser, fh.read())
        tick(size)
    if len(sink) == 0 and not parser.problems:
        parser.problems.append(Problem(spath, None, "no trials in this file"))
    return kind, _sink_state(sink, parser.problems)


def _read_parallel(
    path: str,
    size: int,
    fields: FieldMap,
    default_run: str,
    workers: int | None,
    tick: Callable[[int], None],
) -> dict[str, Any]:
    """Parse byte ranges of a plain file in a process pool; one state for the whole file."""
    from concurrent.futures import ProcessPoolExecutor

    nproc = workers or os.cpu_count() or 1
    points = _split_points(path, size, nproc * 4)
    jobs = [(path, a, b, fields, default_run) for a, b in zip(points, points[1:], strict=False)]
    pieces = _Merger()
    with ProcessPoolExecutor(max_workers=nproc) as pool:
        line_base = 0
        for (_, a, b, _, _), (state, lines) in zip(jobs, pool.map(_parse_range, jobs), strict=True):
            pieces.add(state, 0, line_base)
            line_base += lines
            tick(b - a)
    return pieces.state()


def read_trial(log: TrialLog, row: int, max_steps: int | None = None) -> Trial:
    """Read one trial back from its file, with its trace and extra fields.

    With ``max_steps``, a trace longer than that is cut to its first ``max_steps``
    steps; :attr:`Trial.trace_steps` tells how many there are. For a JSONL line or
    JSON item, only the steps kept are built as Python objects (a 100 MB trace opens
    in its first few steps' memory); read again with a larger ``max_steps`` to see more.
    """
    from flaketui.loading import formats

    src = log.sources[int(log.source[row])]
    offset, length = int(log.offset[row]), int(log.length[row])
    obj = formats.read_record(src, offset, length)
    total: int | None = None
    fields = log.fields
    if obj is None and max_steps is not None and src.kind in ("jsonl", "json") and length > 0:
        obj, total = _read_cut(src.path, offset, length, fields.trace, max_steps)
    if obj is None:
        obj = read_line_at(src.path, src.kind, offset, length)
    trace = None
    for name in fields.trace:
        if isinstance(obj.get(name), list):
            trace = obj[name]
            break
    if trace is not None and total is None:
        total = len(trace)
        if max_steps is not None and total > max_steps:
            trace = trace[:max_steps]
    known = {"metrics", "error", *fields.run, *fields.task, *fields.trial, *fields.passed,
             *fields.score, *fields.trace, *fields.group}
    metrics = {k: float(v[row]) for k, v in log.metrics.items() if not np.isnan(v[row])}
    score = float(log.score[row])
    g = int(log.group[row])
    return Trial(
        run=log.runs[int(log.run[row])],
        task=log.tasks[int(log.task[row])],
        trial=int(log.trial[row]),
        outcome=int(log.outcome[row]),
        score=None if np.isnan(score) else score,
        group=log.groups[g] if g >= 0 else None,
        metrics=metrics,
        error=obj.get("error") if is_error(obj.get("error")) else None,
        trace=trace,
        extra={k: v for k, v in obj.items() if k not in known},
        location=f"{src.path}:{int(log.line[row])}",
        trace_steps=total,
    )


def _read_cut(path: str, offset: int, length: int, trace_names: tuple[str, ...],
              max_steps: int) -> tuple[dict[str, Any] | None, int | None]:
    """The object at ``offset`` with its trace cut to ``max_steps`` steps, and the number
    of steps; (None, None) when it can't be read that way (the caller reads it whole)."""
    import msgspec

    from flaketui.loading.jsonl import loads

    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(length)
    try:
        raw = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        obj: dict[str, Any] = {}
        total = None
        for key, value in raw.items():
            if key in trace_names and total is None and bytes(memoryview(value)[:1]) == b"[":
                steps = msgspec.json.decode(value, type=list[msgspec.Raw])
                total = len(steps)
                obj[key] = [loads(step) for step in steps[:max_steps]]
            else:
                obj[key] = loads(value)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None, None
    return obj, total
