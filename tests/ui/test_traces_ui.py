"""Pilot tests of the trace screens: modes, long traces, search, hunks, folds, the inspector, triage."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static, TextArea

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.inspector import InspectorScreen
from flaketui.app.widgets.fork_map import ForkMap
from flaketui.app.widgets.trace_view import TraceDiffView
from tests.conftest import BASELINE, SHARED, SIZE, settle
from tests.helpers.app import open_first, open_task
from tests.helpers.logs import write_log
from tests.helpers.traces import chat

EVIL = "\x1b]52;c;ZXZpbA==\x07 [/] [bold]x[link=https://evil.example]click[/link]"


def pair_app(tmp_path: Path, passing: list, failing: list, **options: object) -> FlakeApp:
    """The app on a log of task ``t``: trial 0 passing with trace ``passing``, trial 1 failing."""
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "trial": 0, "passed": True, "trace": passing},
        {"task": "t", "trial": 1, "passed": False, "trace": failing},
    ])
    return make_app([str(log)], **options)


def plain(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def row_in_view(view: TraceDiffView, row: int) -> bool:
    rows = view.query_one("#diff-rows")
    widget = view.query_one(f"#diff-row-{row}")
    top = rows.scroll_y
    return top <= widget.virtual_region.y < top + rows.scrollable_content_region.height


@pytest.mark.slow
async def test_the_trace_screen_opens_at_a_far_divergence(tmp_path: Path) -> None:
    """A pair diverging at step 956 opens there, drawn as a window round it; home draws the rows above, d goes back."""
    app = pair_app(tmp_path, chat(1500, user="a"), chat(1500, diverge_at=956, user="b"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        view = screen.query_one(TraceDiffView)
        # Every user turn is reworded (not counted in actions mode): nothing folds, 1,500 rows.
        assert view.mode == "actions" and view.first_divergence == 956
        await settle(pilot)
        assert row_in_view(view, 955) and view.current is None
        shown = plain(view.query_one("#diff-row-955", Static).content)
        assert 'tool_calls.0.arguments.record: R956 → OTHER' in shown
        assert 'lookup(record="R956")' in shown and 'lookup(record="OTHER")' in shown
        # Drawn as a window round the divergence; scrolling up to its top draws the rows above.
        lo = view.lo
        assert 0 < lo <= 955 and view.query("#diff-above")
        await pilot.press("home")
        await settle(pilot)
        assert view.lo < lo
        await pilot.press("d")
        await settle(pilot)
        assert row_in_view(view, 955)


@pytest.mark.slow
async def test_a_5000_step_trace_opens_and_scrolls(tmp_path: Path) -> None:
    """A 5,000-step trace opens and scrolls."""
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "trial": 0, "passed": True, "trace": chat(5000, user="a")},
        {"task": "t", "trial": 1, "passed": False, "trace": chat(5000, diverge_at=4990, user="a")},
        {"task": "t", "trial": 2, "passed": False, "trace": chat(5000, diverge_at=4990, user="c")},
    ])
    app = make_app([str(log)], divergence="all")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        await pilot.press("m")  # traces open cut to their first 2,000 steps; m reads 8,000
        await settle(pilot)
        view = screen.query_one(TraceDiffView)
        assert len(view.trace_a) == 5000
        assert view.mode == "all" and view.first_divergence == 4990
        # 4,989 identical steps: the first and last shown, 4,987 folded to one line.
        folds = [str(w.render()) for w in view.query(".diff-fold")]
        assert folds and "… 4987 identical steps …" in folds[0]
        await pilot.press("z", "end")  # unfolded: 5,000 rows, the first 400 drawn
        await settle(pilot)
        assert view.query_one("#diff-rows").scroll_y > 0
        assert not view.query("#diff-row-4989")
        await pilot.press("d")
        await settle(pilot)
        assert row_in_view(view, 4989)
        await pilot.press("f")
        await settle(pilot)
        fork = screen.query_one(ForkMap)
        labels = [str(n.label) for n in fork.root.children]
        assert any("steps 1–4989" in x for x in labels)


@pytest.mark.slow
async def test_v_switches_the_divergence_mode_everywhere(tmp_path: Path) -> None:
    """v switches the divergence mode on every screen."""
    app = pair_app(tmp_path, chat(8, user="a"), chat(8, diverge_at=6, user="b"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.run(app.tasks_screen.run).divergences["t"] == 6
        screen = await open_first(app, pilot)
        view = screen.query_one(TraceDiffView)
        assert (view.mode, view.first_divergence) == ("actions", 6)
        await pilot.press("v")
        await settle(pilot)
        assert (view.mode, view.first_divergence) == ("all", 1)
        assert "divergence mode: all" in plain(view.labels_text())
        assert app.session.run(app.tasks_screen.run).divergences["t"] == 1
        await pilot.press("escape")
        await settle(pilot)
        screen = await open_first(app, pilot)  # the choice outlives the screen
        assert screen.query_one(TraceDiffView).mode == "all"


@pytest.mark.slow
async def test_search_and_next_previous_match(tmp_path: Path) -> None:
    """/ searches the traces and n and N move between matches."""
    app = pair_app(tmp_path, chat(40, user="a"), chat(40, diverge_at=20, user="b"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        view = screen.query_one(TraceDiffView)
        await pilot.press("slash")
        box = screen.query_one("#trace-search", Input)
        assert box.display and app.focused is box
        await pilot.press(*"turn 3", "enter")  # turns 3 and 31..39
        await settle(pilot)
        assert not box.display
        assert view.matches == [2, 30, 32, 34, 36, 38]
        assert view.current == 2 and row_in_view(view, 2)
        await pilot.press("n")
        await settle(pilot)
        assert view.current == 30 and row_in_view(view, 30)
        await pilot.press("N", "N")
        await settle(pilot)
        assert view.current == 38  # wraps round


@pytest.mark.slow
async def test_hunk_keys_move_between_differing_runs(tmp_path: Path) -> None:
    """The hunk keys move between runs of differing steps."""
    base = [{"role": "assistant", "content": f"same {i}"} for i in range(30)]
    other = list(base)
    other[4] = {"role": "assistant", "content": "changed"}
    other[20] = {"role": "assistant", "content": "changed too"}
    app = pair_app(tmp_path, base, other)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        view = screen.query_one(TraceDiffView)
        assert view.hunks() == [4, 20]
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert view.current == 4
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert view.current == 20 and row_in_view(view, 20)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert view.current == 4
        # Identical runs around them are folded; z unfolds every one.
        folds = [str(w.render()) for w in view.query(".diff-fold")]
        assert any("… 13 identical steps …" in f for f in folds)
        await pilot.press("z")
        await settle(pilot)
        assert not view.query(".diff-fold") and len(view.query(".diff-row")) == 30


@pytest.mark.slow
async def test_a_shared_system_prompt_is_shown_once(tmp_path: Path) -> None:
    """A system prompt both traces share is shown once."""
    system = {"role": "system", "content": "You are a careful agent. " * 20}
    a = [system, {"role": "user", "content": "go"}, system, {"role": "assistant", "content": "done"}]
    b = [system, {"role": "user", "content": "go"}, system, {"role": "assistant", "content": "failed"}]
    app = pair_app(tmp_path, a, b)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        view = screen.query_one(TraceDiffView)
        row0 = view.query_one("#diff-row-0", Static).content
        assert len(row0.columns) == 2  # the margin and one column across both sides
        first = plain(row0)
        assert "You are a careful agent." in first and "(the same on both sides)" in first
        again = plain(view.query_one("#diff-row-2", Static).content)
        assert "the same system prompt as step 1" in again and "careful" not in again


@pytest.mark.slow
async def test_inspector_shows_every_field_and_the_raw_record(tmp_path: Path) -> None:
    """The inspector shows every field and the raw record."""
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "trial": 0, "passed": True, "reward": 1.0, "trace": chat(4, user="a"),
         "info": {"reward_info": {"db_check": True}}, "metrics": {"tokens": 12}},
        {"task": "t", "trial": 1, "passed": False, "reward": 0.0, "trace": chat(4, diverge_at=2, user="a"),
         "parser_results": {"test_a": "failed"}, "failure_mode": "unset", "model": "m1"},
    ])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await open_first(app, pilot)
        await pilot.press("I")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InspectorScreen) and screen.trial.trial == 1
        details = plain(screen.query_one("#inspector-details", Static).content)
        for words in ("outcome: fail", "parser_results:", '"test_a": "failed"', "failure_mode: unset",
                      "model: m1", "trace: 4 steps"):
            assert words in details
        await pilot.press("r")
        await settle(pilot)
        raw = screen.query_one("#inspector-raw", TextArea)
        assert app.focused is raw
        assert json.loads(raw.text)["parser_results"] == {"test_a": "failed"}
        assert raw.text.count("\n") > 20  # pretty-printed
        await pilot.press("escape")
        await pilot.press("i")
        await settle(pilot)
        details = plain(app.screen.query_one("#inspector-details", Static).content)
        assert "outcome: pass" in details and '"db_check": true' in details and '"tokens": 12' in details


@pytest.mark.slow
async def test_a_log_without_traces_lists_its_trials_for_the_inspector() -> None:
    """A log without traces lists its trials for the inspector."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(app, pilot, "pingHealthcheck")
        table = app.tasks_screen
        options = screen.query_one("#trial-list", OptionList)
        assert options.option_count == len(table.outcomes.task_rows(table.outcomes.index("pingHealthcheck")))
        assert app.focused is options
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, InspectorScreen)
        assert "trace: no trace" in plain(app.screen.query_one("#inspector-details", Static).content)


