"""Long task names: cut in the middle so that both ends tell names apart, sized to the
terminal, shown whole under the table, and pinned while the table scrolls sideways."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from tests.helpers.app import ready, table
from tests.helpers.logs import write_log

LONG = "hypothesis_testing/mystery_func_"
"""METR's names: alike up to a suffix that tells them apart."""


def long_names_log(tmp_path: Path) -> Path:
    records = [{"run": "metr", "task": f"{LONG}{i}", "trial": t, "passed": (t + i) % 3 != 0,
                "metrics": {"tokens": 600 + 13 * i + t}}
               for i in range(1, 10) for t in range(4)]
    records += [{"run": "metr", "task": "a_very_long_family_name_that_goes_on_and_on/"
                 "and_a_long_task_name_after_it_too", "trial": t, "passed": True} for t in range(4)]
    return write_log(tmp_path / "metr.jsonl", records)


def test_middle_cut_keeps_both_ends() -> None:
    """middle_cut keeps both ends of a long name."""
    from flaketui.app.widgets.task_table import middle_cut

    assert middle_cut(f"{LONG}7", 27) == "hypothesis_…/mystery_func_7"
    assert middle_cut("short", 27) == "short"
    cut = middle_cut("abcdefghijklmnopqrstuvwxyz", 11)
    assert cut == "abcde…vwxyz" and len(cut) == 11


@pytest.mark.slow
async def test_task_names_sized_cut_in_the_middle_shown_whole_and_pinned(tmp_path: Path) -> None:
    """Task names are sized, cut in the middle, shown whole on the cursor and pinned."""
    app = make_app([str(long_names_log(tmp_path))], k=4)
    async with app.run_test(size=(200, 50)) as pilot:
        await ready(pilot)
        t = table(app)
        # At 200 columns the task column fits METR's names: no two rows read the same.
        cells = [t._fit(t.columns[0].render(int(r)), t.columns[0]).plain.rstrip() for r in t.order]
        assert len(set(cells)) == len(cells) == 10
        assert f"{LONG}7" in cells
    app = make_app([str(long_names_log(tmp_path))], k=4)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        t = table(app)
        column = t.columns[0]
        assert column.width < len(f"{LONG}7")
        cells = [t._fit(column.render(int(r)), column).plain.rstrip() for r in t.order]
        assert len(set(cells)) == len(cells), cells  # both ends kept: each name tells
        assert all("…" in c for c in cells)
        assert any(c.endswith("/mystery_func_7") for c in cells)
        # The highlighted task's full name is on screen.
        screen = app.tasks_screen
        full = str(screen.query_one("#current-task").render())
        assert screen.current_task is not None and screen.current_task in full
        await pilot.press("down")
        await pilot.pause()
        assert screen.current_task in str(screen.query_one("#current-task").render())
        # Scrolling right keeps the task column in view.
        for _ in range(40):
            await pilot.press("right")
        await pilot.pause()
        assert t.scroll_x > 0
        assert "".join(seg.text for seg in t.render_line(0)).lstrip().startswith("task")
        assert "".join(seg.text for seg in t.render_line(1)).strip().startswith(cells[0])
        # Widening the terminal widens the task column again: the names fit.
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert t.columns[0].width >= len(f"{LONG}7")
