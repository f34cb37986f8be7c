"""The verdict: a winner only when the pre-specified primary test rejects; the rest is secondary.

Comparisons are built from trial counts; the p-values the verdict must quote are
computed here independently (scipy.stats.binomtest, scipy.stats.hypergeom by brute
enumeration).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest, hypergeom

from flaketui.model import RunOutcomes
from flaketui.stats import compare_runs, task_stats
from flaketui.stats.stratified import within_task_test
from flaketui.stats.verdict import Evidence, evidence, short_verdict_text, verdict, verdict_text


def run(name: str, counts: list[tuple[int, int]]) -> RunOutcomes:
    n = np.array([t[0] for t in counts])
    c = np.array([t[1] for t in counts])
    return RunOutcomes(name, [f"t{i}" for i in range(len(counts))], n, c, np.zeros_like(n), [None] * len(counts),
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


def compare(a: list[tuple[int, int]], b: list[tuple[int, int]]):
    return compare_runs(task_stats(run("A", a), 1), task_stats(run("B", b), 1))


def brute_force_pvalue(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> float:
    """P(|Σ (p̂_B − p̂_A)| ≥ observed) over every hypergeometric reassignment of each task's passes."""
    observed = sum(cb / nb - ca / na for (na, ca), (nb, cb) in zip(a, b, strict=True))
    supports = []
    for (na, ca), (nb, cb) in zip(a, b, strict=True):
        s = ca + cb
        supports.append([(x, hypergeom.pmf(x, na + nb, s, na), (s - x) / nb - x / na)
                         for x in range(max(0, na - nb - na + s), min(s, na) + 1)])
    total = 0.0
    for combo in itertools.product(*supports):
        if abs(sum(d for _, _, d in combo)) >= abs(observed) - 1e-9:
            total += float(np.prod([p for _, p, _ in combo]))
    return total


class TestPrimaryTest:
    def test_one_trial_each_is_exact_mcnemar(self) -> None:
        """With one trial each, the primary test is the exact McNemar test."""
        a, b = [(1, 0)] * 11, [(1, 1)] * 7 + [(1, 0)] * 4
        cmp = compare(a, b)
        assert cmp.primary.pvalue == pytest.approx(binomtest(7, 7).pvalue)
        assert cmp.primary.method == "exact"

    @pytest.mark.parametrize("a,b", [
        ([(2, 1), (1, 0), (5, 3), (4, 2)], [(4, 3), (6, 4), (3, 1), (4, 4)]),
        ([(1, 1), (1, 0), (1, 1), (1, 0), (1, 1)], [(10, 3), (10, 9), (10, 8), (10, 2), (10, 7)]),
        ([(4, 4), (4, 0), (4, 2)], [(16, 10), (16, 5), (16, 16)]),
    ])
    def test_pinned_to_brute_enumeration(self, a, b) -> None:
        """The primary test's p equals brute-force enumeration of the permutations."""
        assert compare(a, b).primary.pvalue == pytest.approx(brute_force_pvalue(a, b), abs=1e-12)

    def test_monte_carlo_and_normal_agree_with_exact(self) -> None:
        """The Monte Carlo and normal forms agree with the exact p."""
        rng = np.random.default_rng(3)
        na, nb = rng.integers(1, 4, 24), rng.integers(4, 8, 24)
        p = rng.uniform(0, 1, 24)
        ca, cb = rng.binomial(na, p), rng.binomial(nb, p)
        exact = within_task_test(ca, na, cb, nb, exact_max_work=10**9)
        mc = within_task_test(ca, na, cb, nb, exact_max_work=1)
        assert (exact.method, mc.method) == ("exact", "monte-carlo")
        assert mc.pvalue == pytest.approx(exact.pvalue, abs=0.015)
        # Many tasks of equal trial counts: the law lies on a lattice, the normal limit with
        # half a step of continuity correction is close.
        na = nb = np.full(300, 5)
        p = rng.uniform(0, 1, 300)
        ca, cb = rng.binomial(na, p), rng.binomial(nb, p)
        exact = within_task_test(ca, na, cb, nb)
        normal = within_task_test(ca, na, cb, nb, exact_max_work=1, monte_carlo_max_draws=1)
        assert (exact.method, normal.method) == ("exact", "normal")
        assert normal.pvalue == pytest.approx(exact.pvalue, abs=0.005)

    @pytest.mark.slow
    def test_size_is_exact_under_the_null_with_unequal_trials(self) -> None:
        """1 trial against 10 on 3 tasks at p = 0.9: the rejection rate under the null, summed exactly
        over every outcome, is at most α."""
        from scipy.stats import binom

        tasks, alpha = 3, 0.05
        outcomes = [(ca, cb) for ca in (0, 1) for cb in range(11)]
        weight = {o: binom.pmf(o[0], 1, 0.9) * binom.pmf(o[1], 10, 0.9) for o in outcomes}
        size = 0.0
        for combo in itertools.product(outcomes, repeat=tasks):
            ca, cb = np.array([o[0] for o in combo]), np.array([o[1] for o in combo])
            if within_task_test(ca, np.ones(tasks, int), cb, np.full(tasks, 10)).pvalue < alpha:
                size += float(np.prod([weight[o] for o in combo]))
        assert size <= alpha