@pytest.mark.slow
async def test_triage_keys_on_the_trace_screen_and_the_note_in_its_header(tmp_path: Path) -> None:
    """The triage keys work on the trace screen and the note shows in its header."""
    app = make_app([str(BASELINE)], k=5, triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        await pilot.press("space")
        await settle(pilot)
        assert app.triage_store.get(screen.key).reviewed
        await pilot.press("w")
        await settle(pilot)
        await pilot.press(*"restart [/] branch", "enter")
        await settle(pilot)
        assert app.screen is screen
        head = plain(screen.query_one("#trace-head", Static).content)
        assert "reviewed" in head and "restart [/] branch" in head
        assert app.triage_store.get(screen.key).note == "restart [/] branch"


@pytest.mark.slow
@pytest.mark.parametrize("where", ["trace", "inspector"])
async def test_hostile_step_content_is_shown_as_text(tmp_path: Path, where: str) -> None:
    """Hostile step content is shown as text."""
    ok = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "fine"}]
    bad = [{"role": "user", "content": "q"}, {"role": "assistant", "content": EVIL}]
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t[/]", "trial": 0, "passed": True, "trace": ok},
        {"task": "t[/]", "trial": 1, "passed": False, "trace": bad, "note": EVIL},
    ])
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(app, pilot)
        if where == "trace":
            shown = plain(screen.query_one(TraceDiffView).query_one("#diff-row-1", Static).content)
        else:
            await pilot.press("I")
            await settle(pilot)
            shown = plain(app.screen.query_one("#inspector-details", Static).content)
            await pilot.press("r")
            await settle(pilot)
            raw = app.screen.query_one("#inspector-raw", TextArea).text
            assert "\x1b" not in raw and "\\u001b]52" in raw  # JSON's own escape
        assert "\x1b" not in shown and "\x07" not in shown
        flat = "".join(shown.split())  # lines wrap at 120 columns
        assert "\\x1b]52;c;ZXZpbA==\\x07" in flat
        assert "[/][bold]x[link=https://evil.example]click[/link]" in flat


