"""Anytime-valid decisions (Robbins' mixture confidence sequence) and power of the paired means.

Expected bounds come from an independent calculation: scipy.special.betaln and
scipy.optimize.brentq on log M_n(p) = log(1/α) on each side of p̂ (the package
``confseq`` is on PyPI, but its Bernoulli mixture is a tuned beta-binomial of Howard et al.
§ 3, not the Beta(1, 1) mixture, and it needs a C++ build; it is not used). Peeking rates are
exact: the binomial distribution of the passes is propagated from look to look and absorbed
at a decision. The power of Miller's sample size is checked by simulating suites and running
scipy.stats.ttest_1samp on the per-task p̂ differences.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import betaln
from scipy.stats import binom, norm, ttest_1samp

from flaketui.model import RunOutcomes
from flaketui.stats.estimators import STABLE_PASS, wilson_interval
from flaketui.stats.power import (
    ONE_RUN_ASSUMPTION,
    tasks_paired_means,
    variance_split,
)
from flaketui.stats.precision import (
    PEEKING,
    UNDECIDED,
    clean_trials_to_decide,
    confidence_sequence,
    decide,
    more_trials_to_decide,
)


def brentq_bounds(n: int, c: int, alpha: float = 0.05) -> tuple[float, float]:
    """The sequence {p : log M_n(p) < log(1/α)} by brentq, written from its definition."""

    def f(p: float) -> float:
        log_lik = (c * math.log(p) if c else 0.0) + ((n - c) * math.log1p(-p) if n - c else 0.0)
        return float(betaln(c + 1, n - c + 1)) - log_lik - math.log(1 / alpha)

    if n == 0:
        return 0.0, 1.0
    mle = c / n
    low = 0.0 if c == 0 else brentq(f, 1e-300, mle, xtol=1e-15, rtol=1e-14)
    high = 1.0 if c == n else brentq(f, mle, 1 - 1e-16, xtol=1e-15, rtol=1e-14)
    return low, high

Rule = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A stopping rule: stable-pass (True) at each (n, c)."""


# --- the confidence sequence ----------------------------------------------------------


class TestConfidenceSequence:
    @pytest.mark.parametrize(
        ("n", "c"),
        [(1, 0), (1, 1), (2, 1), (5, 0), (5, 5), (12, 10), (12, 6), (40, 20), (69, 69),
         (100, 3), (1000, 997), (10_000, 1), (200_000, 100_000)],
    )
    @pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
    def test_matches_brentq(self, n: int, c: int, confidence: float) -> None:
        """The confidence sequence's bounds equal a brentq root search of its defining equation."""
        low, high = brentq_bounds(n, c, 1 - confidence)
        cs = confidence_sequence(n, c, confidence)
        assert float(cs.low) == pytest.approx(low, abs=1e-10)
        assert float(cs.high) == pytest.approx(high, abs=1e-10)

    def test_edges(self) -> None:
        """No trials give [0, 1], all-fail and all-pass give the closed-form edges."""
        cs = confidence_sequence([0, 7, 7], [0, 0, 7])
        assert cs.low.tolist() == [0.0, 0.0, pytest.approx((0.05 / 8) ** (1 / 7))]
        assert cs.high.tolist() == [1.0, pytest.approx(1 - (0.05 / 8) ** (1 / 7)), 1.0]

    @pytest.mark.parametrize("n", [1, 12, 35, 69, 500])
    def test_clean_closed_form(self, n: int) -> None:
        """A clean task's lower bound is (alpha/(n+1))^(1/n)."""
        # At c = n, B(n + 1, 1) = 1/(n + 1): M_n(p) = 1/((n + 1) p^n) = 20 at p = (0.05/(n+1))^(1/n).
        assert float(confidence_sequence(n, n).low) == pytest.approx((0.05 / (n + 1)) ** (1 / n),
                                                                     rel=1e-12)

    def test_wider_than_wilson_and_contains_the_mle(self) -> None:
        """The confidence sequence is wider than Wilson's interval and contains the observed rate."""
        rng = np.random.default_rng(1)
        n = rng.integers(1, 300, 400)
        c = rng.binomial(n, rng.uniform(0, 1, 400))
        cs, w = confidence_sequence(n, c), wilson_interval(n, c)
        assert np.all(cs.low <= c / n) and np.all(c / n <= cs.high)
        assert np.all(cs.low <= w.low + 1e-12) and np.all(cs.high >= w.high - 1e-12)

    def test_vectorised_shape_and_duplicates(self) -> None:
        """The sequence keeps the input's shape and gives duplicates equal bounds."""
        n = np.array([[12, 12], [40, 0]])
        c = np.array([[10, 10], [20, 0]])
        cs = confidence_sequence(n, c)
        assert cs.low.shape == (2, 2) and cs.low[0, 0] == cs.low[0, 1]

    def test_bad_counts(self) -> None:
        """More passes than trials is refused."""
        with pytest.raises(ValueError, match="passes"):
            confidence_sequence([3], [4])

    @pytest.mark.parametrize("p", [0.02, 0.3, 0.5, 0.895, 0.99])
    def test_time_uniform_coverage_exact(self, p: float) -> None:
        """The exact probability of ever missing the true rate over 150 looks is at most 5%."""
        # P(the sequence ever excludes p in 150 trials, looked at after every trial) ≤ α, exactly:
        # the distribution of the passes is propagated one trial at a time, absorbing a path
        # the first time the sequence misses p.
        dist = np.array([1.0])
        missed = 0.0
        for n in range(1, 151):
            dist = np.append(dist * (1 - p), 0.0) + np.append(0.0, dist * p)
            cs = confidence_sequence(np.full(n + 1, n), np.arange(n + 1))
            out = (cs.low > p) | (cs.high < p)
            missed += dist[out].sum()
            dist = np.where(out, 0.0, dist)
        assert missed <= 0.05


