"""What a Parquet trial table may ask of flaketui: bounded rows, flat columns, and a
``source`` only where the table itself lives.

A table is data. Its ``source``/``offset``/``length`` columns name the bytes a trial's
trace is read back from, so a table written by someone else could otherwise point at
``/etc/passwd``, a secret file beside it, ``/dev/zero`` with a length of 2⁴⁰, itself, or a
URL of the author's choosing (fetched, on ``s3://``, with the user's own credentials).
:func:`resolve_source` allows only:

- a local file (after resolving links) inside the folder the table was named in, or under
  a root of the load's ``sources_roots`` (``--sources-root``: :func:`sources_roots`), that is
  a regular file, is not the
  table, and is not itself a Parquet file;
- a URL with the scheme, host and folder prefix of the table's own URL (or of a URL root
  of the load's ``sources_roots``), with no ``.``/``..`` segment;
- a ``length`` of at most :data:`MAX_RECORD_BYTES` and a non-negative ``offset``.

Anything else is a :class:`SourceRefused` (a ``ValueError``: the trial can't be read back)
whose message is one line naming the table and row.

A table ``flaketui export`` wrote for this user is the exception to the folder rule (not to
the others): its metadata holds :data:`SOURCES_TAG`, a MAC keyed with the user's secret
(:mod:`flaketui.loading.userkey`) over its distinct (source, source_kind) pairs, so the logs
it points at are logs this user once named; a table from anyone else can't carry a valid
one. No Textual, no Rich.
"""

from __future__ import annotations

import math
import os
import posixpath
import stat
from typing import Any
from urllib.parse import unquote, urlsplit

from flaketui.loading.location import is_url
from flaketui.loading.options import current
from flaketui.loading.userkey import mac, user_key
from flaketui.model import InputError
from flaketui.sanitize import visible

MAX_RECORD_BYTES = 64 << 20
"""The largest ``length`` a table may give one trial (64 MiB)."""
MAX_ROWS = 50_000_000
"""The most rows a table may declare in its metadata (checked before any is read)."""
MAX_ROWS_PER_BYTE = 10
"""Above :data:`ROWS_PER_BYTE_FROM` rows, the most rows per byte of file: a few hundred KB
of run-length-encoded rows that decode to gigabytes are refused before they are decoded.
Measured: ``flaketui export`` of a 200k-task log gives 13 bytes a row (0.08 rows a byte:
offsets and lines differ on every row), reading it back about 850 bytes of memory a row;
the issue's bomb held 34 rows a byte (10 M rows in 292 KB, 5 GB read)."""
ROWS_PER_BYTE_FROM = 1_000_000
"""Row count from which :data:`MAX_ROWS_PER_BYTE` applies."""

SOURCES_TAG = b"flaketui.sources_mac"
"""Schema metadata key of a table's :func:`sources_tag` (hex)."""

TEXT_COLUMNS = ("run", "task", "outcome", "group", "source", "source_kind")
"""Columns that must hold flat scalars (text; integers are taken as their digits)."""
NUMBER_COLUMNS = ("trial", "score", "offset", "length")
"""Columns that must hold numbers (``metric_*`` too)."""


class SourceRefused(InputError, ValueError):
    """A table's row names a source flaketui will not read (message: one line). An
    :class:`~flaketui.model.InputError`: wherever it is met (loading, reading a trial back for
    its traces), the command says it in one line and exits 2."""


def sources_tag(pairs: Any) -> bytes | None:
    """The hex MAC (this user's key) of the distinct (source, source_kind) ``pairs``, or None
    without a key."""
    import orjson

    key = user_key()
    if key is None:
        return None
    h = mac(key)
    h.update(b"flaketui-table-sources\x00" + orjson.dumps(sorted({(str(s), str(k)) for s, k in pairs})))
    return h.hexdigest().encode()


def own_table(metadata: dict[bytes, bytes] | None, sources: Any, kinds: Any) -> bool:
    """Whether a table's ``metadata`` holds the :func:`sources_tag` of its ``sources`` and
    ``kinds`` columns (object arrays): written by ``flaketui export`` for this user."""
    from _operator import _compare_digest

    tag = (metadata or {}).get(SOURCES_TAG)
    if not tag or any(not isinstance(v, str) for v in (*sources, *kinds)):
        return False
    want = sources_tag(zip(sources, kinds, strict=True))
    return want is not None and _compare_digest(want, tag)


def _where(table: str, row: int) -> str:
    return f"{visible(table)}:{row + 1}"


def row_count_problem(rows: int, size: int) -> str | None:
    """Why a table declaring ``rows`` rows in a file of ``size`` bytes is refused, or None."""
    if rows > MAX_ROWS:
        return f"declares {rows:,} rows, more than the {MAX_ROWS:,} flaketui reads from one table"
    if rows > ROWS_PER_BYTE_FROM and rows > MAX_ROWS_PER_BYTE * max(size, 1):
        return (f"declares {rows:,} rows in {size:,} bytes (over {MAX_ROWS_PER_BYTE:,} rows a byte): "
                "refused as a decompression bomb")
    return None


def column_problems(schema: Any, required: tuple[str, ...], metric_prefix: str) -> dict[str, str]:
    """Column name -> why it can't be read, for an Arrow ``schema``: a list, struct, map or
    other nested type where a scalar belongs, text where a number belongs, or a name that
    two columns share."""
    import pyarrow as pa

    def flat(t: Any) -> bool:
        if pa.types.is_dictionary(t):
            t = t.value_type
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
                    or pa.types.is_null(t))

    def number(t: Any) -> bool:
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                    or pa.types.is_null(t))

    out: dict[str, str] = {}
    names = list(schema.names)
    for f in schema:
        if names.count(f.name) > 1:
            out[f.name] = f"column {visible(f.name)} appears {names.count(f.name)} times"
        elif f.name in TEXT_COLUMNS and not flat(f.type):
            out[f.name] = f"column {visible(f.name)} has type {visible(f.type)}, not text"
        elif (f.name in NUMBER_COLUMNS or f.name.startswith(metric_prefix)) and not number(f.type):
            out[f.name] = f"column {visible(f.name)} has type {visible(f.type)}, not a number"
    return out


