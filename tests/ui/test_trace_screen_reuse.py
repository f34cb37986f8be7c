"""Pilot tests of the one trace screen the task table keeps: each task opened on it shows that
task alone, exactly as a new screen would, whatever the last task left behind."""

from __future__ import annotations

import gc
import threading

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static, TabbedContent

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.traces import TaskTraceScreen, TaskTrials
from flaketui.app.widgets.fork_map import ForkMap
from flaketui.app.widgets.task_table import TaskTable
from flaketui.app.widgets.trace_view import TraceDiffView
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.helpers.app import record_notifications


def fixtures_app() -> FlakeApp:
    return make_app([str(BASELINE), str(CANDIDATE)], k=5)


async def open_task(pilot: Pilot, app: FlakeApp, task: str) -> TaskTraceScreen:
    """Put the table's cursor on ``task``, press enter and wait for its trials to be shown."""
    assert app.tasks_screen.query_one(TaskTable).move_cursor_to_row(app.tasks_screen.outcomes.index(task))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, TaskTraceScreen) and app.screen.task_name == task
    return app.screen


async def back(pilot: Pilot, app: FlakeApp) -> None:
    await pilot.press("escape")
    await settle(pilot)
    assert app.screen is app.tasks_screen


async def screenshot_of(task: str, before: tuple[str, ...] = ()) -> str:
    """The screen of ``task``'s traces, opened after the tasks ``before`` (each opened, left on
    its fork map with the search box open, then closed)."""
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for other in before:
            await open_task(pilot, app, other)
            await pilot.press("f", "slash", *"lookup")
            await pilot.press("escape")  # closes the search box
            await back(pilot, app)
        await open_task(pilot, app, task)
        return app.export_screenshot()


@pytest.mark.slow
@pytest.mark.parametrize("task", ["listAlerts", "pingHealthcheck", "searchRunbook"])
async def test_a_task_opened_after_others_looks_as_on_a_new_screen(task: str) -> None:
    """Opened after a flaky task, a task without traces and a one-sided one, the screen is drawn
    exactly as the first screen opened on ``task``."""
    before = tuple(t for t in ("searchRunbook", "pingHealthcheck", "listAlerts") if t != task)
    assert await screenshot_of(task, before) == await screenshot_of(task)


@pytest.mark.slow
async def test_open_a_back_open_b_shows_only_b() -> None:
    """Opening task A, going back and opening B shows only B."""
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        a = await open_task(pilot, app, "searchRunbook")
        assert a.query_one(TraceDiffView).b is not None
        await pilot.press("f")  # the fork map tab
        await back(pilot, app)

        b = await open_task(pilot, app, "listAlerts")
        assert b is a  # the same screen, refilled
        assert b.query_one(TabbedContent).active == "traces-tab"
        head = b.query_one("#trace-head", Static).render()
        assert str(head).startswith("listAlerts") and "searchRunbook" not in str(head)
        assert "listAlerts" in b.sub_title and "searchRunbook" not in b.sub_title
        views = b.query(TraceDiffView)
        assert len(views) == 1
        view = views.first()
        assert view.a is not None and view.a.task == "listAlerts" and view.b is None
        assert {t.task for t in b.trials} == {"listAlerts"} and len(b.trials) == len(b.outcomes.task_rows(b.row))
        assert f"no failing trial: all {len(b.passing)} traced trials passed" in view.divergence_text().plain
        fork_map = b.query_one(ForkMap)
        assert fork_map.shown is not None and fork_map.shown[0].fails == 0 and fork_map.decisive is None
        assert not b.query_one("#trace-evidence", Static).display  # no evidence for one outcome
        assert not b.query_one("#trace-status", Static).display
        assert app.focused is view.query_one("#diff-rows")
        await back(pilot, app)

        c = await open_task(pilot, app, "pingHealthcheck")  # no traces: the trial list alone
        assert not c.query(TraceDiffView)
        assert {t.task for t in c.trials} == {"pingHealthcheck"}
        assert len(c.query_one("#trial-list", OptionList).options) == len(c.trials)
        await back(pilot, app)

        d = await open_task(pilot, app, "searchRunbook")  # traces again: no trial list left over
        assert not d.query("#trial-list") and len(d.query(TraceDiffView)) == 1
        evidence = str(d.query_one("#trace-evidence", Static).render())
        assert evidence.startswith("cause? ") and "finding the evidence" not in evidence
        assert d.query_one(ForkMap).shown is not None and d.query_one(ForkMap).shown[0].mixed
    assert gc.get_freeze_count() == 0  # the app unfroze what it froze once loaded


