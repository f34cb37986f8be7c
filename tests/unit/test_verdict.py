"""The all-evidence verdict: one case per agreement or disagreement of the sign test, CI and permutation test.

Each comparison is built from trial counts; the sign-test p-values it must quote are
computed here with scipy.stats.binomtest.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from flaketui.model import RunOutcomes
from flaketui.stats import compare_runs, task_stats
from flaketui.stats.verdict import Evidence, evidence, verdict, verdict_text


def run(name: str, counts: list[tuple[int, int]]) -> RunOutcomes:
    n = np.array([t[0] for t in counts])
    c = np.array([t[1] for t in counts])
    return RunOutcomes(name, [f"t{i}" for i in range(len(counts))], n, c, np.zeros_like(n), [None] * len(counts),
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


def compare(a: list[tuple[int, int]], b: list[tuple[int, int]]):
    return compare_runs(task_stats(run("A", a), 1), task_stats(run("B", b), 1))


def changes(up: int, up_by: int, down: int, down_by: int, same: int, trials: int = 8):
    """``up`` tasks gain ``up_by`` passes of ``trials``, ``down`` lose ``down_by``; ``same`` stay at 4 of 8."""
    a = [(trials, 0)] * up + [(trials, trials)] * down + [(trials, 4)] * same
    b = [(trials, up_by)] * up + [(trials, trials - down_by)] * down + [(trials, 4)] * same
    return compare(a, b)


class TestCases:
    def test_all_agree_b_better(self) -> None:
        cmp = compare([(1, 0)] * 11, [(1, 1)] * 7 + [(1, 0)] * 4)
        p = binomtest(7, 7).pvalue
        ev = evidence(cmp)
        assert (ev.directions, ev.interval, ev.permutation) == (1, 1, 1)
        assert verdict(cmp).startswith(f"B is better (p = {p:.3g}): 7 fixed vs 0 broken; sizes: B better by 0.636 [")

    def test_all_not_significant_keeps_the_old_wording(self) -> None:
        cmp = compare([(1, 1)] * 4 + [(1, 0)] * 7, [(1, 0)] * 4 + [(1, 1)] * 7)
        ev = evidence(cmp)
        assert (ev.directions, ev.sizes) == (0, 0) and ev.ci[0] < 0 < ev.ci[1]
        assert verdict(cmp) == "not shown to differ at 5%: 7 fixed vs 4 broken happens by chance 55% of the time"

    def test_sign_not_significant_but_interval_excludes_zero(self) -> None:
        cmp = changes(up=7, up_by=8, down=2, down_by=1, same=20)
        ev = evidence(cmp)
        p = binomtest(7, 9).pvalue
        assert ev.directions == 0 and ev.interval == 1 and ev.ci[0] > 0
        text = verdict(cmp)
        assert text.startswith("B is better at 5% by the sizes of the changes: ")
        assert f"directions alone: not significant (sign test p = {p:.2g}: 7 fixed vs 2 broken)" in text
        assert f"sizes: B better by {ev.mean_diff:.3f} [{ev.ci[0]:.3f}, {ev.ci[1]:.3f}]" in text
        assert "not shown to differ" not in text

    def test_sign_significant_but_interval_holds_zero(self) -> None:
        # It can happen: many tasks up a little, a few down a lot.
        cmp = changes(up=14, up_by=1, down=2, down_by=8, same=0)
        ev = evidence(cmp)
        p = binomtest(14, 16).pvalue
        assert p < 0.05 and ev.directions == 1 and ev.ci[0] < 0 < ev.ci[1] and ev.sizes == 0
        text = verdict(cmp)
        assert text.startswith("B is better at 5% by the directions of the changes: ")
        assert f"directions: B better (sign test p = {p:.2g}: 14 fixed vs 2 broken)" in text
        assert f"sizes: not shown to differ (mean difference {ev.mean_diff:+.3f} [{ev.ci[0]:.3f}, " in text

    def test_directions_and_sizes_conflict(self) -> None:
        cmp = changes(up=40, up_by=1, down=14, down_by=8, same=0)
        ev = evidence(cmp)
        assert ev.directions == 1 and ev.interval == -1
        text = verdict(cmp)
        assert text.startswith("the evidence conflicts at 5%: directions: B better (sign test p = ")
        # A's advantage is quoted as A − B, so the amount and its interval are positive.
        assert f"sizes: A better by {-ev.mean_diff:.3f} [{-ev.ci[1]:.3f}, {-ev.ci[0]:.3f}]" in text

    def test_issue_figures(self) -> None:
        ev = Evidence("A", "B", 50, 0.05, 7, 2, 0.0768, 0.160, (0.008, 0.312), 0.031)
        assert verdict_text(ev) == (
            "B is better at 5% by the sizes of the changes: directions alone: not significant "
            "(sign test p = 0.077: 7 fixed vs 2 broken); sizes: B better by 0.160 [0.008, 0.312] "
            "(permutation p = 0.031)")

    def test_interval_excludes_zero_permutation_does_not(self) -> None:
        ev = Evidence("A", "B", 50, 0.05, 7, 2, 0.0768, 0.160, (0.008, 0.312), 0.06)
        text = verdict_text(ev)
        assert "sizes: B better by 0.160 [0.008, 0.312] (the interval excludes 0; the permutation test alone is " \
               "not significant, permutation p = 0.06)" in text

    def test_permutation_significant_interval_holds_zero(self) -> None:
        ev = Evidence("A", "B", 50, 0.05, 7, 2, 0.0768, 0.160, (-0.001, 0.312), 0.04)
        assert "sizes: B better by 0.160 by the permutation test (permutation p = 0.04), though its interval " \
               "[-0.001, 0.312] holds 0" in verdict_text(ev)

    def test_no_change_and_no_common_task(self) -> None:
        assert verdict(compare([(4, 2)], [(4, 2)])) == "no task changed its pass rate"
        assert verdict_text(Evidence("A", "B", 0, 0.05, 0, 0, 1.0, float("nan"), (float("nan"),) * 2, 1.0)) == (
            "the runs have no task in common: nothing to compare")


@pytest.mark.parametrize("seed", range(12))
def test_never_absent_when_the_interval_excludes_zero(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tasks = int(rng.integers(5, 60))
    a = [(8, int(x)) for x in rng.integers(0, 9, tasks)]
    shift = rng.normal(0, 0.3)
    b = [(8, int(np.clip(round(c + rng.normal(shift * 8, 2)), 0, 8))) for _, c in a]
    cmp = compare(a, b)
    ev, text = evidence(cmp), verdict(cmp)
    if ev.interval:
        assert "not shown to differ" not in text
        assert f"{ev.better(ev.interval)} better by {abs(ev.mean_diff):.3f}" in text
    if ev.directions == 0 and ev.sizes == 0 and ev.fixed + ev.broken:
        assert text.startswith("not shown to differ")
