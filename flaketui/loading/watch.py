"""Following logs that are still being written (``--watch``).

:class:`Tail` is the pure part: for one file it remembers how far complete lines
have been read and says what changed since: nothing, new complete lines (a
half-written last line waits for its newline), or a reset (the file was
truncated, replaced by another file, or rewritten in place: it is read again).
An in-place rewrite is seen by any of: the bytes just before the read position
changed, the size stayed while the modification or status-change time moved, or,
while those times are too recent to vouch for the content (a rewrite within the
same timestamp tick keeps them; see :func:`flaketui.loading.cache.settled`), a
digest of every byte read no longer matches.

:class:`LogWatcher` keeps one parsed state per file and rebuilds the
:class:`~flaketui.model.TrialLog` when a poll finds a change: new lines of a file
whose format is ``appendable`` (plain JSONL) are parsed alone and appended; any
other change reloads that file (gzip, JSON arrays and Inspect logs are rewritten
whole by the tools that write them). New files matching the given directories or
globs are picked up, and a file no longer there (removed from a watched folder)
drops its trials. No Textual, no Rich.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flaketui.loading import formats, runnames
from flaketui.loading.cache import content_digest, settled
from flaketui.loading.loader import build_log, expand_paths, read_file
from flaketui.loading.options import LoadOptions, in_effect
from flaketui.loading.location import is_url
from flaketui.loading.parsed import Merger, Parsed
from flaketui.model import FieldMap, InputError, Problem, Source, TrialLog

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
        self._seen: tuple[int, int, int] | None = None
        """(size, mtime_ns, ctime_ns) at the last check."""
        self._digest = _hasher()
        """XXH3-128 of the bytes ``[0, pos)`` as they were read."""

    def check(self) -> Change:
        """Compare the file with what was read; does not move :attr:`pos` (see :meth:`advance`)."""
        try:
            st = os.stat(self.path)
            with open(self.path, "rb", buffering=0) as fh:
                ident = (st.st_dev, st.st_ino)
                fresh = self._ident is None
                seen, self._seen = self._seen, (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if not fresh and (ident != self._ident or st.st_size < self.pos
                                  or self._read(fh, self.pos - len(self._probe), len(self._probe))
                                  != self._probe
                                  or self._rewritten(fh, st, seen)):
                    self._ident, self.pos, self.lines, self._probe = ident, 0, 0, b""
                    self._digest = _hasher()
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

    def _rewritten(self, fh: Any, st: os.stat_result, seen: tuple[int, int, int] | None) -> bool:
        """Whether the bytes read were rewritten in place although the size did not shrink:
        the size is the same but the times moved, or the times can't vouch for the content
        (too recent) and the bytes read hash otherwise."""
        if seen is None:
            return False
        if st.st_size == seen[0] and (st.st_mtime_ns, st.st_ctime_ns) != seen[1:]:
            return True
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != seen or settled(st):
            return False
        digest = _hasher()
        return _hash_range(fh, digest, 0, self.pos) < self.pos or digest.digest() != self._digest.digest()

    def advance(self, end: int, lines: int) -> None:
        """Record that the complete lines up to ``end`` (``lines`` of them) were read."""
        with open(self.path, "rb", buffering=0) as fh:
            _hash_range(fh, self._digest, self.pos, end - self.pos)
            self._probe = self._read(fh, max(0, end - PROBE), min(PROBE, end))
        self.pos = end
        self.lines += lines

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


def _hasher() -> Any:
    import xxhash

    return xxhash.xxh3_128()


def _hash_range(fh: Any, digest: Any, start: int, size: int) -> int:
    """Feed ``size`` bytes of ``fh`` from ``start`` to ``digest``; the number there were."""
    fh.seek(start)
    done = 0
    while done < size:
        block = fh.read(min(size - done, SCAN << 7))
        if not block:
            break
        digest.update(block)
        done += len(block)
    return done


class LogWatcher:
    """The trials of ``paths``, kept up to date by :meth:`poll`, read with ``options`` (the face's
    ``--sources-root``, …; None: the defaults)."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], fields: FieldMap | None = None,
                 options: LoadOptions | None = None) -> None:
        self.paths = list(paths)
        self.fields = fields or FieldMap()
        self.options = options or LoadOptions()
        self._files: dict[Path, _Followed] = {}
        self._skipped: list[Problem] = []

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
        """Read what changed since the last poll; ``True`` if anything did.

        Raises :class:`InputError` for a URL: ``--watch`` follows local files only (an
        object store has no appends to follow: an object is replaced whole)."""
        remote = next((os.fspath(p) for p in self.paths if is_url(os.fspath(p))), None)
        if remote is not None:
            raise InputError(f"{remote}: --watch follows local files only; read a URL without --watch")
        with in_effect(self.options):
            return self._poll()

    def _poll(self) -> bool:
        """:meth:`poll` within the watcher's options."""
        changed = False
        skipped: list[Problem] = []
        try:
            paths = expand_paths(self.paths, skipped)
        except InputError:
            if not self._files:
                raise
            return False  # a file is being replaced: look again at the next poll
        if skipped != self._skipped:
            self._skipped, changed = skipped, True
        for gone in set(self._files) - set(paths):  # removed from a watched folder
            del self._files[gone]
            changed = True
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
        pieces = [followed.parsed() for followed in self._files.values()]
        # as load_logs does: runs of different folders never merge, run metadata attached
        notices = runnames.rename_runs(list(self._files), pieces, self.fields, self.paths)
        log = build_log(sources, pieces)
        log.fields = self.fields
        log.load_options = self.options
        log.problems[:0] = [*self._skipped, *notices]
        runnames.attach_run_meta(log)
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
        self._content: str | None = None  # the digest of what was read, while its times can't vouch

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
            if self._content is None:
                return False
            if content_digest(self.path, st.st_size) == self._content:
                if settled(st):
                    self._content = None  # the times vouch from now on
                return False
        self._stamp = stamp
        self._content = None if settled(st) else content_digest(self.path, st.st_size)
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
