"""Snapshots of the trace screen's inspector, search, hunk navigation and folding.

Fixed terminal size; the logs are the bundled fixtures (opened by a relative path, so
the inspector's ``file:line`` is the same in every checkout) or small logs written
into a temporary folder opened by a relative path. Review new SVGs in
snapshot_report.html before accepting them with ``pytest --snapshot-update``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import ROOT, SIZE
from tests.helpers.app import after
from tests.helpers.traces import chat


@pytest.fixture
def fixtures_app(monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(ROOT)
    return make_app(["fixtures/oncall-baseline.jsonl"], k=5)


@pytest.fixture
def chat_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(tmp_path)
    records = [{"task": "lookup", "trial": 0, "passed": True, "trace": chat(40)},
               {"task": "lookup", "trial": 1, "passed": False, "trace": chat(40, diverge_at=24, reworded=(9, 31))}]
    Path("run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return make_app(["run.jsonl"])


class TestTraceNavigation:
    @pytest.mark.slow
    def test_inspector(self, snap_compare, fixtures_app: FlakeApp) -> None:
        """I on searchRunbook: the failing trial's inspector — outcome fail, score, metrics, the model fields."""
        assert snap_compare(fixtures_app, run_before=after("enter", "I"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_inspector_raw_json(self, snap_compare, fixtures_app: FlakeApp) -> None:
        """r in the inspector: the failing trial's record as stored, pretty-printed JSON with line numbers."""
        assert snap_compare(fixtures_app, run_before=after("enter", "I", "r"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_folded_identical_steps(self, snap_compare, chat_app: FlakeApp) -> None:
        """home twice (the rows above drawn, then the top) on the lookup pair: “… 6 identical steps …” folded, turn 9 reworded (≠, not counted), ▶ step 24: R24 → OTHER."""
        assert snap_compare(chat_app, run_before=after("enter", "home", "home"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_opens_at_the_divergence(self, snap_compare, chat_app: FlakeApp) -> None:
        """The lookup pair opens scrolled to its divergence: step 23 at the top, then ▶ step 24: R24 → OTHER."""
        assert snap_compare(chat_app, run_before=after("enter"), terminal_size=SIZE)

    @pytest.mark.slow
    def test_hunk_navigation(self, snap_compare, chat_app: FlakeApp) -> None:
        """] ] ]: scrolled on to the third differing step, the reworded turn 31 (≠), with steps 23–40 in view."""
        keys = ("enter", "right_square_bracket", "right_square_bracket", "right_square_bracket")
        assert snap_compare(chat_app, run_before=after(*keys), terminal_size=SIZE)

    @pytest.mark.slow
    def test_search(self, snap_compare, chat_app: FlakeApp) -> None:
        """/ “turn 3” enter: the first match (step 3) at the top, “turn 3” marked in blue on both sides, the counter
        line `search "turn 3": 1/6` above the footer, whose second key is `n Next match`."""
        keys = ("enter", "z", "slash", *"turn 3", "enter")
        assert snap_compare(chat_app, run_before=after(*keys), terminal_size=SIZE)

    @pytest.mark.slow
    def test_failed_search(self, snap_compare, chat_app: FlakeApp) -> None:
        """/ “no such words” enter: nothing marked; the counter line says 0/0 no step holds it, escape: clear."""
        keys = ("enter", "slash", *"no such words", "enter")
        assert snap_compare(chat_app, run_before=after(*keys), terminal_size=SIZE)


SMALL = (80, 24)
"""A small terminal: the header starts compact."""


class TestSmallTerminal:
    @pytest.mark.slow
    def test_compact_header(self, snap_compare, fixtures_app: FlakeApp) -> None:
        """80×24 searchRunbook: one-line task header, two evidence lines, tabs, one-line divergence and labels, then
        the aligned steps on rows 8–22 (more than half the screen)."""
        assert snap_compare(fixtures_app, run_before=after("enter"), terminal_size=SMALL)

    @pytest.mark.slow
    def test_whole_header(self, snap_compare, fixtures_app: FlakeApp) -> None:
        """h at 80×24: the whole header again (task figures on two lines, divergence and labels wrapped, the mode and
        ignored keys), the steps below it."""
        assert snap_compare(fixtures_app, run_before=after("enter", "h"), terminal_size=SMALL)

    @pytest.mark.slow
    def test_maximised(self, snap_compare, fixtures_app: FlakeApp) -> None:
        """Z at 80×24: no title bar, header, evidence, tab bar or divergence line; the labels line at the top, then
        the steps down to the footer."""
        assert snap_compare(fixtures_app, run_before=after("enter", "Z"), terminal_size=SMALL)
