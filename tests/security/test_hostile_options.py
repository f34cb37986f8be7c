"""Every number a user gives an option is parsed, not trusted: non-finite and out-of-range
values (``nan``, ``inf``, ``1e400``) are a one-line usage error, exit 2, never a traceback."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run
from tests.helpers.logs import write_runs

WINDOWS = ["nan/inf", "inf/nan", "-inf/inf", "1e400/1e401", "0/1e308", "-1e18/1e18", "nan/nan", "1/nan",
           "9e15/9e16", "-1/5"]


@pytest.fixture
def log(tmp_path):
    """A two-run log with start times, one flaky task."""
    return write_runs(tmp_path / "log.jsonl", {"a": {"t1": (4, 2), "t2": (4, 4)}, "b": {"t1": (4, 4), "t2": (4, 4)}})


@pytest.mark.parametrize("window", WINDOWS)
def test_exclude_window_non_finite(log, window):
    """--exclude-window with a non-finite or out-of-range end: exit 2, one line."""
    code, _, err = run("report", str(log), "--exclude-window", window)
    assert code == 2 and "--exclude-window" in err and "Traceback" not in err, err


OPTIONS = [
    ("report", "--threshold"), ("report", "--timeout"), ("report", "--interval"), ("gate", "--max-flakiness"),
    ("gate", "--min-pass-hat-k"), ("compare", "--alpha"), ("plan", "--target-width"), ("plan", "--margin"),
    ("plan", "--confidence"), ("plan", "--power"), ("plan", "--alpha"), ("plan", "--effect"),
    ("plan", "--bound-target"), ("diff", "--tolerance"), ("history status", "--cap"), ("history status", "--wait"),
    ("quarantine", "--max-flakiness"),
]


@pytest.mark.parametrize(("command", "option"), OPTIONS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-1e400"])
def test_numeric_options_refuse_non_finite(log, command, option, value):
    """Every numeric option refuses nan, ±inf and overflowing values with exit 2."""
    args = [*command.split(), option, value]
    if command != "history status":
        args.append(str(log))
    if command == "compare":
        args += [str(log)]
    code, _, err = run(*args)
    assert code == 2, (code, err)
    assert "Traceback" not in err
