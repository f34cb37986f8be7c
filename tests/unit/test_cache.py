"""The index cache: a second open of an unchanged log reads no line, and any change to the
file, or other field names, reads it again."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson
import pytest

from flaketui.loading import cache, load_logs, read_trial
from flaketui.loading import loader as loader_mod
from flaketui.loading.formats import json_lines
from flaketui.model import FieldMap, InputError
from tests.helpers.logs import assert_same


@pytest.fixture(autouse=True)
def cache_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MIN_BYTES", 0)


def write_log(path: Path, n: int = 50, bad: bool = True) -> Path:
    lines = [orjson.dumps({"task": f"t{i % 7}", "passed": i % 3 != 0, "metrics": {"tokens": i},
                           "trace": [{"role": "assistant", "content": f"step {i}"}]})
             for i in range(n)]
    if bad:
        lines.insert(3, b"{oops")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def entries() -> list[Path]:
    folder = cache.cache_dir()
    return sorted(folder.glob("*.idx")) if folder.exists() else []


class ParseCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = loader_mod.read_file

        def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(loader_mod, "read_file", counting)


def test_warm_open_equals_cold_and_parses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm open equals the cold one and parses nothing."""
    p = write_log(tmp_path / "run.jsonl")
    cold = load_logs([p], use_cache=False)
    assert entries() == []
    first = load_logs([p])
    assert len(entries()) == 1
    counter = ParseCounter(monkeypatch)
    warm = load_logs([p])
    assert counter.calls == 0
    assert_same(cold, first)
    assert_same(cold, warm)
    assert str(warm.problems[0]).startswith(f"{p}:4: not valid JSON")
    assert read_trial(warm, 5).trace == [{"role": "assistant", "content": "step 5"}]


def test_cache_is_under_the_user_cache_dir(tmp_path: Path) -> None:
    """The index cache lives under the user's cache folder."""
    # conftest points XDG_CACHE_HOME at a temporary folder
    assert cache.cache_dir() == Path(os.environ["XDG_CACHE_HOME"]) / "flaketui" / "index"


def test_changed_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grew is read again."""
    p = write_log(tmp_path / "run.jsonl")
    load_logs([p])
    with open(p, "ab") as fh:
        fh.write(b'{"task": "new", "passed": true}\n')
    counter = ParseCounter(monkeypatch)
    log = load_logs([p])
    assert counter.calls == 1 and "new" in log.tasks
    assert len(entries()) == 1  # the entry was replaced, not added


def test_same_size_other_mtime_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the same size and another time is read again."""
    p = write_log(tmp_path / "run.jsonl")
    load_logs([p])
    data = p.read_bytes().replace(b'"passed":true', b'"passed":1   ', 1)
    p.write_bytes(data)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    counter = ParseCounter(monkeypatch)
    load_logs([p])
    assert counter.calls == 1


def test_same_size_and_mtime_rewrite_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite keeping size and time is still read again."""
    # a rewrite that keeps the size and sets the modification time back (touch -r, rsync -t)
    p = write_log(tmp_path / "run.jsonl")
    load_logs([p])
    before = p.stat()
    data = p.read_bytes().replace(b'"task":"t0"', b'"task":"tX"', 1)
    p.write_bytes(data)
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (p.stat().st_size, p.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    counter = ParseCounter(monkeypatch)
    log = load_logs([p])
    assert counter.calls == 1 and "tX" in log.tasks


def test_symlink_names_its_own_run(tmp_path: Path) -> None:
    """A link to a log names its own run."""
    # the default run name comes from the name given, not the file linked to
    p = write_log(tmp_path / "base.jsonl")
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(p)
    assert load_logs([p]).runs == ["base"]
    assert load_logs([alias]).runs == ["alias"]
    assert load_logs([alias]).runs == ["alias"]  # warm
    assert load_logs([p]).runs == ["base"]


def test_other_field_names_have_their_own_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Other field names or thresholds get their own cache entry."""
    p = write_log(tmp_path / "run.jsonl")
    load_logs([p])
    strict = FieldMap(threshold=0.5)
    load_logs([p], strict)
    assert len(entries()) == 2
    counter = ParseCounter(monkeypatch)
    load_logs([p], strict)
    load_logs([p])
    assert counter.calls == 0


def test_no_cache_neither_reads_nor_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--no-cache neither reads nor writes the cache."""
    p = write_log(tmp_path / "run.jsonl")
    load_logs([p])
    counter = ParseCounter(monkeypatch)
    load_logs([p], use_cache=False)
    assert counter.calls == 1


@pytest.mark.parametrize("damage", [b"", b"garbage", b"flaketui-index\x00\x01\xff\xff\xff\xff\xff\xff\xff\x7f"])
def test_damaged_entry_is_passed_over(tmp_path: Path, damage: bytes) -> None:
    """A damaged cache entry is passed over and the log parsed."""
    p = write_log(tmp_path / "run.jsonl")
    cold = load_logs([p])
    [entry] = entries()
    entry.write_bytes(damage if damage else entry.read_bytes()[: len(entry.read_bytes()) // 2])
    assert_same(cold, load_logs([p]))


def test_unwritable_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unwritable cache folder is ignored."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    p = write_log(tmp_path / "run.jsonl")
    assert len(load_logs([p])) == 50


def test_parallel_file_cached_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file parsed in parallel is cached whole."""
    p = write_log(tmp_path / "big.jsonl", n=2000)
    serial = load_logs([p], use_cache=False)
    monkeypatch.setattr(json_lines, "PARALLEL_BYTES", 1)
    parallel = load_logs([p], workers=2)
    assert_same(serial, parallel)
    counter = ParseCounter(monkeypatch)
    assert_same(serial, load_logs([p], workers=2))
    assert counter.calls == 0
    assert np.array_equal(serial.metrics["tokens"], parallel.metrics["tokens"])


