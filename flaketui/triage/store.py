"""Triage notes: per run and task, a cause label, a free-text note and a reviewed mark.

The notes live in a sidecar JSON file (by default next to the first log, see
:func:`default_triage_path`) and every change is written at once, atomically:
the new content goes to a temporary file in the same folder, is flushed and
fsync'ed, and then renamed over the old file with :func:`os.replace` (an
atomic rename on POSIX and Windows); the folder is fsync'ed too so that the
rename itself survives a power cut. A crash or kill at any moment leaves either
the old file or the new one, never a torn one.

A file that cannot be read or parsed is never overwritten: it is renamed aside
(``NAME.corrupt-<UTC time>``) and reported, and the store starts from what
could be read. If it cannot even be renamed, the store keeps notes in memory
only and says so. A read-only folder likewise gives a clear message, and notes
are kept in memory until the app quits.

The file is data from someone else as often as not (a log folder downloaded
with its sidecar), so only a regular file of at most :data:`MAX_BYTES` is
read, and a save only ever replaces a regular file or creates a missing one:
a symbolic link at the triage path (``LOG.triage.json -> ~/.bash_profile``),
a FIFO, a device, a folder or an oversized file is refused, never read, never
written through, with a one-line message naming it (:class:`TriageFileRefused`).
A saved file is never re-read unless another program changed it, and the
entries are kept serialised, so a save of 200,000 notes costs little more
than writing the bytes.

Pure Python: no Textual, no Rich (the app and the command line show the
messages). The file format::

    {"format": "flaketui-triage", "version": 1, "entries": [
    {"run":"oncall-candidate","against":"oncall-baseline","task":"summarizeIncident",...},
    {"run":"oncall-baseline","task":"searchRunbook","label":"real-regression",
     "note":"reads the 2024 post-mortem first","reviewed":true,"updated":"2026-01-05T10:12:03Z",
     "suggested":"tool-nondeterminism"}
    ]}

one entry a line (wrapped here). A UTF-8 byte order mark at the start is ignored.

``suggested`` (written only when there is one; files without it load as before) is
the source of flakiness flaketui suggested from the traces
(:mod:`flaketui.traces.causes`), kept apart from ``label``, the person's confirmed
cause: a suggestion never writes or changes a label.

An entry with ``against`` is the review of a flip: the task's change from run
``against`` (A) to ``run`` (B). An entry without it is a note on the task in
that run (a flaky task on the main screen).
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from flaketui.safefile import atomic_write, fsync_dir
from flaketui.sidecar import SIDECAR_SUFFIX

try:
    import fcntl
except ImportError:  # Windows: saves are not serialised between programs
    fcntl = None  # type: ignore[assignment]

FORMAT = "flaketui-triage"
"""The ``format`` field of a triage file."""
VERSION = 1
"""The ``version`` this code writes; a file with a higher one is read but never overwritten."""

LABELS: dict[str, str] = {
    "sampling": "sampling temperature: the model's own randomness",
    "tool-nondeterminism": "a tool returns different results for the same call",
    "ordering-concurrency": "order of results, races, concurrency",
    "environment": "network, quota, clock, machine state",
    "harness-bug": "the eval harness or grader is wrong",
    "real-regression": "the change really broke it",
    "real-fix": "the change really fixed it",
    "unknown": "looked at it, cause not known",
    "user-simulator": "the simulated user said otherwise; the agent followed",
    "grader": "the judge grades one trajectory two ways",
    "burst": "an outage: many tasks failing in one window",
}
"""The cause labels, in the order the picker shows them, with a one-line meaning. Each suggested
source of flakiness (:data:`flaketui.traces.causes.CAUSES`) is one, under its own name, so that a
suggestion pre-fills it; the sources added later come last, keeping the first labels' digits."""

