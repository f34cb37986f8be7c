"""Trace search: the match counter (``3/17``), the footer's ``n Next match`` while a search is
active, and ``escape`` clearing a search (found or not) before it leaves the screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.screens.traces import TaskTraceScreen
from flaketui.app.widgets.trace_view import TraceDiffView
from tests.conftest import BASELINE, CANDIDATE, SIZE, settle
from tests.helpers.traces import chat


@pytest.fixture
def chat_app(tmp_path: Path) -> FlakeApp:
    records = [{"task": "lookup", "trial": 0, "passed": True, "trace": chat(40)},
               {"task": "lookup", "trial": 1, "passed": False, "trace": chat(40, diverge_at=24)}]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return make_app([str(path)])


def footer_keys(app: FlakeApp) -> dict[str, str]:
    """The footer's keys as shown: key -> description."""
    return {k.key_display: k.description for k in app.screen.query(FooterKey)}


def counter(app: FlakeApp) -> str:
    line = app.screen.query_one("#trace-match", Static)
    return str(line.render()) if line.display else ""


async def search(pilot: Pilot, text: str) -> None:
    await pilot.press("slash", *text, "enter")
    await settle(pilot)


async def open_traces(app: FlakeApp, pilot: Pilot) -> TaskTraceScreen:
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, TaskTraceScreen)
    return app.screen


@pytest.mark.slow
async def test_counter_counts_the_matches_and_follows_n(chat_app: FlakeApp) -> None:
    """The search counter counts the matches and follows n."""
    async with chat_app.run_test(size=SIZE) as pilot:
        await open_traces(chat_app, pilot)
        assert counter(chat_app) == ""
        await search(pilot, "turn 1")  # the user turns 1, 11, 13, 15, 17, 19
        assert counter(chat_app).startswith('search "turn 1": 1/6')
        await pilot.press("n", "n")
        await settle(pilot)
        assert counter(chat_app).startswith('search "turn 1": 3/6')
        await pilot.press("N")
        await settle(pilot)
        assert counter(chat_app).startswith('search "turn 1": 2/6')


@pytest.mark.slow
async def test_footer_says_next_match_only_while_searching(chat_app: FlakeApp) -> None:
    """The footer says Next match only while searching."""
    async with chat_app.run_test(size=SIZE) as pilot:
        await open_traces(chat_app, pilot)
        assert "Next match" not in footer_keys(chat_app).values()
        await search(pilot, "turn 3")
        await settle(pilot)
        assert footer_keys(chat_app).get("n") == "Next match"
        await pilot.press("escape")
        await settle(pilot)
        assert "Next match" not in footer_keys(chat_app).values()


@pytest.mark.slow
async def test_escape_after_a_failed_search_clears_it(chat_app: FlakeApp) -> None:
    """escape after a failed search clears it."""
    async with chat_app.run_test(size=SIZE) as pilot:
        screen = await open_traces(chat_app, pilot)
        await search(pilot, "no such words")
        assert "0/0" in counter(chat_app)
        await pilot.press("escape")
        await settle(pilot)
        assert chat_app.screen is screen  # still on the trace screen, the search cleared
        view = screen.query_one(TraceDiffView)
        assert view.query_text == "" and counter(chat_app) == ""
        await pilot.press("escape")
        await settle(pilot)
        assert chat_app.screen is not screen


@pytest.mark.slow
async def test_compare_traces_footer_says_next_match_not_next_flip(tmp_path: Path) -> None:
    """The comparison traces' footer says Next match, not Next flip, while searching."""
    app = make_app([str(BASELINE), str(CANDIDATE)], k=5, triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareTracesScreen)
        assert footer_keys(app).get("n") == "Next flip"
        await search(pilot, "runbook")
        await settle(pilot)
        assert footer_keys(app).get("n") == "Next match"
        assert "/" in counter(app)
        position = screen.position
        await pilot.press("n")
        await settle(pilot)
        assert screen.position == position  # a match, not the next flip
        await search(pilot, "zzz no match")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and footer_keys(app).get("n") == "Next flip"


def test_help_lists_the_search_keys_once() -> None:
    """? lists n / N of the trace screen once each (the search's), and h / Z on both trace screens."""
    from flaketui.app.screens.help import HelpScreen

    sections = dict(HelpScreen().sections())
    trace = [b.key for b in sections["Trace screen"]]
    assert trace.count("n") == trace.count("N") == 1
    for title in ("Trace screen", "A vs B traces (enter in the comparison pane)", "Comparison pane (c)"):
        keys = [b.key for b in sections[title]]
        assert "h" in keys and "Z" in keys, title
