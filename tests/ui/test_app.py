"""Pilot tests of the triage app: table order, sorting, filter, k, runs, traces, help.

Expected figures come from the fixture generator (scripts/make_fixtures.py):
oncall-baseline has 25 tasks of 12 trials; searchRunbook passes 10 of 12 and is
the only flaky task; its passing and failing traces part ways at step 3.
pass^k values are checked against scipy's exact binomial coefficients.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from scipy.special import comb
from textual.pilot import Pilot
from textual.widgets import Static

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.help import HelpScreen
from flaketui.app.screens.problems import ProblemsScreen
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.screens.traces import TaskTraceScreen
from flaketui.app.widgets.fork_map import ForkMap
from flaketui.app.widgets.loading import LoadingPane
from flaketui.app.widgets.task_table import TaskTable
from flaketui.app.widgets.trace_view import TraceDiffView
from tests.conftest import BASELINE, CANDIDATE, SIZE
from tests.helpers.app import ready, record_notifications, table
from tests.helpers.logs import write_log


def names(app: FlakeApp) -> list[str]:
    t = table(app)
    return [t.row_text(i)[0] for i in range(len(t.order))]


def column(app: FlakeApp, key: str) -> list[str]:
    t = table(app)
    pos = [c.key for c in t.columns].index(key)
    return [t.row_text(i)[pos] for i in range(len(t.order))]


@pytest.fixture
def app() -> FlakeApp:
    """The fixtures in the `all` divergence mode, where searchRunbook parts at step 3 (the
    retriever's chunk order); the default `actions` mode (step 4, the agent's own action) is
    tested in tests/ui/test_traces_ui.py and tests/unit/test_diff_cli.py."""
    return make_app([str(BASELINE), str(CANDIDATE)], k=5, divergence="all")


async def test_loads_and_puts_the_flaky_task_on_top(app: FlakeApp) -> None:
    """The app loads the fixtures and shows the flaky task on top of the table."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        assert app.trial_log is not None and app.trial_log.runs == ["oncall-baseline",
                                                                   "oncall-candidate"]
        assert screen.run == "oncall-baseline"
        assert len(table(app).order) == 25
        assert names(app)[0] == "searchRunbook"
        assert screen.current_task == "searchRunbook"
        row = table(app).row_text(0)
        keys = [c.key for c in table(app).columns]
        assert row[keys.index("flakiness")].startswith("0.556")
        assert row[keys.index("pass_hat_k")] == f"{comb(10, 5) / comb(12, 5):.3f}" == "0.318"
        assert row[keys.index("divergence")] == "3"
        assert not screen.has_class("-loading")


async def test_default_order_is_flakiness_descending_then_p_hat_then_name(app: FlakeApp) -> None:
    """The default order is flakiness descending, then p̂, then name, as the report orders them."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # The report's rule: among the equally (un)flaky, the failing tasks first (p̂ = 0),
        # then by name; once alphabetical, failoverDatabase sat among the passes.
        rest = names(app)[1:]
        fails = ["failoverDatabase", "rollbackDeploy", "rotateCredentials", "scaleOutService",
                 "silenceAlert"]
        assert rest[:5] == fails and rest[5:] == sorted(rest[5:])


@pytest.mark.slow
async def test_sort_keys_and_reverse(app: FlakeApp) -> None:
    """S reverses the sort, and sorting by a column twice turns its order around."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        await pilot.press("S")  # flakiness ascending: the flaky task goes last
        assert screen.sort_reverse is False
        assert names(app)[-1] == "searchRunbook"
        screen.action_sort_by("task")
        await pilot.pause()
        assert names(app) == sorted(names(app))
        screen.action_sort_by("task")  # again: descending
        await pilot.pause()
        assert names(app) == sorted(names(app), reverse=True)
        screen.action_sort_by("p_hat")
        await pilot.pause()
        p = [float(x) for x in column(app, "p_hat")]
        assert p == sorted(p, reverse=True)
        await pilot.press("S")
        p = [float(x) for x in column(app, "p_hat")]
        assert p == sorted(p) and p[0] == 0.0


