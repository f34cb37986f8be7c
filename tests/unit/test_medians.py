"""TrialLog.metric_medians (sorting blocks of tasks with as many values) gives exactly what one
sort of every value gives (metric_medians_sorted), -0.0 and missing values included."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from flaketui import model
from flaketui.loading import load_logs


def medians_both(path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    log = load_logs([str(path)], use_cache=False)
    outcomes = log.run_outcomes(log.runs[0])
    return log.metric_medians(outcomes), log.metric_medians_sorted(outcomes)


def test_blocks_equal_one_sort(tmp_path: Path) -> None:
    """Tasks of 1-8 trials, a metric missing on some trials (or all of a task's)."""
    rng = random.Random(7)
    lines = []
    for task in range(300):
        for trial in range(rng.choice([1, 2, 3, 4, 5, 8])):
            metrics = {"cost_usd": rng.choice([0.5, 0.25, -0.0, 0.0, rng.random()]),
                       "tokens": rng.randint(0, 50)}
            if rng.random() < 0.2:
                del metrics["cost_usd"]
            lines.append({"task": f"t{task}", "trial": trial, "passed": rng.random() < 0.5, "metrics": metrics})
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fast, sorted_ = medians_both(path)
    assert fast.keys() == sorted_.keys() == {"cost_usd", "tokens"}
    for name in sorted_:
        np.testing.assert_array_equal(fast[name], sorted_[name])
        assert np.signbit(fast[name]).tolist() == np.signbit(sorted_[name]).tolist()


def test_many_trial_counts_are_sorted_whole(tmp_path: Path) -> None:
    """More distinct trial counts than MAX_COUNTS: the one-sort way, the same figures."""
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"task": f"t{task}", "trial": trial, "passed": True,
                                        "metrics": {"tokens": trial * 3 % 7}}) + "\n"
                            for task in range(model.MAX_COUNTS + 2) for trial in range(task + 1)))
    fast, sorted_ = medians_both(path)
    np.testing.assert_array_equal(fast["tokens"], sorted_["tokens"])


@pytest.mark.parametrize("trials", [1, 4])
def test_every_task_with_as_many_values(tmp_path: Path, trials: int) -> None:
    """One block, a reshape of the values."""
    rng = random.Random(trials)
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"task": f"t{task}", "trial": trial, "passed": True,
                                        "metrics": {"duration_s": rng.choice([1.5, 2.0, rng.random()])}}) + "\n"
                            for task in range(50) for trial in range(trials)))
    fast, sorted_ = medians_both(path)
    np.testing.assert_array_equal(fast["duration_s"], sorted_["duration_s"])