DIRECTORY_SIDECAR = "flaketui.triage.json"
"""The sidecar's name when the first log argument is a directory."""
STALE_TEMP_SECONDS = 60.0
"""Temporary files older than this, left by a killed writer, are removed when a store opens."""
MAX_BYTES = 64 * 1024 * 1024
"""The largest triage file read (some 400,000 short notes); a bigger one is refused unread."""
BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark some editors put at the start of a file."""


class TriageFileError(Exception):
    """A triage file that cannot be used (unreadable, not JSON, wrong shape)."""


class TriageFileRefused(TriageFileError):
    """A triage path that is not a regular file of a sane size: never read, never written.

    A symbolic link (even to a file, even dangling), a folder, a FIFO, a
    device, a socket, or a file over :data:`MAX_BYTES`. Its message is the
    reason alone (``is a symbolic link …``); callers put the path in front.
    """


@dataclass(frozen=True, order=True)
class TriageKey:
    """What a note is about: a task in a run, or a task's flip from run ``against`` to ``run``."""

    run: str
    task: str
    against: str = ""
    """Run A of a flip (``run`` is run B); empty for a note on the task in ``run`` alone."""

    @classmethod
    def flip(cls, run_a: str, run_b: str, task: str) -> TriageKey:
        """The key of ``task``'s flip from run A to run B."""
        return cls(run_b, task, run_a)

    @property
    def is_flip(self) -> bool:
        return bool(self.against)

    def describe(self) -> str:
        """``task in run`` or ``task: A → B``."""
        if self.against:
            return f"{self.task}: {self.against} → {self.run}"
        return f"{self.task} in {self.run}"


@dataclass(frozen=True)
class TriageEntry:
    """The review of one key."""

    label: str | None = None
    """One of :data:`LABELS` (a label written by another version is kept as it is)."""
    note: str = ""
    reviewed: bool = False
    updated: str = ""
    """UTC time of the last change, ISO 8601 (``2026-01-05T10:12:03Z``)."""
    suggested: str | None = None
    """The source of flakiness suggested from the traces (:data:`flaketui.traces.causes.CAUSES`),
    kept apart from :attr:`label`, which only a person sets."""

    @property
    def reviewed_or_noted(self) -> bool:
        """True when a person wrote something: a label, a note or the reviewed mark."""
        return self.label is not None or bool(self.note) or self.reviewed

    @property
    def empty(self) -> bool:
        """True when there is nothing to keep (neither a person's review nor a suggestion)."""
        return not self.reviewed_or_noted and self.suggested is None


_UNSET: Any = object()


