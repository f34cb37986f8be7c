"""Planning: rule of three, Wilson width, decisions, sample sizes, projection, allocation.

Expected values come from the issue (683 tasks; 0 of 300 below 1 in 100; 0 of 1,500 →
0.001995; 0 of 3,000 below 1 in 1,000), from scipy (beta quantiles for the one-sided
Clopper-Pearson bound, binomial pmfs for exact power by enumeration) and from closed
forms worked by hand (noted at each test).
"""

from __future__ import annotations

import heapq
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import beta, binom

from flaketui.loading import load_logs
from flaketui.loading.extras import TaskExtras, read_task_extras, tags_of
from flaketui.stats.allocation import allocate, pass_hat_k_variance_coef, shrunk_rate
from flaketui.stats.estimators import pass_at_k, pass_hat_k, rule_of_three, wilson_interval
from flaketui.stats.plan import PlanOptions, make_plan
from flaketui.stats.power import discordance, tasks_independent, tasks_paired
from flaketui.stats.precision import (
    UNDECIDED,
    confidence_sequence,
    decide,
    more_clean_trials,
    trials_for_width,
    trials_to_bound,
    wilson_width,
)
from flaketui.stats.projection import projection
from flaketui.stats.risk import HIGH, LOW
from tests.conftest import BASELINE, CANDIDATE, FIXTURES
from tests.helpers.planning import write_log

Z95 = 1.959963984540054


# --- rule of three -------------------------------------------------------------------


class TestRuleOfThree:
    def test_issue_figures(self) -> None:
        """The rule of three bounds 300, 1,500 and 3,000 clean trials at the figures the planning issue quotes."""
        # The issue: 0 of 300 -> below 1 in 100; 0 of 1,500 -> 0.001995;
        # 0 of 3,000 -> below 1 in 1,000.
        assert float(rule_of_three(300)) < 0.01
        assert round(float(rule_of_three(1500)), 6) == 0.001995
        assert float(rule_of_three(3000)) < 0.001

    @pytest.mark.parametrize("n", [1, 12, 300, 1500, 3000, 100_000])
    def test_is_the_one_sided_clopper_pearson_bound(self, n: int) -> None:
        """The rule of three equals scipy's one-sided 95% Clopper-Pearson upper bound, Beta(0.95; 1, n)."""
        # With 0 events, the exact upper bound is the 0.95 quantile of Beta(1, n) (scipy).
        assert float(rule_of_three(n)) == pytest.approx(beta.ppf(0.95, 1, n), rel=1e-10)

    @pytest.mark.parametrize(
        ("target", "expected"),
        # ceil(ln 0.05 / ln(1 - target)), worked with math.log: 298.07, 1496.0, 2994.2, 2995730.8
        [(0.01, 299), (0.002, 1497), (0.001, 2995), (1e-6, 2_995_731)],
    )
    def test_trials_to_bound(self, target: float, expected: int) -> None:
        """trials_to_bound returns the smallest n whose rule-of-three bound reaches the target."""
        n = trials_to_bound(target)
        assert n == expected
        assert float(rule_of_three(n)) <= target < float(rule_of_three(n - 1))

    def test_one_in_a_million_needs_about_three_million(self) -> None:
        """Bounding a one-in-a-million failure rate takes about three million clean trials, -ln(0.05)/p."""
        assert 2.9e6 < trials_to_bound(1e-6) < 3.1e6
        # ≈ 3/n: the rule of three itself
        assert trials_to_bound(1e-6) == pytest.approx(-math.log(0.05) / 1e-6, rel=1e-5)

    def test_other_confidence(self) -> None:
        """At 99% confidence the trials needed are ceil(ln(0.01)/ln(0.99)) and the smallest that bound."""
        n = trials_to_bound(0.01, confidence=0.99)
        assert float(rule_of_three(n, 0.99)) <= 0.01 < float(rule_of_three(n - 1, 0.99))
        assert n == math.ceil(math.log(0.01) / math.log(0.99))  # 459

    @pytest.mark.parametrize("target", [0, 1, -0.1, 1.5])
    def test_bad_target(self, target: float) -> None:
        """A target outside (0, 1) is refused with a ValueError naming the target."""
        with pytest.raises(ValueError, match="target"):
            trials_to_bound(target)

    def test_more_clean_trials(self) -> None:
        """The clean trials still needed are counted for clean tasks only; tasks with failures or no trials get NaN."""
        out = more_clean_trials([12, 12, 12, 300, 0], [12, 0, 6, 300, 0], 0.01)
        assert out[0] == 299 - 12 and out[1] == 299 - 12
        assert np.isnan(out[2]) and np.isnan(out[4])
        assert out[3] == 0


# --- Wilson width and decisions ---------------------------------------------------------


