"""Following growing logs: new complete lines only, half-written lines wait, truncated or
replaced files are read again; the watched log equals a fresh load at every step."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from flaketui.app.widgets.loading import LoadingPane
from flaketui.loading import load_logs
from flaketui.loading.watch import Change, LogWatcher, Tail
from flaketui.model import FieldMap, InputError
from tests.helpers.logs import assert_same


def line(task: str, passed: bool, **extra: object) -> bytes:
    return orjson.dumps({"task": task, "passed": passed, **extra}) + b"\n"


class TestTail:
    def test_new_file_then_growth(self, tmp_path: Path) -> None:
        """Tail reads a new file, then only what it grows by."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True))
        tail = Tail(p)
        first = tail.check()
        assert first == Change("reset", 0, p.stat().st_size)
        tail.advance(first.end, 1)
        assert tail.check() == Change("none")
        with open(p, "ab") as fh:
            fh.write(line("b", False))
        grown = tail.check()
        assert grown.kind == "grew" and grown.start == first.end and grown.end == p.stat().st_size

    def test_half_written_line_waits(self, tmp_path: Path) -> None:
        """A half-written line waits until it is complete."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True) + b'{"task": "b", "pas')
        tail = Tail(p)
        c = tail.check()
        assert c.end == len(line("a", True))
        tail.advance(c.end, 1)
        assert tail.check() == Change("none")
        with open(p, "ab") as fh:
            fh.write(b'sed": true}')
        assert tail.check() == Change("none")  # still no newline
        with open(p, "ab") as fh:
            fh.write(b"\n")
        assert tail.check() == Change("grew", c.end, p.stat().st_size)

    def test_truncated_file_resets(self, tmp_path: Path) -> None:
        """A truncated file resets the tail."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True) * 3)
        tail = Tail(p)
        tail.advance(tail.check().end, 3)
        p.write_bytes(line("z", False))
        assert tail.check() == Change("reset", 0, p.stat().st_size)
        assert tail.pos == 0 and tail.lines == 0

    def test_rewritten_in_place_and_longer_resets(self, tmp_path: Path) -> None:
        """A file rewritten in place and longer resets the tail."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True))
        tail = Tail(p)
        tail.advance(tail.check().end, 1)
        with open(p, "r+b") as fh:  # same inode, same length or more, other bytes
            fh.write(line("x", False) + line("y", True))
        assert tail.check().kind == "reset"

    def test_replaced_file_resets(self, tmp_path: Path) -> None:
        """A file replaced by another resets the tail."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True))
        tail = Tail(p)
        tail.advance(tail.check().end, 1)
        new = tmp_path / "new.jsonl"
        new.write_bytes(line("a", True) + line("b", True))
        os.replace(new, p)
        assert tail.check().kind == "reset"

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is reported gone."""
        assert Tail(tmp_path / "nope.jsonl").check() == Change("gone")

    def test_long_last_line_is_found(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A last line longer than the scan window is still found."""
        from flaketui.loading import watch

        monkeypatch.setattr(watch, "SCAN", 7)
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True, pad="x" * 200) + b"{partial" * 10)
        assert Tail(p).check().end == len(line("a", True, pad="x" * 200))


class TestLogWatcher:
    def test_follows_growth_like_a_fresh_load(self, tmp_path: Path) -> None:
        """Following a growing log gives what a fresh load gives."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True) + line("a", False) + b"{bad}\n" + line("b", True))
        w = LogWatcher([p])
        log = w.load()
        assert_same(log, load_logs([p], use_cache=False))
        assert w.poll() is False
        with open(p, "ab") as fh:
            fh.write(line("b", False) + line("c", True, trial=7) + b'{"task": "d", "pa')
        assert w.poll() is True
        grown = w.log()
        assert grown.tasks == ["a", "b", "c"] and len(grown) == 5
        assert [str(x) for x in grown.problems] == [f"{p}:3: " + log.problems[0].reason]
        with open(p, "ab") as fh:
            fh.write(b'ssed": true}\n')
        assert w.poll() is True
        assert_same(w.log(), load_logs([p], use_cache=False))

    def test_truncation_reloads(self, tmp_path: Path) -> None:
        """A truncated log is loaded again."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(line("a", True) * 2 + line("b", True))
        w = LogWatcher([p])
        w.load()
        p.write_bytes(line("z", False))
        assert w.poll() is True
        assert_same(w.log(), load_logs([p], use_cache=False))

    def test_new_file_in_watched_folder(self, tmp_path: Path) -> None:
        """A new file in a watched folder is picked up."""
        (tmp_path / "a.jsonl").write_bytes(line("a", True))
        w = LogWatcher([tmp_path])
        assert w.load().runs == ["a"]
        (tmp_path / "b.jsonl").write_bytes(line("x", False))
        assert w.poll() is True
        assert w.log().runs == ["a", "b"]

    def test_json_array_reloaded_whole(self, tmp_path: Path) -> None:
        """A changed JSON array is loaded again whole."""
        p = tmp_path / "res.json"
        p.write_bytes(orjson.dumps([{"task_id": 1, "reward": 1.0}]))
        w = LogWatcher([p])
        assert len(w.load()) == 1
        p.write_bytes(orjson.dumps([{"task_id": 1, "reward": 1.0}, {"task_id": 1, "reward": 0.0}]))
        os.utime(p, ns=(1, p.stat().st_mtime_ns + 5_000_000))
        assert w.poll() is True and len(w.log()) == 2

    def test_empty_file_waits_for_trials(self, tmp_path: Path) -> None:
        """An empty file waits for trials instead of failing."""
        p = tmp_path / "run.jsonl"
        p.write_bytes(b"")
        w = LogWatcher([p])
        with pytest.raises(InputError, match="no usable trials .* yet"):
            w.load()
        p.write_bytes(line("a", True))
        assert w.poll() is True and len(w.log()) == 1


