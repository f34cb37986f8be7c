"""Where triage notes go: beside the logs in the user's own folder; in the user data folder when
the logs' folder is someone else's or read-only; the first note saved says where."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from flaketui.app.app import make_app
from flaketui.triage import default_triage_path
from flaketui.triage.store import elsewhere_folder
from tests.conftest import BASELINE, SIZE, settle


def not_ours(folder: Path) -> None:
    """Make ``folder`` another user's (as root) or read-only (as anyone else)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chown(folder, 65534, 65534)  # nobody
    else:
        folder.chmod(0o555)


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def test_own_folder_keeps_notes_beside(tmp_path: Path, data_home: Path) -> None:
    """In the user's own folder notes are kept beside the log."""
    log = tmp_path / "run.jsonl"
    shutil.copy(BASELINE, log)
    assert default_triage_path([str(log)]) == tmp_path / "run.jsonl.triage.json"


def test_a_shared_folder_sends_notes_to_the_user_data_folder(tmp_path: Path, data_home: Path) -> None:
    """In a shared folder notes go to the user data folder."""
    shared = tmp_path / "shared"
    shared.mkdir()
    log = shared / "run.jsonl"
    shutil.copy(BASELINE, log)
    not_ours(shared)
    path = default_triage_path([str(log)])
    assert path.parent == elsewhere_folder() and str(data_home) in str(path)
    assert path.name.startswith("run.jsonl-") and path.name.endswith(".triage.json")
    assert default_triage_path([str(log)]) == path  # the same logs find the same notes
    (shared / "run.jsonl.triage.json").parent.chmod(0o755)


def test_notes_already_beside_stay_there(tmp_path: Path, data_home: Path) -> None:
    """Notes already beside the log stay there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    log = shared / "run.jsonl"
    shutil.copy(BASELINE, log)
    (shared / "run.jsonl.triage.json").write_text("{}")
    not_ours(shared)
    assert default_triage_path([str(log)]) == shared / "run.jsonl.triage.json"


@pytest.mark.slow
async def test_the_first_note_says_where_it_went(tmp_path: Path, data_home: Path) -> None:
    """The first note says where it went."""
    shared = tmp_path / "shared"
    shared.mkdir()
    log = shared / "run.jsonl"
    shutil.copy(BASELINE, log)
    not_ours(shared)
    app = make_app([str(log)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("space")  # reviewed: the first note
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        told = [n.message for n in app._notifications if n.title == "Triage notes"]
        assert len(told) == 1, told  # once
        assert "notes are kept in " + str(elsewhere_folder()) in told[0]
        assert "not yours to write in" in told[0]
    assert list(elsewhere_folder().glob("run.jsonl-*.triage.json"))
    assert not (shared / "run.jsonl.triage.json").exists()


async def test_beside_the_logs_it_says_so_without_the_reason(tmp_path: Path, data_home: Path) -> None:
    """Notes beside the logs say so without the reason."""
    log = tmp_path / "run.jsonl"
    shutil.copy(BASELINE, log)
    app = make_app([str(log)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        told = [n.message for n in app._notifications if n.title == "Triage notes"]
        assert told == [f"notes are kept in {tmp_path / 'run.jsonl.triage.json'}; --triage PATH to choose another"]