class TestVerdict:
    def test_winner_only_when_primary_rejects(self) -> None:
        """A winner is named only when the primary test rejects."""
        cmp = compare([(1, 0)] * 11, [(1, 1)] * 7 + [(1, 0)] * 4)
        ev = evidence(cmp)
        assert ev.winner == 1 and ev.winner_run == "B"
        text = verdict(cmp)
        assert text.startswith("B is better at 5%: within-task permutation test p = 0.016 (primary, the exact "
                               "McNemar test with one trial per task); mean difference (B - A) +0.636 [")
        assert "secondary: sign test p = 0.016 (7 fixed vs 0 broken)" in text

    def test_not_shown_to_differ(self) -> None:
        """Without rejection the verdict says the runs are not shown to differ."""
        cmp = compare([(1, 1)] * 4 + [(1, 0)] * 7, [(1, 0)] * 4 + [(1, 1)] * 7)
        ev = evidence(cmp)
        assert ev.winner == 0 and ev.winner_run is None
        assert verdict(cmp).startswith("not shown to differ at 5%: within-task permutation test p = 0.55 (primary")

    def test_a_secondary_rejection_never_makes_a_winner(self) -> None:
        """A secondary test's rejection never makes a winner."""
        # The sign test rejects (p = 0.02) while the primary test does not (p = 0.08).
        ev = Evidence("A", "B", 50, 0.05, 12, 2, 0.013, 0.04, (-0.01, 0.09), 0.2, primary_p=0.08, equal_trials=True)
        text = verdict_text(ev)
        assert ev.winner == 0
        assert text.startswith("not shown to differ at 5%: within-task permutation test p = 0.08 (primary)")
        assert text.endswith("(secondary evidence only: the verdict rests on the primary test)")

    def test_unequal_trials_leave_out_the_sign_test_and_say_why(self) -> None:
        """Unequal trials leave out the sign test and say why."""
        a = [(1, 1)] * 30 + [(1, 0)] * 30
        b = [(10, 9)] * 30 + [(10, 1)] * 30
        cmp = compare(a, b)
        text = verdict(cmp)
        assert not cmp.equal_trials
        assert "the sign test is not shown: trial counts differ between the runs" in text
        assert "sign test p =" not in text

    def test_winner_with_an_interval_holding_zero_is_said_to_hold_on_these_tasks(self) -> None:
        """A winner whose interval holds zero is said to hold on these tasks only."""
        # One task broke completely (12/12 -> 0/12), one improved a little, 23 unchanged.
        a = [(12, 12), (12, 10)] + [(12, 12)] * 23
        b = [(12, 0), (12, 12)] + [(12, 12)] * 23
        cmp = compare(a, b)
        ev = evidence(cmp)
        assert ev.winner == -1 and ev.ci[0] < 0 < ev.ci[1]
        note = "the interval over tasks holds 0: the difference is shown on these tasks, not beyond them"
        assert note in verdict(cmp)

    def test_holm_adjusted_p_decides(self) -> None:
        """The Holm-adjusted p decides the verdict."""
        ev = Evidence("A", "B", 50, 0.05, 12, 2, 0.013, 0.1, (0.02, 0.18), 0.02, primary_p=0.03, equal_trials=True,
                      adjusted_p=0.09)
        assert ev.winner == 0
        assert "within-task permutation test p = 0.03, Holm-adjusted 0.09 (primary)" in verdict_text(ev)

    def test_no_change_and_no_common_task(self) -> None:
        """No change, and no common task, each get their own verdict."""
        assert verdict(compare([(4, 2)], [(4, 2)])) == "no task changed its pass rate"
        nan = float("nan")
        ev = Evidence("A", "B", 0, 0.05, 0, 0, 1.0, nan, (nan, nan), 1.0, primary_p=1.0, equal_trials=True)
        assert verdict_text(ev) == "the runs have no task in common: nothing to compare"


