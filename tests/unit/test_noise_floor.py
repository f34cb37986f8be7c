"""The noise floor: the minimum detectable effect, Miller's variance split, the binomial floor of the
mean-difference interval, and where compare and report print them."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from flaketui.cli import main
from flaketui.model import RunOutcomes
from flaketui.stats import noise
from flaketui.stats import power as pw
from flaketui.stats.paired import FLOOR_NOTE, compare_runs
from flaketui.stats.suite import task_stats
from flaketui.stats.verdict import evidence, verdict_text
from tests.conftest import BASELINE, CANDIDATE


def run(name: str, n: np.ndarray, c: np.ndarray) -> RunOutcomes:
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    return RunOutcomes(name, [f"t{i}" for i in range(n.size)], n, c, np.zeros_like(n), [None] * n.size,
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


@pytest.mark.parametrize(("power", "alpha"), [(0.8, 0.05), (0.9, 0.01), (0.3, 0.1)])
def test_z_sum_is_the_power_modules(power: float, alpha: float) -> None:
    """The noise module's z_{1−α/2} + z_power (no statistics import) equals stats.power's."""
    assert noise.z_sum(power, alpha) == pytest.approx(pw.z_sum(power, alpha), rel=1e-12)


@pytest.mark.parametrize("sd", [0.01, 0.03, 0.2])
def test_minimum_detectable_effect_has_the_stated_power(sd: float) -> None:
    """At δ = MDE a two-sided 5% z test of a mean with this SD rejects with probability 0.8 (scipy)."""
    mde = noise.minimum_detectable(sd**2)
    z = sps.norm.ppf(0.975)
    power = sps.norm.cdf(mde / sd - z) + sps.norm.cdf(-mde / sd - z)
    assert power == pytest.approx(0.8, abs=1e-4)


def test_within_part_is_unbiased_by_enumeration() -> None:
    """p̂(1 − p̂)/(n − 1) averages to p(1 − p)/n over every binomial outcome (exact sums)."""
    for n, p in ((2, 0.3), (5, 0.9), (12, 0.5)):
        c = np.arange(n + 1)
        est = noise._unbiased_binomial_variance(np.full(n + 1, float(n)), c.astype(float), 0.5)
        assert float(np.sum(sps.binom.pmf(c, n, p) * est)) == pytest.approx(p * (1 - p) / n, rel=1e-12)


def test_icc_is_the_one_way_anova_icc() -> None:
    """With equal trials the run's ICC is the one-way ANOVA ICC (F − 1)/(F + n − 1) of its 0/1 outcomes."""
    rng = np.random.default_rng(4)
    n = 6
    c = rng.binomial(n, rng.beta(2, 2, 40))
    rows = [np.r_[np.ones(k), np.zeros(n - k)] for k in c]
    f = sps.f_oneway(*rows).statistic
    floor = noise.suite_noise_floor(np.full(40, n), c)
    assert floor.icc == pytest.approx((f - 1) / (f + n - 1), rel=1e-10)


def test_suite_floor_sizes_match_the_sample_size_formula() -> None:
    """tasks_for is tasks_paired_means with σ²_between = 0 and both runs' within-task noise."""
    c = np.tile([5, 4, 2, 0, 5], 10)
    f = noise.suite_noise_floor(np.full(50, 5), c)
    size = pw.tasks_paired_means(0.0, 2 * f.within, 5, f.target)
    assert f.tasks_for == size.tasks and f.target == 0.05
    assert f.mde == pytest.approx(pw.z_sum(0.8, 0.05) * math.sqrt(2 * f.within / (5 * 50)))


@pytest.mark.parametrize(("n", "c"), [([5, 5, 5], [5, 5, 0]), ([1, 1, 1], [1, 0, 1]), ([4], [2])])
def test_suite_floor_edges(n: list[int], c: list[int]) -> None:
    """Every task stable, one trial a task, or one task: the floor says so instead of a figure."""
    f = noise.suite_noise_floor(np.array(n), np.array(c))
    line = noise.floor_line(f)
    if sum(1 for x in n if x >= 2) >= 2:
        assert f.mde == 0 and "same outcome on every trial" in line
    else:
        assert math.isnan(f.mde) and "not estimable" in line


def test_binomial_floor_widens_the_one_against_ten_interval() -> None:
    """1 trial of A (all passed) against 10 of B on 10 tasks: the SE is floored and the method says so."""
    a = task_stats(run("A", np.ones(10), np.ones(10)), 1)
    b = task_stats(run("B", np.full(10, 10), np.array([10, 9, 10, 10, 8, 10, 10, 10, 9, 10])), 1)
    cmp = compare_runs(a, b)
    floor = noise.binomial_floor(cmp.a.n, cmp.a.passes, cmp.b.n, cmp.b.passes)
    assert cmp.mean_diff.se == pytest.approx(math.sqrt(floor)) and FLOOR_NOTE in cmp.mean_diff.method
    assert cmp.mean_diff.ci[0] < 0 < cmp.mean_diff.ci[1]  # the plain t interval excluded 0


def test_not_shown_to_differ_says_what_could_be_shown() -> None:
    """A verdict without a winner names the smallest difference the comparison could detect."""
    rng = np.random.default_rng(0)
    n = np.full(30, 5)
    c = rng.binomial(5, 0.6, 30)
    cmp = compare_runs(task_stats(run("A", n, c), 1), task_stats(run("B", n, rng.binomial(5, 0.6, 30)), 1))
    ev = evidence(cmp)
    assert ev.winner == 0
    assert f"this comparison could detect ≥ {ev.mde:.3f} (80% power)" in verdict_text(ev)


def test_compare_and_report_print_the_noise() -> None:
    """compare prints the SE, MDE and signal-to-noise; report prints the floor line and its JSON."""
    runner = CliRunner()
    out = runner.invoke(main, ["compare", str(BASELINE), str(CANDIDATE)]).output
    assert "noise: SE of the difference" in out and "this comparison could detect ≥" in out
    rep = runner.invoke(main, ["report", str(BASELINE)]).output
    assert "noise floor: a change below" in rep and "ICC" in rep
    doc = orjson.loads(runner.invoke(main, ["report", str(BASELINE), "--format", "json"]).output)
    floor = doc["runs"][0]["summary"]["noise_floor"]
    assert floor["mde"] > 0 and floor["tasks_for"] >= 2 and 0 <= floor["icc"] <= 1
