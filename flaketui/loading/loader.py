"""Load trial logs from files, directories and globs into one :class:`TrialLog`.

Each file is read by its format (:mod:`flaketui.loading.formats`), or taken from
the index cache (:mod:`flaketui.loading.cache`). The parsed pieces are merged in
file order, trials without a ``trial`` number are numbered by order of appearance
within their run and task, and a repeated (run, task, trial) keeps its first
occurrence.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from flaketui.loading import cache, distributed, formats, location, runnames
from flaketui.loading.formats import read_file
from flaketui.loading.location import unreadable
from flaketui.loading.options import LoadOptions, in_effect
from flaketui.loading.parsed import Merger, Parsed
from flaketui.loading.records import is_error
from flaketui.model import PARSED_COLUMNS, FieldMap, InputError, Problem, Source, Trial, TrialLog, rows_sorted

ProgressFn = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while loading."""


def expand_paths(paths: Iterable[str | os.PathLike[str]], skipped: list[Problem] | None = None,
                 options: LoadOptions | None = None) -> list[Path]:
    """Expand files, directories (every log file inside, recursively) and globs (a store's
    listing asked with ``options``' timeout; None: those of the load under way, else the defaults).

    Inside a directory (or among a glob's matches), what can't be a log is passed
    over and, when ``skipped`` is given, named there as a :class:`Problem`: a folder
    that can't be listed, a link to nothing, a FIFO, socket or device with a log's
    name (never opened: a FIFO would block the read for good).

    Raises
    ------
    InputError
        If a path does not exist, is given by name but is not a regular file, a glob
        matches nothing, or a directory holds no log and nothing was skipped in it.
    """
    with in_effect(options):
        return _expand_paths(paths, skipped)


def _expand_paths(paths: Iterable[str | os.PathLike[str]], skipped: list[Problem] | None) -> list[Path]:
    """:func:`expand_paths`, within its options."""
    out: list[Path] = []
    suffixes = formats.log_suffixes()
    passed: list[Problem] = [] if skipped is None else skipped
    for raw in paths:
        text = os.fspath(raw)
        if location.is_url(text):
            out.extend(location.expand_url(text, suffixes))
            continue
        if any(ch in text for ch in "*?[") and not os.path.exists(text):
            from flaketui.sidecar import is_triage_file

            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise InputError(f"{text}: no file matches this pattern")
            for m in matches:
                if not is_triage_file(m) and _usable(Path(m), passed, dirs_too=False):
                    out.append(Path(m))
            continue
        path = Path(text)
        if path.is_dir():
            from flaketui.sidecar import is_triage_file

            before = len(passed)
            found = sorted(p for p in _walk(path, passed)
                           if p.name.lower().endswith(suffixes) and not is_triage_file(p.name)
                           and _usable(p, passed, dirs_too=True))
            if not found and len(passed) == before:
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


