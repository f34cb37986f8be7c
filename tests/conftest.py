"""Shared test fixtures: paths to the bundled logs and determinism for the app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BASELINE = FIXTURES / "oncall-baseline.jsonl"
CANDIDATE = FIXTURES / "oncall-candidate.jsonl"
SIZE = (120, 36)
"""Terminal size of every Pilot and snapshot test."""
SHARED = ROOT.parent / "shared"
"""Read-only data beside the checkout (real logs, the benchmark generator); tests skip without it."""


UI_FOLDERS = ("ui", "snapshots")
"""Folders under tests/ whose every test runs the app: each gets the ``ui`` marker."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test in tests/ui/ and tests/snapshots/ ``ui`` (so ``-m "not ui"`` leaves the app out)."""
    for item in items:
        parts = Path(str(item.path)).relative_to(ROOT / "tests").parts
        if parts and parts[0] in UI_FOLDERS:
            item.add_marker(pytest.mark.ui)


@pytest.fixture(autouse=True)
def _deterministic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user config or cache leaks into a test; fixed locale and no cursor blink."""
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("TEXTUAL_CURSOR_BLINK", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    os.environ.setdefault("COLUMNS", "120")
    _keep_notes_out_of_fixtures(monkeypatch, tmp_path)


def _keep_notes_out_of_fixtures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The app's default triage file for the bundled fixtures goes to tmp_path: tests never
    write beside fixtures/, and notes a developer left there never change a snapshot."""
    from flaketui import triage
    from flaketui.app.screens import triage_dialogs

    real = triage.default_triage_path

    def default_triage_path(paths):  # type: ignore[no-untyped-def]
        path = real(paths)
        return tmp_path / path.name if path.resolve().parent == FIXTURES else path

    monkeypatch.setattr(triage_dialogs, "default_triage_path", default_triage_path)


@pytest.fixture
def baseline() -> Path:
    """The bundled on-call baseline log."""
    return BASELINE


@pytest.fixture
def candidate() -> Path:
    """The bundled on-call candidate log."""
    return CANDIDATE


async def settle(pilot: Pilot) -> None:
    """Wait for the workers (loading, divergences, trace reading) and the redraw, twice:
    a finished worker may post work that starts another."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
