"""Compare by score: the within-task permutation test on trial scores pinned to a brute-force
enumeration of every split of every task, its per-task tests with Holm, and ``compare --by``."""

from __future__ import annotations

import json
from itertools import combinations, product
from pathlib import Path

import numpy as np
import pytest

from flaketui.stats.pertask import holm
from flaketui.stats.score_compare import within_task_score_test
from tests.helpers.cli import run
from tests.helpers.logs import write_log

A = [np.array([0.55, 0.91, 0.098]), np.array([0.2, 0.4]), np.array([1.0, 0.0, 0.5])]
B = [np.array([0.95, 1.0, 0.8]), np.array([0.6, 0.7, 0.9]), np.array([1.0, 0.5])]


def brute_force(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, list[float]]:
    """Every split of every task enumerated: the suite p-value and each task's."""
    splits, per_task = [], []
    observed = sum(float(y.mean() - x.mean()) for x, y in zip(a, b, strict=True))
    for x, y in zip(a, b, strict=True):
        pooled = np.concatenate([x, y])
        ds = []
        for pick in combinations(range(pooled.size), x.size):
            rest = [i for i in range(pooled.size) if i not in pick]
            ds.append(pooled[rest].mean() - pooled[list(pick)].mean())
        splits.append(ds)
        d = float(y.mean() - x.mean())
        per_task.append(sum(abs(v) >= abs(d) - 1e-9 for v in ds) / len(ds))
    hits = total = 0
    for combo in product(*splits):
        total += 1
        hits += abs(sum(combo)) >= abs(observed) - 1e-9
    return hits / total, per_task


def test_score_test_matches_brute_force_enumeration() -> None:
    """The exact suite p-value and each task's p-value equal a brute-force enumeration of every split."""
    test, p_task, _ = within_task_score_test(A, B)
    p_ref, task_ref = brute_force(A, B)
    assert test.method == "exact" and test.tasks == 3
    assert test.pvalue == pytest.approx(p_ref, abs=1e-12)
    assert p_task.tolist() == pytest.approx(task_ref, abs=1e-12)
    assert test.statistic == pytest.approx(sum(float(y.mean() - x.mean()) for x, y in zip(A, B, strict=True)))


def test_monte_carlo_agrees_with_enumeration_and_is_seeded() -> None:
    """Forced to sample (no exact work allowed), the p-value is near the exact one and the same each time."""
    exact, _, _ = within_task_score_test(A, B)
    mc1, _, _ = within_task_score_test(A, B, exact_max_work=0)
    mc2, _, _ = within_task_score_test(A, B, exact_max_work=0)
    assert mc1.method == "monte-carlo" and mc1.pvalue == mc2.pvalue
    assert mc1.pvalue == pytest.approx(exact.pvalue, abs=0.01)


def test_binary_scores_give_the_pass_test() -> None:
    """With 0/1 scores the test is the within-task permutation test on passes (stratified.py)."""
    from flaketui.stats.stratified import within_task_test

    a = [np.array([1.0, 0, 0, 0]), np.array([0.0, 0, 1])]
    b = [np.array([1.0, 1, 1, 0]), np.array([1.0, 1, 1])]
    test, _, _ = within_task_score_test(a, b)
    ref = within_task_test(np.array([1, 1]), np.array([4, 3]), np.array([3, 3]), np.array([4, 3]))
    assert test.pvalue == pytest.approx(ref.pvalue)


def test_per_task_holm_over_tarones_family() -> None:
    """Tasks of 6 against 6 trials can reach significance: their p-values are Holm-adjusted (statsmodels)."""
    from statsmodels.stats.multitest import multipletests

    from flaketui.stats.pertask import tarone_family

    rng = np.random.default_rng(3)
    a = [rng.uniform(0, 0.5, 6) for _ in range(4)]
    b = [rng.uniform(0.3, 1.0, 6) for _ in range(4)]
    _, p_task, p_min = within_task_score_test(a, b)
    family = tarone_family(p_min, 0.05)
    assert family.all()  # 2/C(12, 6) = 0.0022 < 0.05/4
    assert holm(p_task).tolist() == pytest.approx(multipletests(p_task, method="holm")[1].tolist())


