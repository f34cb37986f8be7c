"""The run picker: every run listed, and picking one shows its tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from flaketui.app.app import make_app
from tests.conftest import SIZE
from tests.helpers.app import ready
from tests.helpers.logs import write_log


@pytest.mark.slow
async def test_run_picker_lists_eleven_runs_and_jumps_to_one(tmp_path: Path) -> None:
    """The run picker lists eleven runs and jumps to one."""
    from flaketui.app.screens.run_picker import RunPicker

    write_log(tmp_path / "runs.jsonl", [{"run": f"run-{r:02d}", "task": f"t{i}", "trial": t,
                                         "passed": (i + t + r) % 4 != 0}
                                        for r in range(11) for i in range(3) for t in range(3)])
    app = make_app([str(tmp_path / "runs.jsonl")])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunPicker) and len(app.screen.runs) == 11
        for _ in range(7):
            await pilot.press("down")
        await pilot.press("enter")
        await ready(pilot)
        assert app.tasks_screen.run == "run-07"