@pytest.mark.slow
async def test_compare_traces_screen_mode_search_and_inspector(tmp_path: Path) -> None:
    """The comparison's traces screen has the mode switch, search and inspector."""
    from flaketui.app.screens.compare import CompareScreen
    from flaketui.app.screens.compare_traces import CompareTracesScreen
    from tests.conftest import CANDIDATE

    app = make_app([str(BASELINE), str(CANDIDATE)], k=5, triage=str(tmp_path / "notes.json"),
                   divergence="all")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareTracesScreen) and screen.loaded
        view = screen.query_one(TraceDiffView)
        assert (view.mode, view.first_divergence) == ("all", 3)  # --divergence all
        await pilot.press("v")
        await settle(pilot)
        assert (view.mode, view.first_divergence) == ("actions", 4)
        # After a search, n / N go from match to match (not to the next flip) until escape.
        position = screen.position
        await pilot.press("slash", *"outage", "enter")
        await settle(pilot)
        assert view.matches
        await pilot.press("n")
        await settle(pilot)
        assert screen.position == position
        await pilot.press("escape")
        await settle(pilot)
        assert not view.matches and isinstance(app.screen, CompareTracesScreen)
        await pilot.press("I")
        await settle(pilot)
        assert isinstance(app.screen, InspectorScreen) and app.screen.row is not None
        await pilot.press("r")
        await settle(pilot)
        raw = json.loads(app.screen.query_one("#inspector-raw", TextArea).text)
        assert raw["run"] == "oncall-candidate" and raw["task"] == view.b.task


