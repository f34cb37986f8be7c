"""Opening logs from someone else: no cache byte changes a figure,
--watch never goes stale, nothing in a folder is skipped without a word, a decompression
bomb or a file of garbage costs what an honest log costs, and big integer ids stay exact."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import cache, load_logs
from flaketui.loading import loader as loader_mod
from flaketui.loading.watch import LogWatcher
from flaketui.model import InputError, TrialLog
from tests.helpers.cache import cold, only_entry, poison_outcomes, trials
from tests.helpers.logs import assert_same

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cache_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small test logs are cached, and a file just written counts as settled (ns times)."""
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    if hasattr(cache, "SETTLE_NS"):
        monkeypatch.setattr(cache, "SETTLE_NS", 0)


# --- 5. The index cache --------------------------------------------------------------


def test_bit_flips_in_a_cache_entry_never_change_a_figure(tmp_path: Path) -> None:
    """60 single-bit flips at random offsets of an entry: every warm open equals --no-cache."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    reference = cold(log)
    load_logs([log])
    entry = only_entry()
    good = entry.read_bytes()
    rng = random.Random(16)
    for _ in range(60):
        bad = bytearray(good)
        at = rng.randrange(len(bad))
        bad[at] ^= 1 << rng.randrange(8)
        entry.write_bytes(bytes(bad))
        assert_same(load_logs([log]), reference)


def test_poisoned_outcome_column_does_not_pass_the_gate(tmp_path: Path) -> None:
    """The issue's attack: every cached outcome set to pass turned a failing gate into a pass."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    args = ["gate", str(log), "-k", "5", "--min-pass-hat-k", "0.9", "--max-flakiness", "1"]
    runner = CliRunner()
    first = runner.invoke(main, args)
    assert first.exit_code == 1
    poison_outcomes(only_entry())
    assert_same(load_logs([log]), cold(log))
    again = runner.invoke(main, args)
    assert again.exit_code == 1, again.output
    assert again.output == first.output


def test_same_second_same_size_rewrite_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a filesystem with 1-second times, a same-size rewrite in the same second (times put
    back as they were) keeps every time the cache checks: the new outcomes must show."""
    real = cache._stamp

    def one_second_times(st: os.stat_result) -> list[int]:
        stamp = real(st)
        return stamp[:3] + [t // 1_000_000_000 * 1_000_000_000 for t in stamp[3:]]

    monkeypatch.setattr(cache, "_stamp", one_second_times)
    log = tmp_path / "run.jsonl"
    for _attempt in range(3):  # each step within one second; try again if a second ticked over
        start = time.time()
        log.write_bytes(trials())
        before = log.stat()
        load_logs([log])  # cached
        log.write_bytes(trials(flip=frozenset(range(0, 400, 3))))
        os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
        if int(time.time()) == int(start):
            break
    assert log.stat().st_size == before.st_size
    assert_same(load_logs([log]), cold(log))
    assert_same(load_logs([log]), cold(log))


def test_entry_of_an_unsettled_file_is_rewritten_once_the_times_vouch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source read within its timestamps' tick is cached with a digest of its content; once
    its times are old enough, a warm open stores an entry that needs no more reading."""
    monkeypatch.setattr(cache, "SETTLE_NS", 3600 * 10**9)
    log = tmp_path / "run.jsonl"
    log.write_bytes(trials())
    load_logs([log])
    assert b'"content":"' in only_entry().read_bytes()
    assert_same(load_logs([log]), cold(log))
    monkeypatch.setattr(cache, "SETTLE_NS", 0)
    assert_same(load_logs([log]), cold(log))
    assert b'"content":null' in only_entry().read_bytes()