class TestWilsonWidth:
    @pytest.mark.parametrize(("n", "c"), [(1, 0), (12, 12), (12, 10), (49, 44), (1000, 3)])
    def test_matches_wilson_interval_at_whole_counts(self, n: int, c: int) -> None:
        """wilson_width equals the width of wilson_interval at whole pass counts."""
        ci = wilson_interval(n, c)
        assert float(wilson_width(n, c / n)) == pytest.approx(float(ci.high - ci.low), abs=1e-12)

    def test_worst_case_closed_form(self) -> None:
        """At p = 0.5 the trials for a width match the closed form ceil((z/w)^2 - z^2) (381 for 0.1)."""
        # At p = 0.5 the width is z / sqrt(n + z²), so width ≤ W needs n ≥ (z/W)² − z².
        for w in (0.3, 0.1, 0.05, 0.02):
            assert int(trials_for_width(0.5, w)) == math.ceil((Z95 / w) ** 2 - Z95**2)
        assert int(trials_for_width(0.5, 0.1)) == 381

    def test_clean_task_closed_form(self) -> None:
        """A clean task needs ceil(z^2(1 - w)/w) = 35 trials for a width of 0.1."""
        # At p = 1 the width is z²/(n + z²): ≤ W needs n ≥ z²(1 − W)/W (34.6 at W = 0.1).
        assert int(trials_for_width(1.0, 0.1)) == 35 == math.ceil(Z95**2 * 0.9 / 0.1)

    @pytest.mark.parametrize("p", [0.0, 0.02, 1 / 3, 0.5, 0.833, 0.99, 1.0])
    @pytest.mark.parametrize("w", [0.05, 0.1, 0.25])
    def test_smallest_n(self, p: float, w: float) -> None:
        """trials_for_width returns the smallest n whose Wilson width is at most the target."""
        n = int(trials_for_width(p, w))
        assert float(wilson_width(n, p)) <= w < float(wilson_width(n - 1, p))

    def test_vectorised_shape(self) -> None:
        """trials_for_width takes an array of rates and returns one count each."""
        out = trials_for_width(np.array([0.5, 1.0, 0.0]), 0.1)
        assert out.tolist() == [381, 35, 35]

    def test_bad_width(self) -> None:
        """A width of zero is refused with a ValueError naming the width."""
        with pytest.raises(ValueError, match="width"):
            trials_for_width(0.5, 0.0)


class TestDecide:
    # Decisions read the Robbins-mixture confidence sequence (flaketui.stats.precision); its
    # bounds are pinned against scipy brentq on betaln in tests/unit/test_anytime.py. At n of n
    # the lower bound is (0.05/(n + 1))^(1/n): 0.8991 at 68, 0.9003 at 69 (worked with math.log).
    @pytest.mark.parametrize(
        ("n", "c", "expected"),
        [
            (12, 12, UNDECIDED),  # CS [0.63, 1]: could fail one time in three
            (35, 35, UNDECIDED),  # decided by the fixed-n Wilson interval, not by the CS
            (68, 68, UNDECIDED),  # (0.05/69)^(1/68) = 0.8991 < 0.9
            (69, 69, "stable-pass"),  # (0.05/70)^(1/69) = 0.9003
            (69, 0, "stable-fail"),
            (40, 20, "flaky"),  # CS [0.27, 0.73] inside [0.1, 0.9]
            (12, 10, UNDECIDED),  # CS [0.42, 0.99] crosses 0.9
            (12, 6, "flaky"),  # CS [0.149, 0.851]
            (3, 1, UNDECIDED),
            (0, 0, "no-trials"),
        ],
    )
    def test_cases(self, n: int, c: int, expected: str) -> None:
        """decide classes hand-picked counts as stable-pass, stable-fail, flaky or undecided as expected."""
        assert decide([n], [c]) == [expected]

    def test_definition_is_the_confidence_sequence_in_one_zone(self) -> None:
        """Each decision holds exactly when the confidence sequence lies inside that decision's zone."""
        rng = np.random.default_rng(5)
        n = rng.integers(1, 200, 500)
        c = rng.binomial(n, rng.uniform(0, 1, 500))
        cs = confidence_sequence(n, c)
        for d, lo, hi in zip(decide(n, c, margin=0.2), cs.low, cs.high, strict=True):
            if d == "stable-pass":
                assert lo >= 0.8 - 1e-12
            elif d == "stable-fail":
                assert hi <= 0.2 + 1e-12
            elif d == "flaky":
                assert lo >= 0.2 - 1e-12 and hi <= 0.8 + 1e-12
            else:
                assert d == UNDECIDED
                assert lo < 0.8 and hi > 0.2 and not (lo >= 0.2 and hi <= 0.8)

    def test_bad_margin(self) -> None:
        """A margin of 0.5 or more (zones that meet) is refused."""
        with pytest.raises(ValueError, match="margin"):
            decide([1], [1], margin=0.5)