# --- decisions under peeking -----------------------------------------------------------


def peeking_rate(decider: Rule, p: float = 0.895, step: int = 5, last: int = 100) -> float:
    """Exact chance a user who looks every ``step`` trials and stops at stable-pass ever stops."""
    dist = np.array([1.0])
    hit = 0.0
    block = binom.pmf(np.arange(step + 1), step, p)
    for n in range(step, last + 1, step):
        dist = np.convolve(dist, block)
        passes = decider(np.full(n + 1, n), np.arange(n + 1))
        hit += dist[passes].sum()
        dist = np.where(passes, 0.0, dist)
    return float(hit)


def wilson_stable_pass(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The fixed-n rule this replaced: Wilson lower bound ≥ 0.9."""
    return np.asarray(wilson_interval(n, c).low >= 0.9 - 1e-12)


def cs_stable_pass(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(decide(n, c)) == STABLE_PASS
    return out


class TestPeeking:
    def test_a_task_failing_one_time_in_ten_is_rarely_called_stable_pass(self) -> None:
        """Peeking after each trial calls a 90% task stable far less often with the sequence than with Wilson."""
        # True pass rate 0.895 (fails 10.5%), looks every 5 trials up to 100.
        before = peeking_rate(wilson_stable_pass)
        after = peeking_rate(cs_stable_pass)
        assert before == pytest.approx(0.0475, abs=5e-4)  # the fixed-n rule: 4.75% (one look: 0.9%)
        assert after <= 0.05
        assert after == pytest.approx(0.00064, abs=5e-5)

    def test_up_to_200_trials(self) -> None:
        """Over 200 looks Wilson peeking errs 6.5% of the time and the sequence at most 5%."""
        assert peeking_rate(wilson_stable_pass, last=200) == pytest.approx(0.0646, abs=5e-4)
        assert peeking_rate(cs_stable_pass, last=200) <= 0.05

    @pytest.mark.parametrize("p", [0.85, 0.895, 0.8999])
    def test_below_the_zone_at_every_rate(self, p: float) -> None:
        """At every rate below the zone, peeking with the sequence errs at most 5%."""
        assert peeking_rate(cs_stable_pass, p=p, step=1, last=150) <= 0.05


class TestTrialsToDecide:
    @pytest.mark.parametrize("margin", [0.01, 0.05, 0.1, 0.2, 0.3, 0.45])
    @pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
    def test_smallest_clean_n(self, margin: float, confidence: float) -> None:
        """The clean trials to decide are the smallest n that decides all-pass and all-fail tasks."""
        n = clean_trials_to_decide(margin, confidence)
        assert decide([n, n], [n, 0], margin, confidence) == ["stable-pass", "stable-fail"]
        assert decide([n - 1, n - 1], [n - 1, 0], margin, confidence) == [UNDECIDED, UNDECIDED]

    def test_default_is_69(self) -> None:
        """At the default margin and confidence 69 clean trials decide a task."""
        # 69·(−ln 0.9) − ln 70 = 3.0212 ≥ ln 20 = 2.9957 > 68·(−ln 0.9) − ln 69 = 2.9331.
        assert clean_trials_to_decide() == 69

    def test_more_trials(self) -> None:
        """The further trials to decide each task are counted, zero for decided and NaN for mixed tasks."""
        out = more_trials_to_decide([12, 12, 12, 69, 100, 0], [12, 0, 6, 69, 0, 0])
        assert out[:2].tolist() == [57.0, 57.0] and out[3:5].tolist() == [0.0, 0.0]
        assert np.isnan(out[2]) and np.isnan(out[5])

    def test_bad_margin(self) -> None:
        """A margin of 0.5 is refused."""
        with pytest.raises(ValueError, match="margin"):
            clean_trials_to_decide(0.5)

    def test_outputs_say_decisions_allow_peeking(self) -> None:
        """The plan's outputs say the decisions stay valid however often the plan is rerun."""
        from flaketui.loading import load_logs
        from flaketui.output import plan as plan_report
        from flaketui.stats.plan import PlanOptions, make_plan
        from tests.conftest import FIXTURES

        log = load_logs([FIXTURES])
        plan = make_plan([log.run_outcomes(r) for r in log.runs], PlanOptions(budget=10))
        assert PEEKING in plan_report.header_lines(plan)
        doc = plan_report.plan_json(plan)
        assert doc["decision_rule"] == PEEKING and doc["rule_of_three_validity"] == "fixed-n"
        task = doc["runs"][0]["tasks"][0]
        assert task["more_trials_to_decide"] == 57 and len(task["confidence_sequence"]) == 2


# --- power of the paired analysis of means ----------------------------------------------


def outcomes(run: str, n: np.ndarray, passes: np.ndarray) -> RunOutcomes:
    size = len(n)
    return RunOutcomes(run=run, tasks=[f"t{i}" for i in range(size)], n=n, passes=passes,
                       errored=np.zeros(size, dtype=np.int64), groups=[None] * size,
                       rows=np.zeros(0, dtype=np.int64), bounds=np.zeros(size + 1, dtype=np.int64))


# A suite: p_A uniform on [0.3, 0.7], p_B = p_A + δ + u with u uniform on [−0.1, 0.1], so
# σ²_between = 0.2²/12 and σ²_within = E[p_A(1 − p_A)] + E[p_B(1 − p_B)], both in closed form:
# E[p(1 − p)] = E[p] − E[p²] with E[p²] = Var(p) + E[p]².
DELTA = 0.05
BETWEEN = 0.2**2 / 12
WITHIN = (0.5 - (0.4**2 / 12 + 0.25)) + (0.5 + DELTA - (0.4**2 / 12 + 0.2**2 / 12 + (0.5 + DELTA) ** 2))


def suite(rng: np.random.Generator, tasks: int, reps: int = 1) -> tuple[np.ndarray, np.ndarray]:
    pa = rng.uniform(0.3, 0.7, (reps, tasks))
    return pa, pa + DELTA + rng.uniform(-0.1, 0.1, (reps, tasks))


class TestPairedMeans:
    def test_formula(self) -> None:
        """The paired-means sample size follows its formula (283 tasks for the example)."""
        # T = (z_{0.975} + z_{0.8})² (σ²_b + σ²_w/K)/δ², by hand with scipy's norm.ppf.
        zs = norm.ppf(0.975) + norm.ppf(0.8)
        s = tasks_paired_means(0.01, 0.4, 5, 0.05)
        assert s.tasks == math.ceil(zs**2 * (0.01 + 0.4 / 5) / 0.05**2) == 283
        assert dict(s.by_k) == {k: math.ceil(zs**2 * (0.01 + 0.4 / k) / 0.0025) for k in (1, 5, 10, 20)}
        assert s.floor == math.ceil(zs**2 * 0.01 / 0.0025)  # K → ∞: the between part alone

    def test_raising_k_helps_less_and_less(self) -> None:
        """More trials per task lower the tasks needed less and less."""
        s = tasks_paired_means(0.01, 0.4, 5, 0.05, ks=(1, 2, 5, 10, 100, 1000))
        needs = [t for _, t in s.by_k]
        assert needs == sorted(needs, reverse=True) and needs[-1] >= (s.floor or 0)

    def test_no_difference(self) -> None:
        """With no difference to detect no sample size is given."""
        assert tasks_paired_means(0.01, 0.4, 5, 0.0).tasks is None

    @pytest.mark.parametrize("k", [3, 10])
    def test_planned_tasks_have_the_power(self, k: int) -> None:
        """Simulated suites of the planned size reach the planned power."""
        plan = tasks_paired_means(BETWEEN, WITHIN, k, DELTA)
        assert plan.tasks is not None
        rng = np.random.default_rng(20240611 + k)
        reps = 400
        pa, pb = suite(rng, plan.tasks, reps)
        d = rng.binomial(k, pb) / k - rng.binomial(k, pa) / k
        power = float(np.mean(ttest_1samp(d, 0.0, axis=1).pvalue < 0.05))
        assert 0.72 <= power <= 0.88, (plan.tasks, power)

    @pytest.mark.slow
    def test_split_recovers_the_parts(self) -> None:
        """Splitting a simulated suite's variance recovers its between- and within-task parts."""
        rng = np.random.default_rng(7)
        tasks, k = 40_000, 6
        pa, pb = suite(rng, tasks)
        n = np.full(tasks, k)
        a = outcomes("a", n, rng.binomial(k, pa[0]))
        b = outcomes("b", n, rng.binomial(k, pb[0]))
        split = variance_split(a, b)
        assert (split.k, split.tasks, split.source) == (k, tasks, "two runs")
        assert split.within == pytest.approx(WITHIN, rel=0.01)
        assert split.between == pytest.approx(BETWEEN, abs=0.0015)

    def test_one_run_states_its_assumption(self) -> None:
        """Planning from one run states the assumption it makes."""
        rng = np.random.default_rng(3)
        n = np.full(40_000, 8)
        p = rng.uniform(0.3, 0.7, 40_000)
        split = variance_split(outcomes("a", n, rng.binomial(8, p)))
        assert split.note == ONE_RUN_ASSUMPTION and split.source == "one run"
        assert split.within == pytest.approx(2 * (0.5 - (0.4**2 / 12 + 0.25)), rel=0.02)
        # Twice the between-task variance of p (uniform on [0.3, 0.7]: 0.4²/12); its SE here
        # is about 0.0006 (2·Var(p̂)·√(2/40,000)).
        assert split.between == pytest.approx(2 * 0.4**2 / 12, abs=0.002)

    def test_plan_shows_both_analyses(self) -> None:
        """The plan shows both the paired-proportions and paired-means analyses."""
        from flaketui.loading import load_logs
        from flaketui.output import plan as plan_report
        from flaketui.stats.plan import PlanOptions, make_plan
        from tests.conftest import FIXTURES

        log = load_logs([FIXTURES])
        plan = make_plan([log.run_outcomes(r) for r in log.runs], PlanOptions())
        assert plan.paired_means is not None and plan.paired_means.k == 12
        assert plan.split is not None and plan.split.source == "two runs"
        text = "\n".join(plan_report.sample_size_lines(plan))
        assert "mean p̂ difference, Miller 2024" in text and "K = 12" in text
        assert "McNemar" not in text  # twelve trials per task: McNemar's is not what is run
        size = plan_report.plan_json(plan)["sample_size"]
        assert size["paired"]["analysis"] == "McNemar's test, one trial per task"
        assert size["paired_means"]["tasks"] == plan.paired_means.tasks