def test_cache_is_evicted_by_size_least_recently_used_first(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The index cache is evicted by size, least recently used first."""
    logs = []
    for i in range(3):
        log = tmp_path / f"run{i}.jsonl"
        log.write_bytes(trials(seed=i))
        logs.append(log)
    load_logs([logs[0]])
    one = only_entry().stat().st_size
    monkeypatch.setattr(cache, "MAX_BYTES", 2 * one + one // 2)  # room for two entries
    load_logs([logs[1]])
    time.sleep(0.01)
    load_logs([logs[0]])  # a hit: run0 is now the most recently used
    time.sleep(0.01)
    load_logs([logs[2]])  # one must go: run1, the least recently used
    names = {p.name for p in cache.cache_dir().glob("*.idx")}
    assert names == {cache._identity(logs[0], loader_mod.FieldMap())[0],
                     cache._identity(logs[2], loader_mod.FieldMap())[0]}
    assert sum(p.stat().st_size for p in cache.cache_dir().glob("*.idx")) <= cache.MAX_BYTES


# --- 6. --watch ------------------------------------------------------------------------


def line(task: str, passed: bool) -> bytes:
    return orjson.dumps({"task": task, "passed": passed}) + b"\n"


def test_watch_drops_a_file_removed_from_the_folder(tmp_path: Path) -> None:
    """--watch drops a file removed from the watched folder."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(line("a", True) * 2)
    (folder / "b.jsonl").write_bytes(line("b", False) * 3)
    watcher = LogWatcher([folder])
    assert len(watcher.load()) == 5
    (folder / "b.jsonl").unlink()
    assert watcher.poll() is True
    assert_same(watcher.log(), cold(folder))


def test_watch_sees_a_same_size_rewrite_with_the_same_last_64_bytes(tmp_path: Path) -> None:
    """--watch sees a same-size rewrite that keeps the last 64 bytes."""
    p = tmp_path / "live.jsonl"
    tail = b"".join(line(f"pad{i}", True) for i in range(5))
    p.write_bytes(line("a", True) + line("b", False) + tail)
    watcher = LogWatcher([p])
    assert watcher.load().outcome.tolist()[:2] == [1, 0]
    time.sleep(0.01)
    with open(p, "r+b") as fh:  # in place: the same inode, size and last bytes
        fh.write(line("a", False)[:-1].replace(b"false", b"fals ") + b"\n")
    assert p.stat().st_size == len(line("a", True) + line("b", False) + tail)
    watcher.poll()
    assert_same(watcher.log(), cold(p))


# --- 7. Nothing skipped without a word ----------------------------------------------------


def folder_with(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(line("a", True) + line("b", False))
    return folder


def named(log: TrialLog, path: Path) -> list[str]:
    return [p.reason for p in log.problems if p.path == str(path)]


@pytest.mark.slow
def test_fifo_in_a_folder_is_named_and_never_opened(tmp_path: Path) -> None:
    """A FIFO in a folder is named and never opened."""
    folder = folder_with(tmp_path)
    fifo = folder / "pipe.jsonl"
    os.mkfifo(fifo)
    # in a subprocess: opening the FIFO would block for good
    proc = subprocess.run([sys.executable, "-m", "flaketui", "report", str(folder), "--format", "json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")})
    assert proc.returncode == 0, proc.stderr
    assert f"{fifo}: a FIFO, not a regular file" in proc.stderr
    log = load_logs([folder])
    assert len(log) == 2 and named(log, fifo) == ["a FIFO, not a regular file: not opened; skipped"]


def test_dangling_link_in_a_folder_is_named(tmp_path: Path) -> None:
    """A dangling link in a folder is named."""
    folder = folder_with(tmp_path)
    link = folder / "gone.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")
    log = load_logs([folder])
    assert len(log) == 2 and named(log, link) == ["a link to a missing file; skipped"]


def test_unreadable_subfolder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 000 does not stop root: as root the folder's listing is refused through
    os.scandir instead (what both os.walk and pathlib's rglob call)."""
    folder = folder_with(tmp_path)
    sub = folder / "private"
    sub.mkdir()
    (sub / "hidden.jsonl").write_bytes(line("c", True))
    if os.geteuid() == 0:
        real = os.scandir

        def refuse(path: object = ".") -> object:
            if os.fspath(path).rstrip("/") == str(sub):  # type: ignore[arg-type]
                raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
            return real(path)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "scandir", refuse)
    else:
        sub.chmod(0)
    try:
        log = load_logs([folder])
    finally:
        sub.chmod(0o755)
    assert len(log) == 2
    assert named(log, sub) == ["cannot list this folder (Permission denied); skipped"]


