"""The report's errored trials by kind: the summary line, JSON ``errored_by_type`` (streamed or not),
null past the read-back bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import error_types

JOB = Path(__file__).resolve().parents[1] / "data" / "harbor" / "hello-world-job"
KINDS = {"AgentTimeoutError": 1, "RuntimeError": 1}


def report(*args: str) -> str:
    result = CliRunner().invoke(main, ["report", str(JOB), *args])
    assert result.exit_code == 0, result.output
    return result.output


def runs_of(text: str) -> dict[str, object]:
    return {r["run"]: r["errored_by_type"] for r in json.loads(text)["runs"]}


def test_the_summary_names_the_kinds() -> None:
    """The summary names the errored kinds."""
    assert "errored trials (AgentTimeoutError 1, RuntimeError 1) counted by their score" in report()
    assert "errored trials (AgentTimeoutError 1, RuntimeError 1) counted by their score" in \
        report("--format", "markdown")


def test_json_has_them_streamed_and_not() -> None:
    """JSON has the kinds, streamed or not."""
    assert runs_of(report("--format", "json")) == {"hello-world-job": KINDS}  # the streamed document
    assert runs_of(report("--format", "json", "--causes")) == {"hello-world-job": KINDS}


def test_a_log_without_errors_has_an_empty_mapping(tmp_path: Path) -> None:
    """A log without errors has an empty mapping."""
    log = tmp_path / "ok.jsonl"
    log.write_text('{"task": "a", "trial": 0, "passed": true}\n{"task": "a", "trial": 1, "passed": false}\n')
    result = CliRunner().invoke(main, ["report", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert runs_of(result.output) == {"ok": {}}
    assert "errored by type" not in CliRunner().invoke(main, ["report", str(log)]).output


def test_past_the_bound_they_are_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the read bound the kinds are not counted."""
    monkeypatch.setattr(error_types, "MAX_READS", 1)
    assert runs_of(report("--format", "json")) == {"hello-world-job": None}
    assert "errored trials (not counted (over 1 errored trials))" in report()
