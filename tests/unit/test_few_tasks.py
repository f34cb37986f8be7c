"""Suite intervals below about 30 tasks: the t interval joined with the beta-binomial posterior, pinned to scipy's beta-binomial
on the same grid, and its edges (every task stable, one trial a task, one task)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from flaketui.model import RunOutcomes
from flaketui.stats import fewtasks
from flaketui.stats.suite import mean_estimate, summarise, task_stats


def outcomes(n: np.ndarray, c: np.ndarray) -> RunOutcomes:
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    return RunOutcomes("r", [f"t{i}" for i in range(n.size)], n, c, np.zeros_like(n), [None] * n.size,
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


def weighted_interval(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    order = np.argsort(values, axis=None)
    v, cw = values.ravel()[order], np.cumsum(weights.ravel()[order])
    return float(v[np.searchsorted(cw, 0.025)]), float(v[min(np.searchsorted(cw, 0.975), v.size - 1)])


@pytest.mark.parametrize("seed", range(4))
def test_posterior_matches_scipy_betabinom(seed: int) -> None:
    """The grid posterior (rising factorials) equals one built from scipy.stats.betabinom and betaln."""
    rng = np.random.default_rng(seed)
    t = int(rng.integers(3, 25))
    n = rng.integers(1, 12, t)
    c = rng.binomial(n, rng.beta(2, 1, t))
    k = 3
    a = fewtasks.MEANS[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    b = (1 - fewtasks.MEANS)[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    loglik = sum(sps.betabinom.logpmf(ci, ni, a, b) for ni, ci in zip(n.tolist(), c.tolist(), strict=True))
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    hat_k = np.exp(special.betaln(a + k, b) - special.betaln(a, b))  # E[p^k]
    at_k = 1 - np.exp(special.betaln(a, b + k) - special.betaln(a, b))  # 1 − E[(1 − p)^k]
    post = fewtasks.suite_posterior(n, c, k)
    assert post.pass_hat_k == pytest.approx(weighted_interval(hat_k, w), rel=1e-9)
    assert post.pass_at_k == pytest.approx(weighted_interval(at_k, w), rel=1e-9)
    assert post.pass_at_1 == pytest.approx(weighted_interval(np.broadcast_to(fewtasks.MEANS[:, None], a.shape), w))


def test_few_tasks_use_the_posterior_and_hold_the_estimate() -> None:
    """Below 30 unclustered tasks each suite interval is the hull of the t interval and the posterior's."""
    rng = np.random.default_rng(1)
    n = np.full(10, 8)
    c = rng.binomial(8, rng.beta(6, 4, 10))
    sm = summarise(task_stats(outcomes(n, c), 4))
    post = fewtasks.suite_posterior(n, c, 4)
    t_interval = mean_estimate(c / 8)
    assert sm.pass_at_1.ci == (min(post.pass_at_1[0], t_interval.ci[0]), max(post.pass_at_1[1], t_interval.ci[1]))
    for est in (sm.pass_at_1, sm.pass_at_k, sm.pass_hat_k):
        assert est.method == fewtasks.METHOD and est.ci[0] <= est.value <= est.ci[1]
    assert any("beta-binomial posterior" in w for w in sm.warnings)


def test_every_task_stable_keeps_the_point_inside() -> None:
    """Every task passed every trial: pass^k = 1 and the interval reaches 1."""
    sm = summarise(task_stats(outcomes(np.full(6, 5), np.full(6, 5)), 3))
    assert sm.pass_hat_k.value == 1 and sm.pass_hat_k.ci[1] == 1 and sm.pass_hat_k.ci[0] < 1


def test_one_trial_a_task_and_one_task() -> None:
    """Unrepeated tasks still give an interval; one task gives none (NaN)."""
    sm = summarise(task_stats(outcomes(np.ones(8), np.array([1, 0, 1, 1, 0, 1, 1, 1])), 1))
    assert sm.pass_at_1.ci[0] < sm.pass_at_1.value < sm.pass_at_1.ci[1]
    one = summarise(task_stats(outcomes(np.array([5]), np.array([3])), 1))
    assert math.isnan(one.pass_at_1.ci[0]) and one.pass_at_1.method == "t"


def test_sixty_tasks_keep_the_t_interval() -> None:
    """At FEW_TASKS (60) tasks and more the t interval alone is kept."""
    sm = summarise(task_stats(outcomes(np.full(60, 4), np.arange(60) % 5), 2))
    assert sm.pass_at_1.method == "t" and sm.pass_at_1.df == 59