# --- sample sizes -----------------------------------------------------------------------


def ztest_power(n: int, p1: float, p2: float) -> float:
    """Exact power of the unpooled two-proportion z-test, enumerating both binomials (scipy)."""
    x = np.arange(n + 1)
    a = (x / n)[:, None]
    b = (x / n)[None, :]
    with np.errstate(all="ignore"):
        stat = np.abs(b - a) / np.sqrt((a * (1 - a) + b * (1 - b)) / n)
    prob = binom.pmf(x, n, p1)[:, None] * binom.pmf(x, n, p2)[None, :]
    return float(prob[stat > Z95].sum())


def mcnemar_power(n: int, p10: float, p01: float) -> float:
    """Exact power of McNemar's z-test |c − b|/√(b + c) > z, enumerating the trinomial."""
    b = np.arange(n + 1)[:, None]
    c = np.arange(n + 1)[None, :]
    ok = b + c <= n
    rest = np.where(ok, n - b - c, 0)
    with np.errstate(all="ignore"):
        logp = (gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(rest + 1)
                + b * np.log(p10) + c * np.log(p01) + rest * np.log(1 - p10 - p01))
        stat = np.abs(c - b) / np.sqrt(b + c)
    return float(np.exp(logp)[ok & (b + c > 0) & (stat > Z95)].sum())


class TestSampleSize:
    def test_issue_figure_683(self) -> None:
        """Telling 85% from 90% with independent tasks needs 683 tasks at 80% power, in either order."""
        # The issue: 85% vs 90% at 80% power and 5% needs about 683 tasks per model.
        s = tasks_independent(0.85, 0.90, power=0.8, alpha=0.05)
        assert s.tasks == 683
        assert tasks_independent(0.90, 0.85).tasks == 683

    def test_683_has_the_power(self) -> None:
        """683 tasks give about 80% power by the z-test's power function, and 300 tasks under half."""
        # Exact enumeration (scipy binomial pmfs): the z-test at n = 683 has ≈ 80% power.
        assert 0.78 < ztest_power(683, 0.85, 0.90) < 0.83
        assert ztest_power(300, 0.85, 0.90) < 0.5

    def test_independent_matches_the_formula(self) -> None:
        """tasks_independent equals the two-proportion sample-size formula computed with scipy's normal quantiles."""
        from scipy.stats import norm

        zs = norm.ppf(0.995) + norm.ppf(0.9)
        n = zs**2 * (0.5 * 0.5 + 0.6 * 0.4) / 0.1**2
        assert tasks_independent(0.5, 0.6, power=0.9, alpha=0.01).tasks == math.ceil(n)

    def test_paired_connor(self) -> None:
        """Connor's paired design needs 312 tasks, whose exact McNemar power is about 80%, far fewer than 683."""
        # Connor (1987): n = (z_{α/2}√ψ + z_β√(ψ − δ²))²/δ²; ψ = 0.1, δ = 0.05:
        # (1.95996·0.316228 + 0.841621·0.312250)² / 0.0025 = 311.6 → 312.
        s = tasks_paired(0.1, 0.05)
        assert s.tasks == 312 and s.design == "paired"
        # Exact power of McNemar's test at 312 pairs (p10 = 0.025, p01 = 0.075): ≈ 80%.
        assert 0.78 < mcnemar_power(312, 0.025, 0.075) < 0.86
        # ... far fewer than the 683 tasks per model of the independent design.
        assert s.tasks < tasks_independent(0.85, 0.90).tasks

    def test_paired_raises_discordance_below_the_difference(self) -> None:
        """A discordance below the difference is raised to it, said in the note, and the count follows the formula."""
        s = tasks_paired(0.02, 0.05)
        assert s.discordance == pytest.approx(0.05)
        assert "below the difference" in s.note
        # ψ = |δ|: every disagreement one way: (z√δ + z_β√(δ − δ²))²/δ²
        expected = (Z95 * math.sqrt(0.05) + 0.8416212335729143 * math.sqrt(0.05 - 0.0025)) ** 2
        assert s.tasks == math.ceil(expected / 0.0025)

    def test_no_difference(self) -> None:
        """With no difference to detect, no sample size is given."""
        assert tasks_independent(0.8, 0.8).tasks is None
        assert tasks_paired(0.1, 0.0).tasks is None

    @pytest.mark.parametrize(("power", "alpha"), [(0, 0.05), (1, 0.05), (0.8, 0), (0.8, 1.2)])
    def test_bad_power_alpha(self, power: float, alpha: float) -> None:
        """Power or alpha outside (0, 1) is refused."""
        with pytest.raises(ValueError):
            tasks_independent(0.8, 0.9, power=power, alpha=alpha)

    def test_discordance_of_the_fixtures(self) -> None:
        """The fixtures' discordance and difference equal the values worked out by hand from their two changed tasks."""
        log = load_logs([BASELINE, CANDIDATE])
        d = discordance(log.run_outcomes("oncall-baseline"), log.run_outcomes("oncall-candidate"))
        # searchRunbook 10/12 → 12/12 disagrees with chance 2/12; summarizeIncident 12/12 → 0/12
        # always; the other 23 tasks never: ψ = (1/6 + 1)/25, δ = (2/12 − 1)/25.
        assert d.tasks == 25
        assert d.discordance == pytest.approx((1 / 6 + 1) / 25)
        assert d.difference == pytest.approx((2 / 12 - 1) / 25)
        assert d.discordance >= abs(d.difference)