@pytest.mark.slow
async def test_a_message_from_the_last_tasks_reader_is_dropped() -> None:
    """A message from the previous task's reader is dropped."""
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        a = await open_task(pilot, app, "searchRunbook")
        fork_map = a.query_one(ForkMap).shown
        assert fork_map is not None
        late = TaskTrials(a.trials, fork_map[0], (0, 0), a.mode, a.log_rows, a.opened)
        await back(pilot, app)
        b = await open_task(pilot, app, "listAlerts")
        b.post_message(late)  # what A's reader would post had it finished after B was opened
        await settle(pilot)
        assert {t.task for t in b.trials} == {"listAlerts"}
        view = b.query_one(TraceDiffView)
        assert view.a is not None and view.a.task == "listAlerts" and view.b is None


@pytest.mark.slow
async def test_a_failed_read_on_the_refilled_screen_shows_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed read on the refilled screen shows its error."""
    import flaketui.loading

    app = fixtures_app()
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_task(pilot, app, "searchRunbook")
        await back(pilot, app)

        def unreadable(*args: object, **kwargs: object) -> None:
            raise OSError("the log vanished")

        monkeypatch.setattr(flaketui.loading, "read_trial", unreadable)
        await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TaskTraceScreen)
        status = screen.query_one("#trace-status", Static)
        text = str(status.render())
        assert "Reading traces failed: OSError: the log vanished" in text
        assert "reading the task's trials" not in text and status.display
        assert not screen.query(TraceDiffView)  # the last task's traces are not left shown
        assert any("OSError: the log vanished" in m for m in shown)


@pytest.mark.slow
async def test_traces_opened_from_the_palette_over_the_trace_screen_get_a_screen_of_their_own() -> None:
    """Traces opened from the palette over the trace screen get a screen of their own."""
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        kept = await open_task(pilot, app, "searchRunbook")
        await app.tasks_screen.run_action("show_traces")  # the palette's "Open traces"
        await settle(pilot)
        other = app.screen
        assert isinstance(other, TaskTraceScreen) and other is not kept
        assert other.task_name == "searchRunbook" and kept.task_name == "searchRunbook"
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is kept and kept.query_one(TraceDiffView).b is not None
        assert not kept.query_one(Input).display


@pytest.mark.slow
async def test_going_back_stops_the_readers_and_their_late_evidence_is_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Going back stops the readers and their late evidence is dropped."""
    from flaketui.app.screens import traces

    release = threading.Event()
    suggest = traces.suggest_task

    def slow_suggest(*args: object, **kwargs: object) -> object:
        release.wait(10)
        return suggest(*args, **kwargs)

    monkeypatch.setattr(traces, "suggest_task", slow_suggest)  # the trace screen's only
    monkeypatch.setattr(traces, "EVIDENCE_AT_ONCE", 0)  # a big task's: found by a worker, after the read
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.tasks_screen.query_one(TaskTable)
        assert table.move_cursor_to_row(app.tasks_screen.outcomes.index("searchRunbook"))
        await pilot.press("enter")
        while not (isinstance(app.screen, TaskTraceScreen) and app.screen.loaded):
            await pilot.pause(0.01)
        a = app.screen
        finding = [w for w in app.workers if w.node is a and w.group == "evidence"]
        assert finding and finding[0].is_running
        await pilot.press("escape")
        await pilot.pause()
        assert finding[0].is_cancelled
        b = await open_task(pilot, app, "listAlerts")
        release.set()  # A's search ends now, B shown: its message names the earlier opening
        await settle(pilot)
        assert b is a and b.task_name == "listAlerts"
        assert b.suggestion is None and not b.suggested and b.evidence is None


