"""The index cache: what parsing a log file gave, kept to reopen it without parsing.

One entry per (file, field names): the trial columns (run, task, trial, outcome,
score, byte offsets, ...), the name tables, the metrics and the problems found.
An entry is used only while the file has the same resolved path, name (it gives
the default run name: a symlink names its own run), inode, size, modification
time and status-change time (nanoseconds), and was written by the same cache
format; a remote object's entry (a URL, :mod:`flaketui.loading.location`), while the
object has the same URL and identity (ETag, version id or generation, last-modified,
size); any change and the file is parsed again and the entry replaced. The
status-change time catches a rewrite that keeps the size and sets the
modification time back (``touch -r``, ``rsync -t``, a copy that keeps times):
no user can set it. Traces are never
cached: they stay in the log and are read back by offset.

Nothing in an entry is trusted unchecked. Every entry carries a MAC of all its
bytes after it: the header, which holds the source's identity (the key above), and
every column; a keyed BLAKE2b with this user's secret (:mod:`flaketui.loading.userkey`),
not a checksum, so that an entry edited and re-digested, or copied from another user
or machine (a CI cache restored from an untrusted branch), is not believed. A
mismatch, a truncated entry or a header that does not describe its arrays, and the
file is parsed again, silently; without a usable secret the cache is not used. A
timestamp says nothing about a rewrite within its own tick (a filesystem with 1-second
or 2-second times, or Linux's coarse clock): for a source modified less than
:data:`SETTLE_NS` (or twice its filesystem's apparent granularity) before it was read,
the entry also holds a digest of the source's whole content, checked on every use until
the times can vouch (then the entry is rewritten without it). Settled sources are never read whole on a warm open.
The cache is kept under :data:`MAX_BYTES` by evicting the least recently used
entries (a hit marks its entry used).

Entries live under the user's cache directory (``platformdirs.user_cache_dir``,
e.g. ``~/.cache/flaketui/index`` on Linux), one ``.idx`` file each: a JSON
header, then the raw arrays, mapped into memory and used in place (numpy's
``.npz`` spends longer checking its zip than reading). They are written whole
to a temp file in the same folder, then renamed into place. A cache that can't be read or written
is passed over silently: it only ever saves time.
"""

from __future__ import annotations

import mmap
import os
import time
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from flaketui.loading import formats
from flaketui.loading.location import RemotePath, RemoteStat
from flaketui.loading.parsed import COLUMNS, Parsed
from flaketui.loading.userkey import MAC_BYTES, mac, user_key
from flaketui.model import PARSED_COLUMNS, FieldMap, Problem

FORMAT = 9
"""Bumped whenever parsing could give other columns for the same file, or the entry's
layout changes (6: harness formats claim files JSON Lines read before; a null outcome is
an errored trial; 7: name tables stored as text arrays, :func:`_name_blob`; 8: a trial of a
pretty-printed JSON file has the line its object starts on, integer ids keep their text;
9: a trial's ``attempt``/``retry`` field, and a Harbor job log's retries, are its attempt)."""
MIN_BYTES = 1 << 20
"""Files smaller than this are parsed again rather than cached (it is as fast)."""
MAX_BYTES = 2 << 30
"""The cache's size cap: beyond it, the least recently used entries are removed."""
SETTLE_NS = 2_000_000_000
"""A source modified less than this long before it is read (or twice its timestamps'
granularity) is unsettled: a rewrite in the same tick would keep its times."""


def cache_dir() -> Path:
    """Where entries are kept: ``$XDG_CACHE_HOME/flaketui/index`` when set, else the
    platform's user cache directory."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "flaketui" / "index"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("flaketui")) / "index"


def _identity(path: Path | RemotePath, fields: FieldMap) -> tuple[str, str]:
    """(entry file name, who): the name depends on the path, file name and field names
    only, so a changed file replaces its old entry; the key adds the file's stamp."""
    resolved = str(path.resolve())
    who = orjson.dumps([FORMAT, resolved, path.name, repr(fields)])
    # Two 32-bit checksums name the entry (hashlib's import alone costs a warm open 4 ms);
    # a clash only makes two logs take turns in one entry: the key inside is checked.
    name = f"{zlib.crc32(who):08x}{zlib.adler32(who):08x}.idx"
    return name, who.decode()


