"""Hostile task and run names in the app: the task table, its highlighted name, the copied id,
the run picker and the problems screen show them as text and send no control byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flaketui.app.app import make_app
from flaketui.sanitize import visible
from tests.conftest import SIZE
from tests.helpers.app import ready
from tests.helpers.logs import write_log

HOSTILE = ["\x1b]52;c;ZXZpbA==\x07", "\x1b]0;pwned\x07", "\x1b[2J", "[/]",
           "[link=https://evil]x[/link]", "\u202eevil"]
"""Task and run names that try to reach the terminal (OSC 52 clipboard, OSC 0 title, clear
screen), Rich markup (a stray closing tag, a link) and an RTL override."""


def no_raw_control(svg: str) -> None:
    bad = [c for c in svg if (ord(c) < 0x20 and c not in "\n\t") or c in "\x7f\u202e\u202d\u2066"]
    assert not bad, bad[:5]


@pytest.mark.slow
@pytest.mark.ui
async def test_hostile_names_render_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile names render as text in the problems screen and the run picker."""
    from flaketui.app.screens.problems import ProblemsScreen
    from flaketui.app.screens.run_picker import RunPicker

    records: list[dict[str, Any]] = [
        {"run": f"run{r}{HOSTILE[r]}", "task": f"t{i}{name}", "trial": t, "passed": (i + t) % 3 != 0}
        for r in range(2) for i, name in enumerate(HOSTILE) for t in range(3)]
    path = write_log(tmp_path / "evil.jsonl", records)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"run": "\x1b[2J[link=https://evil]x[/link]", "task": 5\n')  # a bad line
    app = make_app([str(path)], k=2)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        assert screen.stats is not None and len(screen.stats) == len(HOSTILE)
        svg = app.export_screenshot()
        no_raw_control(svg)
        assert "evil" in svg and "\\x1b" in svg  # spelled out, not sent
        for _ in HOSTILE:  # every row highlighted once (its full name under the table)
            await pilot.press("down")
            no_raw_control(app.export_screenshot())
        await pilot.press("y")  # a toast naming the task
        await pilot.pause()
        # the visible form goes to the clipboard: a hostile id cannot carry ESC[201~ into a paste
        assert copied and copied[0] in {visible(t) for t in screen.stats.tasks}
        no_raw_control(app.export_screenshot())
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker)
        no_raw_control(app.export_screenshot())
        await pilot.press("escape", "e")
        await pilot.pause()
        assert isinstance(app.screen, ProblemsScreen)
        no_raw_control(app.export_screenshot())
