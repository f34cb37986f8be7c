"""Names from a log never drive the terminal and are never read as markup: every command's
human-readable output and every error message shows them with control characters spelled out."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.helpers.hostile import HOSTILE_NAMES, markdown_read, raw_controls, write_hostile_log


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
    """report shows every hostile name without control bytes."""
    code, out, err = invoke("report", hostile, "--format", fmt)
    assert code == 0
    assert raw_controls(out) == [] and raw_controls(err) == []
    # every name is there, whole (nothing swallowed as markup), spelled out
    for name in ["[/]", "[link=https://evil]x[/link]", "\\x1b]52;c;ZXZpbA==\\x07clip", "a\\u202eb\\u200b"]:
        assert name in (markdown_read(out) if fmt == "markdown" else out), name
    assert "[mobile_data_issue]data_saver_mode_on" in (markdown_read(out) if fmt == "markdown" else out)
    assert "skipped" in err and "\\x1b]0;maybe\\x07" in err


def test_csv_neutralises_formulas(hostile: Path) -> None:
    """OWASP CSV injection: a cell starting with = is written with a leading quote."""
    _, out, _ = invoke("report", hostile, "--format", "csv")
    tasks = {row["task"] for row in csv.DictReader(io.StringIO(out))}
    assert "'=HYPERLINK(\"http://evil\")" in tasks
    assert not any(t.startswith(("=", "+", "-", "@")) for t in tasks)


def test_gate_text_spells_out_names(hostile: Path) -> None:
    """gate's text spells out hostile names as written."""
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


@pytest.mark.parametrize("args", [["--all"], ["--top", "3"], ["--format", "markdown", "--top", "3"]])
def test_rows_written_in_chunks_spell_out_names(hostile: Path, args: list[str]) -> None:
    """The chunked writers (every row, or the flakiest few) show names as the Rich table does:
    spelled out, whole, never read as markup."""
    code, out, err = invoke("report", hostile, *args)
    assert code == 0 and raw_controls(out) == [] and raw_controls(err) == []
    out = markdown_read(out) if "markdown" in args else out
    if "--top" in args:  # the three flakiest of each run, by name: the two escapes, then the formula
        assert "\\x1b]0;title\\x07t" in out and "\\x1b[2J\\x1b[Hclear" in out and "more tasks not shown" in out
    else:
        assert "[link=https://evil]x[/link]" in out and "[/]" in out and "not shown" not in out


def test_streamed_table_on_a_terminal_writes_only_its_own_colours(hostile: Path) -> None:
    """On a terminal the streamed table adds colour codes; a name never adds a control byte."""
    import re

    from rich.console import Console

    from flaketui.cli.common import run_stats
    from flaketui.loading import load_logs
    from flaketui.model import FieldMap
    from flaketui.output import report as out
    from flaketui.stats import summarise

    buf = io.StringIO()
    con = Console(file=buf, width=200, height=40, force_terminal=True, color_system="truecolor")
    _, stats = run_stats(load_logs([str(hostile)], FieldMap()), [], None)
    for st in stats:
        out.print_streamed_table(con, st, summarise(st))
    text = buf.getvalue()
    assert "\x1b[" in text  # coloured
    assert raw_controls(re.sub(r"\x1b\[[0-9;]*m", "", text)) == []
    assert "\\x1b]52;c;ZXZpbA==\\x07clip" in text and "[link=https://evil]x[/link]" in text