def _stamp(st: os.stat_result | RemoteStat) -> list[Any]:
    """What changes whenever the file's content can have changed: for a remote object,
    its identity (ETag, version, size, last-modified: :class:`~flaketui.loading.location.RemoteStat`)."""
    if isinstance(st, RemoteStat):
        return [st.identity, st.st_size]
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _key(who: str, st: os.stat_result | RemoteStat) -> str:
    return orjson.dumps([who, _stamp(st)]).decode()


def granularity_ns(mtime_ns: int, ctime_ns: int) -> int:
    """The apparent granularity of a file's timestamps: the largest power of ten
    (up to a second, then 2 s for FAT's even seconds) that divides both times."""
    g = 1
    while g < 1_000_000_000 and mtime_ns % (g * 10) == 0 and ctime_ns % (g * 10) == 0:
        g *= 10
    if g == 1_000_000_000 and mtime_ns % (2 * g) == 0 and ctime_ns % (2 * g) == 0:
        g *= 2
    return g


def settled(st: os.stat_result | RemoteStat, now_ns: int | None = None) -> bool:
    """Whether ``st``'s times can vouch for its content: its last change (or status change)
    lies more than :data:`SETTLE_NS` and its timestamps' granularity in the past (a time in
    the future, from a skewed clock, is not settled). A remote object's identity always can:
    a store gives every write a new ETag (or version), whatever the clock says."""
    if isinstance(st, RemoteStat):
        return True
    stamp = _stamp(st)
    mtime, ctime = stamp[3], stamp[4]
    now = time.time_ns() if now_ns is None else now_ns
    return now - max(mtime, ctime) >= max(SETTLE_NS, 2 * granularity_ns(mtime, ctime))


MAGIC = b"flaketui-index\x00\x04"
DIGEST = MAC_BYTES
"""Bytes of the keyed BLAKE2b MAC that follows :data:`MAGIC`; it covers every byte after it."""
ALIGN = 64


def load(path: Path | RemotePath, st: os.stat_result | RemoteStat, fields: FieldMap) -> tuple[str, Parsed] | None:
    """The cached (source kind, what it holds) of ``path`` as it is now, or ``None``:
    no entry, an entry for another state of the file, one that fails its checksum or
    does not hold a well-formed index, or one stored before the source's times could
    vouch for it whose content digest no longer matches; also when no format in
    :data:`~flaketui.loading.formats.FORMATS` gives that kind."""
    name, who = _identity(path, fields)
    entry = cache_dir() / name
    try:
        key = user_key()
        if key is None:
            return None
        with open(entry, "rb", buffering=0) as fh:
            # A private copy-on-write map: the arrays are writable (they become the log's).
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
            found = _read_entry(data, fh, _key(who, st), str(path), entry, key)
        if found is None:
            return None
        kind, parsed, content = found
        if content is not None:  # stored before the source's times could vouch for it
            if content != content_digest(path, st.st_size):
                return None
            if settled(st):  # they can now: keep an entry that needs no more reading
                store(path, st, fields, kind, parsed)
        return kind, parsed
    except (OSError, KeyError, IndexError, ValueError, TypeError, OverflowError, orjson.JSONDecodeError):
        return None


def content_digest(path: Path, size: int) -> str:
    """The XXH3-128 of the first ``size`` bytes of ``path`` (hex)."""
    import xxhash

    digest = xxhash.xxh3_128()
    with open(path, "rb", buffering=0) as fh:
        left = size
        while left > 0:
            block = fh.read(min(left, 8 << 20))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def _read_entry(data: mmap.mmap, fh: BinaryIO, key: str, spath: str,
                entry: Path, secret: bytes) -> tuple[str, Parsed, str | None] | None:
    """The entry held in ``data`` (mapped from ``fh``) if its MAC (keyed with ``secret``),
    key and arrays are right, else ``None``: (source kind, what it holds, the source's content digest when it
    was stored unsettled)."""
    body = len(MAGIC) + DIGEST
    if data[: len(MAGIC)] != MAGIC:
        return None
    from _operator import _compare_digest  # hmac.compare_digest, without hmac's 4 ms import

    if not _compare_digest(_digest(fh, body, len(data), secret), data[len(MAGIC) : body]):
        return None
    start = body + 8
    size = int.from_bytes(data[body:start], "little")
    meta = orjson.loads(data[start : start + size])
    if meta.get("key") != key:
        return None
    kind = meta["kind"]
    formats.format_of_kind(kind)  # a kind no format reads back is no use
    arrays = {
        a: np.frombuffer(data, dtype=np.dtype(dt), count=count, offset=offset)
        for a, dt, count, offset in meta["arrays"]
    }
    columns = {c: arrays["c_" + c] for c in COLUMNS}
    metrics = {m: arrays[f"m{i}"] for i, m in enumerate(meta["metrics"])}
    names = {t: _names(meta[t], arrays.get("n_" + t)) for t in NAME_TABLES}
    problems = [Problem(spath, line, str(reason)) for line, reason in meta["problems"]]
    parsed = Parsed(**names, metrics=metrics, problems=problems, **columns)
    if not _well_formed(parsed):
        return None
    try:
        os.utime(entry)  # used now: the last to be evicted
    except OSError:
        pass
    content = meta.get("content")
    return kind, parsed, None if content is None else str(content)


