"""pass@k / pass^k curves over k and the p̂ histogram (flaketui.stats.curves).

Expected values are exact binomial ratios from scipy.special.comb.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import comb

from flaketui.stats.curves import histogram, k_curve, k_values


def test_single_task_curve_is_the_exact_ratios() -> None:
    """A single task's curve is the exact binomial ratios."""
    curve = k_curve(12, 10)
    assert curve.ks.tolist() == list(range(1, 13))
    for k, at, hat in zip(curve.ks, curve.pass_at, curve.pass_hat, strict=True):
        assert hat == pytest.approx(comb(10, k) / comb(12, k))
        assert at == pytest.approx(1 - comb(2, k) / comb(12, k))
    assert curve.pass_hat[-1] == 0.0 and curve.pass_at[-1] == 1.0


def test_suite_curve_is_over_one_task_set() -> None:
    """Every point averages the same tasks, those with n ≥ the last k; the others are counted as left out."""
    n = np.array([4, 2])
    c = np.array([2, 2])
    curve = k_curve(n, c)  # the last k is the trials every task has: 2
    assert curve.ks.tolist() == [1, 2] and curve.tasks.tolist() == [2, 2] and curve.left_out == 0
    assert curve.pass_hat[1] == pytest.approx((comb(2, 2) / comb(4, 2) + 1.0) / 2)
    longer = k_curve(n, c, 4)
    assert longer.tasks.tolist() == [1, 1, 1, 1] and longer.left_out == 1
    assert longer.pass_hat[0] == pytest.approx(0.5)  # the 4-trial task alone, from k = 1 on
    assert longer.pass_hat[2] == 0.0  # C(2,3) = 0


def test_curve_never_jumps_when_tasks_lose_a_trial() -> None:
    """Six tasks of 5 attempts, two with an errored attempt set apart (n = 4): the curve up to the chosen k = 5 is
    over the four full tasks at every k, so pass@k rises smoothly to their mean at 5, never by a change of tasks."""
    n = np.array([5, 5, 5, 5, 4, 4])
    c = np.array([5, 2, 0, 0, 4, 0])
    curve = k_curve(n, c, include=5)
    assert curve.ks.tolist() == [1, 2, 3, 4, 5] and set(curve.tasks.tolist()) == {4} and curve.left_out == 2
    for k, at in zip(curve.ks.tolist(), curve.pass_at.tolist(), strict=True):
        assert at == pytest.approx(np.mean([1 - comb(5 - ci, k) / comb(5, k) for ci in c[:4]]))
    assert np.all(np.diff(curve.pass_at) >= 0)


def test_k_values_thin_out_long_ranges() -> None:
    """k_values thins out long ranges, keeping both ends."""
    ks = k_values(1000, points=40)
    assert ks[0] == 1 and ks[-1] == 1000 and len(ks) <= 40
    assert k_values(0).size == 0


def test_histogram_bins_over_zero_one() -> None:
    """histogram bins rates over [0, 1], ignoring NaN."""
    counts = histogram([0.0, 0.05, 0.1, 0.833, 1.0, float("nan")], bins=10)
    assert counts.tolist() == [2, 1, 0, 0, 0, 0, 0, 0, 1, 1]


def test_suite_curve_equals_the_mean_over_tasks() -> None:
    """The curve computed once per distinct (n, c) pair is the plain mean of the per-task
    estimates over the one set of tasks with at least the last k trials."""
    from flaketui.stats.estimators import pass_at_k, pass_hat_k

    rng = np.random.default_rng(3)
    n = rng.integers(0, 9, 5000)
    c = rng.integers(0, 9, 5000) % (n + 1)
    curve = k_curve(n, c, 6)
    ok = n >= 6
    assert curve.left_out == int(((n > 0) & (n < 6)).sum())
    for k, at, hat, used in zip(curve.ks, curve.pass_at, curve.pass_hat, curve.tasks, strict=True):
        assert used == ok.sum()
        assert at == pytest.approx(np.mean(pass_at_k(n[ok].astype(float), c[ok].astype(float), int(k))), rel=1e-12)
        assert hat == pytest.approx(np.mean(pass_hat_k(n[ok].astype(float), c[ok].astype(float), int(k))), rel=1e-12)
