"""Task names cut for a table keep what tells them apart: cut in the middle, not
``blind-maze-explorer-algorit…`` twice; the piped report honours ``COLUMNS``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.output.cells import cell_width, cut_names, middle_cut

EASY, HARD = "blind-maze-explorer-algorithm.easy", "blind-maze-explorer-algorithm.hard"


def test_two_names_that_differ_at_the_end_stay_apart() -> None:
    """Two names that differ at the end stay apart when cut."""
    cuts = cut_names([EASY, HARD, "short"], 28)
    assert cuts[0] != cuts[1] and cuts[2] == "short"
    assert all(len(c) <= 28 and "…" in c for c in cuts[:2])
    assert cuts[0].endswith("easy") and cuts[1].endswith("hard")
    assert cuts[0].startswith("blind-maze")


def test_names_alike_at_both_ends_are_cut_again_until_they_differ() -> None:
    """Names alike at both ends are cut again until they differ."""
    # They differ 25 characters from the end: beyond the half of the room the end keeps.
    a = "prefix-" + "x" * 40 + "-A-" + "y" * 15 + "-suffix"
    b = "prefix-" + "x" * 40 + "-B-" + "y" * 15 + "-suffix"
    assert middle_cut(a, 30) == middle_cut(b, 30)  # the plain middle cut hides the difference
    ca, cb = cut_names([a, b], 30)
    assert ca != cb and max(len(ca), len(cb)) <= 30


@pytest.mark.parametrize("width", [3, 5, 12])
def test_wide_characters_fit(width: int) -> None:
    """Wide characters fit the width."""
    for cut in cut_names(["漢字漢字漢字漢字漢字漢字.easy", "漢字漢字漢字漢字漢字漢字.hard"], width):
        assert cell_width(cut) <= width


def log(tmp_path: Path) -> Path:
    path = tmp_path / "tb.jsonl"
    long = "terminal-bench/" + "very-long-task-name-" * 3
    lines = [{"task": f"{long}{name}", "trial": i, "passed": i % 2 == 0}
             for name in ("alpha.easy", "alpha.hard") for i in range(4)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def report(path: Path, env: dict[str, str]) -> str:
    result = CliRunner().invoke(main, ["report", str(path), "--no-cache"], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def task_cells(out: str) -> list[str]:
    return [line.split(" │ ")[0].strip() for line in out.splitlines() if " │ " in line]


def test_the_piped_report_cuts_in_the_middle(tmp_path: Path) -> None:
    """The piped report cuts names in the middle."""
    cells = task_cells(report(log(tmp_path), {"COLUMNS": ""}))
    assert len(cells) == 2 and cells[0] != cells[1]
    assert all(len(c) <= 40 and "…" in c for c in cells)
    assert {c[-4:] for c in cells} == {"easy", "hard"}


def test_the_piped_report_honours_columns(tmp_path: Path) -> None:
    """The piped report honours COLUMNS."""
    path = log(tmp_path)
    cells = task_cells(report(path, {"COLUMNS": "300"}))
    assert sorted(cells) == sorted(json.loads(line)["task"] for line in path.read_text().splitlines()[::4])
    # A COLUMNS narrower than the table leaves the piped names at 40 cells, still apart.
    narrow = task_cells(report(path, {"COLUMNS": "100"}))
    assert len(narrow) == 2 and narrow[0] != narrow[1] and max(map(len, narrow)) == 40


def test_the_terminal_table_cuts_long_names_apart(tmp_path: Path) -> None:
    """The Rich table a terminal shows cuts names past its 40 cells in the middle too."""
    import io

    from rich.console import Console

    from flaketui.loading import load_logs
    from flaketui.output.report import report_table
    from flaketui.stats import summarise, task_stats

    names = [EASY.replace("algorithm", "algorithm-with-a-very-long-name"),
             HARD.replace("algorithm", "algorithm-with-a-very-long-name")]
    log = tmp_path / "x.jsonl"
    log.write_text("".join(json.dumps({"run": "r", "task": t, "trial": i, "passed": i % 2 == 0}) + "\n"
                           for t in names for i in range(4)))
    st = task_stats(load_logs([log]).run_outcomes("r"), 2)
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(report_table(st, summarise(st)))
    shown = [line.split("│")[0].strip() for line in out.getvalue().splitlines() if line.startswith("blind")]
    assert len(shown) == 2 and shown[0] != shown[1] and {s[-4:] for s in shown} == {"easy", "hard"}


def test_names_alike_at_both_ends_are_cut_round_the_part_that_differs() -> None:
    """τ² telecom ids sharing a long start and end stay apart once cut: each shows where it parts from the others."""
    ids = ["[mobile_data_issue]data_saver_mode_on|data_usage_exceeded|user_abroad_roaming_enabled_off[PERSONA:None]",
           "[mobile_data_issue]data_saver_mode_on|user_abroad_roaming_enabled_off|airplane_mode_on[PERSONA:None]",
           "[mobile_data_issue]bad_network_preference|data_saver_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]",
           "[mobile_data_issue]data_mode_off|data_saver_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"]
    for width in (20, 24, 30, 40):
        cut = cut_names(ids, width)
        assert len(set(cut)) == len(ids), (width, cut)
        assert all(len(c) <= width for c in cut)
    assert "data_usage_exceeded" in cut_names(ids, 30)[0]
