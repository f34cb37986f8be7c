"""The load progress bar: on stderr, only past a second, never for piped JSON or CSV."""

from __future__ import annotations

import click
import pytest

from flaketui import cli


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_stream_is_tty", lambda stream: True)


def test_bar_appears_after_the_delay(terminal: None, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
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
    import sys

    monkeypatch.setattr(cli, "_stream_is_tty", lambda s: s is sys.stderr or stdout_tty)
    with click.Context(cli.report) as ctx:
        ctx.params["fmt"] = fmt
        assert cli.LoadProgress().enabled is enabled


def test_not_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_stream_is_tty", lambda stream: False)
    bar = cli.LoadProgress()
    monkeypatch.setattr(cli.LoadProgress, "DELAY", 0.0)
    bar.update(1, 2)
    assert not bar.enabled and bar._bar is None
