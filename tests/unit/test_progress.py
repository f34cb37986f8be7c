"""The load progress bar: on stderr, only past a second, never for piped JSON or CSV."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import click
import orjson
import pytest

from flaketui.cli import common as cli
from flaketui.cli.report import report as report_command
from flaketui.loading import load_logs


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_stream_is_tty", lambda stream: True)


def test_bar_appears_after_the_delay(terminal: None, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The progress bar appears only after the delay."""
    bar = cli.LoadProgress()
    assert bar.enabled
    bar.update(10, 100)
    assert bar._bar is None  # a quick load prints nothing
    monkeypatch.setattr(cli.LoadProgress, "DELAY", 0.0)
    bar.update(50, 100)
    assert bar._bar is not None
    bar.update(100, 100)
    bar.close()
    assert bar._bar is None
    assert capsys.readouterr().out == ""  # the bar is on stderr: stdout stays the report's


@pytest.mark.parametrize("fmt,stdout_tty,enabled", [
    ("json", False, False), ("csv", False, False), ("table", False, True), ("json", True, True),
])
def test_not_for_piped_machine_output(monkeypatch: pytest.MonkeyPatch, fmt: str, stdout_tty: bool,
                                      enabled: bool) -> None:
    """No progress bar for piped machine-readable output."""
    import sys

    monkeypatch.setattr(cli, "_stream_is_tty", lambda s: s is sys.stderr or stdout_tty)
    with click.Context(report_command) as ctx:
        ctx.params["fmt"] = fmt
        assert cli.LoadProgress().enabled is enabled


def test_not_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """No progress bar when stderr is not a terminal."""
    monkeypatch.setattr(cli, "_stream_is_tty", lambda stream: False)
    bar = cli.LoadProgress()
    monkeypatch.setattr(cli.LoadProgress, "DELAY", 0.0)
    bar.update(1, 2)
    assert not bar.enabled and bar._bar is None


@pytest.mark.slow
def test_gzip_log_reports_progress_as_it_goes(tmp_path: Path) -> None:
    """A gzip log reports progress as it goes."""
    # compressed bytes consumed, reported while reading, ending exactly at the file's size
    rng = random.Random(7)
    lines = [orjson.dumps({"task": f"t{i % 9}", "passed": i % 2 == 0,
                           "trace": [rng.randbytes(200).hex()]}) for i in range(20_000)]
    packed = tmp_path / "run.jsonl.gz"
    packed.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    plain = tmp_path / "other.jsonl"
    plain.write_bytes(lines[0] + b"\n")
    calls: list[tuple[int, int]] = []
    log = load_logs([packed, plain], progress=lambda done, total: calls.append((done, total)),
                    use_cache=False)
    assert len(log) == 20_001
    total = packed.stat().st_size + plain.stat().st_size
    assert all(t == total for _, t in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == total
    during = [d for d in done if 0 < d < packed.stat().st_size]
    assert len(during) >= 3  # not one jump at the end
    assert packed.stat().st_size in done  # the gzip file counts its whole size, no more