def slow_first_read(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Make the trace screen's first read of a task's trials wait for the event returned; the
    list names the task of each read."""
    from flaketui.app.screens import traces

    release = threading.Event()
    reads: list[str] = []
    read = traces.read_task

    def slow_read(app: FlakeApp, task: str, *args: object) -> TaskTrials:
        reads.append(task)
        if len(reads) == 1:
            release.wait(10)
        return read(app, task, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(traces, "read_task", slow_read)
    return release, reads


async def shown_reading(pilot: Pilot, app: FlakeApp, task: str) -> TaskTraceScreen:
    """Press enter on ``task`` and wait for the trace screen, still reading its trials."""
    assert app.tasks_screen.query_one(TaskTable).move_cursor_to_row(app.tasks_screen.outcomes.index(task))
    await pilot.press("enter")
    while not isinstance(app.screen, TaskTraceScreen):
        await pilot.pause(0.01)
    screen = app.screen
    assert not screen.loaded
    assert "reading the task's trials" in str(screen.query_one("#trace-status", Static).render())
    return screen


@pytest.mark.slow
async def test_a_slow_first_read_shows_the_screen_reading_then_its_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow first read shows the screen reading, then its trials."""
    release, reads = slow_first_read(monkeypatch)
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await shown_reading(pilot, app, "searchRunbook")
        release.set()
        while not screen.loaded:
            await pilot.pause(0.01)
        await settle(pilot)
        assert reads == ["searchRunbook"]  # the read begun before the screen, not a second one
        assert screen.diff_view is not None and screen.diff_view.display
        assert screen.suggested and screen.evidence is not None
        assert not screen.query_one("#trace-status", Static).display


@pytest.mark.slow
async def test_going_back_before_the_first_read_ends_drops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Going back before the first read ends drops it."""
    release, reads = slow_first_read(monkeypatch)
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        a = await shown_reading(pilot, app, "searchRunbook")
        waiting = [w for w in app.workers if w.node is a and w.group == "traces"]
        assert waiting and waiting[0].is_running
        await back(pilot, app)
        assert waiting[0].is_cancelled
        b = await open_task(pilot, app, "listAlerts")
        release.set()  # A's read ends now, B shown
        await settle(pilot)
        assert b is a and b.task_name == "listAlerts" and reads == ["searchRunbook", "listAlerts"]
        assert {t.task for t in b.trials} == {"listAlerts"}
        assert b.diff_view is not None and b.diff_view.a is not None and b.diff_view.a.task == "listAlerts"


@pytest.mark.slow
async def test_a_quick_first_read_is_composed_with_the_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trials read within READ_WAIT: the screen is complete once mounted, before its first
    frame (traces shown and focused, evidence found, the tab underline where Textual puts it)."""
    import functools

    seen: dict[str, object] = {}
    mounted = TaskTraceScreen.on_mount

    @functools.wraps(mounted)
    async def noted(self: TaskTraceScreen) -> None:
        await mounted(self)
        underline = self.query_one(TabbedContent).query_one("Underline")
        seen.update(loaded=self.loaded, status=self.query_one("#trace-status", Static).display,
                    view=self.diff_view is not None, focused=getattr(self.focused, "id", None),
                    evidence=str(self.query_one("#trace-evidence", Static).render()),
                    underline=(underline.highlight_start, underline.highlight_end))  # type: ignore[attr-defined]

    monkeypatch.setattr(TaskTraceScreen, "on_mount", noted)
    from flaketui.app.screens import traces

    monkeypatch.setattr(traces, "READ_WAIT", 5.0)  # however slow the machine, the read is in time
    app = fixtures_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_task(pilot, app, "searchRunbook")
        underline = screen.query_one(TabbedContent).query_one("Underline")
        assert seen["loaded"] and seen["view"] and not seen["status"]
        assert seen["focused"] == "diff-rows" and "finding the evidence" not in str(seen["evidence"])
        assert seen["underline"] == (underline.highlight_start, underline.highlight_end) != (0, 0)  # type: ignore[attr-defined]