@pytest.mark.slow
async def test_every_column_sorts_from_the_keyboard(app: FlakeApp) -> None:
    """Every column of the table can be sorted from the keyboard."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        keys = [c.key for c in table(app).columns]
        seen = []
        for _ in keys:
            await pilot.press("s")
            seen.append(screen.sort_key)
            values = screen.sort_values(screen.sort_key)[table(app).order]
            values = values[~(values != values)]  # drop NaN (sorted last)
            expected = sorted(values, reverse=screen.sort_reverse)
            assert list(values) == expected, screen.sort_key
        assert sorted(seen) == sorted(keys)


@pytest.mark.slow
async def test_filter_by_name_and_escape_clears(app: FlakeApp) -> None:
    """/ filters the tasks by name and escape clears the filter."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"alert")
        assert app.tasks_screen.filter_text == "alert"
        assert names(app) == ["silenceAlert", "explainAlertRule", "getAlertStatus", "listAlerts"]
        await pilot.press("enter")
        assert isinstance(app.focused, TaskTable)
        assert len(names(app)) == 4
        await pilot.press("escape")
        assert app.tasks_screen.filter_text == ""
        assert len(names(app)) == 25


@pytest.mark.slow
async def test_filter_matching_nothing_shows_an_empty_table(app: FlakeApp) -> None:
    """A filter matching nothing shows an empty table."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"zzz", "enter")
        assert names(app) == []
        assert app.tasks_screen.current_task is None
        await pilot.press("enter")  # nothing to open
        assert isinstance(app.screen, TasksScreen)


async def test_flaky_only(app: FlakeApp) -> None:
    """f shows only the tasks classed flaky: none at the default cap (searchRunbook's 10 of 12 is
    undetermined), all 25 again on the second press."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f")
        assert names(app) == []
        await pilot.press("f")
        assert len(names(app)) == 25


@pytest.mark.slow
async def test_k_changes_recompute_everything(app: FlakeApp) -> None:
    """+ and - change k and every k-dependent figure is recomputed."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        await pilot.press("minus")
        assert app.k == 4 and screen.stats is not None and screen.stats.k == 4
        labels = [c.label for c in table(app).columns]
        assert "pass^4" in labels and "pass@4" in labels
        assert column(app, "pass_hat_k")[0] == f"{comb(10, 4) / comb(12, 4):.3f}" == "0.424"
        await pilot.press("plus", "plus")
        assert app.k == 6
        assert column(app, "pass_hat_k")[0] == f"{comb(10, 6) / comb(12, 6):.3f}"
        # Suite pass^6: the mean over tasks of per-task pass^6 (19 always pass).
        expected = (comb(10, 6) / comb(12, 6) + 19) / 25
        assert screen.summary is not None
        assert screen.summary.pass_hat_k.value == pytest.approx(expected)
        for _ in range(20):
            await pilot.press("plus")
        assert app.k == 12  # capped at the largest n


@pytest.mark.slow
async def test_run_picker(app: FlakeApp) -> None:
    """r opens the run picker and choosing a run shows its tasks."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("r", "down", "enter")
        await ready(pilot)
        screen = app.tasks_screen
        assert screen.run == "oncall-candidate"
        assert screen.summary is not None and screen.summary.flaky_tasks == 0
        p = dict(zip(names(app), column(app, "p_hat"), strict=True))
        assert p["summarizeIncident"] == "0.000" and p["searchRunbook"] == "1.000"
        await pilot.press("r", "escape")  # closed without picking: the run stays
        assert screen.run == "oncall-candidate"
        await pilot.press("r", "up", "enter")
        assert screen.run == "oncall-baseline"


@pytest.mark.slow
async def test_enter_opens_the_trace_screen_at_step_3(app: FlakeApp) -> None:
    """enter opens the trace screen of the flaky task at its first divergence."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("enter")
        await ready(pilot)
        screen = app.screen
        assert isinstance(screen, TaskTraceScreen) and screen.task_name == "searchRunbook"
        view = screen.query_one(TraceDiffView)
        assert view.first_divergence == 3
        line = view.divergence_text().plain
        assert line.startswith("first divergence: step 3")
        assert "differs in: content" in line
        assert view.a is not None and view.a.passed
        assert view.b is not None and not view.b.passed
        assert view.b.trace[2]["content"].startswith("[1] Restart")


@pytest.mark.slow
async def test_escape_restores_sort_filter_and_cursor(app: FlakeApp) -> None:
    """Coming back from the trace screen keeps the table's sort, filter and cursor."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        screen.action_sort_by("task")
        await pilot.press("slash", *"o", "enter", "down", "down")
        before = (screen.sort_key, screen.sort_reverse, screen.filter_text, names(app),
                  table(app).cursor_row, screen.current_task)
        assert before[5] is not None
        await pilot.press("enter")
        await ready(pilot)
        assert isinstance(app.screen, TaskTraceScreen)
        assert app.screen.task_name == before[5]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        after = (screen.sort_key, screen.sort_reverse, screen.filter_text, names(app),
                 table(app).cursor_row, screen.current_task)
        assert after == before
        assert isinstance(app.focused, TaskTable)