def test_one_unreadable_file_does_not_abort_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root a chmod 000 file is still readable: the read is refused by a stand-in instead."""
    folder = folder_with(tmp_path)
    locked = folder / "locked.jsonl"
    locked.write_bytes(line("z", True))
    real = loader_mod.read_file

    def read_file(path: Path, *args: object, **kwargs: object) -> object:
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loader_mod, "read_file", read_file)
    log = load_logs([folder])
    assert log.tasks == ["a", "b"]
    assert named(log, locked) == ["cannot read it (Permission denied); skipped"]
    result = CliRunner().invoke(main, ["report", str(folder), "--format", "json"])
    assert result.exit_code == 0 and f"{locked}: cannot read it (Permission denied)" in result.stderr


def test_nothing_usable_left_is_exit_2(tmp_path: Path) -> None:
    """A folder with nothing usable left is exit 2."""
    folder = tmp_path / "logs"
    folder.mkdir()
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="no usable trials"):
        load_logs([folder])
    result = CliRunner().invoke(main, ["report", str(folder)])
    assert result.exit_code == 2 and "Traceback" not in result.output


# --- 8. Resource amplification --------------------------------------------------------------


def gzip_bomb(path: Path, size: int = 256 << 20, fill: bytes = b"\0") -> Path:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        chunk = fill * (16 << 20)
        for _ in range(size // len(chunk)):
            fh.write(packer.compress(chunk))
        fh.write(packer.flush())
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fill"), [("bomb.jsonl.gz", b"\0"), ("newlines.jsonl.gz", b"\n"),
                                            ("bomb.json.gz", b" ")])
def test_gzip_bomb_is_refused_quickly(tmp_path: Path, name: str, fill: bytes) -> None:
    """256 MB packed in 250 KB (a ratio of 1000): refused after a few MB, with a message."""
    folder = folder_with(tmp_path)
    bomb = gzip_bomb(folder / name, fill=fill)
    assert bomb.stat().st_size < 1 << 20
    start = time.perf_counter()
    log = load_logs([folder], use_cache=False)
    assert time.perf_counter() - start < 20
    assert len(log) == 2
    assert any("decompression bomb" in reason for reason in named(log, bomb)), log.problems


@pytest.mark.slow
def test_compressible_honest_gzip_still_loads(tmp_path: Path) -> None:
    """An honest, highly compressible gzip still loads."""
    body = trials(n=20_000) * 2  # repeated content: about 60 times smaller packed
    p = tmp_path / "run.jsonl.gz"
    p.write_bytes(gzip.compress(body))
    assert len(body) / p.stat().st_size > 15
    log = load_logs([p], use_cache=False)
    assert len(log) == 40_000 and not [r for r in named(log, p) if "bomb" in r]


@pytest.mark.slow
def test_eval_zip_bomb_is_refused_before_inspect_reads_it(tmp_path: Path) -> None:
    """An .eval (a zip) whose header.json inflates 1000 times: named from the zip's directory."""
    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open("header.json", "w", force_zip64=True) as fh:
        for _ in range(16):
            fh.write(b" " * (16 << 20))
    assert bomb.stat().st_size < 1 << 20
    good = tmp_path / "good.jsonl"
    good.write_bytes(line("a", True))
    start = time.perf_counter()
    log = load_logs([good, bomb], use_cache=False)
    assert time.perf_counter() - start < 20
    assert len(log) == 1
    reasons = named(log, bomb)
    assert len(reasons) == 1 and "decompression bomb" in reasons[0], reasons
    assert reasons[0].startswith("not a readable Inspect AI log (member 'header.json' expands")


MEASURE = """
import resource, sys, time
from flaketui.loading import load_logs
start = time.perf_counter()
try:
    log = load_logs([sys.argv[1]], use_cache=False)
    problems = len(log.problems)
except Exception as exc:
    problems = -1
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, problems)
"""


def measure(path: Path) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, check=True).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


