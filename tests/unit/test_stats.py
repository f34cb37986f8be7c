"""Statistics pinned to independent values.

Expected values come from scipy (computed in the tests themselves where noted),
from math.comb on exact integers, or from the figures given in the issues
(Wilson 44/49, sign tests 7-4 / 6-2 / 10-1, p = 0.8 powers, rule of three).
"""

from __future__ import annotations

import sys
from math import comb
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from flaketui.model import RunOutcomes
from flaketui.stats.classes import evidence_classes, mixed
from flaketui.stats import (
    compare_runs,
    default_k,
    flakiness,
    gate,
    mean_estimate,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_interval,
    rule_of_three,
    sign_test,
    summarise,
    task_stats,
    verdict,
    wilson_interval,
)
from flaketui.stats.estimators import binomial_quantile


def outcomes(run: str, counts: dict[str, tuple[int, int]], groups: dict[str, str] | None = None) -> RunOutcomes:
    tasks = list(counts)
    n = np.array([counts[t][0] for t in tasks])
    c = np.array([counts[t][1] for t in tasks])
    bounds = np.r_[0, np.cumsum(n)]
    return RunOutcomes(run, tasks, n, c, np.zeros_like(n), [(groups or {}).get(t) for t in tasks],
                       np.arange(int(n.sum())), bounds)


class TestWilson:
    def test_issue_figure_44_of_49(self) -> None:
        """44 passes of 49 give the Wilson interval (0.782, 0.956) quoted in the issue."""
        ci = wilson_interval(49, 44)
        assert (round(float(ci.low), 3), round(float(ci.high), 3)) == (0.782, 0.956)

    @pytest.mark.parametrize("n,c", [(1, 0), (1, 1), (4, 2), (12, 10), (49, 44), (300, 3), (1500, 1500)])
    def test_matches_scipy(self, n: int, c: int) -> None:
        """The Wilson interval equals scipy's binomtest Wilson interval."""
        # scipy's BinomTestResult.proportion_ci(method="wilson") is an independent implementation.
        ref = sps.binomtest(c, n).proportion_ci(confidence_level=0.95, method="wilson")
        ci = wilson_interval(n, c)
        assert float(ci.low) == pytest.approx(ref.low, abs=1e-12)
        assert float(ci.high) == pytest.approx(ref.high, abs=1e-12)

    def test_vectorised_and_zero_trials(self) -> None:
        """The interval is vectorised, and a task without trials gets NaN bounds."""
        ci = wilson_interval(np.array([0, 10]), np.array([0, 5]))
        assert np.isnan(ci.low[0]) and np.isnan(ci.high[0])
        assert ci.low[1] < 0.5 < ci.high[1]

    def test_rejects_impossible_counts(self) -> None:
        """More passes than trials is refused with a ValueError."""
        with pytest.raises(ValueError, match="passes"):
            wilson_interval(3, 4)


class TestPassAtK:
    def test_issue_figures_n10_c8_k4(self) -> None:
        """n = 10, c = 8, k = 4 gives pass@k = 1 and pass^k = 0.333 as in the issue."""
        assert float(pass_at_k(10, 8, 4)) == pytest.approx(1.0)
        assert round(float(pass_hat_k(10, 8, 4)), 3) == 0.333

    @pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
    def test_against_exact_binomials(self, n: int) -> None:
        """pass^k and pass@k equal their binomial-coefficient formulas for every c and k at small n."""
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert float(pass_hat_k(n, c, k)) == pytest.approx(comb(c, k) / comb(n, k), abs=1e-12)
                assert float(pass_at_k(n, c, k)) == pytest.approx(
                    1 - comb(n - c, k) / comb(n, k), abs=1e-12
                )

    def test_none_when_k_exceeds_n(self) -> None:
        """pass^k and pass@k are undefined (NaN) when k exceeds the trials."""
        assert np.isnan(pass_hat_k(3, 3, 4))
        assert np.isnan(pass_at_k(3, 1, 4))

    def test_large_n_no_overflow(self) -> None:
        """pass^k at n = 5000 matches exact integer binomials without overflow."""
        # C(5000, 40) overflows floats as a factorial ratio; the product form does not.
        v = float(pass_hat_k(5000, 4900, 40))
        assert v == pytest.approx(comb(4900, 40) / comb(5000, 40), rel=1e-9)

    def test_issue_p_powers(self) -> None:
        """At large n, pass^k approaches p^k (0.410 and 0.168 for p = 0.8, k = 4 and 8)."""
        # For a task with p = 0.8 the chance that k independent trials all pass is p^k;
        # with n = 1000 trials and c = 800 the unbiased estimate is close to it.
        assert round(0.8**4, 3) == 0.410 and round(0.8**8, 3) == 0.168
        assert float(pass_hat_k(100000, 80000, 4)) == pytest.approx(0.410, abs=1e-3)
        assert float(pass_hat_k(100000, 80000, 8)) == pytest.approx(0.168, abs=1e-3)

    @pytest.mark.parametrize("k", [0, -1, 1.5, True])
    def test_bad_k(self, k: object) -> None:
        """A k below 1 or not an integer is refused."""
        with pytest.raises(ValueError, match="k"):
            pass_hat_k(5, 3, k)  # type: ignore[arg-type]

    def test_fixture_search_runbook(self) -> None:
        """searchRunbook's 10 of 12 give pass^5 = 0.318 and flakiness 0.556, as the README says."""
        assert round(float(pass_hat_k(12, 10, 5)), 3) == 0.318
        assert round(float(flakiness(12, 10)), 3) == 0.556