async def open_task(pilot: Pilot, app: FlakeApp, task: str) -> TaskTraceScreen:
    assert table(app).move_cursor_to_row(app.tasks_screen.outcomes.index(task))
    await pilot.press("enter")
    await ready(pilot)
    assert isinstance(app.screen, TaskTraceScreen)
    return app.screen


@pytest.mark.slow
async def test_a_failing_trace_read_shows_its_error_not_reading_forever(
        app: FlakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace read that fails shows its error instead of reading forever."""
    import flaketui.loading

    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)  # the divergence column has read its traces

        def unreadable(*args: object, **kwargs: object) -> None:
            raise OSError("the log vanished")

        monkeypatch.setattr(flaketui.loading, "read_trial", unreadable)
        screen = await open_task(pilot, app, "searchRunbook")
        await pilot.pause()
        status = screen.query_one("#trace-status", Static)
        text = str(status.render())
        assert "OSError: the log vanished" in text and "reading the task's trials" not in text
        assert status.display and not screen.query(TraceDiffView)
        assert any("OSError: the log vanished" in m for m in shown)


@pytest.mark.slow
async def test_one_sided_task_says_so(app: FlakeApp) -> None:
    """A task that only passed says it has no failing trace to compare."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_task(pilot, app, "listAlerts")
        view = screen.query_one(TraceDiffView)
        assert view.b is None and view.a is not None and view.a.passed
        assert "no failing trial: all 12 traced trials passed" in view.divergence_text().plain


@pytest.mark.slow
async def test_task_without_traces_says_so(app: FlakeApp) -> None:
    """A task whose trials have no traces says so."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_task(pilot, app, "pingHealthcheck")
        assert not screen.query(TraceDiffView)
        status = str(screen.query_one("#trace-status").render())
        assert "no trial of pingHealthcheck has a trace" in status


@pytest.mark.slow
async def test_trial_navigation_and_fork_map(app: FlakeApp) -> None:
    """The trace screen moves between trials and opens the fork map."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = await open_task(pilot, app, "searchRunbook")
        view = screen.query_one(TraceDiffView)
        first_b = view.b
        await pilot.press("b")
        await pilot.pause()
        assert screen.fail_pos == 1 and view.b is not first_b and not view.b.passed
        assert "2 of 2 failing" in view.label_b
        await pilot.press("a")
        await pilot.pause()
        assert screen.pass_pos == 1 and "2 of 10 passing" in view.label_a
        await pilot.press("f")
        await pilot.pause()
        fork = screen.query_one(ForkMap)
        labels = [str(n.label) for n in _nodes(fork.root)]
        split = [x for x in labels if "outcomes split" in x]
        assert len(split) == 1 and "after step 2" in split[0]
        restart = [x for x in labels if "searchRunbook: [1] Restart" in x]
        assert len(restart) == 1 and "steps 3–6" in restart[0] and "✓0 ✗2" in restart[0]


def _nodes(node):  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _nodes(child)


@pytest.mark.slow
async def test_ignore_key_changes_the_divergence() -> None:
    """--ignore-key changes where the divergence column says traces part."""
    app = make_app([str(BASELINE)], k=5, ignore_keys=["content"])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert column(app, "divergence")[0] == "4"
        screen = await open_task(pilot, app, "searchRunbook")
        view = screen.query_one(TraceDiffView)
        assert view.first_divergence == 4
        assert "args.metric" in view.divergence_text().plain or "name" in view.divergence_text().plain


@pytest.mark.slow
async def test_help_lists_every_key(app: FlakeApp) -> None:
    """? opens the help screen listing every key."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        sections = dict(app.screen.sections())
        for cls_title in ("Everywhere", "Task table", "Trace screen"):
            assert sections[cls_title]
        actions = {b.action for bindings in sections.values() for b in bindings}
        for action in ("show_traces", "sort_next", "filter", "toggle_flaky", "change_k(1)",
                       "pick_run", "jump_to_divergence", "toggle_fork_map", "quit", "help"):
            assert action in actions
        await pilot.press("escape")
        assert isinstance(app.screen, TasksScreen)


async def test_skipped_lines_are_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipped lines are notified and e lists them by line number."""
    log = tmp_path / "bad.jsonl"
    good = BASELINE.read_text(encoding="utf-8").splitlines()[:24]
    log.write_text("\n".join([*good, "{not json", '{"task": "x"}']) + "\n", encoding="utf-8")
    app = make_app([str(log)])
    messages = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.trial_log is not None and len(app.trial_log.problems) == 2
        assert any("2 lines skipped while loading" in m for m in messages)
        await pilot.press("e")
        assert isinstance(app.screen, ProblemsScreen)
        assert [str(p).split(":")[1] for p in app.screen.problems] == ["25", "26"]


async def test_no_usable_trials_is_one_clear_error(tmp_path: Path) -> None:
    """A log without a usable trial shows one clear error."""
    log = tmp_path / "empty.jsonl"
    log.write_text("{not json\n", encoding="utf-8")
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        label = str(app.tasks_screen.query_one("#loading-label").render())
        assert label.startswith("flaketui: error: no usable trials")
        assert app.trial_log is None


@pytest.mark.slow
async def test_sorting_shows_the_new_top(app: FlakeApp) -> None:
    """Sorting moves the cursor to the new top row."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("down", "down", "S")
        assert table(app).cursor_row == 0
        assert app.tasks_screen.current_task == names(app)[0]


async def test_gate_verdict_in_the_header() -> None:
    """With a floor and a cap the header shows the gate verdict."""
    app = make_app([str(BASELINE)], k=5, min_pass_hat_k=0.7, max_flakiness=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        summary = str(app.tasks_screen.query_one("#summary").render())
        assert "gate FAIL" in summary
        assert "searchRunbook (0.556)" in summary
        assert "pass^5 0.773 [0.48, 0.93]" in summary  # CR2 over 5 clusters of unequal size, on the logit scale


async def test_progress_is_shown_while_loading(app: FlakeApp) -> None:
    """A load progress message shows its megabytes read of the total on the loading label."""
    from flaketui.app.messages import LoadProgress

    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        screen.query_one(LoadingPane).progress(LoadProgress(2_500_000, 10_000_000))
        label = str(screen.query_one("#loading-label").render())
        assert "2.5 of 10.0 MB" in label


@pytest.mark.slow
async def test_command_palette_offers_the_main_actions(app: FlakeApp) -> None:
    """The command palette offers the main actions."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in ("Open traces", "Toggle flaky only", "Filter by name", "Increase k",
                      "Pick a run", "Copy task id", "Export the table", "Sort by pass^5",
                      "Sort by task", "Keys"):
            assert title in commands
        await commands["Toggle flaky only"].callback()
        await pilot.pause()
        assert names(app) == []  # no task is shown flaky at the default cap with 12 trials
        await commands["Toggle flaky only"].callback()
        await pilot.pause()
        assert names(app)[0] == "searchRunbook"
        await commands["Open traces"].callback()
        await ready(pilot)
        assert isinstance(app.screen, TaskTraceScreen)


