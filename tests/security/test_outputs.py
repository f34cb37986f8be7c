"""Names from a log never drive the terminal and are never read as markup: every command's
human-readable output and every error message shows them with control characters spelled out."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.security.hostile import HOSTILE_NAMES, raw_controls, write_hostile_log


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return write_hostile_log(tmp_path / "hostile.jsonl")


def invoke(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fmt", ["table", "csv", "markdown"])
def test_report_shows_every_name_without_control_bytes(hostile: Path, fmt: str) -> None:
    code, out, err = invoke("report", hostile, "--format", fmt)
    assert code == 0
    assert raw_controls(out) == [] and raw_controls(err) == []
    # every name is there, whole (nothing swallowed as markup), spelled out
    for name in ["[/]", "[link=https://evil]x[/link]", "\\x1b]52;c;ZXZpbA==\\x07clip", "a\\u202eb\\u200b"]:
        assert name in out.replace("\\|", "|"), name
    assert "[mobile_data_issue]data_saver_mode_on" in out
    assert "skipped" in err and "\\x1b]0;maybe\\x07" in err


def test_csv_neutralises_formulas(hostile: Path) -> None:
    """OWASP CSV injection: a cell starting with = is written with a leading quote."""
    _, out, _ = invoke("report", hostile, "--format", "csv")
    tasks = {row["task"] for row in csv.DictReader(io.StringIO(out))}
    assert "'=HYPERLINK(\"http://evil\")" in tasks
    assert not any(t.startswith(("=", "+", "-", "@")) for t in tasks)


def test_gate_text_spells_out_names(hostile: Path) -> None:
    code, out, err = invoke("gate", hostile, "--max-flakiness", "0.1")
    assert code == 1 and "[link=https://evil]x[/link]" in out
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert "run\\x1b]0;R\\x07" in out


def test_error_messages_spell_out_file_names(tmp_path: Path) -> None:
    """A file name is data too: the one-line error shows it spelled out."""
    missing = tmp_path / "\x1b]0;pwned\x07.jsonl"
    code, out, err = invoke("report", missing)
    assert code == 2 and raw_controls(err) == [] and "\\x1b]0;pwned\\x07" in err


def test_json_keeps_names_exact(hostile: Path) -> None:
    """JSON escapes control characters itself: names round-trip exactly."""
    import json

    code, out, _ = invoke("report", hostile, "--format", "json")
    assert code == 0 and raw_controls(out) == []
    tasks = {t["task"] for r in json.loads(out)["runs"] for t in r["tasks"]}
    assert tasks == set(HOSTILE_NAMES)
