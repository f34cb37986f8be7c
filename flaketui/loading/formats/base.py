"""What every log format provides: :class:`LogFormat` (see :mod:`flaketui.loading.formats`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from flaketui.loading.jsonl import read_fields, read_object
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, Problem, Source

Tick = Callable[[int], None]
"""Called with the number of bytes of the file just consumed (for the progress bar)."""

RUN_NAME_ENDINGS = (".gz", ".jsonl", ".ndjson", ".json", ".eval")
"""Endings taken off a file's name, each at most once and in this order, to give its
default run name (``a.jsonl.gz`` and ``a.eval`` both name run ``a``). One list for
every built-in format, so that a run's name does not depend on which format read it."""


class Record(NamedTuple):
    """One trial read back from its file (see :meth:`LogFormat.read_record`)."""

    obj: dict[str, Any]
    """The trial's object as the log holds it (trace included, perhaps cut)."""
    steps: int | None
    """The trace's full number of steps when the reader already cut it to ``max_steps``;
    ``None`` when ``obj`` holds the whole trace (the caller counts and cuts it)."""


class LogFormat(ABC):
    """One kind of log file: how to recognise it, read its trials, and read one back.

    Subclass it, fill in the three abstract methods and the class attributes, and add an
    instance to :data:`flaketui.loading.formats.FORMATS`. The other methods have
    defaults that fit most formats.
    """

    suffixes: ClassVar[tuple[str, ...]]
    """Lower-case name endings (``".jsonl.gz"``) that a directory is searched for."""
    kinds: ClassVar[tuple[str, ...]]
    """The :attr:`Source.kind <flaketui.model.Source.kind>` values this format gives its
    files (stored in the index cache, used to read a trial back); unique across formats."""
    harness: ClassVar[str] = ""
    """The harness that writes this format, as its users name it (``Harbor``); empty for a
    generic format."""
    no_trace: ClassVar[str] = ("the log would need a trace field per trial (trace, traj or messages; "
                               "--trace-field to name another)")
    """What a trial of this format without a trace lacks, in its harness's words."""
    errored_as: ClassVar[str] = "apart"
    """How this format's harness counts an errored trial in its own figures, the default of
    ``--errored-as`` for its runs (:meth:`flaketui.model.TrialLog.errored_as`): ``apart``
    (flaketui's own rule: left out of n), ``fail`` (Terminal-Bench: an undecided trial fails)
    or ``score`` (Harbor: a trial without a reward scores 0 and fails, one with a reward keeps it)."""

    @abstractmethod
    def matches(self, path: Path, head: bytes) -> bool:
        """Whether this format reads ``path``; ``head`` is its first bytes (up to
        :data:`~flaketui.loading.formats.HEAD_BYTES`, empty if it can't be read).
        The first format in ``FORMATS`` that matches reads the file."""

    def kind_of(self, path: Path) -> str:
        """The source kind of ``path`` (one of :attr:`kinds`)."""
        return self.kinds[0]

    @abstractmethod
    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        """Read every trial of ``path`` (``size`` bytes now).

        Records that can't be used, and faults of the whole file (empty, damaged),
        are :class:`~flaketui.model.Problem` entries of the result, never exceptions;
        an ``OSError`` may propagate (the loader names the file). ``default_run`` names
        the run of trials that give none; ``workers`` caps the processes used (``None``:
        one per core); ``tick`` is given the bytes consumed, ``size`` in all. A trial's
        ``offset`` and ``length`` are whatever :meth:`read_record` needs to find it.

        Raises
        ------
        InputError
            If the file can't be read at all here (e.g. an optional package is missing).
        """

    @abstractmethod
    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        """Read back the trial stored at (``offset``, ``length``) of ``source``, as
        :meth:`read` located it. ``trace_names`` are the fields that may hold its trace;
        with ``max_steps``, a reader may cut the trace to that many steps (see
        :class:`Record`)."""

    def read_fields(self, source: Source, spans: Sequence[tuple[int, int]],
                    names: tuple[str, ...]) -> list[dict[str, Any] | None]:
        """The fields ``names`` of the trials stored at ``spans`` of ``source`` (``(offset,
        length)`` pairs, as :meth:`read` located them): per span a dict of those the trial
        has, or ``None`` where it can no longer be read. The one way a trial's fields are
        read back without its trace; the default reads each trial with :meth:`read_record`,
        and a format that can read a few fields for less overrides it."""
        out: list[dict[str, Any] | None] = []
        for offset, length in spans:
            try:
                obj = self.read_record(source, offset, length, (), None).obj
            except (OSError, ValueError, KeyError, RecursionError):
                out.append(None)
                continue
            out.append({n: obj[n] for n in names if n in obj} if isinstance(obj, dict) else None)
        return out

    def run_name(self, path: Path) -> str:
        """The default run name of ``path``: its name without :data:`RUN_NAME_ENDINGS`,
        then without those of :attr:`suffixes` that the list does not cover (``.tsv``)."""
        name = path.name
        own = tuple(s for s in self.suffixes if not s.endswith(RUN_NAME_ENDINGS))
        for suffix in RUN_NAME_ENDINGS + own:
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
        return name or path.name

    def run_folder(self, path: Path) -> Path:
        """The folder that names the run of ``path`` under ``--run-name-from folder``
        (its own folder; a per-trial file's run folder for layouts of one folder per trial)."""
        return path.parent

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        """What the harness wrote about the run of ``path`` (models, commit, seed, ...), as
        plain values; empty when it wrote nothing."""
        return {}

    def published(self, path: Path) -> dict[str, Any]:
        """The figures the harness published about the run of ``path`` (a job's trial count,
        error count, mean reward, accuracy, pass@k), by name, to be shown beside flaketui's
        (:mod:`flaketui.stats.published`); empty when it published none."""
        return {}

    def read_once(self, paths: list[Path], pieces: list[Parsed]) -> list[Parsed]:
        """What each of ``paths`` (every file of this format read in one load) gives once the
        others are known: a harness that writes a summary beside its per-trial files drops
        from the summary the trials also read from their own files. A piece is never changed
        in place (the index cache keeps it); the default gives ``pieces`` as they are."""
        return pieces

    def appendable(self, path: Path) -> bool:
        """Whether ``path`` grows by whole lines that :meth:`read_lines` can read alone
        (``--watch`` then reads only the new ones; otherwise it reads the file again)."""
        return False

    def read_lines(self, path: Path, start: int, end: int, first_line: int, fields: FieldMap,
                   default_run: str) -> tuple[Parsed, int]:
        """Read the lines in bytes ``[start, end)`` of an :meth:`appendable` file, numbered
        from ``first_line``: (what they hold, the number of lines seen)."""
        raise NotImplementedError(f"{type(self).__name__} files are read whole")


def finish(path: str, sink: RecordSink, problems: list[Problem]) -> Parsed:
    """The trials of ``sink``; a file that gave neither a trial nor a problem says so."""
    if len(sink) == 0 and not problems:
        problems.append(Problem(path, None, "no trials in this file"))
    return Parsed.from_sink(sink, problems)


class JsonSpans(LogFormat):
    """A format whose trials are JSON objects at byte spans of the file (JSON Lines, JSON
    arrays, plain or gzip-compressed): each read back from its span by
    :func:`~flaketui.loading.jsonl.read_object`, a few fields of many by
    :func:`~flaketui.loading.jsonl.read_fields` (a local plain file mapped once)."""

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        return Record(*read_object(source.path, source.kind, offset, length, trace_names, max_steps))

    def read_fields(self, source: Source, spans: Sequence[tuple[int, int]],
                    names: tuple[str, ...]) -> list[dict[str, Any] | None]:
        """Only those fields built, a local plain file mapped once (:func:`~flaketui.loading.jsonl.read_fields`)."""
        return read_fields(source.path, source.kind, list(spans), names)
