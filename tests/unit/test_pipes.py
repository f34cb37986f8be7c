"""A reader that closes the pipe early (``flaketui report BIG | head``) ends flaketui quietly
with exit 0: no traceback, and not exit 1, which would read as a failed gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_closed_pipe_exits_0(tmp_path: Path, fmt: str) -> None:
    """Far more output than a pipe holds; the reader takes one line and closes it."""
    log = tmp_path / "big.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"task": f"t{i}", "trial": j, "passed": (i + j) % 3 > 0}) + b"\n"
                             for i in range(6000) for j in range(2)))
    proc = subprocess.Popen([sys.executable, "-m", "flaketui", "report", str(log), "--format", fmt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "Error" not in err