# --- projection and variance ----------------------------------------------------------------


class TestProjection:
    def test_by_hand(self) -> None:
        """pass^k and pass@k match values worked by hand; the lower bound is the mean squared Wilson low."""
        # Tasks 10/10 and 5/10: pass^2 = (1 + 0.25)/2, pass@2 = (1 + 0.75)/2
        row = projection([10, 10], [10, 5], [2])[0]
        assert row.pass_hat_k == pytest.approx(0.625)
        assert row.pass_at_k == pytest.approx(0.875)
        lo = wilson_interval([10, 10], [10, 5]).low
        assert row.pass_hat_k_low == pytest.approx(float(np.mean(lo**2)))

    def test_measured_uses_the_unbiased_estimators(self) -> None:
        """The measured figures are the unbiased pass^k and pass@k, leaving out tasks with fewer than k trials."""
        n, c = np.array([12, 12, 8]), np.array([10, 12, 3])
        rows = {r.k: r for r in projection(n, c, [5, 10])}
        assert rows[5].measured_pass_hat_k == pytest.approx(float(np.mean(pass_hat_k(n, c, 5))))
        assert rows[5].measured_pass_at_k == pytest.approx(float(np.mean(pass_at_k(n, c, 5))))
        assert rows[5].measured_tasks == 3
        assert rows[10].measured_tasks == 2  # the task with 8 trials is left out

    def test_never_a_mean_rate_to_the_power(self) -> None:
        """Projected pass^k averages per-task powers and is never the mean rate raised to k."""
        row = projection([10, 10], [10, 0], [3])[0]
        assert row.pass_hat_k == pytest.approx(0.5)  # not 0.5**3
        assert row.pass_hat_k != pytest.approx(0.5**3)

    def test_delta_method_variance_matches_the_exact_variance_at_large_n(self) -> None:
        """The delta-method variance of pass^k matches the exact binomial variance at n = 4000."""
        # Exact Var of C(C,k)/C(n,k) with C ~ Binomial(n, p), from the pmf (scipy), against a/n
        # at the shrunk rate of c = p·n (close to p at this n).
        n, k, p = 4000, 3, 0.9
        x = np.arange(n + 1)
        est = pass_hat_k(np.full(x.shape, n), x, k)
        pmf = binom.pmf(x, n, p)
        exact = float(np.sum(pmf * est**2) - np.sum(pmf * est) ** 2)
        a = float(pass_hat_k_variance_coef(n, p * n, k))
        assert a / n == pytest.approx(exact, rel=0.02)

    def test_shrunk_rate_is_the_wilson_centre(self) -> None:
        """The shrunk rate is the Wilson centre (c + z^2/2)/(n + z^2), inside the interval."""
        ci = wilson_interval(12, 12)
        # The Wilson centre (c + z²/2)/(n + z²) is the midpoint only when the interval is
        # unclipped; check it directly: (12 + 1.92)/(12 + 3.84) = 0.8788.
        assert float(shrunk_rate(12, 12)) == pytest.approx((12 + Z95**2 / 2) / (12 + Z95**2))
        assert float(ci.low) < float(shrunk_rate(12, 12)) < 1
        assert 0 < float(shrunk_rate(12, 0)) < 0.2


# --- allocation ---------------------------------------------------------------------------