class TestPassHatKInterval:
    """The percentile bootstrap, kept as ``method="bootstrap"``; the default exact interval is
    pinned in test_intervals.py."""

    @pytest.mark.parametrize("n,c", [(12, 10), (4, 2), (20, 17), (8, 1)])
    def test_is_pass_hat_k_at_binomial_quantiles(self, n: int, c: int) -> None:
        """The bootstrap pass^k interval is pass^k at scipy's binomial quantiles."""
        lo_q = sps.binom.ppf(0.025, n, c / n)
        hi_q = sps.binom.ppf(0.975, n, c / n)
        ci = pass_hat_k_interval(n, c, 3, method="bootstrap")
        assert float(ci.low) == pytest.approx(comb(int(lo_q), 3) / comb(n, 3), abs=1e-12)
        assert float(ci.high) == pytest.approx(comb(int(hi_q), 3) / comb(n, 3), abs=1e-12)

    def test_matches_brute_force_bootstrap_distribution(self) -> None:
        """The bootstrap interval matches percentiles of the exact bootstrap distribution, enumerated."""
        # The exact bootstrap distribution, enumerated: P(C* = x) = Binom(n, p̂).
        n, c, k = 12, 10, 5
        xs = np.arange(n + 1)
        pmf = sps.binom.pmf(xs, n, c / n)
        values = np.array([comb(int(x), k) / comb(n, k) for x in xs])
        cdf = np.cumsum(pmf)
        lo = values[np.argmax(cdf >= 0.025)]
        hi = values[np.argmax(cdf >= 0.975)]
        ci = pass_hat_k_interval(n, c, k, method="bootstrap")
        assert (float(ci.low), float(ci.high)) == pytest.approx((lo, hi))
        assert float(ci.low) <= float(pass_hat_k(n, c, k)) <= float(ci.high)

    def test_quantile_vectorised_matches_scipy(self) -> None:
        """The vectorised binomial quantile equals scipy's binom.ppf on random counts."""
        rng = np.random.default_rng(3)
        n = rng.integers(1, 60, size=400).astype(float)
        c = np.floor(rng.random(400) * (n + 1))
        for q in (0.025, 0.5, 0.975):
            ref = sps.binom.ppf(q, n, c / n)
            assert np.array_equal(binomial_quantile(n, c, q), ref)

    def test_quantile_scipy_path_matches_scipy(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The quantile's scipy path (large n) equals scipy's binom.ppf too."""
        # Many distinct (n, c) pairs go through scipy's bdtr instead of the pure-Python sum.
        from flaketui.stats import estimators

        monkeypatch.setattr(estimators, "_PURE_CDF_TERMS", 0)
        rng = np.random.default_rng(5)
        n = rng.integers(1, 300, size=300).astype(float)
        c = np.floor(rng.random(300) * (n + 1))
        for q in (0.025, 0.975):
            assert np.array_equal(binomial_quantile(n, c, q), sps.binom.ppf(q, n, c / n))

    def test_degenerate_and_missing(self) -> None:
        """All-pass and all-fail tasks get degenerate intervals, and k above n gets NaN."""
        ci = pass_hat_k_interval(np.array([12, 12, 3]), np.array([12, 0, 3]), 5, method="bootstrap")
        assert (ci.low[0], ci.high[0]) == (1.0, 1.0)
        assert (ci.low[1], ci.high[1]) == (0.0, 0.0)
        assert np.isnan(ci.low[2])


class TestClassesAndRuleOfThree:
    def test_one_trial_is_unrepeated(self) -> None:
        """One outcome cannot show a task to be stable: it is "unrepeated", whichever way it went; two are
        undetermined at the default cap."""
        assert evidence_classes([1, 1, 2, 2], [1, 0, 2, 0]) == ["unrepeated", "unrepeated", "undetermined",
                                                                 "undetermined"]

    def test_rule_of_three_issue_figure(self) -> None:
        """The rule of three gives the issue's figures at 300, 1,500 and 3,000 trials."""
        assert round(float(rule_of_three(1500)), 6) == 0.001995
        assert float(rule_of_three(300)) < 0.01
        assert float(rule_of_three(3000)) < 0.001

    @pytest.mark.parametrize("n", [1, 5, 30, 1500])
    def test_rule_of_three_is_clopper_pearson_zero_events(self, n: int) -> None:
        """The rule of three equals scipy's Beta(0.95; 1, n), the Clopper-Pearson bound at zero failures."""
        # One-sided 95% Clopper-Pearson upper bound at 0 events = beta.ppf(0.95, 1, n).
        assert float(rule_of_three(n)) == pytest.approx(sps.beta.ppf(0.95, 1, n), rel=1e-10)


class TestSignTest:
    @pytest.mark.parametrize(
        "fixed,broken,expected", [(7, 4, 0.549), (6, 2, 0.289), (10, 1, 0.0117), (4, 7, 0.549)]
    )
    def test_issue_figures(self, fixed: int, broken: int, expected: float) -> None:
        """The sign test's p-values match the issue's figures."""
        assert sign_test(fixed, broken).pvalue == pytest.approx(expected, abs=5e-4)

    def test_no_changes(self) -> None:
        """With no fixed and no broken tasks the sign test's p is 1."""
        assert sign_test(0, 0).pvalue == 1.0

    @pytest.mark.parametrize("b,c", [(1, 0), (0, 5), (9, 10), (12, 3)])
    def test_is_exact_mcnemar(self, b: int, c: int) -> None:
        """The sign test is the exact McNemar test, the two-sided binomial from scipy."""
        # Exact McNemar p = 2 * min(P(X <= min), 0.5), X ~ Binom(b + c, 1/2), capped at 1.
        ref = min(1.0, 2 * sps.binom.cdf(min(b, c), b + c, 0.5))
        assert sign_test(b, c).pvalue == pytest.approx(ref)


class TestSuite:
    def test_fixture_suite_pass_hat_5(self) -> None:
        """A suite shaped like the fixtures has suite pass^5 = 0.773 as the README says."""
        counts = {"searchRunbook": (12, 10), **{f"ok{i}": (12, 12) for i in range(19)},
                  **{f"bad{i}": (12, 0) for i in range(5)}}
        st = task_stats(outcomes("r", counts), 5)
        sm = summarise(st)
        assert round(sm.pass_hat_k.value, 3) == 0.773
        assert sm.flaky_tasks == 0 and sm.mixed_tasks == 1 and sm.undetermined_tasks == 25
        assert sm.tasks == 25 and sm.trials == 300

    def test_mean_of_per_task_not_power_of_mean(self) -> None:
        """Suite pass^k is the mean of per-task pass^k, not the mean rate to the power k."""
        # Two tasks at p̂ = 1 and p̂ = 0.5: mean p = 0.75, 0.75^2 = 0.5625, but pass^2 = (1 + 1/6) / 2.
        st = task_stats(outcomes("r", {"a": (4, 4), "b": (4, 2)}), 2)
        assert summarise(st).pass_hat_k.value == pytest.approx((1 + comb(2, 2) / comb(4, 2)) / 2)

    def test_se_is_over_tasks(self) -> None:
        """The suite's standard error is over tasks, with a t quantile on T - 1 degrees of freedom."""
        x = np.array([1.0, 0.5, 0.0, 0.75, 1.0])
        est = mean_estimate(x)
        assert est.se == pytest.approx(np.std(x, ddof=1) / np.sqrt(5))
        # The t quantile on T - 1 = 4 degrees of freedom (scipy.stats.t), no longer z = 1.96.
        assert est.ci[0] == pytest.approx(max(0, x.mean() - sps.t.ppf(0.975, 4) * est.se), abs=1e-12)
        assert not est.clustered and est.df == 4

    def test_clustered_se_miller(self) -> None:
        """The clustered standard error follows Miller (2024) eq. 4 written out by cluster."""
        x = np.array([1.0, 1.0, 0.0, 0.0, 0.5, 1.0])
        groups = ["a", "a", "b", "b", None, None]
        est = mean_estimate(x, groups, cluster_method="CR1")
        m = x.mean()
        # Miller (2024) eq. 4, written out by cluster: {a}, {b}, and the two singletons,
        # times the CR1 factor G/(G - 1) = 4/3 under the root (statsmodels' default).
        sandwich = np.sqrt(
            ((1 - m) + (1 - m)) ** 2 + ((0 - m) + (0 - m)) ** 2 + (0.5 - m) ** 2 + (1 - m) ** 2
        ) / 6
        assert est.clustered and est.se == pytest.approx(sandwich * np.sqrt(4 / 3))
        assert est.df == 3 and est.clusters == 4
        assert sandwich > np.sqrt(np.sum((x - m) ** 2)) / 6  # positive within-cluster correlation

    def test_warnings(self) -> None:
        """The summary warns of tasks with fewer than k trials and of too few tasks for an interval."""
        st = task_stats(outcomes("r", {"a": (4, 4), "b": (2, 1)}), 3)
        sm = summarise(st)
        assert sm.tasks_below_k == 1
        assert any("fewer than k = 3" in w for w in sm.warnings)
        assert any("only 2 tasks" in w for w in sm.warnings)

    def test_bernoulli_floor_warning(self) -> None:
        """pass^k taken over other tasks than pass@1 (strong tasks with too few trials) warns of the Bernoulli floor."""
        # A consistent per-task estimate can't fall below the floor; pass^k computed over a
        # different set of tasks than pass@1 can (here the strong tasks have too few trials).
        counts = {f"weak{i}": (10, 6) for i in range(40)} | {f"strong{i}": (2, 2) for i in range(200)}
        sm = summarise(task_stats(outcomes("r", counts), 3))
        assert any("Bernoulli floor" in w for w in sm.warnings)
        ok = summarise(task_stats(outcomes("r", {f"t{i}": (10, 9) for i in range(40)}), 3))
        assert not any("Bernoulli floor" in w for w in ok.warnings)

    def test_default_k_is_the_trials_most_tasks_have(self) -> None:
        """The default k is the trial count most tasks have."""
        # The mode of trials per task (ties: the smaller), not the smallest n.
        assert default_k([outcomes("r", {"a": (4, 4), "b": (7, 1)})]) == 4
        assert default_k([outcomes("r", {"a": (4, 4), "b": (7, 1), "c": (7, 7)})]) == 7


class TestGate:
    def counts(self, runbook: tuple[int, int]) -> dict[str, tuple[int, int]]:
        return {"searchRunbook": runbook, **{f"ok{i}": (12, 12) for i in range(19)},
                **{f"bad{i}": (12, 0) for i in range(5)}}

    def test_fails_on_the_flaky_task_only(self) -> None:
        """The gate fails on the flaky task alone, with one reason."""
        st = task_stats(outcomes("r", self.counts((12, 10))), 5)
        g = gate(st, summarise(st), 0.7, 0.2)
        assert not g.passed
        assert [t for t, _ in g.too_flaky] == ["searchRunbook"]
        assert len(g.reasons) == 1 and "flakiness" in g.reasons[0]

    def test_passes_after_fix(self) -> None:
        """With the flaky task fixed the gate passes."""
        st = task_stats(outcomes("r", self.counts((12, 12))), 5)
        assert gate(st, summarise(st), 0.7, 0.2).passed

    def test_floor(self) -> None:
        """A suite pass^k below the floor fails the gate and says so."""
        st = task_stats(outcomes("r", self.counts((12, 12))), 5)
        g = gate(st, summarise(st), 0.9, None)
        assert not g.passed and "below the floor 0.9" in g.reasons[0]


class TestPaired:
    def test_flips_and_only_in_one(self) -> None:
        """The paired comparison finds flipped tasks and lists tasks found in one run only."""
        a = task_stats(outcomes("A", {"x": (4, 4), "y": (4, 1), "z": (4, 2), "a_only": (4, 4)}), 1)
        b = task_stats(outcomes("B", {"x": (4, 2), "y": (4, 4), "z": (4, 2), "b_only": (4, 0)}), 1)
        cmp = compare_runs(a, b)
        assert cmp.fixed == ["y"] and cmp.broken == ["x"] and cmp.unchanged == 1
        assert cmp.only_a == ["a_only"] and cmp.only_b == ["b_only"]
        assert cmp.test.pvalue == 1.0
        diffs = np.array([-0.5, 0.75, 0.0])
        assert cmp.mean_diff.value == pytest.approx(diffs.mean())
        assert cmp.mean_diff.se == pytest.approx(diffs.std(ddof=1) / np.sqrt(3))
        assert cmp.mean_diff.ci[0] < 0  # differences keep negative bounds

    def test_no_common_task_has_no_interval(self) -> None:
        """Two runs without a common task give no paired interval."""
        a = task_stats(outcomes("A", {"x": (4, 4)}), 1)
        b = task_stats(outcomes("B", {"y": (4, 2)}), 1)
        cmp = compare_runs(a, b)
        assert cmp.tasks == [] and cmp.only_a == ["x"] and cmp.only_b == ["y"]
        assert np.isnan(cmp.mean_diff.value) and all(np.isnan(cmp.mean_diff.ci))
        assert verdict(cmp) == "the runs have no task in common: nothing to compare"

    def test_runs_of_the_same_tasks_compare_without_a_copy(self) -> None:
        """Two runs of the same tasks in the same order compare on their own statistics (take of
        every row in order is the statistics themselves); otherwise each side is the common tasks'."""
        counts = {"x": (4, 4), "y": (4, 1), "z": (4, 2)}
        a = task_stats(outcomes("A", counts), 1)
        b = task_stats(outcomes("B", {t: (n, n - c) for t, (n, c) in counts.items()}), 1)
        assert a.take(range(len(a))) is a
        cmp = compare_runs(a, b)
        assert cmp.a is a and cmp.b is b
        shuffled = task_stats(outcomes("B", {t: counts[t] for t in ("z", "x", "y")}), 1)
        other = compare_runs(a, shuffled)
        assert other.b is not shuffled and other.b.tasks == a.tasks
        assert other.b.p_hat.tolist() == a.p_hat.tolist()

    def test_verdicts(self) -> None:
        """7 fixed and none broken make B better; 7 fixed against 4 broken do not differ (McNemar p = 0.549)."""
        a = task_stats(outcomes("A", {f"t{i}": (1, 0) for i in range(11)}), 1)
        b_counts = {f"t{i}": (1, 1 if i < 7 else 0) for i in range(11)}
        cmp = compare_runs(a, task_stats(outcomes("B", b_counts), 1))
        assert cmp.test.fixed == 7 and cmp.test.broken == 0
        assert verdict(cmp).startswith("B is better")
        a2 = task_stats(outcomes("A", {f"t{i}": (1, 1 if i >= 7 else 0) for i in range(11)}), 1)
        b2 = task_stats(outcomes("B", {f"t{i}": (1, 1 if i < 7 else 0) for i in range(11)}), 1)
        cmp2 = compare_runs(a2, b2)
        assert (cmp2.test.fixed, cmp2.test.broken) == (7, 4)
        # One trial each: the primary test is the exact McNemar test on the 11 discordant tasks.
        assert cmp2.primary.pvalue == pytest.approx(0.548828125)
        assert verdict(cmp2).startswith("not shown to differ at 5%: within-task permutation test p = 0.55 (primary")


class TestDistinctPairs:
    """task_stats computes each statistic once per distinct (n, c) pair: the same values as
    computing it on every task."""

    @pytest.mark.parametrize("top", [1, 5, 40, pytest.param(2100, marks=pytest.mark.slow)])  # 2100: past the table, np.unique's path
    def test_same_as_task_by_task(self, top: int) -> None:
        """Statistics computed once per distinct (n, c) pair equal those computed task by task."""
        from flaketui.stats import estimators as est
        from flaketui.stats.suite import count_pairs

        rng = np.random.default_rng(top)
        n = rng.integers(0, top + 1, 300 if top > 100 else 3000)
        c = rng.integers(0, n + 1)
        un, uc, inv = count_pairs(n, c)
        assert np.array_equal(un[inv], n) and np.array_equal(uc[inv], c)
        assert len(set(zip(un.tolist(), uc.tolist(), strict=True))) == un.size
        outcomes = RunOutcomes("r", [f"t{i}" for i in range(n.size)], n, c, np.zeros_like(n),
                               [None] * n.size, np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])
        for k in (1, 3):
            st = task_stats(outcomes, k)
            np.testing.assert_array_equal(st.p_hat, est.p_hat(n, c))
            np.testing.assert_array_equal(st.p_hat_ci.low, est.wilson_interval(n, c).low)
            np.testing.assert_array_equal(st.pass_at_k, est.pass_at_k(n, c, k))
            np.testing.assert_array_equal(st.pass_hat_k, est.pass_hat_k(n, c, k))
            np.testing.assert_array_equal(st.pass_hat_k_ci.high, est.pass_hat_k_interval(n, c, k).high)
            boot = task_stats(outcomes, k, passk_ci="bootstrap")
            np.testing.assert_array_equal(boot.pass_hat_k_ci.low,
                                          est.pass_hat_k_interval(n, c, k, method="bootstrap").low)
            np.testing.assert_array_equal(st.flakiness, est.flakiness(n, c))
            assert st.classes == evidence_classes(n, c)
            np.testing.assert_array_equal(st.mixed, mixed(n, c))