def _integer(value: Any, table: str, row: int, name: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SourceRefused(f"{_where(table, row)}: {name} {visible(value)} is not a number") from None
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise SourceRefused(f"{_where(table, row)}: {name} {visible(value)} is not a byte count")
    return int(number)


def check_span(table: str, row: int, offset: Any, length: Any) -> tuple[int, int]:
    """``(offset, length)`` of row ``row`` as integers, ``length`` bounded by :data:`MAX_RECORD_BYTES`."""
    off = _integer(offset, table, row, "offset")
    size = _integer(length, table, row, "length")
    if size > MAX_RECORD_BYTES:
        raise SourceRefused(f"{_where(table, row)}: length {size:,} is over the "
                            f"{MAX_RECORD_BYTES:,} bytes flaketui reads for one trial")
    return off, size


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # one relative, or different drives
        return False


def _url_parts(url: str) -> tuple[str, str, str] | None:
    """(scheme, host, path) of ``url``, or None when its path has a ``.``/``..`` segment
    (plain or percent-encoded) that could climb out of a prefix."""
    parts = urlsplit(url)
    path = parts.path or "/"
    segments = unquote(path).split("/")
    if any(s in (".", "..") for s in segments) or "\\" in unquote(path):
        return None
    return parts.scheme.lower(), parts.netloc.lower(), path


def _url_prefix(url: str, folder: bool) -> tuple[str, str, str] | None:
    """(scheme, host, folder path ending in ``/``) of a root URL (``folder``) or of a
    table's URL (its folder)."""
    got = _url_parts(url)
    if got is None:
        return None
    scheme, host, path = got
    if folder:
        return scheme, host, path.rstrip("/") + "/"
    return scheme, host, posixpath.dirname(path).rstrip("/") + "/"


def sources_roots() -> tuple[str, ...]:
    """Folders or URL prefixes a table's ``source`` may also point into, besides the table's own
    folder: the ``--sources-root`` of the load (or trial read) under way
    (:func:`flaketui.loading.options.current`)."""
    return current().sources_roots


def _resolve_url(table: str, row: int, source: str) -> str:
    """``source`` (a URL) when it lies under the table's own URL folder or a URL root."""
    prefixes = [_url_prefix(r, True) for r in sources_roots() if is_url(r)]
    if is_url(table):
        prefixes.append(_url_prefix(table, False))
    got = _url_parts(source)
    for prefix in prefixes:
        if got is not None and prefix is not None and got[:2] == prefix[:2] and got[2].startswith(prefix[2]):
            return source
    raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is a URL outside the table's "
                        "own location; flaketui fetches none a table names (give --sources-root URL)")


def _resolve_local(table: str, row: int, source: str, trusted: bool) -> str:
    """``source`` as a real path, when it is a regular file under the (local) table's folder
    or a local root (anywhere, when ``trusted``), and neither the table nor a Parquet file."""
    roots = [os.path.realpath(r) for r in sources_roots() if not is_url(r)]
    if trusted:
        real = os.path.realpath(source)
        roots = [real]
    elif is_url(table):
        real = os.path.realpath(source)
    else:
        base = os.path.realpath(os.path.dirname(os.path.abspath(table)))
        real = os.path.realpath(source if os.path.isabs(source) else os.path.join(base, source))
        roots.insert(0, base)
    if not any(_inside(real, root) for root in roots):
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is outside the table's "
                            "folder; flaketui reads none elsewhere (give --sources-root DIR)")
    try:
        st = os.stat(real)
    except OSError as exc:
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)}: "
                            f"{visible(exc.strerror or exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is not a regular file")
    if not is_url(table) and os.path.exists(table) and os.path.samefile(real, table):
        raise SourceRefused(f"{_where(table, row)}: source is the table itself")
    try:
        with open(real, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)}: "
                            f"{visible(exc.strerror or exc)}") from None
    if head == b"PAR1":
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is a Parquet file; "
                            "a table's trials are read from logs, never from another table")
    return real


def resolve_source(table: str, row: int, source: Any, kind: Any, refused_kinds: tuple[str, ...],
                   trusted: bool = False) -> str:
    """Where row ``row`` (0-based) of ``table`` may read its trial from: ``source`` checked
    as the module docstring says, as a real path or a URL; ``trusted`` (:func:`own_table`)
    lifts only the rule of the table's folder.

    Raises
    ------
    SourceRefused
        With one line naming the table and row, for any source outside the rules.
    """
    if not isinstance(source, str) or not source or "\x00" in source:
        raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is not a file name")
    if not isinstance(kind, str) or kind in refused_kinds:
        raise SourceRefused(f"{_where(table, row)}: source_kind {visible(kind)} is not a log format "
                            "a table's trial is read from")
    if is_url(source):
        if trusted and _url_parts(source) is not None:
            return source
        return _resolve_url(table, row, source)
    if is_url(table) and not trusted:
        if not source.startswith("/"):  # relative to the table's own URL
            return _resolve_url(table, row, table.rsplit("/", 1)[0] + "/" + source)
        if not any(not is_url(r) for r in sources_roots()):
            raise SourceRefused(f"{_where(table, row)}: source {visible(source)} is a local file "
                                "named by a remote table (give --sources-root DIR)")
    return _resolve_local(table, row, source, trusted and os.path.isabs(source))