def greedy_reference(n: list[int], a: list[float], budget: int, eligible: list[bool],
                     cap: list[int], minimum: list[int]) -> list[int]:
    """Trial by trial, the plain way: minimums by largest shortfall, then the largest gain."""
    extra = [0] * len(n)
    left = budget
    while left:
        short = [max(0, m - (x + e)) for m, x, e in zip(minimum, n, extra, strict=True)]
        if max(short, default=0) == 0:
            break
        i = max(range(len(n)), key=lambda j: (short[j], -j))
        extra[i] += 1
        left -= 1
    base = list(extra)
    heap = []
    for i in range(len(n)):
        if eligible[i] and a[i] > 0 and cap[i] > 0:
            m = n[i] + base[i]
            g = math.inf if m == 0 else a[i] / (m * (m + 1))
            heap.append((-g, i))
    heapq.heapify(heap)
    while left and heap:
        _, i = heapq.heappop(heap)
        extra[i] += 1
        left -= 1
        if extra[i] - base[i] < cap[i]:
            m = n[i] + extra[i]
            heapq.heappush(heap, (-(a[i] / (m * (m + 1))), i))
    return extra


class TestAllocate:
    def test_by_hand(self) -> None:
        """Trials go where they cut the summed variance most, on two small cases worked by hand."""
        # gains a/(m(m+1)) at m = 10: 4/110 and 3/110; then 4/132 > 3/110; then 3/110 > 4/156
        assert allocate([10, 10], [4.0, 3.0], 3, [True, True]).extra.tolist() == [2, 1]
        assert allocate([10, 10], [4.0, 1.0], 3, [True, True]).extra.tolist() == [3, 0]

    @pytest.mark.parametrize("seed", range(12))
    def test_matches_trial_by_trial_greedy(self, seed: int) -> None:
        """The allocation equals a trial-by-trial greedy reference on random inputs with ties, caps and minimums."""
        rng = np.random.default_rng(seed)
        units = int(rng.integers(1, 30))
        n = rng.integers(0, 40, units).tolist()
        a = np.round(rng.uniform(0, 2, units), 3).tolist()  # rounding makes ties likely
        a[0] = a[-1]
        eligible = (rng.uniform(size=units) < 0.7).tolist()
        cap = rng.integers(0, 500, units).tolist()
        minimum = rng.integers(0, 12, units).tolist()
        budget = int(rng.choice([0, 1, 7, 50, 300, 2000, 20000]))
        got = allocate(n, a, budget, eligible, cap, minimum)
        want = greedy_reference(n, a, budget, eligible, cap, minimum)
        assert got.extra.tolist() == want
        assert got.spent == sum(want) == int(got.extra.sum())

    @pytest.mark.parametrize("seed", range(20))
    def test_spends_exactly_the_budget_and_never_on_a_decided_task(self, seed: int) -> None:
        """Without caps the whole budget is spent, and decided tasks get only their minimum top-up."""
        rng = np.random.default_rng(100 + seed)
        units = int(rng.integers(2, 60))
        n = rng.integers(1, 50, units)
        a = rng.uniform(0.01, 3, units)
        eligible = rng.uniform(size=units) < 0.5
        eligible[0] = True  # at least one undecided task, no cap: the budget can always be spent
        minimum = rng.integers(0, 15, units)
        budget = int(rng.integers(0, 100_000))
        got = allocate(n, a, budget, eligible, None, minimum)
        assert got.spent == budget == int(got.extra.sum())
        assert got.reason == ""
        # A decided task gets exactly what its risk minimum requires, nothing beyond.
        decided = ~eligible
        need = np.maximum(0, minimum - n)
        assert np.all(got.extra[decided] <= need[decided])
        if budget >= need.sum():
            assert np.array_equal(got.extra[decided], need[decided])
            assert np.array_equal(got.topup, need)

    def test_optimal_on_small_cases(self) -> None:
        """The allocation minimises the summed variance, checked against every split of small budgets."""
        # Brute force over every way to split the budget: greedy reaches the minimum Σ a/n.
        n = np.array([3, 5, 1])
        a = np.array([2.0, 5.0, 0.3])
        for budget in range(0, 9):
            got = allocate(n, a, budget, [True, True, True]).extra
            best = min(
                float(np.sum(a / (n + np.array(s))))
                for s in itertools.product(range(budget + 1), repeat=3)
                if sum(s) == budget
            )
            assert float(np.sum(a / (n + got))) == pytest.approx(best)

    def test_every_task_decided_says_why(self) -> None:
        """With every task decided nothing is spent and the reason says the budget was left unspent."""
        got = allocate([40, 40], [1.0, 1.0], 25, [False, False], minimum=[3, 3])
        assert got.spent == 0 and got.extra.tolist() == [0, 0]
        assert "25 of 25 trials left unspent" in got.reason and "decided" in got.reason

    def test_caps_stop_spending_and_say_why(self) -> None:
        """Caps stop the spending and the reason counts the trials left unspent."""
        got = allocate([10, 10], [1.0, 1.0], 100, [True, True], cap=[5, 7])
        assert got.extra.tolist() == [5, 7]
        assert got.spent == 12 and "88 of 100" in got.reason

    def test_minimums_come_first_largest_shortfall_first(self) -> None:
        """A budget short of the minimums goes to the largest shortfall first, ties to the earlier task."""
        got = allocate([2, 8, 50], [0.1, 0.1, 9.0], 8, [True, True, True], minimum=[10, 10, 0])
        # Shortfalls 8 and 2 cost 10 > 8: one at a time to the largest shortfall (ties: the
        # earlier unit): 6 to the first (8 → 2), 1 more on the tie (→ 1), then 1 to the second.
        assert got.extra.tolist() == [7, 1, 0]
        assert got.topup.tolist() == [7, 1, 0]
        assert got.spent == 8

    @pytest.mark.parametrize("seed", range(8))
    def test_minimums_short_of_budget_match_one_at_a_time(self, seed: int) -> None:
        """Minimum top-ups under a short budget equal the one-trial-at-a-time reference on random inputs."""
        # The top-up is found as a level, not trial by trial: it must give the same trials.
        rng = np.random.default_rng(200 + seed)
        units = int(rng.integers(1, 60))
        n = rng.integers(0, 6, units).tolist()
        minimum = rng.choice([0, 3, 10, 10, 20], units).tolist()  # repeated values make ties
        short = sum(max(0, m - x) for m, x in zip(minimum, n, strict=True))
        budget = int(rng.integers(0, short)) if short else 0
        got = allocate(n, [1.0] * units, budget, [True] * units, None, minimum)
        want = greedy_reference(n, [1.0] * units, budget, [True] * units, [10**6] * units, minimum)
        assert got.extra.tolist() == got.topup.tolist() == want

    def test_many_tied_units_match_trial_by_trial(self) -> None:
        """Hundreds of tied tasks are served in the same order as the trial-by-trial reference."""
        # Identical units tie on every gain: the trials left after the bulk go to the earliest.
        n, a = [5] * 300 + [7] * 300, [0.25] * 600
        for budget in (1, 299, 301, 1234):
            got = allocate(n, a, budget, [True] * 600, [50] * 600)
            assert got.extra.tolist() == greedy_reference(n, a, budget, [True] * 600, [50] * 600, [0] * 600)

    def test_units_without_trials_come_first(self) -> None:
        """A task without trials gets the first trial whatever the others' variance."""
        got = allocate([0, 30], [0.5, 100.0], 1, [True, True])
        assert got.extra.tolist() == [1, 0]

    @pytest.mark.parametrize("budget", [-1, 2.5, True])
    def test_bad_budget(self, budget: object) -> None:
        """A negative, fractional or boolean budget is refused."""
        with pytest.raises(ValueError, match="budget"):
            allocate([1], [1.0], budget, [True])  # type: ignore[arg-type]

    def test_large_budget_is_fast(self) -> None:
        """Ten million trials over 20,000 tasks are allocated in under five seconds."""
        import time

        rng = np.random.default_rng(1)
        t0 = time.perf_counter()
        got = allocate(rng.integers(1, 50, 20_000), rng.uniform(0, 1, 20_000), 10_000_000,
                       np.ones(20_000, bool))
        assert got.spent == 10_000_000
        assert time.perf_counter() - t0 < 5


