"""Pilot tests of the trace screen's evidence line and the fork map's decisive fork, and of a
failed trace read on the A-vs-B screen (the error is shown, never swallowed)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual.widgets import Static

from flaketui.app.app import make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.screens.traces import TaskTraceScreen
from flaketui.app.widgets.fork_map import ForkMap
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.helpers.app import open_task, record_notifications


def screen_text(widget: object) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(widget)
    return console.export_text()


def tree_text(tree: ForkMap) -> str:
    lines = []
    stack = [tree.root]
    while stack:
        node = stack.pop()
        lines.append(str(node.label))
        stack.extend(reversed(node.children))
    return "\n".join(lines)


@pytest.mark.slow
async def test_evidence_line_names_the_source_and_the_decisive_fork() -> None:
    """The evidence line names the suggested source and the decisive fork."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(app, pilot, "searchRunbook")
        await settle(pilot)
        line = screen_text(screen.query_one("#trace-evidence", Static).render())
        assert "cause? tool-nondeterminism, 20 of 20 pairs" in line
        assert "decisive fork at step 3: 0 of 2 pass, otherwise 10 of 10 (Fisher p = 0.015, Holm 0.045 over 3 tests)" \
            in line
        assert "step 3: searchRunbook(…) returned" in line
        mark = tree_text(screen.query_one(ForkMap))
        assert "◆ decisive (step 3 in all mode): p = 0.015 (Holm 0.045)" in mark  # the actions map
        assert "10/10 pass" in mark and "0/2 pass" in mark
        await pilot.press("v")  # the all mode's map has the tool result's fork itself
        await settle(pilot)
        mark = tree_text(screen.query_one(ForkMap))
        assert "◆ decisive: p = 0.015 (Holm 0.045)" in mark


@pytest.mark.slow
async def test_the_next_passing_trial_gets_its_own_evidence() -> None:
    """The next passing trial gets its own evidence."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(app, pilot, "searchRunbook")
        await settle(pilot)
        first = screen.evidence
        assert first is not None and first.trial_a == screen.passing[screen.pass_pos].trial
        await pilot.press("a")
        await settle(pilot)
        shown = screen.evidence
        assert shown is not None and shown.trial_a == screen.passing[screen.pass_pos].trial != first.trial_a
        line = screen_text(screen.query_one("#trace-evidence", Static).render())
        assert "cause? tool-nondeterminism, 20 of 20 pairs" in line and "◆ decisive fork" in line


@pytest.mark.slow
@pytest.mark.parametrize("screen_key", ["trace", "compare"])
async def test_a_failed_trace_read_is_shown(screen_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_trial raising on the trace screen or the A-vs-B screen: a notification and the status text."""
    import flaketui.loading

    def broken(*args: object, **kwargs: object) -> object:
        raise OSError("disk gone")

    app = make_app([str(BASELINE), str(CANDIDATE)], k=5) if screen_key == "compare" else make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if screen_key == "compare":
            await pilot.press("c")
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
        monkeypatch.setattr(flaketui.loading, "read_trial", broken)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareTracesScreen if screen_key == "compare" else TaskTraceScreen)
        status = screen.query_one(screen.STATUS or "", Static)
        assert status.display
        assert "Reading traces failed: OSError: disk gone" in screen_text(status.render())
        assert any("OSError: disk gone" in m for m in shown)


@pytest.mark.slow
async def test_a_failed_evidence_search_is_shown_on_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed evidence search is shown on its line."""
    import flaketui.app.screens.traces as traces

    def broken(*args: object, **kwargs: object) -> object:
        raise ValueError("no luck")

    monkeypatch.setattr(traces, "suggest_task", broken)
    app = make_app([str(BASELINE)], k=5)
    shown = record_notifications(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(app, pilot, "searchRunbook")
        await settle(pilot)
        line = screen_text(screen.query_one("#trace-evidence", Static).render())
        assert "Finding the evidence failed: ValueError: no luck" in line
        assert any("ValueError: no luck" in m for m in shown)
        assert screen.diff_view is not None and screen.diff_view.display  # the traces stay shown


def test_fork_line_puts_the_test_first_and_keeps_a_label_with_colons() -> None:
    """The fork line puts the test first and keeps a label with colons whole."""
    from flaketui.app.screens.traces import fork_line
    from flaketui.traces import ACTIONS, Branch, ForkTest

    branches = (Branch(5, '{"status": 503}', 0, 3, result=True), Branch(5, "ok", 7, 7, result=True))
    test = ForkTest(5, ACTIONS, branches, 0, 7, 7, 0.008333, 0.016666, 2)
    assert fork_line(test) == ("at step 5: 0 of 3 pass, otherwise 7 of 7 (Fisher p = 0.0083, Holm 0.017 over 2 tests), "
                               'when step 5 returns `{"status": 503}`')


@pytest.mark.slow
async def test_a_task_with_one_outcome_has_no_evidence_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A task with one outcome has no evidence line."""
    from tests.helpers.app import open_first
    from tests.helpers.logs import write_log
    from tests.helpers.traces import chat

    log = write_log(tmp_path / "run.jsonl", [{"task": "t", "trial": n, "passed": True, "trace": chat(6)}
                                             for n in range(3)])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        await settle(pilot)
        assert not screen.query_one("#trace-evidence", Static).display
        assert screen.suggestion is None and screen.evidence is None
        assert "decisive" not in tree_text(screen.query_one(ForkMap))
