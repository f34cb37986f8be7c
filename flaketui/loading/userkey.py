"""A per-user secret that authenticates what flaketui wrote itself.

The index cache's entries, and the Parquet trial tables ``flaketui export`` writes, carry a
keyed BLAKE2b MAC (:func:`mac`; RFC 7693 §2.9 and Python's ``hashlib.blake2b(key=…)``
documentation: "keyed hashing … can be used for authentication as a faster and simpler
replacement for HMAC"). A checksum only catches corruption: anyone who can edit an entry
(a CI cache restored from an untrusted branch, a cache folder copied from another machine)
can recompute it. The MAC's key is :data:`KEY_BYTES` random bytes in
``$XDG_CONFIG_HOME/flaketui/secret.key`` (else the platform's user config folder), created
``0600`` with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (open(2): ``O_EXCL`` fails if the name
exists, a symbolic link included; ``O_NOFOLLOW`` fails on a link) and read only when it is a
regular file of the current user that no one else can read. Without a usable key,
:func:`user_key` is ``None`` and callers trust nothing (the cache is then not used).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

KEY_BYTES = 32
"""Length of the secret (BLAKE2b's largest key)."""
MAC_BYTES = 16
"""Length of a MAC (BLAKE2b ``digest_size``)."""
KEY_NAME = "secret.key"

_cached: tuple[str, bytes | None] | None = None


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/flaketui`` when set, else the platform's user config folder."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "flaketui"
    from platformdirs import user_config_dir

    return Path(user_config_dir("flaketui"))


def _read(path: Path) -> bytes | None:
    """The key at ``path``, or None unless it is a private regular file of this user."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_size != KEY_BYTES or st.st_mode & 0o077
                or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())):
            return None
        data = os.read(fd, KEY_BYTES + 1)
        return data if len(data) == KEY_BYTES else None
    finally:
        os.close(fd)


def _create(path: Path) -> None:
    """Write a new key at ``path`` whole: a private temp file (exclusive, no link followed),
    then ``os.link`` to the name, which fails rather than replace a key another process
    made first."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(KEY_BYTES))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won: use its key
    finally:
        tmp.unlink(missing_ok=True)


def user_key() -> bytes | None:
    """This user's secret (made on first use), or None when it can't be read or made."""
    global _cached
    path = config_dir() / KEY_NAME
    if _cached is not None and _cached[0] == str(path):
        return _cached[1]
    key: bytes | None
    try:
        try:
            key = _read(path)
        except FileNotFoundError:
            _create(path)
            key = _read(path)
    except OSError:
        key = None
    _cached = (str(path), key)
    return key


def mac(key: bytes) -> Any:
    """A keyed BLAKE2b of :data:`MAC_BYTES` bytes (``update`` it, then ``digest()``)."""
    try:
        from _blake2 import blake2b  # hashlib's own; importing hashlib costs a warm open ms
    except ImportError:  # pragma: no cover - an interpreter without the builtin module
        from hashlib import blake2b
    return blake2b(key=key, digest_size=MAC_BYTES)