@pytest.mark.slow
def test_garbage_costs_about_what_valid_lines_cost(tmp_path: Path) -> None:
    """10 MB of garbage lines (broken JSON, random bytes) against 10 MB of trials: about the
    same time and no more memory (the campaign saw 2.2 GB and 90 s)."""
    rng = random.Random(8)
    garbage, valid = [], []
    size = 0
    while size < 10 << 20:
        if rng.random() < 0.5:
            bad = b"{oops " + str(rng.random()).encode()
        else:
            bad = bytes(rng.getrandbits(8) for _ in range(rng.randrange(8, 40))).replace(b"\n", b" ")
        garbage.append(bad)
        size += len(bad) + 1
    size, i = 0, 0
    while size < 10 << 20:
        ok = orjson.dumps({"task": f"t{i % 500}", "passed": i % 3 != 0})
        valid.append(ok)
        size += len(ok) + 1
        i += 1
    bad_file, good_file = tmp_path / "garbage.jsonl", tmp_path / "valid.jsonl"
    bad_file.write_bytes(b"\n".join([*garbage, b'{"task": "x", "passed": true}']) + b"\n")
    good_file.write_bytes(b"\n".join(valid) + b"\n")
    good_time, good_rss, _ = measure(good_file)
    bad_time, bad_rss, problems = measure(bad_file)
    assert bad_time < 2 * good_time + 0.5, (bad_time, good_time)
    assert bad_rss < 1.3 * good_rss, (bad_rss, good_rss)
    assert problems == 1001  # the first 1000 named, the rest counted in one


def test_garbage_first_lines_named_exactly_and_the_rest_counted(tmp_path: Path) -> None:
    """The first garbage lines are named exactly and the rest counted."""
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b"{oops\n" * 1500 + b'{"task": 1}\n' * 10 + b"\xff\n" * 5 + line("a", True))
    log = load_logs([p], use_cache=False)
    assert len(log) == 1
    assert str(log.problems[0]) == (f"{p}:1: not valid JSON (unexpected character, expected a string key: "
                                    "line 1 column 2 (char 1))")
    assert [q.line for q in log.problems[:1000]] == list(range(1, 1001))
    assert str(log.problems[-1]) == (f"{p}: 515 more lines skipped after the first 1000 named "
                                     "(500 × not valid JSON; 10 × no outcome; 5 × not valid UTF-8)")


# --- 9. Integer ids beyond 64 bits ----------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_task_ids_beyond_64_bits_stay_apart(tmp_path: Path, suffix: str) -> None:
    """Task ids beyond 64 bits stay apart."""
    big = 10**29
    records = [{"task": big, "passed": True}, {"task": big + 1, "passed": False},
               {"task": big, "passed": True, "trace": [{"role": "user", "content": "x"}]},
               {"task": -(big + 1), "passed": True}, {"task": 2**64 - 1, "passed": True}]
    p = tmp_path / f"run{suffix}"
    # orjson refuses integers beyond 64 bits: Python's json writes them
    if suffix == ".json":
        p.write_text(json.dumps(records))
    else:
        p.write_text("".join(json.dumps(r) + "\n" for r in records))
    log = load_logs([p], use_cache=False)
    assert log.tasks == [str(big), str(big + 1), str(-(big + 1)), str(2**64 - 1)]
    assert not log.problems
    result = CliRunner().invoke(main, ["report", str(p), "--format", "json"])
    tasks = {t["task"]: t["n"] for t in orjson.loads(result.stdout)["runs"][0]["tasks"]}
    assert tasks == {str(big): 2, str(big + 1): 1, str(-(big + 1)): 1, str(2**64 - 1): 1}


# --- A number past the double range beside another fault -------------------------------------


@pytest.mark.parametrize(("bad", "reason"), [
    (b'[1e999 "b"]', "not valid JSON (Expecting ',' delimiter: line 1 column 43 (char 42))"),
    (b'[1e999, "\xff"]', "not valid UTF-8"),
])
def test_out_of_range_number_with_another_fault_is_named(tmp_path: Path, bad: bytes, reason: str) -> None:
    """orjson stops at a number past the double range, and the second parse (Python's json)
    found the other fault and raised its own error, which no reader caught: the command
    ended in a traceback. Now the line is named like any other bad line."""
    p = tmp_path / "run.jsonl"
    p.write_bytes(b'{"task": "a", "passed": true, "x": ' + bad + b"}\n" + line("b", True))
    log = load_logs([p], use_cache=False)
    assert log.tasks == ["b"] and [str(q) for q in log.problems] == [f"{p}:1: {reason}"]
    result = CliRunner().invoke(main, ["report", str(p), "--format", "json", "--no-cache"])
    assert result.exit_code == 0 and result.exception is None
