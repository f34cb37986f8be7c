"""Building Harbor job folders to Harbor's schema for a test (the trial ``result.json`` of
``tests/data/harbor/hello-world-job`` as the template; the rewards, exceptions and names given)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

TEMPLATE = ROOT / "tests" / "data" / "harbor" / "hello-world-job" / "fix-permissions__Hc4nD9e" / "result.json"
"""A real trial's ``result.json`` (README in its folder): the fields every built trial keeps."""

TIMEOUT = {"exception_type": "AgentTimeoutError", "exception_message": "Agent execution timed out after 60.0 seconds"}
"""An ``exception_info`` of a trial the agent ran out of time on (the verifier may still score it)."""

SETUP_ERROR = {"exception_type": "RuntimeError", "exception_message": "Docker compose command failed"}
"""An ``exception_info`` of a trial whose environment never came up (no verifier result)."""


def build_job(folder: Path, trials: dict[str, list[tuple[float | None, dict[str, Any] | None]]]) -> Path:
    """A Harbor job folder: per task, one trial folder per (reward, exception_info); a reward of
    None writes ``verifier_result: null``. Returns ``folder``."""
    template = json.loads(TEMPLATE.read_text())
    for task, attempts in trials.items():
        for i, (reward, exception) in enumerate(attempts):
            name = f"{task}__t{i}"
            doc = {**template, "task_name": task, "trial_name": name,
                   "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
                   "exception_info": exception}
            (folder / name).mkdir(parents=True)
            (folder / name / "result.json").write_text(json.dumps(doc))
    return folder
