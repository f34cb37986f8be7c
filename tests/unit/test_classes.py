"""The evidence classes and the empirical-Bayes estimate, pinned to scipy and brute force."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy import optimize, special, stats

from flaketui.stats.classes import (
    DEFAULT_FLAKY_CAP,
    UNDETERMINED,
    cap_rates,
    evidence_classes,
    mixed,
    stable_after,
    trials_to_decide,
)
from flaketui.stats.empirical_bayes import (
    BetaPrior,
    betainc,
    fit_prior,
    flaky_posterior,
    log_marginal,
    poisson_binomial,
)
from flaketui.stats.estimators import FLAKY, NO_TRIALS, STABLE_FAIL, STABLE_PASS, UNREPEATED


def brute_class(n: int, c: int, cap: float) -> str:
    """The class from scipy's exact interval and the flakiness of its bounds, written out."""
    if n == 0:
        return NO_TRIALS
    if n == 1:
        return UNREPEATED
    ci = stats.binomtest(c, n).proportion_ci(method="exact")
    f = lambda p: 4 * p * (1 - p)  # noqa: E731
    grid = np.linspace(ci.low, ci.high, 2001)
    if np.all(f(grid) > cap + 1e-9):
        return FLAKY
    if np.all(f(grid) <= cap + 1e-9):
        return STABLE_PASS if ci.low >= 0.5 else STABLE_FAIL
    return UNDETERMINED


@pytest.mark.parametrize("cap", [pytest.param(0.2, marks=pytest.mark.slow), DEFAULT_FLAKY_CAP,
                                 pytest.param(0.75, marks=pytest.mark.slow)])
def test_classes_match_scipy_exact_interval(cap: float) -> None:
    """Every (n, c) up to n = 40 gets the class scipy's Clopper–Pearson interval gives, checked on a grid."""
    pairs = [(n, c) for n in range(0, 41) for c in range(n + 1)]
    n, c = np.array(pairs).T
    got = evidence_classes(n, c, cap)
    assert got == [brute_class(int(a), int(b), cap) for a, b in pairs]


def test_class_edges() -> None:
    """One trial is unrepeated, none is no-trials, 36 clean trials are stable at the default cap, 35 are not."""
    assert evidence_classes([1, 1, 0], [0, 1, 0]) == [UNREPEATED, UNREPEATED, NO_TRIALS]
    assert stable_after() == 36
    assert evidence_classes([35, 36, 36], [35, 36, 0]) == [UNDETERMINED, STABLE_PASS, STABLE_FAIL]


def test_cap_rates_are_the_roots() -> None:
    """The cap rates are where 4p(1 − p) equals the cap."""
    for cap in (0.1, 0.36, 0.9):
        lo, hi = cap_rates(cap)
        assert 4 * lo * (1 - lo) == pytest.approx(cap) and 4 * hi * (1 - hi) == pytest.approx(cap)


def test_mixed_is_passed_and_failed() -> None:
    """mixed is the old fact: both a pass and a failure."""
    assert mixed([5, 5, 5, 1], [0, 3, 5, 1]).tolist() == [False, True, False, False]


def test_stable_tasks_called_flaky_at_most_alpha_half() -> None:
    """A task exactly at the cap is called flaky with probability at most 2.5% at every n (exact sum)."""
    lo, _ = cap_rates(DEFAULT_FLAKY_CAP)
    for n in (3, 5, 10, 20, 50):
        c = np.arange(n + 1)
        called = np.asarray(evidence_classes(np.full(n + 1, n), c), dtype=object) == FLAKY
        assert stats.binom.pmf(c, n, lo)[called].sum() <= 0.025


def test_trials_to_decide_clean_task_matches_plan() -> None:
    """A clean task needs the plan's clean trials (69 at margin 0.1) less those it has; a decided one none."""
    from flaketui.stats.precision import clean_trials_to_decide

    got = trials_to_decide([12, 69, 10, 0], [12, 69, 5, 0])
    assert got[0] == clean_trials_to_decide(0.1) - 12 and got[1] == 0 and got[2] == 0 and np.isnan(got[3])


