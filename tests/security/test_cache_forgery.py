"""A restored index cache can't be forged: an entry edited and given a
recomputed checksum (XXH3-128, what guarded entries until now), or a valid MAC under some
other key (a cache copied from another user or machine), is ignored and the log parsed again."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flaketui.loading import cache, load_logs
from tests.helpers.cache import cold, only_entry, poison_outcomes, trials
from tests.helpers.logs import assert_same


@pytest.fixture(autouse=True)
def cache_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    if hasattr(cache, "SETTLE_NS"):
        monkeypatch.setattr(cache, "SETTLE_NS", 0)


def _redigest(entry: Path, update) -> None:  # type: ignore[no-untyped-def]
    """Write into ``entry`` the digest ``update`` gives over every byte after it."""
    data = bytearray(entry.read_bytes())
    body = len(cache.MAGIC) + cache.DIGEST
    data[len(cache.MAGIC):body] = update(bytes(data[body:]))[:cache.DIGEST]
    entry.write_bytes(bytes(data))


def _forged_log(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    load_logs([log])
    entry = only_entry()
    poison_outcomes(entry)  # every trial a pass
    return log, entry


def test_an_entry_re_digested_the_old_way_is_not_believed(tmp_path: Path) -> None:
    """A cache entry re-digested with a plain hash is not believed."""
    import xxhash

    log, entry = _forged_log(tmp_path)
    _redigest(entry, lambda body: xxhash.xxh3_128(body).digest())
    warm = load_logs([log])
    assert_same(warm, cold(log))
    assert (warm.outcome == 0).any()  # the log's failures are still there


def test_an_entry_made_with_another_key_is_not_believed(tmp_path: Path) -> None:
    """A cache entry made with another key is not believed."""
    log, entry = _forged_log(tmp_path)
    other = os.urandom(32)
    _redigest(entry, lambda body: _mac(other, body))
    assert_same(load_logs([log]), cold(log))


def _mac(key: bytes, body: bytes) -> bytes:
    from flaketui.loading import userkey

    h = userkey.mac(key)
    h.update(body)
    return bytes(h.digest())


def test_an_honest_entry_is_used(tmp_path: Path) -> None:
    """An honest cache entry is used."""
    from flaketui.loading import userkey

    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    load_logs([log])
    entry = only_entry()
    key = userkey.user_key()
    assert key is not None
    _redigest(entry, lambda body: _mac(key, body))  # the same MAC: nothing changed
    got = cache.load(log, log.stat(), cold(log).fields)
    assert got is not None


def test_the_secret_is_private_and_never_read_through_a_link(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache key file is private and never read through a link."""
    from flaketui.loading import userkey

    key = userkey.user_key()
    path = userkey.config_dir() / userkey.KEY_NAME
    assert key is not None and len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Another folder whose key name is a link to a file the attacker can read: not used.
    planted = tmp_path / "elsewhere"
    planted.mkdir()
    target = tmp_path / "attacker-known"
    target.write_bytes(b"k" * 32)
    os.chmod(target, 0o600)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(planted))
    (planted / "flaketui").mkdir()
    (planted / "flaketui" / userkey.KEY_NAME).symlink_to(target)
    assert userkey.user_key() is None
    assert target.read_bytes() == b"k" * 32


def test_without_a_key_the_cache_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key the cache is not used."""
    from flaketui.loading import userkey

    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    monkeypatch.setattr(userkey, "user_key", lambda: None)
    monkeypatch.setattr(cache, "user_key", lambda: None)
    assert_same(load_logs([log]), cold(log))
    folder = cache.cache_dir()
    assert not folder.exists() or not list(folder.glob("*.idx"))