def test_constant_tasks_are_not_informative() -> None:
    """A task whose pooled scores are all equal carries no evidence: p = 1, left out of the suite test."""
    test, p_task, _ = within_task_score_test([np.array([0.5, 0.5])], [np.array([0.5])])
    assert test.tasks == 0 and test.pvalue == 1.0 and p_task.tolist() == [1.0]


def graded_pair(tmp_path: Path) -> Path:
    rows = []
    for run_name, tasks in (("a", A), ("b", B)):
        for t, xs in enumerate(tasks):
            rows += [{"run": run_name, "task": f"t{t}", "trial": i, "score": float(x)} for i, x in enumerate(xs)]
    return write_log(tmp_path / "pair.jsonl", rows)


def test_compare_defaults_to_score_for_graded_runs(tmp_path: Path) -> None:
    """compare on two graded runs: by score (said in the verdict), JSON by, primary_test and per-task Holm."""
    log = graded_pair(tmp_path)
    code, out, _ = run("compare", log, "--runs", "a", "b", "--format", "json", "--no-cache")
    assert code == 0
    doc = json.loads(out)
    p_ref, task_ref = brute_force(A, B)
    assert doc["by"] == "score"
    assert doc["primary_test"]["p_value"] == pytest.approx(p_ref)
    assert doc["primary_test"]["statistic"] == "mean over tasks of mean_score_B - mean_score_A"
    assert doc["mean_diff"] == pytest.approx(np.mean([y.mean() - x.mean() for x, y in zip(A, B, strict=True)]))
    assert "by mean score" in doc["verdict"]
    per = {r["task"]: r for r in doc["per_task_score"]}
    assert per["t0"]["p_value"] == pytest.approx(task_ref[0])
    # 3 against 3 trials (or 2 against 3) cannot give p < 0.05 (10 or 20 splits): Tarone's family is empty
    assert [per[f"t{i}"]["p_adjusted"] for i in range(3)] == [1.0, 1.0, 1.0]
    assert doc["pass_primary_test"]["name"] == "within-task permutation test"
    code, out, _ = run("compare", log, "--runs", "a", "b", "--by", "pass", "--format", "json", "--no-cache")
    assert json.loads(out)["by"] == "pass" and "by mean score" not in json.loads(out)["verdict"]
    code, out, _ = run("compare", log, "--runs", "a", "b", "--no-cache")
    assert code == 0 and "by mean score" in out


def test_compare_by_score_without_scores_is_a_usage_error(tmp_path: Path) -> None:
    """--by score on runs with pass/fail outcomes only: exit 2 with one line naming why."""
    rows = [{"run": r, "task": "t", "trial": i, "passed": i % 2 == 0} for r in "ab" for i in range(3)]
    log = write_log(tmp_path / "p.jsonl", rows)
    code, _, err = run("compare", log, "--runs", "a", "b", "--by", "score", "--no-cache")
    assert code == 2 and "no graded scores" in err
    code, out, _ = run("compare", log, "--runs", "a", "b", "--format", "json", "--no-cache")
    assert json.loads(out)["by"] == "pass"


def test_two_harbor_jobs_compare_by_reward(tmp_path: Path) -> None:
    """Two built Harbor jobs with partial rewards compare by mean reward by default, with one primary test."""
    from tests.helpers.harbor import SETUP_ERROR, build_job

    a = build_job(tmp_path / "job-a", {"t1": [(0.55, None), (0.91, None), (0.098, None)],
                                       "t2": [(0.2, None), (None, SETUP_ERROR), (0.4, None)]})
    b = build_job(tmp_path / "job-b", {"t1": [(1.0, None), (0.95, None), (0.8, None)],
                                       "t2": [(0.6, None), (0.7, None), (0.9, None)]})
    code, out, _ = run("compare", a, b, "--errored-as", "fail", "--format", "json", "--no-cache")
    assert code == 0
    doc = json.loads(out)
    xa = [np.array([0.55, 0.91, 0.098]), np.array([0.2, 0.0, 0.4])]  # the setup error scores 0
    xb = [np.array([1.0, 0.95, 0.8]), np.array([0.6, 0.7, 0.9])]
    assert doc["by"] == "score" and doc["primary_test"]["p_value"] == pytest.approx(brute_force(xa, xb)[0])
