"""Pilot tests of issue 14 on the task table and the app shell: keys while loading, sort
arrows, task names, 80×24, k = 1, the run picker, copy / export / editor, hostile names."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import flaketui.loading
from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.help import HelpScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.sanitize import visible
from tests.conftest import BASELINE, CANDIDATE, SIZE
from tests.ui.test_app import ready, record_notifications, table, write_log


def slow_load(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make loading report progress forever until cancelled; the event is set when it stops."""
    stopped = threading.Event()

    def load_logs(paths: Any, fields: Any = None, progress: Any = None, **kw: Any) -> Any:
        try:
            for i in range(2000):  # at most 20 s
                progress(i, 10_000)
                threading.Event().wait(0.01)
        finally:
            stopped.set()
        raise AssertionError("the load was not cancelled")

    monkeypatch.setattr(flaketui.loading, "load_logs", load_logs)
    return stopped


@pytest.mark.parametrize("quit_key", ["q", "ctrl+c"])
async def test_keys_while_loading_do_nothing_but_quit(monkeypatch: pytest.MonkeyPatch,
                                                      quit_key: str) -> None:
    stopped = slow_load(monkeypatch)
    app = make_app([str(BASELINE)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.tasks_screen
        assert screen.has_class("-loading")
        await pilot.press("x", "slash", "a", "s", "question_mark", "enter", "r", "p")
        await pilot.pause()
        # No hidden filter took the keys, no help or other screen opened.
        assert screen.filter_text == ""
        assert screen.query_one("#filter").value == ""
        assert not isinstance(app.screen, HelpScreen) and isinstance(app.screen, TasksScreen)
        assert app.return_code is None
        await pilot.press(quit_key)
        await pilot.pause()
        assert app.return_code is not None  # exiting at once, not after the load
    assert stopped.wait(5)


def header(app: FlakeApp) -> str:
    return "".join(seg.text for seg in table(app)._header())


@pytest.mark.parametrize("key", ["class", "divergence", "metric:cost_usd", "metric:tokens",
                                 "pass_at_k", "pass_hat_k", "task", "n"])
async def test_every_sorted_column_shows_its_arrow(key: str) -> None:
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        column = table(app).column(key)
        assert column is not None, [c.key for c in table(app).columns]
        screen.action_sort_by(key)
        await pilot.pause()
        first = "▼" if screen.sort_reverse else "▲"
        width = len(header(app))
        # Beside the label: after it, or before a right-aligned label that fills its column.
        assert column.label + first in header(app) or first + column.label in header(app)
        await pilot.press("S")
        await pilot.pause()
        second = "▲" if first == "▼" else "▼"
        assert column.label + second in header(app) or second + column.label in header(app)
        assert len(header(app)) <= width + 1  # the arrow never widens the table


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
    from flaketui.app.widgets.task_table import middle_cut

    assert middle_cut(f"{LONG}7", 27) == "hypothesis_…/mystery_func_7"
    assert middle_cut("short", 27) == "short"
    cut = middle_cut("abcdefghijklmnopqrstuvwxyz", 11)
    assert cut == "abcde…vwxyz" and len(cut) == 11


async def test_task_names_sized_cut_in_the_middle_shown_whole_and_pinned(tmp_path: Path) -> None:
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


def summary(app: FlakeApp) -> str:
    return str(app.tasks_screen.query_one("#summary").render())


async def test_k_1_shows_each_figure_once_in_the_app_and_report(tmp_path: Path) -> None:
    from flaketui.output.report import summary_lines

    app = make_app([str(BASELINE)], k=1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = summary(app)
        assert text.count("pass@1") == 1 and "pass^1" not in text
        sm = app.tasks_screen.summary
        assert sm is not None
        line = summary_lines(sm)[1]
        assert line.count("pass@1") == 1 and "pass^1" not in line
        await pilot.press("plus")
        await pilot.pause()
        assert "pass@2" in summary(app) and "pass^2" in summary(app) and "pass@1" in summary(app)


async def test_80x24_summary_breaks_between_figures_and_footer_keeps_compare() -> None:
    from textual.widgets import Footer

    app = make_app([str(BASELINE), str(CANDIDATE)], k=5, min_pass_hat_k=0.7, max_flakiness=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        for line in summary(app).splitlines():
            assert not line.rstrip().endswith(","), line  # no "[0.64," / "0.91]" break
            assert line.count("[") == line.count("]"), line
        footer = app.screen.query_one(Footer)
        keys = {k.description: k for k in footer.query("FooterKey")}
        right = keys["palette"].region.x if "palette" in keys else 80  # "^p palette", on the right
        for needed in ("Filter", "Compare", "Plan", "Runs", "Quit", "Help"):
            assert needed in keys, sorted(keys)
            assert keys[needed].region.right <= right, (needed, keys[needed].region, right)
        assert table(app).size.height >= 8


def test_suite_curve_stops_where_tasks_drop_out() -> None:
    import numpy as np

    from flaketui.app.widgets.curve import curve_block
    from flaketui.stats.curves import k_curve

    # One task of 2 trials (1 pass), one of 8 (all pass): past k = 2 the half-passing task
    # leaves the mean and pass@k would jump; with n = [8, 2] and c = [0, 2] it would fall.
    curve = k_curve(np.array([8, 2]), np.array([0, 2]))
    assert np.nanmin(np.diff(curve.pass_at)) < 0  # the raw mean falls as the task leaves
    lines = [line.plain for line in curve_block("suite", curve, 2)]
    assert lines[-1] == "stops at k=2: every task has that many trials"
    axis = lines[-2].strip()
    assert axis.startswith("k=1") and axis.endswith("2")
    whole = curve_block("suite", k_curve(np.array([8, 8]), np.array([0, 8])), 2)
    assert not whole[-1].plain.startswith("stops")


def test_integer_metrics_show_as_integers() -> None:
    import numpy as np

    from flaketui.app.screens.tasks import metric_cell, whole_valued

    tokens = np.array([678.0, 1976.0, 677.5, np.nan])
    assert whole_valued(tokens)
    assert [metric_cell(tokens, True, i).plain for i in range(4)] == ["678", "1,976", "678", "—"]
    seconds = np.array([23.0, 23.1, 0.0058])
    assert not whole_valued(seconds)
    assert [metric_cell(seconds, False, i).plain for i in range(3)] == ["23.0", "23.1", "0.006"]


async def test_watch_keeps_k_when_a_task_with_one_trial_arrives(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    write_log(log, [{"run": "r", "task": f"t{i}", "trial": t, "passed": t != i}
                    for i in range(10) for t in range(5)])
    app = make_app([str(log)], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.k == 5
        with log.open("a", encoding="utf-8") as f:
            f.write('{"run": "r", "task": "late", "trial": 0, "passed": true}\n')
        app.tasks_screen.poll_logs()
        await ready(pilot)
        await ready(pilot)
        assert app.trial_log is not None and "late" in app.tasks_screen.stats.tasks
        assert app.k == 5
        assert "1 task(s) with n < k left out" in summary(app)


async def test_run_picker_lists_eleven_runs_and_jumps_to_one(tmp_path: Path) -> None:
    from flaketui.app.screens.run_picker import RunPicker

    write_log(tmp_path / "runs.jsonl", [{"run": f"run-{r:02d}", "task": f"t{i}", "trial": t,
                                         "passed": (i + t + r) % 4 != 0}
                                        for r in range(11) for i in range(3) for t in range(3)])
    app = make_app([str(tmp_path / "runs.jsonl")])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker) and len(app.screen.runs) == 11
        for _ in range(7):
            await pilot.press("down")
        await pilot.press("enter")
        await ready(pilot)
        assert app.tasks_screen.run == "run-07"


HOSTILE = ["\x1b]52;c;ZXZpbA==\x07", "\x1b]0;pwned\x07", "\x1b[2J", "[/]",
           "[link=https://evil]x[/link]", "\u202eevil"]
"""Task and run names that try to reach the terminal (OSC 52 clipboard, OSC 0 title, clear
screen), Rich markup (a stray closing tag, a link) and an RTL override."""


def no_raw_control(svg: str) -> None:
    bad = [c for c in svg if (ord(c) < 0x20 and c not in "\n\t") or c in "\x7f\u202e\u202d\u2066"]
    assert not bad, bad[:5]


async def test_hostile_names_render_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flaketui.app.screens.problems import ProblemsScreen
    from flaketui.app.screens.run_picker import RunPicker

    records: list[dict[str, Any]] = [
        {"run": f"run{r}{HOSTILE[r]}", "task": f"t{i}{name}", "trial": t, "passed": (i + t) % 3 != 0}
        for r in range(2) for i, name in enumerate(HOSTILE) for t in range(3)]
    path = write_log(tmp_path / "evil.jsonl", records)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"run": "\x1b[2J[link=https://evil]x[/link]", "task": 5\n')  # a bad line
    app = make_app([str(path)], k=2)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        assert screen.stats is not None and len(screen.stats) == len(HOSTILE)
        svg = app.export_screenshot()
        no_raw_control(svg)
        assert "evil" in svg and "\\x1b" in svg  # spelled out, not sent
        for _ in HOSTILE:  # every row highlighted once (its full name under the table)
            await pilot.press("down")
            no_raw_control(app.export_screenshot())
        await pilot.press("y")  # a toast naming the task
        await pilot.pause()
        # the visible form goes to the clipboard: a hostile id cannot carry ESC[201~ into a paste
        assert copied and copied[0] in {visible(t) for t in screen.stats.tasks}
        no_raw_control(app.export_screenshot())
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        no_raw_control(app.export_screenshot())
        await pilot.press("escape", "e")
        await pilot.pause()
        assert isinstance(app.screen, ProblemsScreen)
        no_raw_control(app.export_screenshot())


async def test_copy_task_id(monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app([str(BASELINE)], k=5)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("down", "y")
        await pilot.pause()
        # The second row: the first stable-fail task (ties by p̂, as the report orders them).
        assert copied == [app.tasks_screen.current_task] == ["failoverDatabase"]
        assert shown[-1] == "copied failoverDatabase"


@pytest.mark.parametrize("name", ["tasks.csv", "tasks.md"])
async def test_export_the_filtered_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         name: str) -> None:
    import csv

    monkeypatch.chdir(tmp_path)
    app = make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"list", "enter", "ctrl+s")
        await pilot.pause()
        box = app.screen.query_one("#export-path")
        assert box.value == "flaketui-oncall-baseline.csv"  # the default, in the current folder
        box.value = name
        await pilot.press("enter")
        await pilot.pause()
        shown_names = [table(app).row_text(i)[0] for i in range(len(table(app).order))]
    out = tmp_path / name
    assert shown[-1] == f"{len(shown_names)} task(s) written to {out}"
    text = out.read_text(encoding="utf-8")
    if name.endswith(".csv"):
        rows = list(csv.DictReader(text.splitlines()))
        assert [r["task"] for r in rows] == shown_names == ["listAlerts", "listOncallSchedule",
                                                              "listRecentDeploys"]
        assert rows[0]["pass_hat_k"] == "1" and rows[0]["n"] == "12"
        assert set(rows[0]) >= {"p_hat_low", "p_hat_high", "flakiness", "class"}
    else:
        lines = text.splitlines()
        assert lines[0] == "# oncall-baseline (k = 5)"
        assert lines[2].startswith("| run | task | n | passes | p̂ |") and "pass^5" in lines[2]
        assert [line.split(" | ")[1] for line in lines[4:]] == shown_names


async def test_csv_export_sanitises_text_cells(tmp_path: Path) -> None:
    import csv

    from flaketui.app.screens.export import table_csv

    path = write_log(tmp_path / "f.jsonl", [{"run": "r", "task": name, "trial": t, "passed": t > 0}
                                            for name in ("=HYPERLINK(1)", "a\x1b[2Jb") for t in range(2)])
    app = make_app([str(path)], k=2)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        st = app.tasks_screen.stats
        assert st is not None
        rows = list(csv.DictReader(table_csv(st, range(len(st))).splitlines()))
    assert sorted(r["task"] for r in rows) == ["'=HYPERLINK(1)", "a\\x1b[2Jb"]


@pytest.mark.parametrize(("editor", "expected"), [
    ("vim", ["vim", "+7", "--", "{log}"]),
    ("/usr/bin/nano -w", ["/usr/bin/nano", "-w", "+7", "{log}"]),
    ("code -w", ["code", "-w", "--goto", "{log}:7"]),
    ("ed", ["ed", "{log}"]),
])
def test_editor_command(editor: str, expected: list[str]) -> None:
    """The path is always one absolute argument (never a name an editor reads as an option)."""
    import os

    from flaketui.app.screens.tasks import editor_command

    log = os.path.abspath("log.jsonl")
    assert editor_command(editor, "log.jsonl", 7) == [part.format(log=log) for part in expected]


async def test_open_in_editor_suspends_and_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import subprocess

    ran: list[list[str]] = []
    monkeypatch.setenv("EDITOR", "vim")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: ran.append(cmd))
    app = make_app([str(BASELINE)], k=5)
    suspended: list[bool] = []

    @contextlib.contextmanager
    def suspend():  # type: ignore[no-untyped-def]
        suspended.append(True)
        yield

    monkeypatch.setattr(app, "suspend", suspend)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("o")
        await pilot.pause()
    assert suspended == [True]
    assert len(ran) == 1 and ran[0][0] == "vim" and ran[0][2:] == ["--", str(BASELINE.resolve())]
    line = int(ran[0][1].lstrip("+"))
    assert '"task": "searchRunbook"' in BASELINE.read_text(encoding="utf-8").splitlines()[line - 1]


async def test_light_theme_redraws_the_table_in_its_colours() -> None:
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.pause()
        surface = app.theme_variables["surface"].lower()
        t = table(app)
        for y in (2, 3):  # rows off the cursor: the table's own background
            backgrounds = {seg.style.bgcolor.name.lower() for seg in t.render_line(y)
                           if seg.style and seg.style.bgcolor}
            assert backgrounds == {surface}, backgrounds
        # Passing rates in the theme's success colour, not a fixed green.
        success = app.theme_variables["success"].lower()
        passing = 1 + [t.row_text(i)[0] for i in range(len(t.order))].index("checkCertificateExpiry")
        colours = {seg.style.color.name.lower() for seg in t.render_line(passing)
                   if seg.style and seg.style.color}
        assert success in colours, colours


async def test_screenshot_goes_to_the_current_folder(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.deliver_screenshot()  # what the palette's Screenshot command calls
        await pilot.pause()
    written = list(tmp_path.glob("*.svg"))
    assert len(written) == 1
    assert shown[-1] == f"Saved screenshot to {written[0]}"


async def test_task_count_matches_the_few_tasks_warning(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = [{"run": "r", "task": f"t{i}", "trial": t, "passed": t != i}
                                     for i in range(8) for t in range(3)]
    records += [{"run": "r", "task": "broken", "trial": t, "error": "sandbox did not start"}
                for t in range(3)]
    app = make_app([str(write_log(tmp_path / "nine.jsonl", records))], k=3)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = summary(app)
        # The warning counts the tasks with an outcome; the header says how many those are.
        assert "only 8 tasks" in text
        assert "9 tasks (8 with an outcome)" in text
