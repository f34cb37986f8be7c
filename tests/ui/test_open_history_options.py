"""``flaketui open --record`` and ``--owners``: the app records what it loads in the background and
holds the owners file's rules, which the history screen (H) shows with the triage notes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import DataTable, Static

pytest.importorskip("sqlalchemy")

from flaketui.app.app import AppOptions, FlakeApp  # noqa: E402
from flaketui.app.screens.history import HistoryScreen  # noqa: E402
from flaketui.cli import main  # noqa: E402
from flaketui.history import open_store  # noqa: E402
from flaketui.history.owners import parse_owners  # noqa: E402
from flaketui.history.status import status_doc  # noqa: E402
from flaketui.triage import TriageKey  # noqa: E402
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle  # noqa: E402


def url_in(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def head_of(screen: HistoryScreen) -> str:
    return str(screen.query_one("#history-head", Static).content)


@pytest.mark.slow
async def test_record_records_the_loaded_runs_once_after_the_start(tmp_path: Path) -> None:
    """--record records the loaded runs once after the start."""
    url = url_in(tmp_path)
    for said in ("recorded 2 runs (oncall-baseline, oncall-candidate)", "recorded 0 runs; 2 already recorded"):
        app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, triage=str(tmp_path / "t.json"), record=True))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await settle(pilot)
            assert app.recorded == said
            assert any(n.message == said for n in app._notifications)
    with open_store(url) as store:
        doc = status_doc(store.data())
    assert doc["runs"] == 2


@pytest.mark.slow
async def test_record_into_an_unusable_history_is_a_notification(tmp_path: Path) -> None:
    """--record into an unusable history is a notification."""
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=f"sqlite:///{tmp_path / 'no' / 'h.sqlite'}",
                                 triage=str(tmp_path / "t.json"), record=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        assert app.recorded is not None and "does not exist" in app.recorded
        assert "\n" not in app.recorded and "Traceback" not in app.recorded
        assert app.return_code is None  # the app goes on


async def test_without_record_nothing_is_recorded(tmp_path: Path) -> None:
    """Without --record nothing is recorded."""
    url = url_in(tmp_path)
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, triage=str(tmp_path / "t.json")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.recorded is None
    assert not (tmp_path / "history.sqlite").exists()


@pytest.mark.slow
async def test_h_shows_the_owner_and_the_triage_notes(tmp_path: Path) -> None:
    """H shows the owner and the triage notes."""
    url = url_in(tmp_path)
    result = CliRunner().invoke(main, ["history", "record", str(BASELINE), str(CANDIDATE), "--history", url])
    assert result.exit_code == 0, result.output
    rules = parse_owners("* @everyone\nsearch* @search-team [b]x[/b]\n")
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, triage=str(tmp_path / "t.json"), owners=rules))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.current_task == "searchRunbook"
        app.triage_store.update(TriageKey("oncall-baseline", "searchRunbook"), label="environment",
                                note="the index was rebuilding\nsecond line")
        await pilot.press("H")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert "owner: @search-team [b]x[/b]" in head_of(screen)  # the last match wins; text, not markup
        table = screen.query_one(DataTable)
        notes = [str(table.get_row(key)[-1]) for key in table.rows]
        assert notes == ["environment: the index was rebuilding", ""]


@pytest.mark.slow
async def test_h_shows_no_owner_without_a_file(tmp_path: Path) -> None:
    """H shows no owner without an owners file."""
    url = url_in(tmp_path)
    result = CliRunner().invoke(main, ["history", "record", str(BASELINE), "--history", url])
    assert result.exit_code == 0, result.output
    app = FlakeApp(AppOptions((str(FIXTURES),), k=5, history=url, triage=str(tmp_path / "t.json")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        assert "owner:" not in head_of(app.screen)


def test_open_passes_record_and_the_owner_rules(monkeypatch, tmp_path: Path) -> None:
    """open passes --record and the owner rules to the app."""
    seen: list[FlakeApp] = []
    monkeypatch.setattr(FlakeApp, "run", lambda app: seen.append(app))
    owners = tmp_path / "OWNERS"
    owners.write_text("# team\n* @a\nsearch* @b @c\n", encoding="utf-8")
    url = url_in(tmp_path)
    result = CliRunner().invoke(main, ["open", str(BASELINE), "--history", url, "--record", "--owners", str(owners)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["open", str(BASELINE)])
    assert result.exit_code == 0, result.output
    first, second = seen
    assert first.options.record and [(r.pattern, r.owners) for r in first.options.owners] == [
        ("*", ("@a",)), ("search*", ("@b", "@c"))]
    assert first.options.history == url
    assert not second.options.record and second.options.owners == ()


@pytest.mark.parametrize("args, says", [
    (["--owners", "{tmp}/missing"], "owners file"),
    (["--owners", "{tmp}/bad"], "owners file"),
    (["--record", "--watch"], "--record with --watch"),
])
def test_bad_options_are_one_line_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    """Bad history and owners options are one line, exit 2."""
    import subprocess

    (tmp_path / "bad").write_bytes(b"* @\xff\n")  # not UTF-8
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "flaketui", "open", str(BASELINE), *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) <= 3, proc.stderr  # click's usage lines at most, never a traceback