@pytest.mark.parametrize("seed", range(8))
def test_the_verdict_follows_the_primary_test(seed: int) -> None:
    """On random suites the verdict follows the primary test."""
    rng = np.random.default_rng(seed)
    tasks = int(rng.integers(5, 60))
    a = [(8, int(x)) for x in rng.integers(0, 9, tasks)]
    shift = rng.normal(0, 0.3)
    b = [(8, int(np.clip(round(c + rng.normal(shift * 8, 2)), 0, 8))) for _, c in a]
    cmp = compare(a, b)
    ev, text = evidence(cmp), verdict(cmp)
    if ev.fixed + ev.broken == 0:
        return
    if cmp.primary.pvalue < 0.05:
        assert text.startswith(f"{ev.better(ev.winner)} is better at 5%")
    else:
        assert text.startswith("not shown to differ at 5%")


class TestShortVerdict:
    """The pane's verdict line: the figures are on the lines above it."""

    def test_winner_on_these_tasks(self) -> None:
        """The short verdict names a winner on these tasks."""
        ev = Evidence("A", "B", 25, 0.05, 1, 1, 1.0, -0.033, (-0.155, 0.088), 1.0, primary_p=0.00085,
                      equal_trials=True)
        assert short_verdict_text(ev) == ("A is better at 5% (within-task permutation test p = 0.00085), on these "
                                          "tasks: the interval over tasks holds 0")

    def test_secondary_rejection_is_named_not_followed(self) -> None:
        """The short verdict names a secondary rejection but does not follow it."""
        ev = Evidence("A", "B", 50, 0.05, 12, 2, 0.013, 0.04, (-0.01, 0.09), 0.2, primary_p=0.08, equal_trials=True)
        assert short_verdict_text(ev) == ("not shown to differ at 5% (within-task permutation test p = 0.08); "
                                          "a secondary test below α does not change it")


def test_swapping_the_runs_keeps_every_p_value() -> None:
    """A against B and B against A give the same p-values, Monte-Carlo draws included."""
    rng = np.random.default_rng(11)
    na, nb = rng.integers(1, 6, 90), rng.integers(4, 12, 90)
    p = rng.uniform(0, 1, 90)
    a = [(int(n), int(c)) for n, c in zip(na, rng.binomial(na, p), strict=True)]
    b = [(int(n), int(c)) for n, c in zip(nb, rng.binomial(nb, p), strict=True)]
    ab = compare_runs(task_stats(run("A", a), 1), task_stats(run("B", b), 1))
    ba = compare_runs(task_stats(run("B", b), 1), task_stats(run("A", a), 1))
    assert ab.primary.method == "monte-carlo"
    assert ab.primary.pvalue == ba.primary.pvalue and ab.primary.statistic == pytest.approx(-ba.primary.statistic)
    assert ab.permutation.pvalue == ba.permutation.pvalue
