"""Opening a trial's line in the user's editor: the command for each editor family, and the app
suspended while it runs."""

from __future__ import annotations

import pytest

from flaketui.app.app import make_app
from tests.conftest import BASELINE, SIZE
from tests.helpers.app import ready


@pytest.mark.parametrize(("editor", "expected"), [
    ("vim", ["vim", "+7", "--", "{log}"]),
    ("/usr/bin/nano -w", ["/usr/bin/nano", "-w", "+7", "{log}"]),
    ("code -w", ["code", "-w", "--goto", "{log}:7"]),
    ("ed", ["ed", "{log}"]),
])
def test_editor_command(editor: str, expected: list[str]) -> None:
    """The path is always one absolute argument (never a name an editor reads as an option)."""
    import os

    from flaketui.app.editor import editor_command

    log = os.path.abspath("log.jsonl")
    assert editor_command(editor, "log.jsonl", 7) == [part.format(log=log) for part in expected]


async def test_open_in_editor_suspends_and_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening in the editor suspends the app and runs the editor."""
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