def now_utc() -> str:
    """The current UTC time as ``2026-01-05T10:12:03Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_triage_path(paths: Sequence[str | os.PathLike[str]]) -> Path:
    """Where the notes of ``paths`` live unless ``--triage`` says otherwise.

    The first argument decides: a file ``LOG`` gives ``LOG.triage.json``; a
    directory gives ``DIR/flaketui.triage.json``; a glob gives the sidecar of
    its first match (or of the pattern's folder when nothing matches). A URL
    (``s3://bucket/runs/``: nothing can be written beside it) gives a file in the
    user data folder named by the URL (:func:`remote_triage_path`), and so does a folder
    that is not the user's own (:func:`writable_beside`).
    """
    if not paths:
        raise ValueError("no log paths given")
    first = os.fspath(paths[0])
    if "://" in first:
        return remote_triage_path(first)
    if any(ch in first for ch in "*?[") and not os.path.exists(first):
        import glob

        matches = sorted(m for m in glob.glob(first, recursive=True) if os.path.isfile(m))
        if matches:
            first = matches[0]
        else:
            return Path(os.path.dirname(first) or ".") / DIRECTORY_SIDECAR
    p = Path(first)
    beside = p / DIRECTORY_SIDECAR if p.is_dir() else p.with_name(p.name + SIDECAR_SUFFIX)
    return beside if writable_beside(beside) else elsewhere_triage_path(beside)


def writable_beside(sidecar: Path) -> bool:
    """Notes may live at ``sidecar``, beside the logs: they are there already, or the folder is
    the user's own and writable. A shared folder (another user's, a team's) or a read-only one
    keeps its logs untouched: the notes go to the user data folder (:func:`elsewhere_triage_path`)."""
    if sidecar.exists():
        return True
    try:
        owner = sidecar.parent.stat().st_uid
    except OSError:  # no such folder: saving says so
        return True
    own = not hasattr(os, "geteuid") or owner == os.geteuid()
    return own and os.access(sidecar.parent, os.W_OK)


def elsewhere_folder() -> Path:
    """The folder of the notes of logs whose own folder is not the user's (:func:`elsewhere_triage_path`)."""
    import platformdirs

    return platformdirs.user_data_path("flaketui") / "elsewhere"


def elsewhere_triage_path(sidecar: Path) -> Path:
    """The notes of logs in a folder that is not the user's: ``<user data>/flaketui/elsewhere/
    <name>-<hash>.triage.json``, named by the absolute path (:func:`remote_sidecar_name`), so the
    same logs find their notes again."""
    folder = elsewhere_folder()
    with contextlib.suppress(OSError):  # a folder that can't be made: the store says so when it saves
        folder.mkdir(parents=True, exist_ok=True)
    return folder / remote_sidecar_name(str(sidecar.absolute()).removesuffix(SIDECAR_SUFFIX))


def remote_triage_path(url: str) -> Path:
    """The notes of logs at ``url``: ``<user data>/flaketui/remote/<name>-<hash>.triage.json``
    (:func:`remote_sidecar_name`), so that two buckets' ``results.jsonl`` never share notes,
    the same URL finds its notes again, and no credential is written in a file name."""
    import platformdirs

    folder = platformdirs.user_data_path("flaketui") / "remote"
    with contextlib.suppress(OSError):  # a folder that can't be made: the store says so when it saves
        folder.mkdir(parents=True, exist_ok=True)
    return folder / remote_sidecar_name(url)


def remote_sidecar_name(url: str) -> str:
    """The file name of the triage sidecar of logs at ``url`` (kept in the user data folder:
    nothing can be written beside a URL): the last part of its path made file-safe, and a
    hash, both of the URL masked (:func:`flaketui.sanitize.mask_url`, its query and fragment
    left out of the name), so no password or presigned signature is written in a file name,
    and a presigned link signed anew finds the same notes."""
    import hashlib
    import re

    from flaketui.sanitize import mask_url

    masked = mask_url(url)
    path = masked.split("#", 1)[0].split("?", 1)[0] if masked.lower().startswith(("http://", "https://")) else masked
    tail = re.sub(r"[^A-Za-z0-9._-]+", "_", path.rstrip("/").rsplit("/", 1)[-1])[:60] or "logs"
    digest = hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{tail}-{digest}{SIDECAR_SUFFIX}"


# --- Reading and writing --------------------------------------------------------


_LINK = "is a symbolic link (flaketui never reads or writes a triage file through a link)"


def _refusal(st: os.stat_result) -> str | None:
    """Why a file with this status (from ``lstat``/``fstat``) must not be used, or None."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return _LINK
    if stat.S_ISDIR(mode):
        return "is a folder"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if st.st_size > MAX_BYTES:
        return _too_big()
    return None


def _too_big() -> str:
    return f"is larger than {MAX_BYTES // (1024 * 1024)} MB, the most flaketui reads as a triage file"


def read_triage_bytes(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of the triage file at ``path``, or None if there is none.

    Never follows a link and never blocks: the path is checked with
    ``lstat``, opened with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO opens at once
    instead of waiting for a writer) and checked again with ``fstat`` on the
    open file (it may have been swapped in between); at most
    :data:`MAX_BYTES` + 1 bytes are read (a file that grows is still refused).

    Raises
    ------
    TriageFileRefused
        If the path is not a regular file of at most :data:`MAX_BYTES` (see there).
    OSError
        If it cannot be read (permissions, I/O error).
    """
    try:
        reason = _refusal(os.lstat(path))
    except FileNotFoundError:
        return None
    if reason:
        raise TriageFileRefused(reason)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link swapped in after the lstat
            raise TriageFileRefused(_LINK) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        reason = _refusal(os.fstat(fd))
        if reason:
            raise TriageFileRefused(reason)
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise TriageFileRefused(_too_big())
    return data


def _json(data: bytes) -> Any:
    """Parse JSON bytes (a leading byte order mark is skipped).

    orjson, not :mod:`json`: it is fast, and a deeply nested document is a
    :class:`orjson.JSONDecodeError` (orjson stops at 1024 levels) where
    :func:`json.loads` raises :class:`RecursionError`.
    """
    return orjson.loads(data[len(BOM):] if data.startswith(BOM) else data)


def parse_triage(data: bytes) -> tuple[dict[TriageKey, TriageEntry], int]:
    """Parse a triage file's bytes into entries and the file's version.

    Raises
    ------
    TriageFileError
        If the bytes are not a flaketui triage document; the message says why.
    """
    try:
        doc = _json(data)
    except orjson.JSONDecodeError as exc:
        raise TriageFileError(f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TriageFileError(f"not a flaketui triage file (no \"format\": \"{FORMAT}\")")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TriageFileError(f"bad version {version!r}")
    raw = doc.get("entries")
    if not isinstance(raw, list):
        raise TriageFileError("\"entries\" is not a list")
    entries: dict[TriageKey, TriageEntry] = {}
    for i, item in enumerate(raw):
        key, entry = _parse_entry(item, i)
        entries[key] = entry
    return entries, version


def _parse_entry(item: Any, i: int) -> tuple[TriageKey, TriageEntry]:
    where = f"entry {i + 1}"
    if not isinstance(item, dict):
        raise TriageFileError(f"{where} is not an object")
    run, task, against = item.get("run"), item.get("task"), item.get("against", "")
    if not isinstance(run, str) or not isinstance(task, str):
        raise TriageFileError(f"{where} lacks a string \"run\" and \"task\"")
    if against is None:
        against = ""
    if not isinstance(against, str):
        raise TriageFileError(f"{where}: \"against\" is not a string")
    label, note = item.get("label"), item.get("note", "")
    reviewed, updated = item.get("reviewed", False), item.get("updated", "")
    suggested = item.get("suggested")
    if label is not None and not isinstance(label, str):
        raise TriageFileError(f"{where}: \"label\" is not a string")
    if suggested is not None and not isinstance(suggested, str):
        raise TriageFileError(f"{where}: \"suggested\" is not a string")
    if not isinstance(note, str) or not isinstance(updated, str):
        raise TriageFileError(f"{where}: \"note\" or \"updated\" is not a string")
    if not isinstance(reviewed, bool):
        raise TriageFileError(f"{where}: \"reviewed\" is not true or false")
    return TriageKey(run, task, against), TriageEntry(label or None, note, reviewed, updated, suggested or None)


def load_entries(path: str | os.PathLike[str]) -> dict[TriageKey, TriageEntry]:
    """Read a triage file without changing anything (for reports): {} if it does not exist.

    Raises
    ------
    TriageFileError
        If the file cannot be read or parsed, or is refused (a
        :class:`TriageFileRefused`: a link, FIFO, device, oversized file); the
        message names the file.
    """
    p = Path(path)
    try:
        data = read_triage_bytes(p)
    except TriageFileRefused as exc:
        raise TriageFileRefused(f"{p}: {exc}; give --triage PATH to choose another file") from None
    except OSError as exc:
        raise TriageFileError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if data is None:
        return {}
    try:
        return parse_triage(data)[0]
    except TriageFileError as exc:
        raise TriageFileError(f"{p}: {exc}") from None


def _sort_key(key: TriageKey) -> tuple[str, str, str]:
    """The order of :class:`TriageKey` (its fields in turn) as a tuple, which sorts ~10x faster."""
    return key.run, key.task, key.against


def _entry_line(key: TriageKey, e: TriageEntry) -> bytes:
    """One entry as the file holds it: a line of compact JSON."""
    item: dict[str, Any] = {"run": key.run}
    if key.against:
        item["against"] = key.against
    item.update(task=key.task, label=e.label, note=e.note, reviewed=e.reviewed, updated=e.updated)
    if e.suggested is not None:
        item["suggested"] = e.suggested
    return orjson.dumps(item)


def _document(lines: Sequence[bytes]) -> bytes:
    """The file's bytes around the entries' lines."""
    head = f'{{"format": "{FORMAT}", "version": {VERSION}, "entries": [\n'.encode()
    return head + b",\n".join(lines) + (b"\n]}\n" if lines else b"]}\n")


def dump_triage(entries: Mapping[TriageKey, TriageEntry]) -> bytes:
    """The file's bytes: entries sorted by run, task and run A, one a line, empty ones left out."""
    return _document([_entry_line(k, entries[k]) for k in sorted(entries, key=_sort_key)
                      if not entries[k].empty])


def _aside_name(path: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    return candidate


def _remove_stale_temps(path: Path) -> None:
    """Remove temporary files a killed writer left beside ``path`` (older than a minute)."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    prefix = f".{path.name}."
    cutoff = time.time() - STALE_TEMP_SECONDS
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            tmp = path.parent / name
            with contextlib.suppress(OSError):
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (``flock``) on ``folder`` while reading and writing.

    Two programs saving the same triage file take turns, so neither writes
    over a file it has not read. Without ``fcntl`` (Windows), or when the
    folder cannot be opened (the save then fails and says why), no lock is taken.
    """
    fd = -1
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY)
    try:
        if fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # closing the last descriptor releases the lock


# --- The store ------------------------------------------------------------------


class TriageStore:
    """Triage notes of one sidecar file, saved on every change.

    Open one with :meth:`open` (or :meth:`in_memory`). Read with :meth:`get`;
    change with :meth:`update`, which saves at once and returns whether the
    save reached the disk. :attr:`messages` holds what the user must be told
    on opening (a file set aside or refused, a newer version); :attr:`save_error`
    says why the last save failed (None after a good save).

    Two programs may hold the same file: a save locks the folder, reads the
    file again and keeps the other program's entries, except for the keys
    changed here since this store's last good save, which win. The file is
    parsed again only when its bytes differ from those this store last read
    or wrote, and each entry's line is kept serialised, so a save rewrites
    the file without serialising or parsing every entry.
    """

    def __init__(self, path: Path | None, entries: dict[TriageKey, TriageEntry] | None = None,
                 *, writable: bool = True) -> None:
        self.path = path
        """The sidecar file; None for notes that are never saved."""
        self._entries: dict[TriageKey, TriageEntry] = dict(entries or {})
        self._touched: set[TriageKey] = set()
        """Keys changed here and not yet saved: they win over the file's entries."""
        self.writable = writable and path is not None
        """False when saving is off for good (the file is refused, could not be set aside, or is newer)."""
        self.messages: list[str] = []
        """Things the user must be told about this file (shown once, on opening)."""
        self.save_error: str | None = None
        """Why the last save failed, or None."""
        self._on_disk: bytes | None = None
        """The file's bytes as this store last read or wrote them (None: no file, or not known)."""
        self._order: list[TriageKey] = []
        """The keys of the non-empty entries, sorted (kept so with :mod:`bisect`)."""
        self._lines: list[bytes] | None = None
        """The file's line of each key in :attr:`_order` (None until a save builds them)."""

    # -- opening ---------------------------------------------------------------

    @classmethod
    def in_memory(cls) -> TriageStore:
        """A store that is never saved (for tests and for runs without a file)."""
        return cls(None, writable=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> TriageStore:
        """Load the notes at ``path`` (none yet if it does not exist).

        Never raises for a bad file: an unreadable or corrupt file is renamed
        aside and reported in :attr:`messages`; if it cannot be renamed the
        store keeps notes in memory only. A refused path (a link, folder,
        FIFO, device or oversized file, see :class:`TriageFileRefused`) is
        neither read nor renamed nor written: notes are kept in memory only
        and :attr:`messages` says so. Opening writes nothing otherwise: a
        folder that cannot be written is found, and reported in
        :attr:`save_error`, at the first change.
        """
        p = Path(path)
        _remove_stale_temps(p)
        try:
            data = read_triage_bytes(p)
        except TriageFileRefused as exc:
            store = cls(p, writable=False)
            store.messages.append(store._refused(exc))
            return store
        except OSError as exc:
            return cls._set_aside(p, {}, f"cannot be read ({exc.strerror or exc})")
        if data is None:
            return cls(p)
        try:
            entries, version = parse_triage(data)
        except TriageFileError as exc:
            return cls._set_aside(p, _salvage(data), str(exc))
        store = cls(p, entries)
        store._on_disk = data
        if version > VERSION:
            store.writable = False
            store.messages.append(
                f"triage file {p} was written by a newer flaketui (version {version}); "
                "it is read but not changed: notes made now are kept in memory only")
        return store

    @classmethod
    def _set_aside(cls, path: Path, salvaged: dict[TriageKey, TriageEntry],
                   reason: str) -> TriageStore:
        aside = _aside_name(path)
        try:
            os.replace(path, aside)
        except OSError as exc:
            store = cls(path, salvaged, writable=False)
            store.messages.append(
                f"triage file {path} is unusable ({reason}) and could not be set aside "
                f"({exc.strerror or exc}); it is left untouched and notes are kept in memory only")
            return store
        fsync_dir(path.parent)
        store = cls(path, salvaged)
        kept = f"; {len(salvaged)} entries recovered" if salvaged else ""
        store.messages.append(
            f"triage file {path} was unusable ({reason}); kept it as {aside.name}{kept}")
        store._touched.update(salvaged)
        if salvaged:
            store.save()
        return store

    def _cannot_save(self, exc: OSError) -> str:
        return (f"cannot save triage notes to {self.path} ({exc.strerror or exc}); "
                "notes are kept in memory only — give --triage PATH to save them elsewhere")

    def _refused(self, exc: TriageFileRefused) -> str:
        return (f"triage file {self.path} {exc}: it is neither read nor changed and notes are "
                "kept in memory only — give --triage PATH to choose another file")

    # -- reading ---------------------------------------------------------------

    def get(self, key: TriageKey) -> TriageEntry:
        """The entry of ``key`` (an empty one if there is none)."""
        return self._entries.get(key) or TriageEntry()

    def __contains__(self, key: object) -> bool:
        return key in self._entries and not self._entries[key].empty  # type: ignore[index]

    def __len__(self) -> int:
        return sum(1 for e in self._entries.values() if not e.empty)

    def items(self) -> Iterator[tuple[TriageKey, TriageEntry]]:
        """Every non-empty entry, sorted by key."""
        for key in sorted(self._entries, key=_sort_key):
            if not self._entries[key].empty:
                yield key, self._entries[key]

    @property
    def persistent(self) -> bool:
        """True when changes are reaching the file."""
        return self.writable and self.save_error is None

    # -- changing --------------------------------------------------------------

    def update(self, key: TriageKey, *, label: str | None = _UNSET, note: str = _UNSET,
               reviewed: bool = _UNSET) -> bool:
        """Change ``key``'s entry and save at once.

        Args:
            key: what the note is about.
            label: a cause label from :data:`LABELS`, or None to clear it.
            note: the free-text note ("" clears it).
            reviewed: the reviewed mark.

        Returns:
            True if the change is on disk; False if it is kept in memory only
            (then :attr:`save_error` or :attr:`messages` says why).

        Raises:
            ValueError: for a label not in :data:`LABELS`.
        """
        if label is not _UNSET and label is not None and label not in LABELS:
            raise ValueError(f"label ({label!r}) must be one of {', '.join(LABELS)}")
        old = self.get(key)
        new = replace(
            old,
            label=old.label if label is _UNSET else label,
            note=old.note if note is _UNSET else note,
            reviewed=old.reviewed if reviewed is _UNSET else bool(reviewed),
        )
        if new == old:
            return self.persistent
        self._entries[key] = replace(new, updated=now_utc())
        self._touched.add(key)
        return self.save()

    def suggest(self, run: str, causes: Mapping[str, str]) -> bool:
        """Keep each task's suggested source of flakiness (task → cause) apart from its label, and
        save once if the file exists. A suggestion never touches a label, a note, the reviewed mark
        or ``updated``, and never creates the file by itself: without one, the suggestions are
        written with the person's first change.

        Returns:
            True when the store is saving to its file (as :meth:`persistent`).
        """
        changed = False
        for task, cause in causes.items():
            key = TriageKey(run, task)
            old = self.get(key)
            if old.suggested != cause:
                self._entries[key] = replace(old, suggested=cause)
                self._touched.add(key)
                changed = True
        if changed and self.path is not None and self.path.exists():
            return self.save()
        return self.persistent

    def suggested(self, run: str) -> dict[str, str]:
        """Task → the suggested source of flakiness kept for ``run`` (tasks of notes on flips left out)."""
        return {k.task: e.suggested for k, e in self._entries.items()
                if k.run == run and not k.against and e.suggested is not None}

    def toggle_reviewed(self, key: TriageKey) -> bool:
        """Flip ``key``'s reviewed mark and save; returns what :meth:`update` returns."""
        return self.update(key, reviewed=not self.get(key).reviewed)

    def save(self) -> bool:
        """Write every entry to the file now (atomically). Returns True on success."""
        if not self.writable or self.path is None:
            return False
        with _folder_lock(self.path.parent):
            self._merge_from_disk()
            if not self.writable:
                return False
            data = self._serialise()
            try:
                atomic_write(self.path, data)
            except OSError as exc:
                self.save_error = self._cannot_save(exc)
                return False
        self._on_disk = data
        self.save_error = None
        self._touched.clear()
        return True

    def _merge_from_disk(self) -> None:
        """Keep what other programs saved: the file's entries, except the keys changed here."""
        assert self.path is not None
        try:
            data = read_triage_bytes(self.path)
        except TriageFileRefused as exc:  # swapped for a link (or a FIFO…) since it was opened
            self.writable = False
            self.save_error = self._refused(exc)
            return
        except OSError as exc:
            self._set_aside_now(str(exc.strerror or exc))
            return
        if data is None or data == self._on_disk:
            return  # gone (then this store's notes make the new file), or as this store left it
        try:
            entries, version = parse_triage(data)
        except TriageFileError as exc:
            self._set_aside_now(str(exc))
            return
        if version > VERSION:
            self.writable = False
            self.save_error = (f"triage file {self.path} was rewritten by a newer flaketui; "
                               "notes made now are kept in memory only")
            return
        mine = {k: self._entries[k] for k in self._touched if k in self._entries}
        entries.update(mine)
        self._entries = entries
        self._lines = None  # another program's entries: serialise them all again

    def _set_aside_now(self, reason: str) -> None:
        """The file became unusable since it was read: rename it aside (or stop saving)."""
        assert self.path is not None
        other = TriageStore._set_aside(self.path, {}, reason)
        self.messages.extend(other.messages)
        if not other.writable:
            self.writable = False

    def _serialise(self) -> bytes:
        """The file's bytes; only the lines of keys changed since the last build are made anew."""
        order, lines = self._order, self._lines
        if lines is None:
            order = sorted((k for k, e in self._entries.items() if not e.empty), key=_sort_key)
            lines = [_entry_line(k, self._entries[k]) for k in order]
        else:
            for key in self._touched:
                entry = self._entries.get(key) or TriageEntry()
                i = bisect.bisect_left(order, key)
                present = i < len(order) and order[i] == key
                if entry.empty:
                    if present:
                        del order[i], lines[i]
                elif present:
                    lines[i] = _entry_line(key, entry)
                else:
                    order.insert(i, key)
                    lines.insert(i, _entry_line(key, entry))
        self._order, self._lines = order, lines
        return _document(lines)


def _salvage(data: bytes) -> dict[TriageKey, TriageEntry]:
    """The entries that can still be read from a damaged file (for a file set aside)."""
    try:
        doc = _json(data)
    except orjson.JSONDecodeError:
        return {}
    raw = doc.get("entries") if isinstance(doc, dict) else None
    out: dict[TriageKey, TriageEntry] = {}
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        try:
            key, entry = _parse_entry(item, i)
        except TriageFileError:
            continue
        out[key] = entry
    return out