def test_compare_tui_and_open_pass_ignore_key_and_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare --tui and open pass --ignore-key and --divergence to the app."""
    from click.testing import CliRunner

    from flaketui.cli import main
    from tests.conftest import CANDIDATE

    seen = []
    monkeypatch.setattr(FlakeApp, "run", lambda self: seen.append(self.options))
    args = [str(BASELINE), str(CANDIDATE), "--tui", "--ignore-key", "content", "--divergence", "all"]
    assert CliRunner().invoke(main, ["compare", *args]).exit_code == 0
    assert CliRunner().invoke(main, ["open", str(BASELINE), "--ignore-key", "name", "--divergence",
                                     "actions"]).exit_code == 0
    assert [(o.ignore_keys, o.divergence) for o in seen] == [(("content",), "all"), (("name",), "actions")]
    bad = CliRunner().invoke(main, ["open", str(BASELINE), "--divergence", "some"])
    assert bad.exit_code == 2


TAU = SHARED / "realdata" / "tau-bench" / "gpt-4o-airline.json"


@pytest.mark.slow
@pytest.mark.skipif(not TAU.exists(), reason="the real τ-bench sample is not beside the checkout")
async def test_real_tau_bench_shows_the_wrong_reservation_and_the_grader() -> None:
    """The real τ-bench sample shows the wrong reservation and the grader's verdict."""
    app = make_app([str(TAU)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_task(app, pilot, "5")
        view = screen.query_one(TraceDiffView)
        assert view.mode == "actions"
        assert [(c.path, c.a, c.b) for c in view.changes] == [
            ("tool_calls.0.arguments.reservation_id", "FQ8APE", "5RJ7UH")]
        await pilot.press("d")
        await settle(pilot)
        row = plain(view.query_one(f"#diff-row-{view.alignment.divergence_row}", Static).content)
        assert "reservation_id: FQ8APE → 5RJ7UH" in row
        assert 'get_reservation_details(reservation_id="FQ8APE")' in row
        await pilot.press("I")
        await settle(pilot)
        details = plain(app.screen.query_one("#inspector-details", Static).content)
        # τ-bench's reward is the score; its info (the task, the reward computation) is the grader's.
        assert "score: 0" in details and "\ngrader\n" in details and "info:" in details


def test_inspector_details_of_an_errored_trial() -> None:
    """The inspector details an errored trial."""
    from flaketui.app.screens.inspector import details_text
    from flaketui.model import ERRORED, Trial

    trial = Trial(run="r", task="t", trial=3, outcome=ERRORED, score=None, group=None,
                  metrics={"duration_s": 600.0}, error={"type": "Timeout", "message": "agent took > 600 s"},
                  trace=None, extra={"scores": {"includes": {"value": "I"}}, "sample_id": 7},
                  location="run.jsonl:4")
    text = plain(details_text(trial))
    assert "outcome: errored" in text and "error reason: agent took > 600 s" in text
    assert '"type": "Timeout"' in text and '"duration_s": 600.0' in text
    assert text.index("scores:") < text.index("other fields") < text.index("sample_id: 7")