def test_file_growing_while_others_load_is_cached_as_read(tmp_path: Path) -> None:
    """A file growing during the load is cached as it was read."""
    # the second file grows while the first is read: the entry must hold what was read
    first = write_log(tmp_path / "a.jsonl", n=2000)
    second = write_log(tmp_path / "b.jsonl")
    grown = []

    def grow(done: int, total: int) -> None:
        if not grown:
            with open(second, "ab") as fh:
                fh.write(b'{"task": "late", "passed": true}\n')
            grown.append(True)

    load_logs([first, second], progress=grow)
    warm = load_logs([first, second])
    assert_same(load_logs([first, second], use_cache=False), warm)
    assert "late" in warm.tasks


def test_file_that_vanishes_or_cannot_be_read_is_one_line_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that vanishes or cannot be read is a one-line error."""
    gone = tmp_path / "gone.jsonl"  # listed, then removed before it was read
    monkeypatch.setattr(loader_mod, "expand_paths", lambda paths, skipped=None: [gone])
    with pytest.raises(InputError, match=f"^no usable trials in {gone} .first problem: {gone}: "
                       "cannot read it .No such file or directory.; skipped.$"):
        load_logs([gone])
    monkeypatch.undo()
    p = write_log(tmp_path / "run.jsonl")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr(loader_mod, "read_file", denied)
    with pytest.raises(InputError, match=f"^no usable trials in {p} .first problem: {p}: "
                       "cannot read it .Permission denied.; skipped.$"):
        load_logs([p], use_cache=False)


def test_timestamp_granularity_and_settling() -> None:
    """The file system's time granularity is inferred and recent files wait to settle."""
    second = 1_000_000_000
    assert cache.granularity_ns(1_700_000_000_123_456_789, 1_700_000_000_123_456_789) == 1
    assert cache.granularity_ns(1_700_000_001 * second, 1_700_000_001 * second) == second  # ext3, HFS+
    assert cache.granularity_ns(1_700_000_002 * second, 1_700_000_002 * second) == 2 * second  # FAT
    assert cache.granularity_ns(1_700_000_000_120_000_000, 1_700_000_000_123_000_000) == 1_000_000

    class Stat:
        st_dev = st_ino = st_size = 0

        def __init__(self, mtime: int, ctime: int) -> None:
            self.st_mtime_ns, self.st_ctime_ns = mtime, ctime

    now = 1_700_000_100 * second
    assert cache.settled(Stat(now - 3 * second + 7, now - 3 * second + 7), now)  # type: ignore[arg-type]
    assert not cache.settled(Stat(now - second + 7, now - second + 7), now)  # type: ignore[arg-type]
    # 1-second times: a change 3 s ago settles; the status change 1 s ago does not
    assert not cache.settled(Stat(now - 3 * second, now - second), now)  # type: ignore[arg-type]
    assert not cache.settled(Stat(now + 5 * second, now + 5 * second), now)  # type: ignore[arg-type]  # skew


def test_evict_keeps_the_newest_entries_under_the_cap(tmp_path: Path) -> None:
    """Eviction keeps the newest entries under the size cap."""
    folder = tmp_path / "idx"
    folder.mkdir()
    for i in range(5):
        entry = folder / f"{i}.idx"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    cache.evict(folder, keep=folder / "0.idx", limit=250)
    assert sorted(p.name for p in folder.glob("*.idx")) == ["0.idx", "4.idx"]


@pytest.mark.parametrize("tasks", [
    ["plain", "ünïcödé ✓", "emoji 🧪", "nul\x00inside", "sep\u2028other"],  # one text blob, split at "\n"
    ["line\nbreak", "plain"],  # a name holding the separator: the table stays a list in the header
    ["solo"],
])
def test_name_tables_come_back_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tasks: list[str]) -> None:
    """Task name tables come back from the cache exactly."""
    p = tmp_path / "names.jsonl"
    p.write_bytes(b"".join(orjson.dumps({"task": t, "passed": True}) + b"\n" for t in tasks))
    cold = load_logs([p], use_cache=False)
    load_logs([p])  # fills the cache
    counter = ParseCounter(monkeypatch)
    warm = load_logs([p])
    assert counter.calls == 0
    assert warm.tasks == cold.tasks == tasks
    assert warm.groups == cold.groups == []
    assert_same(cold, warm)


def test_name_blob_round_trip_and_bad_counts() -> None:
    """Name blobs round-trip, and bad counts are refused."""
    for names in (["a", "b\u2028c", "d"], [], [""], ["x\ny"]):
        value, blob = cache._name_blob(names)
        assert cache._names(value, blob) == names
        assert (blob is None) == ("\n" in "".join(names))
    _, blob = cache._name_blob(["a", "b"])
    for wrong in (3, 1, "2", [], None):
        with pytest.raises(ValueError):
            cache._names(wrong, blob)
    with pytest.raises(ValueError):
        cache._names(["a", 1], None)
