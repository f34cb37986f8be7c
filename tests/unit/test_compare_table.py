"""compare's table: piped, written row by row with the same characters Rich draws; cut to the
most changed tasks with --top (and on a terminal by default), saying how many are left out."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from rich.console import Console

from flaketui.cli import main
from flaketui.model import RunOutcomes
from flaketui.output import compare as out
from flaketui.output import stream
from flaketui.stats import compare_runs, task_stats

NAMES = ["plain", "wide-名前-タスク", '"quoted", with comma', "\x1b[31mred\x1b[0m", "[bold]markup[/]",
         "bidi\u202eevil", "tab\there", "x" * 60]


def view(seed: int, tasks: int, names: list[str] | None = None) -> out.CompareView:
    rng = np.random.default_rng(seed)
    n = np.full(tasks, 6)
    names = names or [f"task-{i}" for i in range(tasks)]
    outs = []
    for run in ("base", "cand"):
        c = rng.integers(0, 7, tasks)
        outs.append(RunOutcomes(run, names, n, c, np.zeros(tasks, dtype=np.int64), [None] * tasks,
                                np.arange(6 * tasks), np.arange(0, 6 * tasks + 1, 6)))
    return out.compare_view(compare_runs(task_stats(outs[0], 1), task_stats(outs[1], 1)))


def rich_text(v: out.CompareView, rows: list | None = None, left: int = 0) -> str:
    buf = io.StringIO()
    Console(file=buf, width=1000).print(out.compare_table(v, rows, left))
    return buf.getvalue()


def streamed_text(v: out.CompareView) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=1000)
    con.print(out.compare_head(v))
    lines = out.compare_lines_streamed(v, v.rows())
    assert lines is not None
    for text in lines:
        buf.write(text)
    return buf.getvalue()


@pytest.mark.parametrize("seed", [1, 2])
def test_streamed_equals_rich(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile, wide and long names, several chunks: the same characters as Rich's table."""
    monkeypatch.setattr(stream, "CHUNK", 3)
    v = view(seed, len(NAMES), NAMES)
    assert v.rows(), "some tasks changed"
    assert streamed_text(v) == rich_text(v)
    v = view(seed, 40)
    assert streamed_text(v) == rich_text(v)


def test_too_wide_is_left_to_rich() -> None:
    """A name wider than the page: Rich wraps it, so the streamed writer steps aside."""
    v = view(3, 4, ["y" * 1200, "a", "b", "c"])
    assert out.compare_lines_streamed(v, v.rows()) is None


def write_pair(tmp_path: Path, tasks: int) -> Path:
    log = tmp_path / "pair.jsonl"
    rows = [{"run": run, "task": f"t{i}", "trial": j, "passed": (i * (r + 2) + j) % 5 > 1}
            for r, run in enumerate(("base", "cand")) for i in range(tasks) for j in range(4)]
    log.write_bytes(b"\n".join(map(orjson.dumps, rows)) + b"\n")
    return log


def test_cli_piped_lists_every_changed_task_and_top_cuts(tmp_path: Path) -> None:
    """Piped: every changed task; --top 3: three and the left-out line; --top with json: exit 2."""
    log = write_pair(tmp_path, 60)
    run = CliRunner().invoke
    full = run(main, ["compare", str(log), "--runs", "base", "cand", "--no-cache"])
    assert full.exit_code == 0, full.output
    changed = sum(1 for line in full.stdout.splitlines() if line.startswith("t") and " │ " in line)
    assert changed > 3
    cut = run(main, ["compare", str(log), "--runs", "base", "cand", "--top", "3", "--no-cache"])
    assert sum(1 for line in cut.stdout.splitlines() if line.startswith("t") and " │ " in line) == 3
    assert f"… {changed - 3} more changed tasks not shown (the 3 most changed are)" in cut.stdout
    md = run(main, ["compare", str(log), "--runs", "base", "cand", "--top", "3", "--format", "markdown",
                    "--no-cache"])
    assert sum(1 for line in md.stdout.splitlines() if line.startswith("| t") and "| task |" not in line) == 3
    assert "more changed tasks not shown" in md.stdout
    bad = run(main, ["compare", str(log), "--runs", "base", "cand", "--top", "3", "--format", "json"])
    assert bad.exit_code == 2


def test_terminal_shows_the_most_changed_that_fit_and_says_how_many_are_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a 30-line terminal, 300 changed tasks: the first 50 rows (flipped first), then the left-out line."""
    from flaketui.cli.common import RowChoice
    from flaketui.cli.compare import print_compare_table
    from flaketui.output import report

    buf = io.StringIO()
    monkeypatch.setattr(report, "console", lambda: Console(file=buf, force_terminal=True, width=150, height=30))
    v = view(7, 400)
    rows = v.rows()
    assert len(rows) > 60
    print_compare_table(v, RowChoice())
    text = buf.getvalue()
    shown = [r.task for r in rows if f"{r.task} " in text]
    assert shown == [r.task for r in rows[:50]]
    assert f"… {len(rows) - 50} more changed tasks not shown (the 50 most changed are)" in text
    buf.seek(0)
    buf.truncate()
    print_compare_table(v, RowChoice(all=True))
    assert all(f"{r.task} " in buf.getvalue() for r in rows)