def test_log_marginal_matches_scipy_betabinom() -> None:
    """The count-histogram log-likelihood equals scipy's beta-binomial log-pmf summed, up to the binomial terms."""
    rng = np.random.default_rng(3)
    n = rng.integers(1, 12, 50)
    c = rng.binomial(n, rng.beta(0.4, 0.6, 50))
    const = np.sum(special.gammaln(n + 1) - special.gammaln(c + 1) - special.gammaln(n - c + 1))
    for a, b in [(0.3, 0.7), (2.0, 5.0), (40.0, 1.5)]:
        assert float(log_marginal(a, b, n, c)) + const == pytest.approx(stats.betabinom.logpmf(c, n, a, b).sum())


def test_fit_prior_matches_scipy_optimize() -> None:
    """The fitted prior is scipy.optimize's maximum of the beta-binomial likelihood (to 1e-3)."""
    rng = np.random.default_rng(11)
    p = np.concatenate([rng.uniform(0.2, 0.8, 30), rng.uniform(0, 0.1, 135), rng.uniform(0.9, 1, 135)])
    n = np.full(300, 5)
    c = rng.binomial(n, p)
    prior = fit_prior(n, c)

    def nll(x: np.ndarray) -> float:
        return -float(stats.betabinom.logpmf(c, n, np.exp(x[0]), np.exp(x[1])).sum())

    best = optimize.minimize(nll, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12})
    assert (prior.a, prior.b) == pytest.approx(tuple(np.exp(best.x)), rel=1e-3)
    assert prior.log_likelihood == pytest.approx(-best.fun, abs=1e-6)


def test_symmetric_prior_matches_scipy_and_the_likelihood_ratio_test() -> None:
    """The symmetric fit is scipy.optimize's Beta(a, a) maximum, kept exactly when the χ²(1) likelihood-ratio test does not reject it."""
    for tilt, seed in ((0.0, 3), (0.0, 4), (0.3, 5)):
        rng = np.random.default_rng(seed)
        p = np.concatenate([rng.uniform(0.2, 0.8, 30), rng.uniform(0, 0.1, 135), rng.uniform(0.9 - tilt, 1, 135)])
        n = np.full(300, 3)
        c = rng.binomial(n, p)
        full = fit_prior(n, c)
        chosen = fit_prior(n, c, symmetric_unless_rejected=True)

        def nll(x: np.ndarray) -> float:
            return -float(stats.betabinom.logpmf(c, n, np.exp(x[0]), np.exp(x[0])).sum())

        best = optimize.minimize_scalar(lambda u: nll(np.array([u])), bounds=(-5, 5), method="bounded",
                                        options={"xatol": 1e-10})
        rejected = 2 * (full.log_likelihood + best.fun) > stats.chi2.ppf(0.95, 1)
        assert chosen.symmetric == (not rejected)
        if chosen.symmetric:
            assert chosen.a == chosen.b == pytest.approx(float(np.exp(best.x)), rel=1e-3)
            post = flaky_posterior(np.array([3, 3]), np.array([1, 2]), prior=chosen)
            assert post.p_flaky[0] == pytest.approx(post.p_flaky[1], abs=1e-12)
        else:
            assert (chosen.a, chosen.b) == (full.a, full.b)
    assert flaky_posterior(n, c).prior == fit_prior(n, c, symmetric_unless_rejected=True)


def test_fit_prior_with_a_long_task_matches_scipy_optimize() -> None:
    """Twelve tasks, two of 20,000 trials (the pairs form with Stirling's series): scipy.optimize's maximum, in a second."""
    rng = np.random.default_rng(12)
    n = np.array([20_000, 20_000, *rng.integers(3, 9, 10)])
    c = rng.binomial(n, np.r_[0.3, 0.97, rng.beta(0.6, 0.4, 10)])
    start = time.perf_counter()
    prior = fit_prior(n, c)
    assert time.perf_counter() - start < 1.0

    def nll(x: np.ndarray) -> float:
        return -float(stats.betabinom.logpmf(c, n, np.exp(x[0]), np.exp(x[1])).sum())

    best = optimize.minimize(nll, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12})
    assert (prior.a, prior.b) == pytest.approx(tuple(np.exp(best.x)), rel=1e-3)
    assert prior.log_likelihood == pytest.approx(-best.fun, abs=1e-6)


