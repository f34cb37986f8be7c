"""The report's class line names the prior its Σ P(flaky) rests on: fitted to the suite, or
Jeffreys' when too few tasks have repeated trials to fit one."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flaketui.cli import main


def write_log(path: Path, tasks: int, trials: int) -> Path:
    """``tasks`` tasks of ``trials`` trials each, passing on every other trial of every third task."""
    rows = [{"task_id": f"t{i}", "trial": j, "passed": (j % 2 == 0) if i % 3 == 0 else i % 2 == 0}
            for i in range(tasks) for j in range(trials)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_one_task_says_jeffreys_prior_not_fitted(tmp_path: Path) -> None:
    """One task of one trial: the posterior rests on Jeffreys' prior and the line says so."""
    res = CliRunner().invoke(main, ["report", str(write_log(tmp_path / "one.jsonl", 1, 1))])
    assert res.exit_code == 0, res.output
    assert "Jeffreys' Beta(½, ½) prior" in res.output
    assert "fitted to the tasks" not in res.output


def test_many_repeated_tasks_say_fitted_prior(tmp_path: Path) -> None:
    """Thirty tasks of five trials: the prior is fitted to the suite and the line says so."""
    res = CliRunner().invoke(main, ["report", str(write_log(tmp_path / "many.jsonl", 30, 5))])
    assert res.exit_code == 0, res.output
    assert "under a Beta prior fitted to the tasks" in res.output