# --- tiers and the whole plan -----------------------------------------------------------


class TestTiers:
    def test_tags_of(self) -> None:
        """tags_of gathers tags and risk, lower-cased and stripped, ignoring non-strings and empty values."""
        tags = tags_of({"tags": ["Write", " db "], "risk": "high-risk"})
        assert tags == {"write", "db", "high-risk"}
        assert tags_of({"tags": "read-only"}) == {"read-only"}
        assert tags_of({"tags": [1, None], "risk": ""}) == set()

    def test_read_task_extras(self, tmp_path: Path) -> None:
        """Each task's tags and temperature are read from its trials."""
        path = write_log(tmp_path / "r.jsonl", {
            "deploy": (4, 4, {"tags": ["write"], "temperature": 0.0}),
            "lookup": (4, 4, {"risk": "read-only"}),
            "plain": (2, 1, {}),
        })
        log = load_logs([path])
        extras = read_task_extras(log, log.run_outcomes("r"))
        assert extras["deploy"] == TaskExtras(frozenset({"write"}), 0.0)
        assert extras["lookup"].tags == frozenset({"read-only"})
        assert extras["plain"] == TaskExtras()

    def test_tagged_and_flaky_tasks_get_the_high_minimum(self, tmp_path: Path) -> None:
        """Risk-tagged and flaky tasks get the high minimum, the others the low one."""
        path = write_log(tmp_path / "r.jsonl", {
            "deploy": (4, 4, {"tags": ["write"], "temperature": 0.0}),
            "drop": (2, 2, {"risk": "high-risk"}),
            "wobbly": (6, 3, {}),
            "lookup": (1, 1, {}),
        })
        log = load_logs([path])
        o = log.run_outcomes("r")
        extras = {("r", t): e for t, e in read_task_extras(log, o).items()}
        plan = make_plan([o], PlanOptions(budget=30, min_trials=10, low_min_trials=3), extras)
        rows = {t.task: t for t in plan.runs[0].tasks}
        assert rows["deploy"].tier == HIGH and rows["deploy"].tier_reason == "tagged write"
        assert rows["drop"].tier == HIGH
        # Flaky in the planned run only: not "flaky before" (no run came before it).
        assert rows["wobbly"].tier == LOW and "flaky before" not in rows["wobbly"].tier_reason
        assert rows["lookup"].tier == LOW
        for t in rows.values():
            assert t.n + t.extra >= t.minimum
        assert rows["deploy"].extra >= 6 and "minimum 10" in rows["deploy"].why
        assert plan.spent == 30
        assert any("temperature 0" in n for n in plan.notes)

    def test_custom_risk_tags(self, tmp_path: Path) -> None:
        """--risk-tag replaces the default risk tags."""
        path = write_log(tmp_path / "r.jsonl", {"a": (5, 5, {"tags": ["db"]}),
                                                "b": (5, 5, {"tags": ["write"]})})
        log = load_logs([path])
        o = log.run_outcomes("r")
        extras = {("r", t): e for t, e in read_task_extras(log, o).items()}
        plan = make_plan([o], PlanOptions(risk_tags=("db",)), extras)
        tiers = {t.task: t.tier for t in plan.runs[0].tasks}
        assert tiers == {"a": HIGH, "b": LOW}