def test_fit_prior_edges() -> None:
    """Too few repeated tasks give Jeffreys' prior; a suite of clean tasks fits a prior near 1."""
    assert not fit_prior([1] * 50, [1] * 25 + [0] * 25).fitted
    clean = fit_prior([5] * 40, [5] * 40)
    assert clean.fitted and clean.mean > 0.99


def test_betainc_matches_scipy() -> None:
    """The continued fraction equals scipy.special.betainc."""
    a = np.array([0.2, 0.5, 1.0, 3.0, 50.5, 400.0, 0.7])
    b = np.array([0.3, 7.0, 1.0, 2.0, 30.0, 600.0, 1200.0])
    for x in (0.001, 0.1, 0.5, 0.9, 0.999):
        np.testing.assert_allclose(betainc(a, b, x), special.betainc(a, b, x), rtol=1e-9, atol=1e-13)


def test_poisson_binomial_matches_enumeration() -> None:
    """The DFT law equals the enumeration of every outcome of eight trials."""
    p = np.array([0.1, 0.5, 0.5, 0.9, 0.33, 0.01, 0.7, 0.7])
    brute = np.zeros(p.size + 1)
    for outcome in itertools.product((0, 1), repeat=p.size):
        o = np.array(outcome)
        brute[o.sum()] += np.prod(np.where(o == 1, p, 1 - p))
    np.testing.assert_allclose(poisson_binomial(p), brute, atol=1e-12)


def test_posterior_matches_scipy_beta() -> None:
    """P(flaky) is the Beta posterior's mass between the cap rates and the mean flakiness its closed form."""
    rng = np.random.default_rng(5)
    n = rng.integers(0, 15, 80)
    c = rng.binomial(n, rng.beta(0.5, 0.5, 80))
    post = flaky_posterior(n, c)
    lo, hi = cap_rates(DEFAULT_FLAKY_CAP)
    has = n > 0
    a, b = post.prior.a + c[has], post.prior.b + n[has] - c[has]
    np.testing.assert_allclose(post.p_flaky[has], stats.beta.cdf(hi, a, b) - stats.beta.cdf(lo, a, b), atol=1e-9)
    want = [4 * stats.beta.expect(lambda p: p * (1 - p), args=(x, y)) for x, y in zip(a[:5], b[:5], strict=True)]
    np.testing.assert_allclose(post.flakiness[has][:5], want, rtol=1e-6)
    assert np.isnan(post.p_flaky[~has]).all()
    assert post.expected == pytest.approx(post.p_flaky[has].sum())


def test_mirror_images_tie_exactly_under_a_symmetric_prior() -> None:
    """Under a symmetric prior a task with c passes and one with n − c have the same P(flaky) to the last bit."""
    n = np.repeat(np.arange(2, 13), 13)
    c = np.tile(np.arange(13), 11)
    keep = c <= n
    n, c = n[keep], c[keep]
    post = flaky_posterior(n, c, prior=BetaPrior(0.37, 0.37, fitted=True))
    mirror = flaky_posterior(n, n - c, prior=BetaPrior(0.37, 0.37, fitted=True))
    assert np.array_equal(post.p_flaky, mirror.p_flaky) and np.array_equal(post.flakiness, mirror.flakiness)
    a, b = 0.37 + c, 0.37 + n - c
    lo, hi = cap_rates(DEFAULT_FLAKY_CAP)
    np.testing.assert_allclose(post.p_flaky, stats.beta.cdf(hi, a, b) - stats.beta.cdf(lo, a, b), atol=1e-9)


