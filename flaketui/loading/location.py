"""Logs where they live: local paths, or URLs on object storage read through fsspec.

A log argument that starts with a scheme (``s3://bucket/runs/``, ``gs://…``, ``az://…``,
``https://host/log.jsonl``) is a URL; anything else is a local path and stays on the local
code (``open``, ``os.stat``, mmap, the process pool), untouched by this module.

A URL's file is a :class:`RemotePath`: the few :class:`pathlib.Path` members the loader and
the formats use (``name``, ``suffix``, ``parent``, ``/``, ``stat()``, ``is_dir()``, …) over an
fsspec filesystem, so every format reads it with the same code as a local file. Its
``stat()`` is a :class:`RemoteStat` whose :attr:`~RemoteStat.identity` (ETag, version id or
generation, size, last-modified) keys the index cache. :func:`open_binary` opens either kind:
a URL is streamed in :data:`STREAM_BLOCK` range requests (never downloaded whole first), or,
to read one trial back, opened without read-ahead so that only that trial's bytes are asked
for.

The filesystem packages are optional extras (:data:`EXTRAS`): a missing one is one
:class:`~flaketui.model.InputError` naming it. Credentials and endpoints come from where
each SDK looks (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``~/.aws``, fsspec's own
configuration); an error from a store is one line with every secret the environment holds
masked (:func:`clean_message`).

Every request has a connect and a read timeout (the load's ``timeout``, ``--timeout``), and a load
an overall deadline (:data:`DEADLINE_FACTOR` times it, :func:`deadline`); a file a format
reads whole (``.json``, ``.eval``, …) that declares more than the load's ``max_bytes``
(``--max-bytes``) is refused before a byte of it is read (:func:`too_big`). A URL is text
only masked (:func:`flaketui.sanitize.mask_url`): ``str()`` of a :class:`RemotePath` has no
password and no presigned signature, and this process alone can read such a masked URL
again (:data:`_REAL`).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, NamedTuple

from flaketui.loading.options import current
from flaketui.model import InputError, Problem
from flaketui.sanitize import mask_url

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

EXTRAS: dict[str, tuple[str, str]] = {
    "s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"), "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"), "abfs": ("azure", "adlfs"), "abfss": ("azure", "adlfs"), "adl": ("azure", "adlfs"),
    "http": ("http", "aiohttp"), "https": ("http", "aiohttp"),
}
"""URL scheme -> (flaketui extra, the package it installs besides fsspec)."""
STREAM_BLOCK = 8 << 20
"""Bytes asked for in one range request while a remote log is parsed from start to end."""
SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
                    "AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
                    "AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_SECRET", "GOOGLE_OAUTH_ACCESS_TOKEN")
"""Environment variables whose values never appear in a message of flaketui."""
DEADLINE_FACTOR = 20
"""A load of remote logs (one command) asks no new request once it has run for this many
times its timeout (:attr:`LoadOptions.timeout <flaketui.loading.options.LoadOptions.timeout>`:
10 minutes by default), and no one request lasts longer: give a larger ``--timeout`` for loads
that take longer."""
STREAMED_KINDS = ("jsonl", "jsonl.gz")
"""Source kinds read a block at a time (no ``max_bytes`` cap: memory does not grow with
the file's size)."""
_deadline: float | None = None
"""``time.monotonic()`` after which no new request starts (see :func:`deadline`)."""


def is_url(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether ``path`` names a remote object (``scheme://…``) rather than a local file."""
    return isinstance(path, RemotePath) or (isinstance(path, str) and _URL.match(path) is not None)


def clean_message(text: object) -> str:
    """``text`` on one line, with the value of every :data:`SECRET_VARIABLES` masked, and
    every URL in it (:func:`~flaketui.sanitize.mask_url`)."""
    out = mask_url(" ".join(str(text).split()))
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            out = out.replace(value, "***")
    return out


class DeadlinePassed(TimeoutError):
    """A load of remote logs ran past its deadline (:func:`deadline`)."""


@contextlib.contextmanager
def deadline(seconds: float | None = None) -> Iterator[None]:
    """Within the block, no request to a store starts once ``seconds`` (default
    :data:`DEADLINE_FACTOR` × the load's timeout) have passed: the load it belongs to ends with
    the files not read named as unreadable. The outermost block sets the deadline."""
    global _deadline
    if _deadline is not None:
        yield
        return
    _deadline = time.monotonic() + (DEADLINE_FACTOR * current().timeout if seconds is None else seconds)
    try:
        yield
    finally:
        _deadline = None


def _check_deadline() -> None:
    if _deadline is not None and time.monotonic() > _deadline:
        raise DeadlinePassed(f"timed out: the load ran past its deadline of {DEADLINE_FACTOR * current().timeout:g} s "
                             f"({DEADLINE_FACTOR} x --timeout)")


_TRACES: dict[str, Any] = {}


def _aiohttp_session(timeout: float) -> dict[str, Any]:
    """An aiohttp session's options: connect and read timeouts, each request within the
    deadline's length, and a check of the deadline before each request."""
    import aiohttp

    if "http" not in _TRACES:
        async def on_request_start(*_: Any) -> None:
            _check_deadline()

        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(on_request_start)
        _TRACES["http"] = trace
    return {"timeout": _aiohttp_timeout(timeout), "trace_configs": [_TRACES["http"]]}


def _aiohttp_timeout(timeout: float) -> Any:
    """``timeout`` s to connect and between reads, the deadline's length for a whole request."""
    import aiohttp

    return aiohttp.ClientTimeout(total=DEADLINE_FACTOR * timeout, sock_connect=timeout, sock_read=timeout)


def _storage_options(protocol: str) -> dict[str, Any]:
    """The load's timeouts (``--timeout``) in the words of ``protocol``'s filesystem.

    - http(s) (fsspec's ``HTTPFileSystem``): ``client_kwargs`` are the aiohttp session's.
    - s3 (s3fs): botocore's ``connect_timeout`` and ``read_timeout``.
    - gs (gcsfs): every request is made with ``timeout=requests_timeout``, and aiohttp reads
      ``None`` there (gcsfs's default) as *no* timeout, overriding the session's: so the
      timeouts go in ``requests_timeout`` as well as in ``session_kwargs`` (the session
      gcsfs opens, with the deadline's check before each request). gcsfs tries a request
      that timed out six times with a backoff of about 31 s in all, each try a new request
      checked against the deadline. Google's own credential refresh is outside these.
    - az (adlfs): ``connection_timeout`` and ``read_timeout`` (whole seconds), which adlfs
      documents for a blob's downloads and uploads, the reads of a log; its listing and
      properties requests keep the Azure SDK's transport defaults, and the deadline is
      checked between files (:func:`_check_deadline` in :meth:`RemotePath.stat`).
    """
    timeout = current().timeout
    if protocol in ("http", "https"):
        return {"client_kwargs": _aiohttp_session(timeout)}
    if protocol in ("s3", "s3a"):
        return {"config_kwargs": {"connect_timeout": timeout, "read_timeout": timeout}}
    if protocol in ("gs", "gcs"):
        return {"requests_timeout": _aiohttp_timeout(timeout), "session_kwargs": _aiohttp_session(timeout)}
    if protocol in ("az", "abfs", "abfss"):
        seconds = max(1, math.ceil(timeout))
        return {"connection_timeout": seconds, "read_timeout": seconds}
    return {}


def too_big(path: Any, size: int, kind: str) -> Problem | None:
    """The problem that skips a remote file of source kind ``kind`` declaring ``size`` bytes
    when its format reads it whole and that is over the load's ``max_bytes``; None when it may be read."""
    limit = current().max_bytes
    if not is_url(path) or kind in STREAMED_KINDS or size <= limit:
        return None
    return Problem(str(path), None, f"declares {size} bytes, over the {limit} bytes a {kind} file read whole "
                                    "may have (--max-bytes); not read; skipped")


def describe(exc: BaseException) -> str:
    """A store's error in one line, masked (:func:`clean_message`); a timeout says which."""
    if isinstance(exc, DeadlinePassed):
        return clean_message(exc)
    if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
        detail = f" ({exc})" if str(exc).strip() else ""
        return clean_message(f"timed out: no answer within {current().timeout:g} s (--timeout){detail}")
    return clean_message(f"{type(exc).__name__}: {exc}")


def _filesystem(protocol: str) -> Any:
    """The fsspec filesystem for ``protocol``, configured from the environment (fsspec caches
    it), with the load's timeouts (``--timeout``)."""
    extra, package = EXTRAS.get(protocol, (None, None))
    need = f"pip install 'flaketui[{extra}]'" if extra else "pip install fsspec and its package for this scheme"
    try:
        import fsspec

        if package is not None:
            __import__(package)
        options = _storage_options(protocol) if package is not None else {}
        return fsspec.filesystem(protocol, **options)
    except ImportError:
        what = f"the {extra} extra" if extra else "fsspec"
        raise InputError(f"reading {protocol}:// URLs needs {what}: {need}") from None
    except ValueError as exc:  # fsspec knows no such protocol
        raise InputError(f"{protocol}:// URLs are not supported ({clean_message(exc)})") from None


class RemoteStat(NamedTuple):
    """What :meth:`RemotePath.stat` gives: ``os.stat_result``'s fields the loader reads, and
    the object's :attr:`identity`."""

    st_size: int
    st_mtime_ns: int
    identity: str
    """ETag, version id (or generation), size and last-modified as the store gives them:
    any new write of the object changes it. Empty when the store gives none of ETag,
    version or last-modified (the object is then never cached)."""
    st_mode: int = stat.S_IFREG | 0o444
    st_ctime_ns: int = 0
    st_dev: int = 0
    st_ino: int = 0


def _info_value(info: dict[str, Any], *names: str) -> Any:
    lowered = {k.lower(): v for k, v in info.items()}
    for name in names:
        value = lowered.get(name)
        if value not in (None, ""):
            return value
    return None


_KNOWN: dict[str, dict[str, Any]] = {}
"""URL -> what the store last said of it (see :attr:`RemotePath.info`)."""
KNOWN_MAX = 100_000
"""URLs whose info is kept; beyond, the table starts again (each is asked anew)."""
_REAL: dict[str, str] = {}
"""Masked URL -> the URL it masks, for the URLs given in this process: a log's source (the
masked text) is read again here, and nowhere else."""


class RemotePath:
    """A file or folder on a remote store, with the :class:`pathlib.Path` members the
    loader and the formats use. ``str()`` (and ``os.fspath``) give its URL."""

    def __init__(self, url: str, fs: Any | None = None) -> None:
        url = _REAL.get(url, url)
        masked = mask_url(url)
        if masked != url:
            if len(_REAL) >= KNOWN_MAX:
                _REAL.clear()
            _REAL[masked] = url
        self.masked = masked
        """The URL as text (:func:`~flaketui.sanitize.mask_url`): what ``str()`` gives."""
        protocol = url.split("://", 1)[0].lower()
        self.fs = fs if fs is not None else _filesystem(protocol)
        self.protocol = protocol
        self.url = url
        self.key = url if protocol in ("http", "https") else self.fs._strip_protocol(url)
        self.head: bytes | None = None
        """The first bytes, once :func:`~flaketui.loading.formats.format_for` has read them
        (it is asked again when the runs are named: the object is not)."""

    def __str__(self) -> str:
        return self.masked

    def __fspath__(self) -> str:
        return self.masked

    def __repr__(self) -> str:
        return f"RemotePath({self.masked!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.url.rstrip("/") == self.url.rstrip("/")

    def __hash__(self) -> int:
        return hash(self.url.rstrip("/"))

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(self.url.rstrip("/") + "/" + name, self.fs)

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    @property
    def info(self) -> dict[str, Any] | None:
        """What the last listing or :meth:`stat` of this URL in this process said of the
        object (size, ETag, ...): opening it then asks no ``HEAD``, and on S3 every range is
        asked ``If-Match`` that ETag (a rewrite since is an error, never a mix of two
        versions, nor a trace read at the offsets of another version). None when not known."""
        return _KNOWN.get(self.url)

    @info.setter
    def info(self, value: dict[str, Any]) -> None:
        if len(_KNOWN) >= KNOWN_MAX:
            _KNOWN.clear()
        _KNOWN[self.url] = value

    @property
    def size_hint(self) -> int | None:
        """The size in :attr:`info`, if known."""
        size = (self.info or {}).get("size")
        return int(size) if isinstance(size, int) else None

    @property
    def name(self) -> str:
        """The last part of the URL's path (a query or fragment is no part of it)."""
        url = self.url
        if self.protocol in ("http", "https"):
            url = url.split("#", 1)[0].split("?", 1)[0]
        return url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        dot = name.rfind(".")
        return name[dot:] if 0 < dot < len(name) - 1 else ""

    @property
    def parts(self) -> tuple[str, ...]:
        scheme, rest = self.url.split("://", 1)
        pieces = [p for p in rest.split("/") if p]
        return (f"{scheme}://{pieces[0]}", *pieces[1:]) if pieces else (f"{scheme}://",)

    @property
    def parent(self) -> RemotePath:
        parts = self.parts
        if len(parts) <= 1:
            return self
        return RemotePath("/".join(parts[:-1]), self.fs)

    def resolve(self) -> RemotePath:
        return self

    def absolute(self) -> RemotePath:
        return self

    def stat(self) -> RemoteStat:
        """The object's size and identity, asked of the store now (not from a listing); after
        the load's deadline, a timeout without a request (stores without a request hook)."""
        self.fs.invalidate_cache(self.key)
        try:
            _check_deadline()
            info = self.fs.info(self.key)
        except FileNotFoundError:
            raise
        except TimeoutError as exc:
            raise OSError(describe(exc)) from None
        except OSError as exc:
            raise OSError(exc.errno, clean_message(exc.strerror or exc)) from None
        except Exception as exc:  # a store's own error (botocore, azure, google): an unreadable file
            raise OSError(describe(exc)) from None
        if info.get("type") == "directory":
            return RemoteStat(0, 0, "", st_mode=stat.S_IFDIR | 0o555)
        self.info = info
        size = int(info.get("size") or 0)
        modified = _info_value(info, "lastmodified", "last_modified", "updated", "mtime", "last-modified")
        parts = [_info_value(info, "etag", "md5hash"), _info_value(info, "versionid", "version_id", "generation"),
                 modified]
        identity = "" if not any(parts) else repr([*(str(p) if p is not None else None for p in parts), size])
        mtime = getattr(modified, "timestamp", None)
        return RemoteStat(size, int(mtime() * 1e9) if callable(mtime) else 0, identity)

    def is_dir(self) -> bool:
        try:
            return bool(self.fs.isdir(self.key))
        except Exception:  # noqa: BLE001 - a store that can't answer: not a folder we can read
            return False

    def is_file(self) -> bool:
        try:
            return bool(self.fs.isfile(self.key))
        except Exception:  # noqa: BLE001
            return False

    def exists(self) -> bool:
        return self.is_dir() or self.is_file()

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        for key in sorted(self.fs.glob(self.key.rstrip("/") + "/" + pattern)):
            yield RemotePath(self.fs.unstrip_protocol(key), self.fs)

    def read_bytes(self) -> bytes:
        with open_binary(self) as fh:
            return fh.read()

    def open(self, mode: str = "rb") -> IO[bytes]:
        if mode != "rb":
            raise ValueError("remote logs are read only")
        return open_binary(self)


def as_path(text: str | os.PathLike[str]) -> Any:
    """A :class:`RemotePath` for a URL, else a :class:`pathlib.Path`."""
    if isinstance(text, RemotePath):
        return text
    if is_url(text):
        return RemotePath(os.fspath(text))
    from pathlib import Path

    return Path(text)


def open_binary(path: str | os.PathLike[str], stream: bool = True, buffering: int = -1) -> IO[bytes]:
    """Open a local file (``open(path, "rb", buffering)``) or a remote object for reading.

    A remote object is read by range requests: with ``stream``, :data:`STREAM_BLOCK` bytes
    at a time with read-ahead (for a read from start to end); without, exactly the bytes
    each ``read`` asks for (to read one trial back by its offset and length).
    """
    if not is_url(path):
        return open(path, "rb", buffering=buffering)  # noqa: SIM115 - the caller closes it
    remote = path if isinstance(path, RemotePath) else RemotePath(os.fspath(path))
    how: dict[str, Any] = ({"block_size": STREAM_BLOCK, "cache_type": "readahead"} if stream
                           else {"block_size": 1 << 16, "cache_type": "none"})

    def opened() -> IO[bytes]:
        if remote.size_hint is None:
            return remote.fs.open(remote.key, "rb", **how)
        try:
            fh = remote.fs.open(remote.key, "rb", size=remote.size_hint, **how)
        except TypeError:  # a filesystem whose files take no size
            return remote.fs.open(remote.key, "rb", **how)
        info = remote.info or {}
        if isinstance(getattr(type(fh), "details", None), property):
            fh.details = info
        if isinstance(getattr(fh, "req_kw", None), dict) and info.get("ETag"):
            fh.req_kw["IfMatch"] = info["ETag"]  # s3fs: the store refuses bytes of another version
        return fh

    return _store_open(opened)


def _store_open(opened: Callable[[], IO[bytes]]) -> IO[bytes]:
    """``opened()`` (a remote file), a store's own error as an :class:`OSError` of one line
    (a missing file or a folder stays what it is), within the load's deadline."""
    try:
        _check_deadline()
        return opened()
    except (FileNotFoundError, IsADirectoryError):
        raise
    except TimeoutError as exc:
        raise OSError(describe(exc)) from None
    except OSError as exc:
        raise OSError(exc.errno, clean_message(exc.strerror or exc)) from None
    except Exception as exc:  # noqa: BLE001 - a store's own error: the file is unreadable
        raise OSError(describe(exc)) from None


def no_ranges(path: Any, exc: ValueError) -> bool:
    """Whether ``exc`` is fsspec's word that the HTTP server at ``path`` ignores range requests
    (it answers every request with the whole file): then the file is read from its start
    (:func:`open_stream`)."""
    return is_url(path) and "range" in str(exc).lower()


def open_stream(path: str | os.PathLike[str]) -> IO[bytes]:
    """A remote object read once from its start, with no range request (fsspec's streaming
    file, ``block_size=0``): for a server that ignores ``Range``. Errors as :func:`open_binary`."""
    remote = path if isinstance(path, RemotePath) else RemotePath(os.fspath(path))
    return _store_open(lambda: remote.fs.open(remote.key, "rb", block_size=0))


SKIP_PIECE = 1 << 20
"""Bytes read and dropped at a time while a stream is skipped to an offset."""


def skip_then_read(fh: IO[bytes], offset: int, length: int) -> bytes:
    """``length`` bytes from ``offset`` of a stream that cannot seek: the bytes before are read
    and dropped, :data:`SKIP_PIECE` at a time (never all in memory)."""
    left = offset
    while left > 0:
        piece = fh.read(min(left, SKIP_PIECE))
        if not piece:
            return b""
        left -= len(piece)
    return fh.read(length)


def unreadable(path: Any, exc: OSError) -> Problem:
    """The problem that names a file that can't be read (and is skipped); a store's words
    on one line, without the credentials of the environment."""
    why = describe(exc) if isinstance(exc, TimeoutError) else clean_message(exc.strerror or exc)
    return Problem(mask_url(path), None, f"cannot read it ({why}); skipped")


def file_size(fh: Any) -> int:
    """The size of an open file, local or remote."""
    size = getattr(fh, "size", None)
    if isinstance(size, int):
        return size
    return os.fstat(fh.fileno()).st_size


def expand_url(url: str, suffixes: tuple[str, ...]) -> list[RemotePath]:
    """The objects a URL names: itself, every log under it (a folder: a prefix), or a glob's
    matches (``s3://bucket/runs/*.jsonl``, ``**`` for any depth).

    Raises
    ------
    InputError
        If the extra is missing, the store refuses or can't be reached, the bucket or object
        does not exist, or a folder or glob holds no log.
    """
    from flaketui.sidecar import is_triage_file

    base = RemotePath(url)
    fs = base.fs
    try:
        if any(ch in base.key for ch in "*?[") and base.protocol not in ("http", "https"):
            fs.invalidate_cache()
            listed = {k: info for k, info in fs.glob(base.key, detail=True).items() if info.get("type") != "directory"}
            found = [p for p in _listed(fs, listed) if not is_triage_file(p.name)]
            if not found:
                raise InputError(f"{base}: no object matches this pattern")
            return found
        fs.invalidate_cache(base.key)
        info = fs.info(base.key)
        if info.get("type") != "directory":
            base.info = info
            return [base]
        found = [p for p in _listed(fs, fs.find(base.key, detail=True))
                 if p.name.lower().endswith(suffixes) and not is_triage_file(p.name)]
        if not found:
            raise InputError(f"{base}: folder holds no .jsonl, .jsonl.gz, .json or .eval log")
        return found
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{base}: no such object, folder or bucket") from None
    except PermissionError as exc:
        raise InputError(f"{base}: access denied ({clean_message(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - botocore, aiohttp, azure, google errors: one line
        raise InputError(f"{base}: cannot read it ({describe(exc)})") from None


def _listed(fs: Any, listing: dict[str, dict[str, Any]]) -> list[RemotePath]:
    """The objects of a listing (key -> info), sorted, each with its listed size."""
    out = []
    for key in sorted(listing):
        path = RemotePath(fs.unstrip_protocol(key), fs)
        path.info = listing[key]
        out.append(path)
    return out