@pytest.mark.parametrize("seed", range(3))
def test_score_posterior_matches_beta_function_likelihood(seed: int) -> None:
    """The mean-score posterior at fractional totals equals one built from scipy's betaln, B(a + s, b + n − s)/B(a, b)."""
    rng = np.random.default_rng(seed)
    t = int(rng.integers(3, 20))
    n = rng.integers(1, 10, t)
    total = n * rng.beta(4, 1, t)
    a = fewtasks.MEANS[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    b = (1 - fewtasks.MEANS)[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    loglik = sum(special.betaln(a + s, b + m - s) - special.betaln(a, b) for m, s in zip(n, total, strict=True))
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    want = weighted_interval(np.broadcast_to(fewtasks.MEANS[:, None], a.shape), w)
    assert fewtasks.score_posterior(n, total) == pytest.approx(want, abs=1e-12)


def test_score_posterior_at_whole_totals_is_pass_at_1s() -> None:
    """Scores of 0 and 1 only give the mean score the posterior interval pass@1 gets from the same counts."""
    n = np.array([5, 5, 8, 3, 5, 6, 5, 5])
    c = np.array([5, 4, 8, 3, 2, 6, 5, 0])
    assert fewtasks.score_posterior(n, c.astype(float)) == pytest.approx(fewtasks.suite_posterior(n, c, 3).pass_at_1)


def test_run_mean_score_holds_the_posterior_below_sixty_tasks() -> None:
    """The run's mean score below 60 tasks spans both the t interval and the score posterior; at 60 the t interval alone."""
    from flaketui.stats.suite import mean_score_estimate

    rng = np.random.default_rng(7)
    for t, hull in ((12, True), (60, False)):
        n = rng.integers(3, 8, t)
        means = np.where(rng.random(t) < 0.7, 1.0, rng.beta(2, 2, t))
        est = mean_score_estimate(means, n)
        plain = mean_estimate(means)
        assert est.value == plain.value
        if hull:
            lo, hi = fewtasks.score_posterior(n, means * n)
            assert est.ci == (min(lo, plain.ci[0]), max(hi, plain.ci[1])) and est.method == fewtasks.METHOD
        else:
            assert est.ci == plain.ci and est.method == "t"


@pytest.mark.parametrize("seed", range(2))
def test_posterior_with_many_trials_and_large_k_matches_scipy(seed: int) -> None:
    """Tasks of hundreds to thousands of trials and k = 40 (Stirling's branch) equal scipy's betabinom and betaln."""
    rng = np.random.default_rng(seed)
    t = int(rng.integers(3, 10))
    n = rng.integers(50, 3000, t)
    c = rng.binomial(n, rng.beta(3, 1, t))
    k = 40
    a = fewtasks.MEANS[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    b = (1 - fewtasks.MEANS)[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    loglik = sum(sps.betabinom.logpmf(ci, ni, a, b) for ni, ci in zip(n.tolist(), c.tolist(), strict=True))
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    hat_k = np.exp(special.betaln(a + k, b) - special.betaln(a, b))
    at_k = 1 - np.exp(special.betaln(a, b + k) - special.betaln(a, b))
    post = fewtasks.suite_posterior(n, c, k)
    assert post.pass_hat_k == pytest.approx(weighted_interval(hat_k, w), rel=1e-6, abs=1e-12)
    assert post.pass_at_k == pytest.approx(weighted_interval(at_k, w), rel=1e-6, abs=1e-12)
    assert post.pass_at_1 == pytest.approx(weighted_interval(np.broadcast_to(fewtasks.MEANS[:, None], a.shape), w))


def test_posterior_memory_and_time_do_not_grow_with_trials_or_k() -> None:
    """A task of 20,000 trials and k of two billion: the posterior is grid-sized (it allocated 4.5 GiB / looped k times)."""
    n, c, k = np.array([20_000, 20_000, 3]), np.array([13_000, 19_999, 2]), 2_000_000_000
    post = fewtasks.suite_posterior(n, c, k)
    a = fewtasks.MEANS[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    b = (1 - fewtasks.MEANS)[:, None] * fewtasks.SPREADS[None, :] ** -2.0
    loglik = sum(sps.betabinom.logpmf(ci, ni, a, b) for ni, ci in zip(n.tolist(), c.tolist(), strict=True))
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    hat_k = np.exp(special.betaln(a + k, b) - special.betaln(a, b))
    assert post.pass_hat_k == pytest.approx(weighted_interval(hat_k, w), rel=1e-4)  # logs near 4e10 round