@pytest.mark.slow
async def test_inserted_step_long_content_and_string_steps(tmp_path: Path) -> None:
    """An inserted step does not shift the rest: long and plain string steps still pair up after it."""
    long_text = "word " * 400
    ok = ["hello", {"role": "tool", "content": long_text, "id": 1}, "done"]
    bad = ["hello", "retrying", {"role": "tool", "content": long_text, "id": 2}, "done"]
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "passed": True, "trace": ok},
        {"task": "t", "passed": False, "trace": bad},
    ])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert column(app, "divergence") == ["2"]
        await pilot.press("enter")
        await ready(pilot)
        view = app.screen.query_one(TraceDiffView)
        assert view.first_divergence == 2
        assert view.alignment is not None
        # The inserted step does not shift the rest: the long step and "done" still pair up.
        assert [r.tag for r in view.alignment.rows] == ["equal", "insert", "equal", "equal"]
        assert "B has an extra step 2" in view.divergence_text().plain
        assert "x: expand" in plain(view.query_one("#diff-row-2", Static))
        await pilot.press("x")
        await pilot.pause()
        assert view.expanded
        assert "x: expand" not in plain(view.query_one("#diff-row-2", Static))


def plain(static: Static) -> str:
    """The text a Static shows (its content rendered without styles)."""
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


