"""Problems summarised by kind: one stderr line per kind
(``80 × duplicate trial … kept the first (files: …)``), ``--problems`` for the full list, and
the app's problems screen grouped by kind with counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.app import App
from textual.widgets import Static

from flaketui.app.screens.problems import ProblemsScreen
from flaketui.cli import main
from flaketui.loading.loader import problem_kind, problem_kinds
from flaketui.model import Problem


def _duplicated(tmp_path: Path, n: int = 80) -> Path:
    path = tmp_path / "twice.jsonl"
    line = "".join(json.dumps({"task": f"t{i}", "trial": 0, "passed": True}) + "\n" for i in range(n))
    path.write_text(line + line)
    return path


def test_a_kind_is_the_reason_without_its_particulars() -> None:
    """A problem's kind is its reason without the particulars."""
    assert problem_kind("duplicate trial 3 of task 'a' in run 'r'; kept the first (x.jsonl:4)") == \
        "duplicate trial N of task … in run …; kept the first"
    assert problem_kind("item 7: no task_id") == "no task_id"
    assert problem_kind("not valid UTF-8 (bad byte)") == "not valid UTF-8"


def test_a_files_counted_lines_join_their_kinds() -> None:
    """A file's counted lines join their kinds."""
    kinds = problem_kinds([Problem("f", 1, "not valid JSON (x)"),
                           Problem("f", None, "7 more lines skipped after the first 1 named "
                                              "(5 × not valid JSON; 2 × no outcome)")])
    assert [(k.kind, k.count, len(k.problems)) for k in kinds] == [("not valid JSON", 6, 1), ("no outcome", 2, 0)]


def test_eighty_duplicates_are_one_line_and_problems_lists_them(tmp_path: Path) -> None:
    """Eighty duplicates are one line, and --problems lists them."""
    path = _duplicated(tmp_path)
    result = CliRunner().invoke(main, ["report", str(path), "--format", "json", "--no-cache"])
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert lines == [
        f"flaketui: skipped 80 × duplicate trial N of task … in run …; kept the first (files: {path}; "
        f"first: {path}:81: duplicate trial 0 of task 't0' in run 'twice'; kept the first ({path}:1))",
        "flaketui: --problems names each one"]
    result = CliRunner().invoke(main, ["report", str(path), "--format", "json", "--no-cache", "--problems"])
    lines = result.stderr.splitlines()
    assert len(lines) == 80 and lines[-1].startswith(f"flaketui: skipped {path}:160: duplicate trial 0 of task 't79'")


def test_a_lone_problem_is_named_as_before(tmp_path: Path) -> None:
    """A lone problem is named as before."""
    path = tmp_path / "one.jsonl"
    path.write_text('{"task": "a", "passed": true}\n{"task": "b"}\n')
    result = CliRunner().invoke(main, ["report", str(path), "--format", "json", "--no-cache"])
    assert result.stderr.splitlines() == [f"flaketui: skipped {path}:2: no outcome (passed, score, reward)"]


@pytest.mark.ui
async def test_the_problems_screen_groups_by_kind() -> None:
    """The problems screen groups problems by kind."""
    problems = [Problem("a.jsonl", i, f"duplicate trial 0 of task 't{i}' in run 'r'; kept the first (a.jsonl:{i})")
                for i in range(1, 4)] + [Problem("b.jsonl", 9, "not valid JSON (oops)")]

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ProblemsScreen(problems))

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        text = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "3 × duplicate trial N of task … in run …; kept the first" in text
        assert "1 × not valid JSON" in text
        assert "b.jsonl:9: not valid JSON (oops)" in text


def test_notes_are_counted_apart_from_skipped_lines() -> None:
    """A Harbor note is counted as a note, never as a skipped line; a lone kind shows its own words."""
    from flaketui.app.screens.problems import example_of, problems_line

    note = Problem("job/result.json", None, "the job lists 425 trials; 30 are on disk", notice=True)
    bad = Problem("x.jsonl", 3, "not valid JSON (x)")
    assert problems_line([note]) == "1 note from loading"
    assert problems_line([note, bad, bad]) == "2 lines skipped while loading, 1 note from loading"
    assert problems_line([]) == ""
    kind = problem_kinds([note])[0]
    assert "N" in kind.kind and example_of(kind.kind, kind.problems) == note.reason
