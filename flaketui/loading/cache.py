"""The index cache: what parsing a log file gave, kept to reopen it without parsing.

One entry per (file, field names): the trial columns (run, task, trial, outcome,
score, byte offsets, ...), the name tables, the metrics and the problems found.
An entry is used only while the file has the same resolved path, name (it gives
the default run name: a symlink names its own run), inode, size, modification
time and status-change time (nanoseconds), and was written by the same cache
format; any change and the file is parsed again and the entry replaced. The
status-change time catches a rewrite that keeps the size and sets the
modification time back (``touch -r``, ``rsync -t``, a copy that keeps times):
no user can set it. Traces are never
cached: they stay in the log and are read back by offset.

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
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from flaketui.loading import formats
from flaketui.loading.parsed import COLUMNS, Parsed
from flaketui.model import FieldMap, Problem

ENABLED = True
"""Whether :func:`~flaketui.loading.load_logs` uses the cache by default (``--no-cache``
turns it off for the whole process, the app included)."""
FORMAT = 4
"""Bumped whenever parsing could give other columns for the same file."""
MIN_BYTES = 1 << 20
"""Files smaller than this are parsed again rather than cached (it is as fast)."""


def cache_dir() -> Path:
    """Where entries are kept: ``$XDG_CACHE_HOME/flaketui/index`` when set, else the
    platform's user cache directory."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "flaketui" / "index"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("flaketui")) / "index"


def _identity(path: Path, fields: FieldMap) -> tuple[str, str]:
    """(entry file name, who): the name depends on the path, file name and field names
    only, so a changed file replaces its old entry; the key adds the file's stamp."""
    resolved = str(path.resolve())
    who = orjson.dumps([FORMAT, resolved, path.name, repr(fields)])
    # Two 32-bit checksums name the entry (hashlib's import alone costs a warm open 4 ms);
    # a clash only makes two logs take turns in one entry: the key inside is checked.
    name = f"{zlib.crc32(who):08x}{zlib.adler32(who):08x}.idx"
    return name, who.decode()


def _stamp(st: os.stat_result) -> list[int]:
    """What changes whenever the file's content can have changed."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _key(who: str, st: os.stat_result) -> str:
    return orjson.dumps([who, _stamp(st)]).decode()


MAGIC = b"flaketui-index\x00\x01"
ALIGN = 64


def load(path: Path, st: os.stat_result, fields: FieldMap) -> tuple[str, Parsed] | None:
    """The cached (source kind, what it holds) of ``path`` as it is now, or ``None``
    (also when no format in :data:`~flaketui.loading.formats.FORMATS` gives that kind)."""
    name, who = _identity(path, fields)
    entry = cache_dir() / name
    try:
        with open(entry, "rb", buffering=0) as fh:
            # A private copy-on-write map: the arrays are writable (they become the log's),
            # and pages no one reads (offsets, metrics) are never read from disk.
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        if data[: len(MAGIC)] != MAGIC:
            return None
        start = len(MAGIC) + 8
        size = int.from_bytes(data[len(MAGIC) : start], "little")
        meta = orjson.loads(bytes(data[start : start + size]))
        if meta.get("key") != _key(who, st):
            return None
        formats.format_of_kind(meta["kind"])  # a kind no format reads back is no use
        arrays = {
            a: np.frombuffer(data, dtype=np.dtype(dt), count=count, offset=offset)
            for a, dt, count, offset in meta["arrays"]
        }
        columns = {c: arrays["c_" + c] for c in COLUMNS}
        metrics = {m: arrays[f"m{i}"] for i, m in enumerate(meta["metrics"])}
    except (OSError, KeyError, ValueError, TypeError, orjson.JSONDecodeError):
        return None
    spath = str(path)
    problems = [Problem(spath, line, reason) for line, reason in meta["problems"]]
    parsed = Parsed(runs=meta["runs"], tasks=meta["tasks"], groups=meta["groups"],
                    metrics=metrics, problems=problems, **columns)
    return meta["kind"], parsed


def store(path: Path, st: os.stat_result, fields: FieldMap, kind: str, parsed: Parsed) -> None:
    """Keep what ``path`` held (as it was at ``st``); failures are ignored.

    Layout: :data:`MAGIC`, the length of the header (8 bytes, little-endian), the
    header (JSON: key, names, problems and where each array lies), then the
    arrays' bytes, each aligned to :data:`ALIGN`, read back without copying.
    """
    try:
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
        meta: dict[str, Any] = {
            "key": _key(who, st),
            "kind": kind,
            "runs": parsed.runs,
            "tasks": parsed.tasks,
            "groups": parsed.groups,
            "metrics": metric_names,
            "problems": [(p.line, p.reason) for p in parsed.problems],
        }
        # The header holds the offsets of the arrays after it, so its length is fixed
        # first with wide placeholders, then the offsets are filled in.
        table = [[a, v.dtype.str, int(v.size), 0] for a, v in arrays.items()]
        meta["arrays"] = [[a, dt, n, 1 << 62] for a, dt, n, _ in table]
        head_len = len(orjson.dumps(meta))
        pos = _aligned(len(MAGIC) + 8 + head_len)
        for row, v in zip(table, arrays.values(), strict=True):
            row[3] = pos
            pos = _aligned(pos + v.nbytes)
        meta["arrays"] = table
        head = orjson.dumps(meta).ljust(head_len)
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".idx")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + head_len.to_bytes(8, "little") + head)
                for (_, _, _, offset), v in zip(table, arrays.values(), strict=True):
                    fh.seek(offset)
                    fh.write(v.tobytes())
            os.replace(tmp, folder / name)  # no fsync: a torn entry reads as bad and is replaced
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, TypeError):
        return


def _aligned(pos: int) -> int:
    return -(-pos // ALIGN) * ALIGN