async def test_clicking_a_header_sorts(app: FlakeApp) -> None:
    """Clicking a column header sorts by that column."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.click(TaskTable, offset=(3, 0))
        await pilot.pause()
        assert app.tasks_screen.sort_key == "task"
        assert names(app) == sorted(names(app))


@pytest.mark.slow
async def test_keys_scroll_the_trace_and_the_fork_map(tmp_path: Path) -> None:
    """The focus lands on the trace rows, so pagedown scrolls a long trace, and f focuses the fork map."""
    # The tab bar took the focus, so ↓ / pgdn did nothing on a long trace.
    steps = [{"role": "assistant", "content": f"step {i}"} for i in range(80)]
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "passed": True, "trace": steps},
        {"task": "t", "passed": False, "trace": steps[:40] + [{"role": "user", "content": "x"}]},
    ])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("enter")
        await ready(pilot)
        rows = app.screen.query_one("#diff-rows")
        assert app.focused is rows
        await pilot.press("home")  # the screen opened at the divergence, near the end
        await ready(pilot)
        await pilot.press("pagedown")
        await pilot.pause()
        assert rows.scroll_y > 0
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.focused, ForkMap)
        await pilot.press("f")
        await pilot.pause()
        assert app.focused is rows


def test_openai_tool_calls_read_as_name_and_arguments() -> None:
    """OpenAI tool calls render as the function's name and arguments."""
    from flaketui.app.widgets.trace_view import render_step

    step = {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {
            "name": "get_reservation_details", "arguments": '{"reservation_id":"XEWRD9"}'}},
        {"type": "function", "function": {"name": "list_all_airports", "arguments": "{}"}},
    ]}
    text = render_step(5, step).plain
    # No "content: null", no escaped JSON inside JSON; each call on its own line.
    assert text == ('5 assistant\ntool_calls: get_reservation_details {"reservation_id": "XEWRD9"}\n'
                    'list_all_airports')
    # Not that shape: shown as JSON, as before.
    assert render_step(1, {"role": "x", "tool_calls": [1]}).plain == "1 x\ntool_calls: [1]"


@pytest.mark.slow
async def test_long_json_words_wrap_rather_than_being_cut(tmp_path: Path) -> None:
    """Long JSON words wrap rather than being cut off."""
    blob = {"k" * 30 + str(i): i for i in range(14)}
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "passed": True, "trace": [{"role": "tool", "args": blob}]},
        {"task": "t", "passed": False, "trace": [{"role": "tool", "args": {}}]},
    ])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("enter")
        await ready(pilot)
        shown = "".join(plain(app.screen.query_one("#diff-row-0", Static)).split())
        assert '"' + "k" * 30 + '13":13' in shown


def test_a_nested_change_marks_words_of_the_whole_field() -> None:
    """A change nested inside a field marks the changed words of the whole field."""
    from flaketui.app.widgets.trace_view import highlights
    from flaketui.traces import step_changes

    a = {"role": "assistant", "args": {"query": "checkout p99", "extra": 5}}
    b = {"role": "assistant", "args": {"query": "checkout p50"}}
    ha, hb = highlights(step_changes(a, b), a, b)
    # The row shows the whole args field; it used to show A's args as just "5" (the
    # value of the nested key only A has) and B's without any mark.
    assert "".join(t for t, _ in ha["args"]) == '{"query":"checkout p99","extra":5}'
    assert "".join(t for t, _ in hb["args"]) == '{"query":"checkout p50"}'
    assert [t for t, changed in ha["args"] if changed] == ['p99","extra":5}']
    assert [t for t, changed in hb["args"] if changed] == ['p50"}']


