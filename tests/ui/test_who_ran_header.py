"""The app's summary header names who ran the run (agent, model, harness) where the log says."""

from __future__ import annotations

from flaketui.app.app import make_app
from tests.conftest import ROOT, SIZE
from tests.helpers.app import ready

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"


async def test_the_header_names_the_harbor_jobs_agent_model_and_harness() -> None:
    """A Harbor job's summary shows its configured agent and model and the harness beside the run's name."""
    app = make_app([str(JOB)])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = str(app.tasks_screen.query_one("#summary").render())
        assert "terminus-2 openai/gpt-4o Harbor" in " ".join(text.split())