@pytest.mark.parametrize("k", [1, 2, 3, 7, 40])
def test_k_figures_are_the_estimators_bits(k: int) -> None:
    """k_figures (once per distinct (n, c) pair) gives the estimators' very values."""
    from flaketui.stats import estimators as est
    from flaketui.stats.suite import k_figures

    rng = np.random.default_rng(k)
    n = rng.integers(0, 30, 5000)
    c = (rng.random(5000) * (n + 1)).astype(np.int64)
    at, hat, interval = k_figures(n, c, k)
    np.testing.assert_array_equal(at, est.pass_at_k(n, c, k))
    np.testing.assert_array_equal(hat, est.pass_hat_k(n, c, k))
    np.testing.assert_array_equal(interval.low, est.pass_hat_k_interval(n, c, k).low)
    np.testing.assert_array_equal(interval.high, est.pass_hat_k_interval(n, c, k).high)
    _, _, boot = k_figures(n, c, k, passk_ci="bootstrap")
    np.testing.assert_array_equal(boot.high, est.pass_hat_k_interval(n, c, k, method="bootstrap").high)
    with pytest.raises(ValueError):
        k_figures(np.array([3, 2]), np.array([1, 5]), k)  # more passes than trials


def test_z_value_is_the_normal_quantile() -> None:
    """The 95% z kept as a literal is NormalDist's own float; other levels are computed, both
    pinned to scipy's normal quantile."""
    from statistics import NormalDist

    from flaketui.stats.estimators import Z_95, z_value

    assert z_value() == Z_95 == NormalDist().inv_cdf(0.975)
    assert z_value(0.95) == pytest.approx(sps.norm.ppf(0.975), rel=1e-15)
    assert z_value(0.9) == pytest.approx(sps.norm.ppf(0.95), rel=1e-15)
    with pytest.raises(ValueError):
        z_value(1.0)