async def test_80x24_keeps_the_table_readable(app: FlakeApp) -> None:
    """At 80x24 the histogram is left out so the table keeps its rows; at 120 columns it comes back."""
    from flaketui.app.widgets.curve import Curves

    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        curves = app.tasks_screen.query_one(Curves)
        # The three charts are 98 columns wide: at 80 the histogram is left out rather than
        # every chart line wrapping (which left the table a single row).
        assert "p̂ over 25 tasks" not in plain(curves)
        assert "searchRunbook (10/12)" in plain(curves)
        assert curves.size.height <= 6
        assert table(app).size.height >= 8
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert "p̂ over 25 tasks" in plain(curves)


@pytest.mark.slow
async def test_cursor_stays_in_view_when_a_column_appears(tmp_path: Path) -> None:
    """The cursor stays in view when a new column appears."""
    # The table fits a 174-column screen until the review column
    # widens it: a horizontal scrollbar takes a row, and the cursor on the last
    # visible row used to fall out of view.
    app = make_app([str(BASELINE), str(CANDIDATE)], triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=(174, SIZE[1])) as pilot:
        await ready(pilot)
        await pilot.press("r", "down", "enter")
        await ready(pilot)
        t = table(app)
        assert not t.show_horizontal_scrollbar
        t.cursor_row = 0
        await pilot.pause()
        page = t.scrollable_content_region.height - 1
        t.cursor_row = 0
        await pilot.pause()
        t.cursor_row = page - 1  # the last row in view
        await pilot.pause()
        assert t.scroll_y == 0
        await pilot.press("space")
        await ready(pilot)
        assert "triage" in [c.key for c in t.columns]
        top, page = int(t.scroll_y), t.scrollable_content_region.height - 1
        assert top <= t.cursor_row < top + page


def test_histogram_counts_of_100_and_more_stay_apart() -> None:
    """Histogram counts of 100 and more stay apart in the block."""
    import numpy as np

    from flaketui.app.widgets.curve import histogram_block

    lines = histogram_block("p̂ over 7640 tasks", np.array([1500, 40, 0, 6100]))
    # They used to read "99+99+0  99+": every count of 100 or more the same, run together.
    assert lines[0].plain == "p̂ over 7640 tasks (counts ×100)"
    assert lines[-2].plain == "15 <1 0  61 "
    small = histogram_block("p̂ over 25 tasks", np.array([5, 0, 19]))
    assert small[0].plain == "p̂ over 25 tasks" and small[-2].plain == "5  0  19 "
    assert histogram_block("t", np.array([995]))[0].plain == "t (counts ×100)"  # not "100"


async def test_watch_keeps_the_default_k_at_the_trials_most_tasks_have(tmp_path: Path) -> None:
    """With --watch the default k stays at the trials most tasks have as trials land."""
    log = tmp_path / "live.jsonl"
    lines = BASELINE.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:100]), encoding="utf-8")
    app = make_app([str(log)], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        first = app.k
        with log.open("a", encoding="utf-8") as f:
            f.write("".join(lines[100:]))
        app.tasks_screen.query_one(LoadingPane).poll()
        await ready(pilot)
        await ready(pilot)
        assert app.trial_log is not None and len(app.trial_log) == len(lines)
        stats = app.tasks_screen.stats
        assert stats is not None
        # 12 trials a task (listAlerts: 12 and 1 errored). The first read ends inside a task:
        # the task read in part no longer pulls k down (it was 4, the smallest n); k is the
        # mode from the start and says it is the default.
        usual = 12
        assert sorted(set(stats.n.tolist())) == [usual]
        assert first == usual == app.k
        assert f"k = {usual} (most tasks' trials)" in str(app.tasks_screen.query_one("#summary").render())
        # The title counts trials as the header does: 300 with an outcome, 1 errored.
        assert app.tasks_screen.sub_title == "watching: 300 trials, 1 errored"


@pytest.mark.slow
async def test_a_click_on_a_header_sorts_by_that_column(app: FlakeApp) -> None:
    """The table's HeaderClicked message sorts by its column (once handled by each screen,
    now by the shared sort actions), and again reverses."""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        t, screen = table(app), app.tasks_screen
        t.post_message(TaskTable.HeaderClicked(t, "p_hat"))
        await pilot.pause()
        assert (screen.sort_key, screen.sort_reverse) == ("p_hat", True)
        t.post_message(TaskTable.HeaderClicked(t, "p_hat"))
        await pilot.pause()
        assert (screen.sort_key, screen.sort_reverse) == ("p_hat", False)
