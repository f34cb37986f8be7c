"""Writing a file flaketui makes: atomically, and never through a link.

Every output (a report page, an export, a plan, a screenshot, a triage file) is written by
:func:`atomic_write` or :func:`atomic_open`: a temporary file of a random name, created with
``O_EXCL`` (``tempfile.mkstemp``), so a link planted at any name it could take is never
opened; flushed and fsynced, then renamed over the final name, which replaces a link there
instead of writing through it. A kill at any moment leaves the old file or the new one, never
a torn one.

:func:`refuse_link` is the check for a file flaketui opens by name through another library
(the SQLite history): a link there is refused, not followed.

Pure Python: the core may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO


class LinkRefused(OSError):
    """A path that is a symbolic link where flaketui reads or writes a file of its own."""


def refuse_link(path: str | os.PathLike[str], what: str = "file") -> None:
    """Raise :class:`LinkRefused` if ``path`` is a symbolic link (dangling or not).

    For a file another library opens by name (SQLite follows a link, and a dangling one
    makes it create the file wherever the link points)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise LinkRefused(f"{os.fspath(path)}: the {what} is a symbolic link (flaketui never opens one "
                          "through a link)")


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], text: bool = False) -> Iterator[IO[bytes] | IO[str]]:
    """A file to write ``path`` 's new content into; when the ``with`` block ends without an
    error it replaces ``path`` (see :func:`atomic_write`), otherwise the temporary file is removed
    and ``path`` is untouched. ``text``: a UTF-8 text file (undecodable characters replaced, ``\\n``
    line ends), else binary.

    Write a temporary file in the same folder (a rename is atomic only within one file system),
    flush and fsync it, give it the old file's permissions, :func:`os.replace` it over ``path``,
    then fsync the folder: the sequence of Python's own ``tempfile``/``os.replace`` documentation
    and of e.g. the ``atomicwrites`` package (Unterwaditzer, MIT).

    Raises
    ------
    OSError
        If the folder cannot be written (read-only, missing, full). The old file is then
        untouched and no temporary file is left behind.
    """
    path = Path(path)
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with (os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="\n") if text
              else os.fdopen(fd, "wb")) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        try:
            old = os.lstat(path)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISREG(old.st_mode):
            os.chmod(tmp, old.st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def atomic_write(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Replace ``path`` with ``data`` (bytes, or pieces of bytes written as they come) so that
    a kill at any moment leaves the old or new file (:func:`atomic_open`).

    Nothing is written through a link: a symbolic link at ``path`` is itself replaced (the
    rename does not follow it) and its target is left alone; the temporary name is random and
    created exclusively, so a link planted there is never opened.

    Raises
    ------
    OSError
        If the folder cannot be written (read-only, missing, full). The old file is then
        untouched and no temporary file is left behind.
    """
    with atomic_open(path) as fh:
        for piece in [data] if isinstance(data, (bytes, bytearray, memoryview)) else data:
            fh.write(piece)  # type: ignore[arg-type]