NAME_TABLES = ("runs", "tasks", "groups")
"""The name tables of :class:`~flaketui.loading.parsed.Parsed`, each kept as :func:`_name_blob`
gives it."""

NAME_SEP = "\n"
"""What separates the names of a table's text (a name holding one is kept in the header)."""


def _name_blob(names: list[str]) -> tuple[int | list[str], np.ndarray | None]:
    """How an entry keeps a name table: (its length, its names joined by :data:`NAME_SEP`
    as UTF-8 bytes), read back with one decode and one split (a million names: 45 ms, where
    reading them as a JSON list and checking each one's type took 90 ms); or, when a name holds
    the separator, (the names, ``None``): the list itself, in the header."""
    text = NAME_SEP.join(names)
    if text.count(NAME_SEP) != max(len(names) - 1, 0):
        return names, None
    return len(names), np.frombuffer(text.encode(), dtype=np.uint8)


def _digest(fh: BinaryIO, start: int, stop: int, secret: bytes) -> bytes:
    """The MAC (keyed with ``secret``) of bytes ``start`` to ``stop`` of ``fh``, read
    through one small buffer rather than the entry's map: the arrays are then mapped in only
    as they are used (a report never touches the byte offsets: 1M tasks, 50 MB less)."""
    digest = mac(secret)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    fh.seek(start)
    left = stop - start
    while left > 0:
        got = fh.readinto(view[: min(left, len(buf))])
        if not got:
            break
        digest.update(view[:got])
        left -= got
    return digest.digest()


def _names(value: Any, blob: np.ndarray | None) -> list[str]:
    """A name table read back from what :func:`_name_blob` gave (the header's part, the array)."""
    if blob is None:
        if not isinstance(value, list) or set(map(type, value)) - {str}:
            raise ValueError("a name table must be a list of strings")
        return value
    if type(value) is not int or blob.dtype != np.uint8:
        raise ValueError("a name table's text must be bytes and its length a count")
    names = str(memoryview(blob), "utf-8").split(NAME_SEP) if value else []  # no copy of the bytes
    if len(names) != value:
        raise ValueError("a name table's text must hold as many names as it says")
    return names


_DTYPES = {name: col.code for name, col in PARSED_COLUMNS.items()}
"""Each kept column's typecode (what :func:`_well_formed` checks an entry's arrays against)."""


def _well_formed(p: Parsed) -> bool:
    """Whether the columns agree with each other and with the name tables (a checksum
    guards the bytes; this guards against an entry that was written wrong)."""
    n = len(p)
    for name, code in _DTYPES.items():
        col = getattr(p, name)
        if col.dtype != np.dtype(code) or col.shape != (n,):
            return False
    if any(m.dtype != np.float64 or m.shape != (n,) for m in p.metrics.values()):
        return False
    if n == 0:
        return True
    return bool(
        0 <= p.run.min() and p.run.max() < len(p.runs) and 0 <= p.task.min() and p.task.max() < len(p.tasks)
        and -1 <= p.group.min() and p.group.max() < len(p.groups)
        and p.outcome.min() >= -1 and p.outcome.max() <= 1 and p.trial.min() >= -1
    )


