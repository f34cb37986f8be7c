"""The app's faster natural order, metric medians, k figures and label ranks give exactly what
the core's give."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from flaketui import model
from flaketui.app import vectorised
from flaketui.loading import load_logs
from flaketui.output import columns
from flaketui.stats.estimators import pass_at_k, pass_hat_k, pass_hat_k_interval

ALPHABET = "ab-. _/Z9z0017x"
"""Letters that make the hard cases: texts that are prefixes of others, characters that sort
before digits, leading zeros (ties), names that are all digits or end in them."""


@pytest.mark.parametrize("seed", range(4))
def test_natural_ranks_match_the_core_on_random_names(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        names = list({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9)))
                      for _ in range(rng.randint(1, 40))})
        assert vectorised.natural_ranks(names).tolist() == model.natural_ranks(names).tolist(), names


@pytest.mark.parametrize("names", [
    ["task-10", "task-9", "2", "10", "b", "a", "task-9b", "1e3"],
    ["a07", "a7", "a007", "a6"],                      # equal numbers: the names' order breaks the tie
    ["x", "x1", "x-1", "x 1", "x1a", "x1-", ""],      # a prefix first; "-" and " " before digits
    ["t9999999999999999999", "t10", "t2"],            # a number too long for int64: the core's way
    ["tâche-10", "tâche-9"],                          # not ASCII: the core's way
    ["a\x01", "a1"],                                  # the shape marker in a name: the core's way
    ["one"],
    [],
])
def test_natural_ranks_match_the_core_on_hard_cases(names: list[str]) -> None:
    assert vectorised.natural_ranks(names).tolist() == model.natural_ranks(names).tolist()


def test_metric_medians_match_the_core(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = []
    for task in range(300):
        for trial in range(rng.choice([1, 2, 3, 4, 5, 8])):
            metrics = {"cost_usd": rng.choice([0.5, 0.25, -0.0, 0.0, rng.random()]),
                       "tokens": rng.randint(0, 50)}
            if rng.random() < 0.2:
                del metrics["cost_usd"]  # a task may lack a metric on some trials (or all)
            lines.append({"task": f"t{task}", "trial": trial, "passed": rng.random() < 0.5, "metrics": metrics})
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    log = load_logs([str(path)])
    outcomes = log.run_outcomes(log.runs[0])
    fast, core = vectorised.metric_medians(log, outcomes), log.metric_medians(outcomes)
    assert fast.keys() == core.keys() == {"cost_usd", "tokens"}
    for name in core:
        np.testing.assert_array_equal(fast[name], core[name])
        assert np.signbit(fast[name]).tolist() == np.signbit(core[name]).tolist()


def test_metric_medians_with_many_trial_counts_are_the_cores(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"task": f"t{task}", "trial": trial, "passed": True,
                                        "metrics": {"tokens": trial * 3 % 7}}) + "\n"
                            for task in range(vectorised.MAX_COUNTS + 2) for trial in range(task + 1)))
    log = load_logs([str(path)])
    outcomes = log.run_outcomes(log.runs[0])
    np.testing.assert_array_equal(vectorised.metric_medians(log, outcomes)["tokens"],
                                  log.metric_medians(outcomes)["tokens"])


@pytest.mark.parametrize("k", [1, 2, 3, 7, 40])
def test_k_figures_are_the_estimators_bits(k: int) -> None:
    rng = np.random.default_rng(k)
    n = rng.integers(0, 30, 5000)
    c = (rng.random(5000) * (n + 1)).astype(np.int64)
    at, hat, interval = vectorised.k_figures(n, c, k)
    np.testing.assert_array_equal(at, pass_at_k(n, c, k))
    np.testing.assert_array_equal(hat, pass_hat_k(n, c, k))
    expected = pass_hat_k_interval(n, c, k)
    np.testing.assert_array_equal(interval.low, expected.low)
    np.testing.assert_array_equal(interval.high, expected.high)


def test_k_figures_of_bad_or_huge_counts_are_the_estimators() -> None:
    with pytest.raises(ValueError):
        vectorised.k_figures(np.array([3, 2]), np.array([1, 5]), 2)  # more passes than trials
    n, c = np.array([10**5, 4]), np.array([3, 4])  # too wide for a lookup table
    np.testing.assert_array_equal(vectorised.k_figures(n, c, 2)[1], pass_hat_k(n, c, 2))
    none = np.array([], dtype=np.int64)
    assert [a.size for a in vectorised.k_figures(none, none, 2)[:2]] == [0, 0]


@pytest.mark.parametrize("labels", [
    ["flaky", "stable-pass", "stable-fail", "flaky", "no-trials"],
    ["b", None, "a", "", "a\x00", "é", "Z", None],
    [],
])
def test_label_ranks_order_as_the_cores(labels: list[str | None]) -> None:
    assert vectorised.label_ranks(labels).tolist() == columns.label_ranks([v or "" for v in labels]).tolist()


@pytest.mark.parametrize("trials", [1, 4])
def test_metric_medians_when_every_task_has_as_many_values(tmp_path: Path, trials: int) -> None:
    rng = random.Random(trials)
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"task": f"t{task}", "trial": trial, "passed": True,
                                        "metrics": {"duration_s": rng.choice([1.5, 2.0, rng.random()])}}) + "\n"
                            for task in range(50) for trial in range(trials)))
    log = load_logs([str(path)])
    outcomes = log.run_outcomes(log.runs[0])
    np.testing.assert_array_equal(vectorised.metric_medians(log, outcomes)["duration_s"],
                                  log.metric_medians(outcomes)["duration_s"])