@pytest.mark.slow
def test_report_watch_reprints_and_ctrl_c_exits_0(tmp_path: Path) -> None:
    """report --watch reprints as the log grows and exits 0 on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    p = tmp_path / "live.jsonl"
    p.write_bytes(line("a", True) + b'{"task": "b", "pa')
    proc = subprocess.Popen(
        [sys.executable, "-m", "flaketui", "report", str(p), "--watch", "--interval", "0.1",
         "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None

    def next_doc() -> dict:  # type: ignore[type-arg]
        text = b""
        while True:
            got = proc.stdout.readline()  # type: ignore[union-attr]
            assert got, proc.stderr.read().decode()  # type: ignore[union-attr]
            text += got
            if got == b"}\n":
                return orjson.loads(text)

    try:
        first = next_doc()
        assert [t["task"] for t in first["runs"][0]["tasks"]] == ["a"]
        with open(p, "ab") as fh:
            fh.write(b'ssed": false}\n')
        second = next_doc()
        assert sorted(t["task"] for t in second["runs"][0]["tasks"]) == ["a", "b"]
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=10)
    err = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.ui
async def test_app_watch_shows_new_trials(tmp_path: Path) -> None:
    """The app with --watch shows new trials as they land."""
    from flaketui.app.app import make_app
    from flaketui.app.widgets.task_table import TaskTable

    p = tmp_path / "live.jsonl"
    p.write_bytes(line("a", True) + line("a", False) + b'{"task": "b"')
    app = make_app([str(p)], watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        t = screen.query_one(TaskTable)
        assert [t.row_text(i)[0] for i in range(len(t.order))] == ["a"]
        with open(p, "ab") as fh:
            fh.write(b', "passed": true}\n' + line("c", False))
        screen.query_one(LoadingPane).poll()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert sorted(t.row_text(i)[0] for i in range(len(t.order))) == ["a", "b", "c"]
        assert app.trial_log is not None and len(app.trial_log) == 4
        assert "watching" in screen.sub_title


def test_file_removed_while_read_waits_for_the_next_poll(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file removed while being read waits for the next poll."""
    from flaketui.loading import scan

    p = tmp_path / "run.jsonl"
    p.write_bytes(line("a", True))
    watcher = LogWatcher([p])
    watcher.load()
    with open(p, "ab") as fh:
        fh.write(line("b", False))
    real = scan.parse_range

    def removed_meanwhile(*args: object, **kwargs: object) -> Any:
        data = p.read_bytes()
        p.unlink()
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            p.write_bytes(data + line("c", True))  # the writer puts a new file in place

    monkeypatch.setattr(scan, "parse_range", removed_meanwhile)
    assert watcher.poll() is False
    monkeypatch.undo()
    assert watcher.poll() is True
    assert_same(watcher.log(), load_logs([p], use_cache=False))


def test_whole_file_rewrite_keeping_size_and_mtime_is_seen(tmp_path: Path) -> None:
    """A whole-file rewrite keeping size and time is seen."""
    # JSON arrays are reloaded whole when their stamp changes; size and mtime alone miss
    # a rewrite that keeps both (touch -r); the status-change time does not
    p = tmp_path / "results.json"
    p.write_bytes(b'[{"task": "a", "passed": true}]')
    watcher = LogWatcher([p])
    assert watcher.load().tasks == ["a"]
    before = p.stat()
    p.write_bytes(b'[{"task": "b", "passed": true}]')
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert watcher.poll() is True
    assert watcher.log().tasks == ["b"]


def test_same_tick_rewrite_is_found_by_the_digest_of_what_was_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-size rewrite that keeps size, mtime and ctime (one timestamp tick) and the last
    64 bytes: while the times are too recent to vouch, the bytes read are hashed again."""
    import time
    from types import SimpleNamespace

    p = tmp_path / "live.jsonl"
    pad = b"".join(orjson.dumps({"task": f"pad{i}", "passed": 1}) + b"\n" for i in range(4))
    p.write_bytes(orjson.dumps({"task": "a", "passed": 1}) + b"\n" + pad)
    tick = time.time_ns()
    real = os.stat

    def one_tick(path: object, *args: object, **kwargs: object) -> object:
        st = real(path, *args, **kwargs)  # type: ignore[arg-type]
        if os.fspath(path) != str(p):  # type: ignore[arg-type]
            return st
        return SimpleNamespace(st_dev=st.st_dev, st_ino=st.st_ino, st_size=st.st_size, st_mode=st.st_mode,
                               st_mtime_ns=tick, st_ctime_ns=tick)

    monkeypatch.setattr(os, "stat", one_tick)
    watcher = LogWatcher([p])
    assert watcher.load().outcome.tolist()[0] == 1
    with open(p, "r+b") as fh:
        fh.write(orjson.dumps({"task": "a", "passed": 0}))
    assert watcher.poll() is True
    log = watcher.log()
    monkeypatch.undo()
    assert_same(log, load_logs([p], use_cache=False))


def test_watch_names_runs_as_a_load_does(tmp_path: Path) -> None:
    """Two folders' results.json files are two runs under --watch too (not one merged 'results')."""
    for agent in ("a", "b"):
        (tmp_path / agent).mkdir()
        (tmp_path / agent / "results.jsonl").write_text('{"task": "t", "passed": true}\n')
    watcher = LogWatcher([str(tmp_path)], FieldMap())
    watcher.poll()
    assert sorted(watcher.log().runs) == sorted(load_logs([tmp_path], use_cache=False).runs) \
        == ["a/results", "b/results"]
