"""The default k: the attempts most tasks have (the mode of trials per task, errored
trials included; ties: the smaller), not the smallest trial count of any task."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flaketui.model import RunOutcomes
from flaketui.stats import default_k, summarise, task_stats


def outcomes(n: list[int], errored: list[int], errored_as: str = "apart") -> RunOutcomes:
    tasks = [f"t{i}" for i in range(len(n))]
    nn, ee = np.array(n), np.array(errored)
    size = int((nn + ee).sum())
    bounds = np.r_[0, np.cumsum(nn + ee)]
    return RunOutcomes("r", tasks, nn, np.minimum(nn, 1), ee, [None] * len(n), np.arange(size), bounds,
                       errored_as=errored_as)


def test_one_task_with_one_usable_trial_does_not_make_k_1() -> None:
    """One task with one usable trial does not make k 1."""
    # Terminal-Bench: 5 attempts a task; one task's 4 attempts errored.
    run = outcomes([5] * 9 + [1], [0] * 9 + [4])
    assert default_k([run]) == 5


def test_errored_trials_count_as_attempts() -> None:
    """Errored trials count as attempts for the default k."""
    # Most tasks: 4 usable + 1 errored = 5 attempts; two tasks have 4 attempts, no errors.
    run = outcomes([4, 4, 4, 4, 4], [1, 1, 1, 0, 0])
    assert default_k([run]) == 5


def test_errored_as_fail_counts_them_once() -> None:
    """With --errored-as fail errored trials count once."""
    # With --errored-as fail n already holds the errored trials.
    run = outcomes([5, 5, 5], [1, 1, 0], errored_as="fail")
    assert default_k([run]) == 5


def test_a_tie_takes_the_smaller() -> None:
    """A tie between trial counts takes the smaller."""
    assert default_k([outcomes([3, 3, 8, 8], [0, 0, 0, 0])]) == 3


def test_pooled_over_runs_and_empty_tasks_ignored() -> None:
    """The default k is pooled over runs, ignoring empty tasks."""
    a, b = outcomes([2, 2, 0], [0, 0, 0]), outcomes([7, 7, 7], [0, 0, 0])
    assert default_k([a, b]) == 7
    assert default_k([outcomes([0, 0], [0, 0])]) == 1
    assert default_k([]) == 1


def test_tasks_below_the_default_are_counted() -> None:
    """Tasks below the default k are counted."""
    run = outcomes([5] * 9 + [1], [0] * 9 + [4])
    k = default_k([run])
    summary = summarise(task_stats(run, k))
    assert summary.tasks_below_k == 1
    assert any(f"1 task(s) have fewer than k = {k} trials" in w for w in summary.warnings)


def test_the_report_states_the_default_and_counts_the_tasks_below(tmp_path: Path) -> None:
    """The report states the default k and counts the tasks below it."""
    import json

    import orjson
    from click.testing import CliRunner

    from flaketui.cli import main

    log = tmp_path / "tb.jsonl"
    lines = [{"task": f"t{i}", "trial": j, "passed": j % 2 == 0} for i in range(6) for j in range(5)]
    lines.append({"task": "lonely", "trial": 0, "passed": True})
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(log), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "k = 5 (the trials most tasks have; -k to change)" in result.stdout
    assert "1 task(s) have fewer than k = 5 trials" in result.stdout
    doc = orjson.loads(CliRunner().invoke(main, ["report", str(log), "--no-cache", "--format", "json"]).stdout)
    assert doc["k"] == 5 and doc["runs"][0]["summary"]["tasks_below_k"] == 1