class TestMakePlan:
    @pytest.mark.parametrize("budget", [0, 1, 37, 300, 500, 1000])
    def test_fixtures_spend_exactly_and_skip_decided(self, budget: int) -> None:
        """On the fixtures the plan spends exactly the budget, and decided tasks get no more than their minimum."""
        log = load_logs([FIXTURES])
        outcomes = [log.run_outcomes(r) for r in log.runs]
        plan = make_plan(outcomes, PlanOptions(budget=budget))
        assert plan.spent == budget == sum(t.extra for r in plan.runs for t in r.tasks)
        assert sum(line.extra_trials for line in plan.lines()) == budget
        for r in plan.runs:
            for t in r.tasks:
                if t.decision not in (UNDECIDED, "no-trials"):
                    assert t.extra <= max(0, t.minimum - t.n)
                # The cap: the width target or, for a clean task, the trials that decide it.
                assert t.n + t.extra <= max(t.n, t.minimum, t.trials_for_width,
                                            t.n + (t.to_decide or 0))

    def test_fixture_figures(self) -> None:
        """The fixtures' plan pins searchRunbook's counts and lookupOwner's rule-of-three figures."""
        log = load_logs([FIXTURES])
        outcomes = [log.run_outcomes(r) for r in log.runs]
        plan = make_plan(outcomes, PlanOptions(budget=300, k=5))
        base = {t.task: t for t in plan.runs[0].tasks}
        run = base["searchRunbook"]
        assert (run.n, run.passes, run.decision) == (12, 10, UNDECIDED)
        assert run.rule_of_three is None and run.more_clean is None
        clean = base["lookupOwner"]
        assert clean.rule_of_three == pytest.approx(1 - 0.05 ** (1 / 12))
        assert clean.more_clean == 299 - 12
        assert clean.trials_for_width == 35
        # searchRunbook was flaky in the baseline: high tier in both runs
        cand = {t.task: t for t in plan.runs[1].tasks}
        assert cand["searchRunbook"].tier == HIGH and base["lookupOwner"].tier == LOW
        assert plan.runs[0].se_after < plan.runs[0].se_now
        assert plan.runs[0].pass_hat_k.value == pytest.approx((7 / 22 + 19) / 25)
        assert plan.comparison is not None and plan.paired is not None
        assert plan.observed_paired is not None and plan.observed_independent is not None
        assert plan.observed_paired.tasks < plan.observed_independent.tasks
        assert plan.million == 2_995_731

    def test_decided_tasks_get_nothing(self, tmp_path: Path) -> None:
        """Stable and flaky tasks get no trials, the undecided one all of them, and a flaky one is told to be fixed."""
        # 69 clean trials decide a task under the confidence sequence (40 did under Wilson).
        path = write_log(tmp_path / "r.jsonl", {"solid": (69, 69, {}), "broken": (69, 0, {}),
                                                "coin": (40, 20, {}), "open": (12, 11, {})})
        log = load_logs([path])
        plan = make_plan([log.run_outcomes("r")], PlanOptions(budget=100))
        rows = {t.task: t for t in plan.runs[0].tasks}
        assert [rows[t].decision for t in ("solid", "broken", "coin", "open")] == [
            "stable-pass", "stable-fail", "flaky", UNDECIDED]
        assert rows["solid"].extra == rows["broken"].extra == rows["coin"].extra == 0
        assert rows["open"].extra == 100 and plan.spent == 100
        assert "fix it" in rows["coin"].why

    def test_why_without_trials(self, tmp_path: Path) -> None:
        """A task getting no trials says why: no budget, or its target width already reached."""
        # "near" (29 of 30) is undecided (confidence sequence [0.747, 1.000] crosses 0.9) but
        # has a Wilson width of 0.16, below the target of 0.3.
        path = write_log(tmp_path / "r.jsonl", {"near": (30, 29, {}), "open": (12, 11, {})})
        log = load_logs([path])
        o = log.run_outcomes("r")
        rows = {t.task: t for t in make_plan([o], PlanOptions(budget=0)).runs[0].tasks}
        assert rows["near"].why == rows["open"].why == "no budget given"
        # A width of 0.3 is reached by 29/30 but not by 11/12 (0.34).
        plan = make_plan([o], PlanOptions(budget=10, target_width=0.3))
        rows = {t.task: t for t in plan.runs[0].tasks}
        assert rows["near"].decision == UNDECIDED
        assert rows["near"].why == "target width reached" and rows["near"].extra == 0
        # ... and 11/12 reaches it at 16 trials: 4 of the 10 are spent, the plan says why.
        assert rows["open"].extra == rows["open"].trials_for_width - 12 == 4
        assert plan.spent == 4 and "6 of 10 trials left unspent" in plan.reason

    def test_clean_task_gets_trials_up_to_its_decision(self, tmp_path: Path) -> None:
        """A clean task gets only the trials that would decide it stable."""
        # 12 of 12 has a Wilson width of 0.24, under a target of 0.3, but is undecided: the
        # confidence sequence decides it at 69 clean trials, so it may get up to 57 more.
        path = write_log(tmp_path / "r.jsonl", {"clean": (12, 12, {})})
        log = load_logs([path])
        plan = make_plan([log.run_outcomes("r")], PlanOptions(budget=100, target_width=0.3))
        (t,) = plan.runs[0].tasks
        assert (t.decision, t.to_decide, plan.decide_clean) == (UNDECIDED, 57, 69)
        assert t.extra == 57 and plan.spent == 57
        assert decide([t.n + t.extra], [t.n + t.extra]) == ["stable-pass"]

    def test_minimum_counts_towards_the_width_cap(self, tmp_path: Path) -> None:
        """The minimum counts towards the width cap, and a minimum above the cap is given alone."""
        # 2 of 3, high tier (minimum 10): a width of 0.3 at p̂ 2/3 needs 35 trials in all.
        # The top-up to 10 is part of those 35, not on top of them (it planned 42).
        path = write_log(tmp_path / "r.jsonl", {"w": (3, 2, {"tags": ["write"]})})
        log = load_logs([path])
        o = log.run_outcomes("r")
        extras = {("r", t): e for t, e in read_task_extras(log, o).items()}
        plan = make_plan([o], PlanOptions(budget=1000, target_width=0.3, min_trials=10), extras)
        (t,) = plan.runs[0].tasks
        assert t.trials_for_width == int(trials_for_width(2 / 3, 0.3)) == 35
        assert (t.minimum, t.extra) == (10, 32)
        assert plan.spent == 32 and "968 of 1,000 trials left unspent" in plan.reason
        # A minimum above the width target: the minimum alone.
        plan = make_plan([o], PlanOptions(budget=1000, target_width=0.3, min_trials=50), extras)
        assert plan.runs[0].tasks[0].extra == 47

    def test_all_decided_cannot_spend(self, tmp_path: Path) -> None:
        """A plan with every task decided spends nothing, lists no lines and says why in its notes."""
        path = write_log(tmp_path / "r.jsonl", {"solid": (69, 69, {}), "broken": (69, 0, {})})
        log = load_logs([path])
        plan = make_plan([log.run_outcomes("r")], PlanOptions(budget=50))
        assert plan.spent == 0 and plan.lines() == []
        assert "50 of 50 trials left unspent" in plan.reason
        assert plan.reason in plan.notes

    def test_bad_options(self) -> None:
        """A negative budget or zero target width is refused with a ValueError."""
        log = load_logs([BASELINE])
        with pytest.raises(ValueError, match="budget"):
            make_plan([log.run_outcomes("oncall-baseline")], PlanOptions(budget=-1))
        with pytest.raises(ValueError, match="target width"):
            make_plan([log.run_outcomes("oncall-baseline")], PlanOptions(target_width=0))