def _walk(top: Path, skipped: list[Problem]) -> Iterable[Path]:
    """Every entry below ``top`` that is not a directory (links to folders followed,
    each folder once); a folder that can't be listed is named in ``skipped``."""
    seen: set[tuple[int, int]] = set()

    def unreadable(exc: OSError) -> None:
        skipped.append(Problem(str(exc.filename or top), None,
                               f"cannot list this folder ({exc.strerror or exc}); skipped"))

    for folder, dirs, files in os.walk(top, onerror=unreadable, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []  # a link loop, or a folder reached twice
            continue
        seen.add((st.st_dev, st.st_ino))
        base = Path(folder)
        yield from (base / name for name in files)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def _usable(path: Path, skipped: list[Problem], dirs_too: bool) -> bool:
    """Whether ``path`` is a regular file (after links); if not, say why in ``skipped``
    (a directory among a glob's matches is passed over without a word)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        skipped.append(Problem(str(path), None, "a link to a missing file; skipped"))
        return False
    except OSError as exc:
        skipped.append(Problem(str(path), None, f"cannot read it ({exc.strerror or exc}); skipped"))
        return False
    if stat.S_ISREG(mode):
        return True
    if stat.S_ISDIR(mode):
        if dirs_too:
            skipped.append(Problem(str(path), None, "a folder with a log's name; skipped"))
        return False
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    skipped.append(Problem(str(path), None, f"{what}, not a regular file: not opened; skipped"))
    return False


def build_log(sources: Sequence[Source], pieces: Sequence[Parsed]) -> TrialLog:
    """One :class:`TrialLog` of what each source gave (``pieces[i]`` is what
    ``sources[i]`` held): names merged, trials without a number numbered, and a
    repeated (run, task, trial) kept once (:func:`_drop_duplicates`)."""
    merger = Merger()
    for piece in pieces:
        merger.add(piece)
    st = merger.parsed()
    source = (np.zeros(len(st), dtype=np.int32) if len(sources) == 1  # untouched pages until read
              else np.repeat(np.arange(len(sources), dtype=np.int32), merger.lengths))
    log = TrialLog(
        sources=list(sources),
        runs=st.runs,
        tasks=st.tasks,
        groups=st.groups,
        source=source,
        metrics=st.metrics,
        problems=st.problems,
        **{name: getattr(st, name).astype(col.dtype, copy=False) for name, col in PARSED_COLUMNS.items()},
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
    columns = (log.task, log.trial) if len(log.runs) == 1 else (log.run, log.task, log.trial)
    if rows_sorted(columns, strict=True):
        return log  # already in (run, task, trial) order, each once: nothing to sort
    top_trial = int(log.trial.max()) + 1
    if (len(log.runs) + 1) * (len(log.tasks) + 1) * top_trial < 1 << 62:
        key = (log.run.astype(np.int64) * (len(log.tasks) + 1) + log.task) * top_trial + log.trial
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
    return log.take(keep)


def load_logs(
    paths: Sequence[str | os.PathLike[str]],
    fields: FieldMap | None = None,
    progress: ProgressFn | None = None,
    workers: int | None = None,
    use_cache: bool | None = None,
    scheduler: str | None = None,
    store_later: bool = False,
    options: LoadOptions | None = None,
) -> TrialLog:
    """Read every trial of ``paths`` (files, directories, globs; local, or URLs such as
    ``s3://bucket/runs/``: :mod:`flaketui.loading.location`).

    Runs with the same name in several files merge. Bad lines are skipped and
    listed in ``TrialLog.problems``; they never raise. ``options`` (a
    :class:`~flaketui.loading.options.LoadOptions`; None: the defaults) are the face's
    ``--sources-root``, ``--timeout``, ``--max-bytes``, ``--no-cache`` and ``--scheduler``: in
    effect for the load's duration (:func:`~flaketui.loading.options.in_effect`, for what reads
    them deep inside it) and kept on the log (``TrialLog.load_options``) for the trials read back
    later. With ``use_cache`` (default ``options.use_cache``), a file read before and unchanged since
    is taken from the index cache (:mod:`flaketui.loading.cache`), not parsed. With
    ``scheduler`` (default ``options.scheduler``), the files not in the cache are parsed on that Dask cluster
    (:func:`~flaketui.loading.distributed.parse_on_cluster`); the cache, the file order
    and the problems named are as for a local load. With ``store_later`` (the app, which
    would rather draw its table first), the files parsed go to the cache from a thread of
    their own once the log is built.

    Remote files are read within a deadline (:func:`flaketui.loading.location.deadline`),
    and one read whole that declares more than ``options.max_bytes`` is skipped unread (:func:`~flaketui.loading.location.too_big`).

    Raises
    ------
    InputError
        If a path does not exist, no usable trial remains, or the scheduler can't be used.
    """
    options = options or LoadOptions()
    with in_effect(options), location.deadline():
        log = _load_logs(paths, fields, progress, workers, options.use_cache if use_cache is None else use_cache,
                         options.scheduler if scheduler is None else scheduler, store_later)
    log.load_options = options
    return log


def _load_logs(paths: Sequence[str | os.PathLike[str]], fields: FieldMap | None, progress: ProgressFn | None,
               workers: int | None, use_cache: bool, scheduler: str | None, store_later: bool) -> TrialLog:
    """:func:`load_logs`, within its deadline and its options."""
    fields = fields or FieldMap()
    skipped: list[Problem] = []
    files = expand_paths(paths, skipped)
    sizes: dict[Any, int] = {}
    for f in files:
        listed = getattr(f, "size_hint", None)  # a remote object's size from its listing: no request
        try:
            sizes[f] = f.stat().st_size if listed is None else listed
        except OSError as exc:  # removed since it was listed
            skipped.append(unreadable(f, exc))
    total = sum(sizes.values()) or 1
    done = 0

    def tick(nbytes: int) -> None:
        nonlocal done
        done += nbytes
        if progress:
            progress(min(done, total), total)

    # Each file: its (kind, piece) from the cache, or None to parse, or left out (skipped).
    found: list[tuple[Any, Any, tuple[str, Parsed] | None]] = []
    for path in files:
        try:
            st = path.stat()  # now: a file that grew since is read (and cached) as it is now
        except OSError as exc:
            if path in sizes:
                skipped.append(unreadable(path, exc))
            continue
        if not stat.S_ISREG(st.st_mode):  # replaced by a FIFO or device since it was listed
            skipped.append(Problem(str(path), None, "not a regular file: not opened; skipped"))
            continue
        cached = cache.load(path, st, fields) if _cacheable(use_cache, st) else None
        if cached is not None:
            tick(st.st_size)
        found.append((path, st, cached))
    if scheduler:
        todo = [(path, st.st_size) for path, st, cached in found if cached is None]
        parsed = iter(distributed.parse_on_cluster([p for p, _ in todo], fields, scheduler, tick,
                                                   sizes=[n for _, n in todo]) if todo else [])
    sources: list[Source] = []
    pieces: list[Parsed] = []
    read: list[Any] = []
    stores: list[tuple[Any, ...]] = []  # what goes to the cache (a piece is never changed after)
    for path, st, cached in found:
        if cached is not None:
            kind, piece = cached
        else:
            if scheduler:
                kind, piece = next(parsed)
                if kind == distributed.UNREADABLE:  # named as a local load names it
                    skipped.extend(piece.problems)
                    continue
            else:
                try:
                    refused = location.is_url(path) and location.too_big(
                        path, st.st_size, formats.format_for(path).kind_of(path))
                    if refused:
                        skipped.append(refused)
                        continue
                    kind, piece = read_file(path, st.st_size, fields, workers, tick)
                except OSError as exc:  # one unreadable file: named, and the others read
                    skipped.append(unreadable(path, exc))
                    continue
                except InputError:
                    raise
                except Exception as exc:  # a store's own error mid-read (aiohttp, azure, google)
                    if not location.is_url(path):
                        raise
                    skipped.append(unreadable(path, OSError(location.describe(exc))))
                    continue
            if _cacheable(use_cache, st):
                stores.append((path, st, fields, kind, piece))
        sources.append(Source(str(path), kind))
        pieces.append(piece)
        read.append(path)  # the files that gave a piece (skipped ones gave none)
    if store_later and stores:  # not a daemon: the entries are written before the process ends
        threading.Thread(target=_store, args=(stores,), name="flaketui-cache-store").start()
    else:
        _store(stores)
    _read_once(read, sources, pieces)
    notices = runnames.rename_runs(read, pieces, fields, paths)  # runs of different folders never merge
    log = build_log(sources, pieces)
    log.fields = fields
    log.problems[:0] = [*skipped, *notices]
    runnames.attach_run_meta(log)
    if len(log) == 0:
        names = ", ".join(str(f) for f in files) or ", ".join(os.fspath(p) for p in paths)
        first = f" (first problem: {log.problems[0]})" if log.problems else ""
        more = f", and {len(log.problems) - 1} more" if len(log.problems) > 1 else ""
        raise InputError(f"no usable trials in {names}{first[:-1] + more + ')' if first else ''}")
    return log


def _read_once(files: Sequence[Any], sources: Sequence[Source], pieces: list[Parsed]) -> None:
    """Let each format see every file it read in this load (:meth:`LogFormat.read_once
    <flaketui.loading.formats.base.LogFormat.read_once>`): a summary beside per-trial files
    gives only the trials not read from their own files. ``pieces`` is changed in place."""
    by_kind: dict[str, list[int]] = {}
    for i, src in enumerate(sources):
        by_kind.setdefault(src.kind, []).append(i)
    done: set[int] = set()
    for kind in by_kind:
        try:
            fmt = formats.format_of_kind(kind)
        except ValueError:
            continue
        if id(fmt) in done or type(fmt).read_once is formats.LogFormat.read_once:
            continue
        done.add(id(fmt))
        rows = [i for k, ids in by_kind.items() if k in fmt.kinds for i in ids]
        given = fmt.read_once([files[i] for i in rows], [pieces[i] for i in rows])
        for i, piece in zip(rows, given, strict=True):
            pieces[i] = piece


_ITEM = re.compile(r"^item \d+: ")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w.])")
_COUNTED = re.compile(r"^(\d+) more lines skipped after the first \d+ named \((.*)\)$")
_COUNT = re.compile(r"^(\d+) × (.*)$")


def problem_kind(reason: str) -> str:
    """What kind of problem ``reason`` names, without its particulars: the item number, quoted
    names (``…``), numbers (``N``) and the detail in parentheses left out
    (``duplicate trial N of task … in run …; kept the first``)."""
    text = _ITEM.sub("", reason)
    text = _QUOTED.sub("…", text)
    text = text.split(" (", 1)[0]
    return _NUMBER.sub("N", text).strip() or reason


class ProblemKind(NamedTuple):
    """The problems of one kind (see :func:`problem_kinds`)."""

    kind: str
    notice: bool
    count: int
    """How many lines or records: a file's count of the lines it did not name is added in."""
    problems: list[Problem]
    """The problems named one by one, in load order."""


def problem_kinds(problems: Sequence[Problem]) -> list[ProblemKind]:
    """``problems`` grouped by :func:`problem_kind` (notices apart from faults), in the order
    each kind first appears; a file's ``N more lines skipped after the first M named (a × X;
    b × Y)`` is counted into its kinds X and Y."""
    groups: dict[tuple[str, bool], ProblemKind] = {}

    def add(kind: str, notice: bool, n: int, problem: Problem | None) -> None:
        key = (kind, notice)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ProblemKind(kind, notice, 0, [])
        if problem is not None:
            group.problems.append(problem)
        groups[key] = group._replace(count=group.count + n)

    for p in problems:
        counted = _COUNTED.match(p.reason)
        parts = [_COUNT.match(part) for part in counted[2].split("; ")] if counted else []
        if counted and all(parts) and sum(int(m[1]) for m in parts if m) == int(counted[1]):
            for m in parts:
                if m:
                    add(problem_kind(m[2]), p.notice, int(m[1]), None)
            continue
        add(problem_kind(p.reason), p.notice, 1, p)
    return list(groups.values())


def _store(entries: list[tuple[Any, ...]]) -> None:
    """Write each (path, stat, fields, kind, piece) to the index cache."""
    for entry in entries:
        cache.store(*entry)


def _cacheable(use_cache: bool, st: Any) -> bool:
    """Whether a file of status ``st`` goes through the index cache: large enough, and (a
    remote object) with an identity that changes whenever it is written."""
    return use_cache and st.st_size >= cache.MIN_BYTES and getattr(st, "identity", True) != ""


def read_trial(log: TrialLog, row: int, max_steps: int | None = None) -> Trial:
    """Read one trial back from its file, with its trace and extra fields.

    With ``max_steps``, a trace longer than that is cut to its first ``max_steps``
    steps; :attr:`Trial.trace_steps` tells how many there are. For a JSONL line or
    JSON item, only the steps kept are built as Python objects (a 100 MB trace opens
    in its first few steps' memory); read again with a larger ``max_steps`` to see more.
    The file is read with the options the log was loaded with (``log.load_options``).
    """
    src = log.sources[int(log.source[row])]
    fields = log.fields
    with in_effect(log.load_options):  # the load's --timeout, --sources-root, …
        obj, total = formats.format_of_kind(src.kind).read_record(
            src, int(log.offset[row]), int(log.length[row]), fields.trace, max_steps)
    trace = None
    for name in fields.trace:
        if isinstance(obj.get(name), list):
            trace = obj[name]
            break
    if trace is not None and total is None:
        total = len(trace)
        if max_steps is not None and total > max_steps:
            trace = trace[:max_steps]
    known = fields.known_names()
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
