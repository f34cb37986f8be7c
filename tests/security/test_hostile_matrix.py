"""No traceback from any command on any hostile file: every command (report in each format,
compare, diff, gate, plan and its emitters, export, triage export, history record and status,
quarantine) over the project's hostile corpus (:func:`tests.helpers.hostile.hostile_corpus`),
in-process, each exiting 0, 1 or 2 within a time bound, the process's memory within a bound; and
the app's load and trace screens headless on each file.

The report's table over every file runs always (seconds); the whole matrix and the app are
``slow``."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.hostile import EVERY_COMMAND, command_line, hostile_corpus, raw_controls

SECONDS = 30.0
"""The longest one command may take on one hostile file (in-process, on a loaded machine)."""
MAX_RSS_MB = 3072
"""The most memory the test process may have used by the end of the matrix."""

COMMANDS = EVERY_COMMAND


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """The hostile files, made once for the module."""
    return hostile_corpus(tmp_path_factory.mktemp("corpus"))


def invoke(command: str, log: Path, task: str, out: Path) -> tuple[int, str, str]:
    """``command`` on ``log`` (and ``task``, outputs under ``out``); fails on a traceback, on an exit
    code other than 0, 1 or 2, or when it takes over :data:`SECONDS`."""
    args = command_line(command, log, task, out)
    started = time.monotonic()
    reads_logs = args[0] != "history" or args[1] == "record"
    code, stdout, stderr = run(*args, "--no-cache") if reads_logs else run(*args)
    took = time.monotonic() - started
    assert code in (0, 1, 2), (command, code, stderr)
    assert "Traceback" not in stderr, (command, stderr)
    assert took < SECONDS, f"{command}: {took:.1f} s"
    if code == 2:
        assert stderr.strip(), (command, "exit 2 says why")
    assert raw_controls(stderr) == [], (command, stderr)
    return code, stdout, stderr


def test_report_table_on_every_hostile_file(corpus, tmp_path):
    """report (the table) on each hostile file: exit 0 or 2, no traceback, no raw control byte."""
    for name, (log, task) in corpus.items():
        code, out, _ = invoke("report table", log, task, tmp_path)
        assert raw_controls(out) == [], name


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_on_every_hostile_file(corpus, tmp_path, command):
    """Each command on each hostile file: exit 0, 1 or 2, no traceback, in bounded time."""
    for name, (log, task) in corpus.items():
        out = tmp_path / name
        out.mkdir()
        try:
            invoke(command, log, task, out)
        except AssertionError as exc:
            raise AssertionError(f"{command} on {name}: {exc}") from None
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert rss_mb < MAX_RSS_MB, f"{rss_mb:.0f} MB"


@pytest.mark.slow
@pytest.mark.ui
async def test_app_load_and_trace_screens_on_every_hostile_file(corpus):
    """The app loads each hostile file headless and opens the trace screen of a task: no
    exception reaches the app (a load error is shown, not raised)."""
    from flaketui.app.app import make_app
    from tests.conftest import SIZE

    reached = {}
    for name, (log, _task) in corpus.items():
        app = make_app([str(log)])
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            for _ in range(20):  # the load runs in a worker
                await pilot.pause(0.05)
            await pilot.press("enter")  # the first task's traces, when there is one
            for _ in range(10):
                await pilot.pause(0.05)
            reached[name] = type(app.screen).__name__
            await pilot.press("escape")
            await pilot.pause()
        assert app.return_value is None or app.return_value == 0, name
    assert {n for n, screen in reached.items() if screen == "TaskTraceScreen"} >= set(corpus) - {"empty", "noise"}
