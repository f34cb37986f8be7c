"""The history's hooks in other commands: ``report --record``, ``compare --record`` and
``quarantine --from-history``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

ROOT = Path(__file__).resolve().parents[2]
BASE = str(ROOT / "fixtures" / "oncall-baseline.jsonl")
CAND = str(ROOT / "fixtures" / "oncall-candidate.jsonl")
UNREACHABLE = "postgresql://nobody@127.0.0.1:1/x"


def cli(*args: str, env: dict | None = None, tmp: Path | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "FLAKETUI_HISTORY"}
    return subprocess.run([sys.executable, "-m", "flaketui", *args], capture_output=True, text=True,
                          env={**base, "XDG_CACHE_HOME": str(tmp or ROOT), **(env or {})})


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_report_record_records_both_runs_once(tmp_path: Path) -> None:
    """report --record records both runs once, the output unchanged."""
    plain = cli("report", str(ROOT / "fixtures"), "--format", "json", tmp=tmp_path)
    first = cli("report", str(ROOT / "fixtures"), "--format", "json", "--record", "--history", url(tmp_path),
                tmp=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == plain.stdout  # the output is the report's, the lines go to stderr
    assert first.stderr.splitlines() == ["recorded: oncall-baseline (25 tasks, run #1)",
                                         "recorded: oncall-candidate (25 tasks, run #2)"]
    again = cli("report", str(ROOT / "fixtures"), "--record", "--history", url(tmp_path), tmp=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == ["already recorded: oncall-baseline (25 tasks, run #1)",
                                         "already recorded: oncall-candidate (25 tasks, run #2)"]
    status = cli("history", "status", "--format", "json", "--history", url(tmp_path), tmp=tmp_path)
    assert json.loads(status.stdout)["runs"] == 2


def test_report_record_default_history_from_env(tmp_path: Path) -> None:
    """report --record uses $FLAKETUI_HISTORY by default."""
    done = cli("report", BASE, "--record", env={"FLAKETUI_HISTORY": url(tmp_path)}, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["recorded: oncall-baseline (25 tasks, run #1)"]
    assert (tmp_path / "history.sqlite").exists()


def test_compare_record_records_both_runs_once(tmp_path: Path) -> None:
    """compare --record records both runs once."""
    first = cli("compare", BASE, CAND, "--format", "json", "--record", "--history", url(tmp_path), tmp=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["run_b"] == "oncall-candidate"
    assert first.stderr.splitlines() == ["recorded: oncall-baseline (25 tasks, run #1)",
                                         "recorded: oncall-candidate (25 tasks, run #2)"]
    again = cli("compare", BASE, CAND, "--record", "--history", url(tmp_path), tmp=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == ["already recorded: oncall-baseline (25 tasks, run #1)",
                                         "already recorded: oncall-candidate (25 tasks, run #2)"]
    # what report --record recorded, compare --record finds there (the same runs)
    rep = cli("report", str(ROOT / "fixtures"), "--record", "--history", url(tmp_path), tmp=tmp_path)
    assert [line.split(":")[0] for line in rep.stderr.splitlines()] == ["already recorded"] * 2


@pytest.mark.parametrize("args", [("report", BASE, "--format", "json"), ("compare", BASE, CAND, "--format", "json")])
def test_unreachable_history_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    """An unreachable history is one line, exit 2, after the output."""
    done = cli(*args, "--record", "--history", UNREACHABLE, tmp=tmp_path)
    assert done.returncode == 2
    assert json.loads(done.stdout)  # the output was written before
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flaketui: error: ")


def test_no_sqlalchemy_without_record(tmp_path: Path) -> None:
    """report without --record does not import SQLAlchemy."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "flaketui", "report", BASE],
                          capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert done.returncode == 0
    assert "sqlalchemy" not in done.stderr.lower()


def test_quarantine_from_history(tmp_path: Path) -> None:
    """quarantine --from-history lists the history's quarantined tasks."""
    h = ("--history", url(tmp_path))
    none = cli("quarantine", "--from-history", *h, tmp=tmp_path)
    assert none.returncode == 0 and none.stdout == ""
    set_ = cli("history", "quarantine", "checkCertificateExpiry", "--why", "times out", "--ticket",
               "https://t/1", "--who", "ana", *h, tmp=tmp_path)
    assert set_.returncode == 0, set_.stderr
    cli("history", "quarantine", "elsewhere/task", "--why", "x", "--who", "bo", *h, tmp=tmp_path)

    ids = cli("quarantine", "--from-history", *h, tmp=tmp_path)
    assert ids.returncode == 0, ids.stderr
    assert ids.stdout == "checkCertificateExpiry\nelsewhere/task\n"
    only_log = cli("quarantine", "--from-history", BASE, *h, tmp=tmp_path)  # only the tasks of the log
    assert only_log.stdout == "checkCertificateExpiry\n"
    doc = json.loads(cli("quarantine", "--from-history", "--format", "json", *h, tmp=tmp_path).stdout)
    assert [set(e) for e in doc] == [{"task", "who", "at", "why", "ticket"}] * 2
    assert doc[0]["task"] == "checkCertificateExpiry" and doc[0]["who"] == "ana"
    assert doc[0]["why"] == "times out" and doc[0]["ticket"] == "https://t/1" and doc[1]["ticket"] is None
    junit = cli("quarantine", "--from-history", "--format", "junit", *h, tmp=tmp_path).stdout
    assert junit.count("<testcase ") == 2 and 'name="checkCertificateExpiry"' in junit

    lift = cli("history", "unquarantine", "checkCertificateExpiry", "--who", "ana", *h, tmp=tmp_path)
    assert lift.returncode == 0, lift.stderr
    after = cli("quarantine", "--from-history", *h, tmp=tmp_path)
    assert after.stdout == "elsewhere/task\n"
    assert json.loads(cli("quarantine", "--from-history", BASE, "--format", "json", *h, tmp=tmp_path).stdout) == []


def test_quarantine_needs_logs_without_from_history(tmp_path: Path) -> None:
    """quarantine needs logs without --from-history."""
    done = cli("quarantine", tmp=tmp_path)
    assert done.returncode == 2 and "--from-history" in done.stderr


def test_quarantine_from_history_unreachable(tmp_path: Path) -> None:
    """quarantine --from-history on an unreachable history is one line."""
    done = cli("quarantine", "--from-history", "--history", UNREACHABLE, tmp=tmp_path)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