def test_lazy_package_names_are_the_modules_own() -> None:
    """flaketui.stats gives each public name from its module on first use, and only those."""
    import flaketui.stats as stats
    from flaketui.stats import paired, suite
    from flaketui.stats import verdict as again  # the function, though its module is imported now

    assert stats.compare_runs is paired.compare_runs
    assert stats.summarise is suite.summarise
    assert stats.verdict is verdict is sys.modules["flaketui.stats.verdict"].verdict
    assert again is verdict
    assert set(stats.__all__) == {*stats._MODULE_OF, "verdict"}
    assert set(stats.__all__) <= set(dir(stats))
    with pytest.raises(AttributeError):
        _ = stats.no_such_name


def test_json_report_imports_neither_the_paired_tests_nor_statistics(tmp_path: Path) -> None:
    """`report --format json` imports only the statistics it uses (the paired tests, verdict's
    evidence and the statistics module cost a warm report's start about 17 ms)."""
    import subprocess

    log = tmp_path / "log.jsonl"
    log.write_text("".join(f'{{"task": "t{i % 3}", "passed": {str(i % 2 == 0).lower()}}}\n' for i in range(12)))
    code = ("import sys\nfrom flaketui.cli import main\n"
            "try:\n    main(['report', sys.argv[1], '--format', 'json', '--no-cache'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('statistics', 'flaketui.stats.paired', "
            "'flaketui.stats.permutation', 'flaketui.stats.exact')), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True)
    assert '"tasks": [' in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "[]"
