"""Following logs that are still being written (``--watch``).

:class:`Tail` is the pure part: for one file it remembers how far complete lines
have been read and says what changed since: nothing, new complete lines (a
half-written last line waits for its newline), or a reset (the file was
truncated, replaced by another file, or rewritten in place: it is read again).

:class:`LogWatcher` keeps one parsed state per file and rebuilds the
:class:`~flaketui.model.TrialLog` when a poll finds a change: new lines of a file
whose format is ``appendable`` (plain JSONL) are parsed alone and appended; any
other change reloads that file (gzip, JSON arrays and Inspect logs are rewritten
whole by the tools that write them). New files matching the given directories or
globs are picked up. No Textual, no Rich.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flaketui.loading import formats
from flaketui.loading.loader import build_log, expand_paths, read_file
from flaketui.loading.parsed import Merger, Parsed
from flaketui.model import FieldMap, InputError, Source, TrialLog

PROBE = 64
"""Bytes before the read position that must be unchanged for a file to count as grown."""
SCAN = 1 << 16
"""Bytes read at a time when looking back for the last newline."""


@dataclass(frozen=True)
class Change:
    """What a :meth:`Tail.check` found.

    ``kind`` is ``"none"``, ``"grew"`` (complete lines in ``[start, end)`` are new),
    ``"reset"`` (read the file again from 0; complete lines end at ``end``) or
    ``"gone"`` (the file is missing for now).
    """

    kind: str
    start: int = 0
    end: int = 0


class Tail:
    """How far one growing file has been read, by complete lines."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.pos = 0
        """Offset just after the last newline read."""
        self.lines = 0
        """Complete lines read (blank ones included), to number the next ones."""
        self._ident: tuple[int, int] | None = None
        self._probe = b""

    def check(self) -> Change:
        """Compare the file with what was read; does not move :attr:`pos` (see :meth:`advance`)."""
        try:
            st = os.stat(self.path)
            with open(self.path, "rb", buffering=0) as fh:
                ident = (st.st_dev, st.st_ino)
                fresh = self._ident is None
                if not fresh and (ident != self._ident or st.st_size < self.pos
                                  or self._read(fh, self.pos - len(self._probe), len(self._probe))
                                  != self._probe):
                    self._ident, self.pos, self.lines, self._probe = ident, 0, 0, b""
                    return Change("reset", 0, self._last_newline(fh, 0, st.st_size))
                self._ident = ident
                end = self._last_newline(fh, self.pos, st.st_size)
        except FileNotFoundError:
            return Change("gone")
        if fresh:
            return Change("reset", 0, end)
        if end <= self.pos:
            return Change("none")
        return Change("grew", self.pos, end)

    def advance(self, end: int, lines: int) -> None:
        """Record that the complete lines up to ``end`` (``lines`` of them) were read."""
        self.pos = end
        self.lines += lines
        with open(self.path, "rb", buffering=0) as fh:
            self._probe = self._read(fh, max(0, end - PROBE), min(PROBE, end))

    @staticmethod
    def _read(fh: Any, at: int, n: int) -> bytes:
        fh.seek(at)
        return fh.read(n) if n > 0 else b""

    @staticmethod
    def _last_newline(fh: Any, floor: int, size: int) -> int:
        """Offset just after the last newline in ``[floor, size)``, or ``floor`` if none."""
        hi = size
        while hi > floor:
            lo = max(floor, hi - SCAN)
            fh.seek(lo)
            j = fh.read(hi - lo).rfind(b"\n")
            if j >= 0:
                return lo + j + 1
            hi = lo
        return floor


class LogWatcher:
    """The trials of ``paths``, kept up to date by :meth:`poll`."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], fields: FieldMap | None = None) -> None:
        self.paths = list(paths)
        self.fields = fields or FieldMap()
        self._files: dict[Path, _Followed] = {}

    def load(self) -> TrialLog:
        """Read every file as it is now (complete lines only).

        Raises
        ------
        InputError
            If a path does not exist, or no usable trial is there yet.
        """
        self.poll()
        return self.log()

    def poll(self) -> bool:
        """Read what changed since the last poll; ``True`` if anything did."""
        changed = False
        try:
            paths = expand_paths(self.paths)
        except InputError:
            if not self._files:
                raise
            return False  # a file is being replaced: look again at the next poll
        for path in paths:
            followed = self._files.get(path)
            if followed is None:
                followed = self._files[path] = _Followed(path, self.fields)
            try:
                changed |= followed.update()
            except FileNotFoundError:
                continue  # removed or replaced while it was read: look again at the next poll
        return changed

    def log(self) -> TrialLog:
        """The :class:`TrialLog` of everything read so far."""
        sources = [Source(str(path), followed.kind) for path, followed in self._files.items()]
        log = build_log(sources, [followed.parsed() for followed in self._files.values()])
        log.fields = self.fields
        if len(log) == 0:
            names = ", ".join(str(p) for p in self._files) or ", ".join(map(str, self.paths))
            raise InputError(f"no usable trials in {names} yet")
        return log


class _Followed:
    """One file: its tail and the parsed pieces of it."""

    def __init__(self, path: Path, fields: FieldMap) -> None:
        self.path = path
        self.fields = fields
        self.format = formats.format_for(path)
        self.plain = self.format.appendable(path)
        self.kind = self.format.kind_of(path)
        self.tail = Tail(path)
        self.pieces: list[Parsed] = []  # line numbers are the file's
        self._stamp: tuple[int, ...] | None = None

    def update(self) -> bool:
        if not self.plain:
            return self._reload_whole()
        change = self.tail.check()
        if change.kind in ("none", "gone"):
            return False
        if change.kind == "reset":
            self.pieces = []
        piece, lines = self.format.read_lines(self.path, change.start, change.end, self.tail.lines + 1,
                                              self.fields, self.format.run_name(self.path))
        self.pieces.append(piece)
        self.tail.advance(change.end, lines)
        return True

    def _reload_whole(self) -> bool:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return False
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.kind, piece = read_file(self.path, st.st_size, self.fields, None, lambda n: None)
        self.pieces = [piece]
        return True

    def parsed(self) -> Parsed:
        """Every piece read so far, as one (merged once, then kept as one piece)."""
        if len(self.pieces) != 1:
            merger = Merger()
            for piece in self.pieces:
                merger.add(piece)
            self.pieces = [merger.parsed()]
        return self.pieces[0]