def test_every_task_flaky_and_every_task_stable() -> None:
    """A suite of tasks at p = 0.5 with 40 trials is all flaky; one of clean 40-trial tasks all stable, P(flaky) near 0."""
    n = np.full(20, 40)
    assert set(evidence_classes(n, np.full(20, 20))) == {FLAKY}
    assert set(evidence_classes(n, n)) == {STABLE_PASS}
    post = flaky_posterior(n, n)
    assert post.expected < 0.1 and post.interval == (0, 0)


def test_undecided_chance_matches_scipy_betabinom_and_exact_interval() -> None:
    """The chance a task stays undetermined after m more trials is the beta-binomial sum over the outcomes whose
    exact interval (scipy) leaves it undetermined."""
    from flaketui.stats.allocation import undecided_chance

    got = undecided_chance([5, 8], [3, 8], [3.4, 8.1], [2.2, 0.3], DEFAULT_FLAKY_CAP, horizon=12)
    for row, (n, c, a, b) in enumerate([(5, 3, 3.4, 2.2), (8, 8, 8.1, 0.3)]):
        for m in (0, 1, 6, 12):
            y = np.arange(m + 1)
            still = np.array([brute_class(n + m, c + int(k), DEFAULT_FLAKY_CAP) == UNDETERMINED for k in y])
            want = float(np.sum(stats.betabinom.pmf(y, m, a, b)[still]))
            assert got[row, m] == pytest.approx(want, abs=1e-12)


def test_allocate_classes_spends_where_a_class_can_change() -> None:
    """A middling task gets the few trials that decide it, a clean one the thirty it needs; a decided one none;
    the budget is spent in full and risk minimums come first."""
    from flaketui.stats.allocation import allocate_classes

    got = allocate_classes([5, 5, 5], [3, 5, 3], [3.2, 5.2, 3.2], [2.2, 0.2, 2.2], 40, [True, True, False], 0.36)
    assert got.extra.tolist() == [9, 31, 0] and got.spent == 40
    first = allocate_classes([5, 2], [5, 1], [5.2, 1.2], [0.2, 1.2], 3, [True, True], 0.36, minimum=[0, 5])
    assert first.topup.tolist() == [0, 3] and first.extra.tolist() == [0, 3]


def test_allocate_classes_batch_per_unit_caps_one_plan_not_the_look_ahead() -> None:
    """A batch per unit caps what one plan gives each task, while the clean task is still chosen for its 31."""
    from flaketui.stats.allocation import allocate_classes

    whole = allocate_classes([5, 5], [3, 5], [3.2, 5.2], [2.2, 0.2], 40, [True] * 2, 0.36)
    got = allocate_classes([5, 5], [3, 5], [3.2, 5.2], [2.2, 0.2], 40, [True] * 2, 0.36, batch=[40, 5])
    assert whole.extra.tolist() == [9, 31] and got.extra[1] == 5 and got.extra[0] >= 9
    assert allocate_classes([5, 5], [3, 5], [3.2, 5.2], [2.2, 0.2], 40, [True] * 2, 0.36, batch=5).extra.max() == 5


def test_plan_allocate_classes_says_how_the_suite_stays_unbiased() -> None:
    """plan --allocate classes spends the budget and notes that the suite's figures come from the earlier trials."""
    from flaketui.model import RunOutcomes
    from flaketui.stats.plan import DESIGN_NOTE, PlanOptions, make_plan

    n = np.full(30, 5)
    c = np.where(np.arange(30) < 4, 3, 5)
    run = RunOutcomes("r", [f"t{i}" for i in range(30)], n, c, np.zeros(30, dtype=np.int64), [None] * 30,
                      np.arange(150), np.r_[0, np.cumsum(n)])
    plan = make_plan([run], PlanOptions(budget=50, allocation="classes"))
    assert plan.spent == 50 and DESIGN_NOTE in plan.notes
    with pytest.raises(ValueError, match="allocation"):
        PlanOptions(allocation="random").check()