def store(path: Path | RemotePath, st: os.stat_result | RemoteStat, fields: FieldMap, kind: str,
          parsed: Parsed) -> None:
    """Keep what ``path`` held (as it was at ``st``); failures are ignored. For a source
    not :func:`settled` (its times can't tell a later rewrite in the same tick), the entry
    also keeps a digest of its whole content, which every use checks until the times can
    vouch. An entry that alone would exceed :data:`MAX_BYTES` is not kept.

    Layout: :data:`MAGIC`, the keyed MAC of everything after it (:data:`DIGEST` bytes), the
    length of the header (8 bytes, little-endian), the header (JSON: key, problems, the
    name tables' lengths and where each array lies), then the arrays' bytes (the columns,
    the metrics, each name table's text: :func:`_name_blob`), each aligned to
    :data:`ALIGN`, read back without copying.
    """
    try:
        secret = user_key()
        if secret is None:
            return
        now = path.stat()
        if _stamp(now) != _stamp(st):
            return  # the file changed while it was read
        name, who = _identity(path, fields)
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        metric_names = list(parsed.metrics)
        arrays = {"c_" + c: np.ascontiguousarray(getattr(parsed, c)) for c in COLUMNS}
        arrays.update({f"m{i}": np.ascontiguousarray(parsed.metrics[m], dtype=np.float64)
                       for i, m in enumerate(metric_names)})
        meta: dict[str, Any] = {"key": _key(who, st), "kind": kind}
        for table in NAME_TABLES:
            meta[table], blob = _name_blob(getattr(parsed, table))
            if blob is not None:
                arrays["n_" + table] = blob
        meta.update({
            "metrics": metric_names,
            "problems": [(p.line, p.reason) for p in parsed.problems],
            # times that can't tell a rewrite in the same tick: the content vouches instead
            "content": None if settled(st) else content_digest(path, st.st_size),
        })
        # The header holds the offsets of the arrays after it, so its length is fixed
        # first with wide placeholders, then the offsets are filled in.
        table = [[a, v.dtype.str, int(v.size), 0] for a, v in arrays.items()]
        meta["arrays"] = [[a, dt, n, 1 << 62] for a, dt, n, _ in table]
        head_len = len(orjson.dumps(meta))
        body = len(MAGIC) + DIGEST
        pos = _aligned(body + 8 + head_len)
        for row, v in zip(table, arrays.values(), strict=True):
            row[3] = pos
            pos = _aligned(pos + v.nbytes)
        if pos > MAX_BYTES:
            return
        meta["arrays"] = table
        head = orjson.dumps(meta).ljust(head_len)
        import tempfile

        digest = mac(secret)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".idx")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + bytes(DIGEST))
                at = body
                for offset, chunk in [(body, head_len.to_bytes(8, "little") + head)] + [
                        (row[3], memoryview(v.reshape(-1)).cast("B")) for row, v in zip(table, arrays.values(),
                                                                                        strict=True)]:
                    for piece in (bytes(offset - at), chunk):
                        digest.update(piece)
                        fh.write(piece)
                    at = offset + len(chunk)
                tail = bytes(pos - at)  # the last array's padding: the file is exactly pos bytes
                digest.update(tail)
                fh.write(tail)
                fh.seek(len(MAGIC))
                fh.write(digest.digest())
            os.replace(tmp, folder / name)  # no fsync: a torn entry fails its MAC and is replaced
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        evict(folder, keep=folder / name)
    except (OSError, ValueError, TypeError):
        return


def evict(folder: Path, keep: Path | None = None, limit: int | None = None) -> None:
    """Remove the least recently used entries (oldest modification time: a hit touches
    its entry) until the folder's entries total at most ``limit`` (:data:`MAX_BYTES`)."""
    limit = MAX_BYTES if limit is None else limit
    found = []
    for entry in folder.glob("*.idx"):
        try:
            st = entry.stat()
        except OSError:
            continue
        found.append((st.st_mtime_ns, st.st_size, entry))
    total = sum(size for _, size, _ in found)
    for _, size, entry in sorted(found, key=lambda f: f[0]):
        if total <= limit:
            break
        if entry == keep:
            continue
        try:
            entry.unlink()
        except OSError:
            continue
        total -= size


def _aligned(pos: int) -> int:
    return -(-pos // ALIGN) * ALIGN
