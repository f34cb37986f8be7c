"""The command palette lists each command once: "Keys" (every key of every screen) among them."""

from __future__ import annotations

from collections import Counter

import pytest

from flaketui.app.app import make_app
from flaketui.app.screens.help import HelpScreen
from tests.conftest import BASELINE, SIZE, settle


@pytest.mark.slow
async def test_keys_is_listed_once_and_opens_the_help() -> None:
    """Keys is listed once in the palette and opens the help."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = Counter(c.title for c in app.get_system_commands(app.screen))
        assert titles["Keys"] == 1
        assert [t for t, n in titles.items() if n > 1] == []
        keys = next(c for c in app.get_system_commands(app.screen) if c.title == "Keys")
        keys.callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