def test_report_and_gate_state_the_classes_at_the_cap() -> None:
    """report's JSON and gate's JSON give the same classes at --flaky-cap: searchRunbook (10 of 12) is flaky at 0.05
    and undetermined at the default, mixed either way."""
    import orjson

    from tests.conftest import BASELINE
    from tests.helpers.cli import run

    for cap, flaky in (("0.05", 1), ("0.36", 0)):
        code, out, _ = run("report", str(BASELINE), "--format", "json", "--flaky-cap", cap)
        summary = orjson.loads(out)["runs"][0]["summary"]
        assert code == 0 and (summary["flaky_tasks"], summary["mixed_tasks"], summary["flaky_cap"]) == (
            flaky, 1, float(cap))
        code, out, _ = run("gate", str(BASELINE), "--max-flakiness", "0.9", "--format", "json", "--flaky-cap", cap)
        classes = orjson.loads(out)["runs"][0]["classes"]
        assert code == 0 and (classes["flaky"], classes["mixed"]) == (flaky, 1)
    code, _, err = run("report", str(BASELINE), "--flaky-cap", "1.5")
    assert code == 2 and "--flaky-cap" in err


def test_count_interval_normal_approximation_matches_the_exact_law() -> None:
    """Beyond the exact size the refined normal approximation gives the exact law's 2.5% and 97.5% quantiles."""
    from flaketui.stats import empirical_bayes as eb

    rng = np.random.default_rng(2)
    chances = rng.choice(rng.beta(0.3, 0.3, 50), 8000)
    cdf = np.cumsum(poisson_binomial(chances))
    exact = (int(np.searchsorted(cdf, 0.025 - 1e-12)), int(np.searchsorted(cdf, 0.975 - 1e-12)))
    assert chances.size > eb.EXACT_COUNT_MAX and eb.count_interval(chances) == exact


def test_report_order_ranks_by_p_flaky_only_when_trials_are_few() -> None:
    """With 10 trials a task the order follows P(flaky); with 40 the observed flakiness, P(flaky) breaking no tie."""
    from flaketui.model import RunOutcomes
    from flaketui.output.stream import flakiest_order
    from flaketui.stats import task_stats

    def run(n: int, passes: list[int]) -> RunOutcomes:
        size = len(passes)
        trials = np.full(size, n)
        return RunOutcomes("r", [f"t{i}" for i in range(size)], trials, np.array(passes),
                           np.zeros(size, dtype=np.int64), [None] * size, np.arange(n * size),
                           np.r_[0, np.cumsum(trials)])

    few = task_stats(run(10, [10] * 12 + [0] * 12 + [5, 8, 2]), 1)
    assert few.few_trials()
    order = flakiest_order(few).tolist()
    assert np.all(np.diff(few.p_flaky[order]) <= 1e-15)
    many = task_stats(run(40, [40] * 12 + [0] * 12 + [20, 32, 8]), 1)
    assert not many.few_trials()
    assert np.all(np.diff(many.flakiness[flakiest_order(many)]) <= 1e-15)


def test_sequence_decision_without_bounds_equals_the_bisected_bounds() -> None:
    """Deciding a task from the confidence sequence's excess at the cap rates agrees with comparing the
    bounds of the plan's own sequence (stats.precision, bisected with scipy), for every (n, c) to 150 and
    carried-forward rates up to 3,000 trials, at several caps."""
    from flaketui.stats.classes import _TOL, _cs_decided
    from flaketui.stats.precision import confidence_sequence

    n = np.array([nn for nn in range(150) for _ in range(nn + 1)], float)
    c = np.array([cc for nn in range(150) for cc in range(nn + 1)], float)
    n2 = np.repeat(np.arange(1, 3000, 11.0), 3)
    c2 = n2 * np.tile([0.05, 0.5, 0.93], len(n2) // 3)
    for cap in (0.36, 0.1, 0.9):
        p_lo, p_hi = cap_rates(cap)
        for nn, cc in ((n, c), (n2, c2)):
            cs = confidence_sequence(nn, cc, 0.95)
            bisected = ((cs.low >= p_hi - _TOL) | (cs.high <= p_lo + _TOL)
                        | ((cs.low > p_lo) & (cs.high < p_hi)))
            assert np.array_equal(_cs_decided(nn, cc, p_lo, p_hi, 0.95), bisected)
