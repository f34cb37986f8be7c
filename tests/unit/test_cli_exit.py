"""The ``flaketui`` command's exit (:func:`flaketui.cli.run`): at once when nothing else runs,
with the command's exit code and all of its output; as usual when something does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE, ROOT

pytestmark = pytest.mark.slow


def flaketui(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m flaketui ARGS`` (the console script's :func:`~flaketui.cli.run`)."""
    return subprocess.run([sys.executable, "-m", "flaketui", *map(str, args)], capture_output=True,
                          input=None if stdin is None else stdin.encode(), cwd=ROOT, timeout=120)


def test_the_output_is_whole_and_the_same_as_mains() -> None:
    """The process's output is whole and the same as main's."""
    done = flaketui("report", BASELINE, CANDIDATE, "-k", "5", "--format", "json")
    expected = CliRunner().invoke(main, ["report", str(BASELINE), str(CANDIDATE), "-k", "5", "--format", "json"])
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode() == expected.stdout and done.stdout.endswith(b"}\n")


def test_each_exit_code_is_kept() -> None:
    """Each exit code is kept by the quick exit."""
    assert flaketui("gate", CANDIDATE, "-k", "5", "--min-pass-hat-k", "0.9").returncode == 1  # gate failed
    missing = flaketui("report", ROOT / "no-such-log.jsonl")
    assert missing.returncode == 2 and missing.stderr.decode().startswith("flaketui: error:")
    assert b"Traceback" not in missing.stderr
    assert flaketui("--version").returncode == 0


def test_a_pipe_closed_early_is_still_exit_0() -> None:
    """The reader of a long report leaves after its first bytes: no traceback, exit 0."""
    whole = flaketui("report", BASELINE, CANDIDATE, "-k", "5", "--format", "json").stdout
    shell = subprocess.run(
        ["/bin/bash", "-o", "pipefail", "-c",
         f"{sys.executable} -m flaketui report {BASELINE} {CANDIDATE} -k 5 --format json | head -c 20"],
        capture_output=True, cwd=ROOT, timeout=120)
    assert shell.returncode == 0 and shell.stdout == whole[:20]
    assert b"Traceback" not in shell.stderr


def test_a_thread_still_running_is_waited_for() -> None:
    """With another thread running, the exit is the interpreter's own: the thread finishes."""
    script = ("import sys, threading, time\n"
              "from flaketui.cli import run\n"
              "def late():\n"
              "    time.sleep(0.3)\n"
              "    print('the thread finished', flush=True)\n"
              "threading.Thread(target=late).start()\n"
              "sys.argv = ['flaketui', '--version']\n"
              "run()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0
    assert done.stdout.decode().splitlines()[-1] == "the thread finished"
