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
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from flaketui.model import InputError, Problem

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


def is_url(path: str | os.PathLike[str] | RemotePath) -> bool:
    """Whether ``path`` names a remote object (``scheme://…``) rather than a local file."""
    return isinstance(path, RemotePath) or (isinstance(path, str) and _URL.match(path) is not None)


def clean_message(text: object) -> str:
    """``text`` on one line, with the value of every :data:`SECRET_VARIABLES` masked."""
    out = " ".join(str(text).split())
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            out = out.replace(value, "***")
    return out


def _filesystem(protocol: str) -> Any:
    """The fsspec filesystem for ``protocol``, configured from the environment (fsspec caches it)."""
    extra, package = EXTRAS.get(protocol, (None, None))
    need = f"pip install 'flaketui[{extra}]'" if extra else "pip install fsspec and its package for this scheme"
    try:
        import fsspec

        if package is not None:
            __import__(package)
        return fsspec.filesystem(protocol)
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


class RemotePath:
    """A file or folder on a remote store, with the :class:`pathlib.Path` members the
    loader and the formats use. ``str()`` (and ``os.fspath``) give its URL."""

    def __init__(self, url: str, fs: Any | None = None) -> None:
        protocol = url.split("://", 1)[0].lower()
        self.fs = fs if fs is not None else _filesystem(protocol)
        self.protocol = protocol
        self.url = url
        self.key = url if protocol in ("http", "https") else self.fs._strip_protocol(url)
        self.head: bytes | None = None
        """The first bytes, once :func:`~flaketui.loading.formats.format_for` has read them
        (it is asked again when the runs are named: the object is not)."""

    def __str__(self) -> str:
        return self.url

    def __fspath__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

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
        return self.url.rstrip("/").rsplit("/", 1)[-1]

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
        """The object's size and identity, asked of the store now (not from a listing)."""
        self.fs.invalidate_cache(self.key)
        try:
            info = self.fs.info(self.key)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise OSError(exc.errno, clean_message(exc.strerror or exc)) from None
        except Exception as exc:  # a store's own error (botocore, azure, google): an unreadable file
            raise OSError(clean_message(f"{type(exc).__name__}: {exc}")) from None
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
    try:
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
    except (FileNotFoundError, IsADirectoryError):
        raise
    except OSError as exc:
        raise OSError(exc.errno, clean_message(exc.strerror or exc)) from None
    except Exception as exc:  # noqa: BLE001 - a store's own error: the file is unreadable
        raise OSError(clean_message(f"{type(exc).__name__}: {exc}")) from None


def unreadable(path: Any, exc: OSError) -> Problem:
    """The problem that names a file that can't be read (and is skipped); a store's words
    on one line, without the credentials of the environment."""
    return Problem(str(path), None, f"cannot read it ({clean_message(exc.strerror or exc)}); skipped")


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
                raise InputError(f"{url}: no object matches this pattern")
            return found
        fs.invalidate_cache(base.key)
        info = fs.info(base.key)
        if info.get("type") != "directory":
            base.info = info
            return [base]
        found = [p for p in _listed(fs, fs.find(base.key, detail=True))
                 if p.name.lower().endswith(suffixes) and not is_triage_file(p.name)]
        if not found:
            raise InputError(f"{url}: folder holds no .jsonl, .jsonl.gz, .json or .eval log")
        return found
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{url}: no such object, folder or bucket") from None
    except PermissionError as exc:
        raise InputError(f"{url}: access denied ({clean_message(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - botocore, aiohttp, azure, google errors: one line
        raise InputError(f"{url}: cannot read it ({clean_message(f'{type(exc).__name__}: {exc}')})") from None


def _listed(fs: Any, listing: dict[str, dict[str, Any]]) -> list[RemotePath]:
    """The objects of a listing (key -> info), sorted, each with its listed size."""
    out = []
    for key in sorted(listing):
        path = RemotePath(fs.unstrip_protocol(key), fs)
        path.info = listing[key]
        out.append(path)
    return out
