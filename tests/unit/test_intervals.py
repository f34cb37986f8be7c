"""Intervals that keep their promised coverage: the exact pass^k interval, the small-sample
suite intervals (CR1 clustered SE and the t quantile), the ``unrepeated`` label and the gate
that asks for evidence.

Expected values come from scipy (``binomtest(...).proportion_ci(method="exact")``,
``special.betaincinv``, ``stats.t.ppf``) and statsmodels (``OLS(...).fit(cov_type="cluster",
use_t=True)``), computed in the tests themselves; coverages are exact enumerations over the
binomial outcomes, or Monte Carlo runs with a fixed seed and a wide margin.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import special
from scipy import stats as sps

from flaketui.cli import main
from flaketui.model import RunOutcomes
from flaketui.stats import estimators as est
from flaketui.stats.suite import (
    MIN_TASKS_FOR_CI,
    clean_trials_needed,
    flakiness_cap_band,
    gate,
    mean_estimate,
    rules_out_flakiness,
    summarise,
    task_stats,
)
from tests.conftest import BASELINE

statsmodels_api = pytest.importorskip("statsmodels.api")


def outcomes(counts: dict[str, tuple[int, int]], groups: dict[str, str] | None = None) -> RunOutcomes:
    tasks = list(counts)
    n = np.array([counts[t][0] for t in tasks], dtype=np.int64)
    c = np.array([counts[t][1] for t in tasks], dtype=np.int64)
    return RunOutcomes("r", tasks, n, c, np.zeros_like(n), [(groups or {}).get(t) for t in tasks],
                       np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])


def run_cli(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# --- Clopper-Pearson and the exact pass^k interval -------------------------------------------


class TestClopperPearson:
    @pytest.mark.parametrize("n,c", [(1, 0), (1, 1), (2, 1), (5, 5), (8, 0), (8, 3), (10, 8), (12, 10),
                                     (49, 44), (150, 1), (300, 299), (1000, 500)])
    @pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
    def test_matches_scipy_binomtest_exact(self, n: int, c: int, confidence: float) -> None:
        """The Clopper-Pearson interval equals scipy's exact binomtest interval."""
        ref = sps.binomtest(c, n).proportion_ci(confidence_level=confidence, method="exact")
        ci = est.clopper_pearson(n, c, confidence)
        # binomtest finds the bounds by a root search (about 1e-9 relative): betaincinv is tighter.
        assert float(ci.low) == pytest.approx(ref.low, rel=1e-8, abs=1e-15)
        assert float(ci.high) == pytest.approx(ref.high, rel=1e-8)
        alpha = 1 - confidence
        lo = special.betaincinv(c, n - c + 1, alpha / 2) if c > 0 else 0.0
        hi = special.betaincinv(c + 1, n - c, 1 - alpha / 2) if c < n else 1.0
        assert float(ci.low) == pytest.approx(lo, rel=1e-12, abs=1e-300)
        assert float(ci.high) == pytest.approx(hi, rel=1e-12)

    def test_every_small_pair_pure_python_equals_scipy(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The pure-Python path equals the scipy path for every (n, c) with n up to 60."""
        pairs = [(n, c) for n in range(0, 61) for c in range(n + 1)]
        n = np.array([p[0] for p in pairs])
        c = np.array([p[1] for p in pairs])
        pure = est.clopper_pearson(n, c)
        monkeypatch.setattr(est, "_PURE_BETA_TERMS", 0)
        via_scipy = est.clopper_pearson(n, c)
        assert np.isnan(pure.low[0]) and np.isnan(via_scipy.high[0])  # n = 0
        np.testing.assert_allclose(pure.low[1:], via_scipy.low[1:], rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(pure.high[1:], via_scipy.high[1:], rtol=1e-12)
        assert np.all(pure.low[(c == 0) & (n > 0)] == 0) and np.all(pure.high[(c == n) & (n > 0)] == 1)

    def test_pure_path_is_taken_for_few_pairs(self) -> None:
        """Few distinct pairs take the pure-Python path."""
        # 100k tasks of 20 trials have 21 distinct pairs: well within the pure-Python budget.
        assert 21 * 21 <= est._PURE_BETA_TERMS


class TestExactPassHatKInterval:
    @pytest.mark.parametrize("n,c,k", [(12, 10, 5), (8, 8, 4), (8, 0, 4), (20, 17, 3), (5, 2, 1)])
    def test_is_clopper_pearson_to_the_power_k(self, n: int, c: int, k: int) -> None:
        """The exact pass^k interval is the Clopper-Pearson bounds raised to the power k."""
        ref = sps.binomtest(c, n).proportion_ci(confidence_level=0.95, method="exact")
        ci = est.pass_hat_k_interval(n, c, k)
        assert float(ci.low) == pytest.approx(ref.low**k, rel=1e-8, abs=1e-15)
        assert float(ci.high) == pytest.approx(ref.high**k, rel=1e-8)

    def test_default_is_exact_and_nan_where_k_exceeds_n(self) -> None:
        """The default pass^k interval is the exact one, and NaN where k exceeds n."""
        n, c = np.array([12, 3, 0]), np.array([12, 3, 0])
        ci = est.pass_hat_k_interval(n, c, 5)
        assert float(ci.low[0]) == pytest.approx(0.025 ** (5 / 12))  # c = n: L = (α/2)^(1/n)
        assert ci.high[0] == 1.0
        assert np.isnan(ci.low[1:]).all() and np.isnan(ci.high[1:]).all()
        with pytest.raises(ValueError, match="method"):
            est.pass_hat_k_interval(12, 10, 5, method="wald")

    def test_task_stats_and_k_figures_take_the_method(self) -> None:
        """task_stats and k_figures pass the interval method through."""
        from flaketui.stats.suite import k_figures

        o = outcomes({"a": (8, 8), "b": (8, 6), "c": (8, 8)})
        exact = task_stats(o, 4)
        boot = task_stats(o, 4, passk_ci="bootstrap")
        assert exact.passk_ci == "exact" and boot.passk_ci == "bootstrap"
        assert boot.pass_hat_k_ci.low[0] == 1.0 and exact.pass_hat_k_ci.low[0] < 1.0
        np.testing.assert_array_equal(k_figures(o.n, o.passes, 4)[2].low, exact.pass_hat_k_ci.low)
        np.testing.assert_array_equal(k_figures(o.n, o.passes, 4, "bootstrap")[2].low, boot.pass_hat_k_ci.low)
        with pytest.raises(ValueError, match="passk_ci"):
            task_stats(o, 4, passk_ci="nope")


def coverage(method: str, n: int, k: int, p: float) -> float:
    """Exact coverage of the pass^k interval: Σ_c Binom(c; n, p)·[L_c ≤ p^k ≤ U_c]."""
    c = np.arange(n + 1)
    ci = est.pass_hat_k_interval(np.full(n + 1, n), c, k, method=method)
    return float(np.sum(sps.binom.pmf(c, n, p) * ((ci.low <= p**k) & (p**k <= ci.high))))


GRID = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99]


@pytest.mark.parametrize("p", GRID)
def test_exact_interval_covers_at_least_95_percent(p: float) -> None:
    """The exact pass^k interval covers at least 95% at n = 8, k = 4 for each p tried."""
    # Guaranteed: p ↦ p^k is monotone, so it covers whenever Clopper-Pearson covers p.
    assert coverage("exact", 8, 4, p) >= 0.95


def test_exact_interval_coverage_on_a_fine_grid() -> None:
    """The exact interval's worst coverage over a fine grid of p is at least 95%."""
    worst = min(coverage("exact", 8, 4, p) for p in np.linspace(0.002, 0.998, 250))
    assert worst >= 0.95  # measured: 0.969


def test_bootstrap_interval_undercovers_near_one() -> None:
    """Why the bootstrap is no longer the default: when every trial passes it is [1, 1], which
    misses p^k for every p < 1. Exact coverages at n = 8, k = 4, nominal 95%."""
    measured = {p: round(coverage("bootstrap", 8, 4, p), 2) for p in (0.9, 0.95, 0.99)}
    assert measured == {0.9: 0.53, 0.95: 0.33, 0.99: 0.08}
    assert round(coverage("bootstrap", 8, 4, 0.05), 2) == 0.06  # [0, 0] at c = 0 misses too


# --- the t quantile ----------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99, 0.999])
def test_t_value_matches_scipy(confidence: float) -> None:
    """t_value equals scipy's t quantile for many degrees of freedom and confidences."""
    for df in [*range(1, 40), 49, 99, 299, 300, 301, 999, 1000, 4999, 10**5, 10**6, 2.5]:
        ref = sps.t.ppf(0.5 + confidence / 2, df)
        assert est.t_value(df, confidence) == pytest.approx(ref, rel=1e-12), df
    assert est.t_value(math.inf, confidence) == est.z_value(confidence)


def test_t_value_rejects_bad_input() -> None:
    """t_value refuses df below 1 and a confidence of 1."""
    with pytest.raises(ValueError, match="df"):
        est.t_value(0)
    with pytest.raises(ValueError, match="confidence"):
        est.t_value(5, 1.0)


# --- suite means: CR1 + t, pinned to statsmodels ------------------------------------------------


def statsmodels_fit(x: np.ndarray, groups: list[str] | None):  # type: ignore[no-untyped-def]
    ols = statsmodels_api.OLS(x, np.ones(len(x)))
    if groups is None:
        return ols.fit(use_t=True)
    codes = np.unique(np.array(groups), return_inverse=True)[1]
    return ols.fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)


class TestMeanEstimate:
    @pytest.mark.parametrize("seed", range(6))
    def test_clustered_matches_statsmodels_cr1(self, seed: int) -> None:
        """The clustered standard error equals statsmodels' CR1 cluster-robust one on random data."""
        rng = np.random.default_rng(seed)
        t = int(rng.integers(6, 60))
        g = int(rng.integers(2, t))
        labels = [f"g{i}" for i in rng.integers(0, g, t)]
        x = rng.binomial(8, rng.beta(3, 2, t)) / 8
        fit = statsmodels_fit(x, labels)
        e = mean_estimate(x, labels, bounds=(-np.inf, np.inf), cluster_method="CR1")
        if not e.clustered:  # every label drawn once: not clustered
            pytest.skip("no two tasks share a cluster")
        assert e.value == pytest.approx(float(fit.params[0]), rel=1e-12)
        assert e.se == pytest.approx(float(fit.bse[0]), rel=1e-10)
        lo, hi = fit.conf_int(alpha=0.05)[0]
        assert e.ci == pytest.approx((lo, hi), rel=1e-10)
        assert e.df == len(set(labels)) - 1 == e.clusters - 1

    def test_singletons_are_clusters_of_their_own(self) -> None:
        """Tasks without a group count as clusters of their own, as statsmodels with one label each."""
        x = np.array([1.0, 1.0, 0.0, 0.0, 0.5, 1.0, 0.25])
        groups = ["a", "a", "b", "b", None, None, None]
        fit = statsmodels_fit(x, ["a", "a", "b", "b", "s0", "s1", "s2"])
        e = mean_estimate(x, groups, bounds=(-np.inf, np.inf), cluster_method="CR1")
        assert (e.se, *e.ci) == pytest.approx((float(fit.bse[0]), *fit.conf_int()[0]), rel=1e-10)
        assert e.df == 4

    @pytest.mark.parametrize("t", [2, 5, 10, 31])
    def test_unclustered_matches_statsmodels_and_scipy_t(self, t: int) -> None:
        """Without groups the estimate matches statsmodels' OLS and scipy's t interval."""
        x = np.random.default_rng(t).binomial(8, 0.7, t) / 8
        fit = statsmodels_fit(x, None)
        e = mean_estimate(x, bounds=(-np.inf, np.inf))
        assert e.se == pytest.approx(float(fit.bse[0]), rel=1e-12)
        assert e.ci == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-12)
        q = sps.t.ppf(0.975, t - 1)
        assert e.ci == pytest.approx((x.mean() - q * e.se, x.mean() + q * e.se), rel=1e-12)
        assert e.df == t - 1 and not e.clustered

    def test_bounds_clip_the_interval_only(self) -> None:
        """Bounds clip the interval but never the estimate."""
        diff = np.array([-1.0, -1.0, -0.5, 0.0, -1.0])
        rate = mean_estimate(diff)  # clipped to [0, 1] by default
        paired = mean_estimate(diff, None, 0.95, bounds=(-1.0, 1.0))
        assert rate.ci[0] == 0.0 and rate.ci[1] == 0.0
        q = sps.t.ppf(0.975, 4)
        assert paired.ci == pytest.approx((max(-1.0, diff.mean() - q * paired.se), diff.mean() + q * paired.se))
        assert paired.value == rate.value and paired.se == rate.se

    def test_one_task_or_one_cluster_has_no_interval(self) -> None:
        """One task, or one cluster, gives no standard error or interval."""
        one = mean_estimate(np.array([0.5]))
        assert np.isnan(one.se) and all(np.isnan(one.ci)) and one.df == math.inf
        single = mean_estimate(np.array([0.5, 1.0, 0.0]), ["a", "a", "a"])
        assert single.clustered and np.isnan(single.se) and all(np.isnan(single.ci))

    def test_confidence_level(self) -> None:
        """The confidence level sets the t quantile of the interval."""
        x = np.array([1.0, 0.5, 0.0, 0.75, 1.0, 0.25])
        e = mean_estimate(x, confidence=0.9, bounds=(-np.inf, np.inf))
        assert e.ci[1] - e.value == pytest.approx(sps.t.ppf(0.95, 5) * e.se)


def simulate_clustered(rng: np.random.Generator, clusters: int, per: int = 10, trials: int = 8,
                       a: float = 6.0, b: float = 4.0, spread: float = 10.0) -> tuple[np.ndarray, list[str]]:
    """Per cluster p_g ~ Beta(a, b), per task p ~ Beta(spread·p_g, spread·(1 − p_g)), then
    ``trials`` Bernoulli trials: the suite's true mean pass rate is a / (a + b)."""
    pg = rng.beta(a, b, clusters)
    pt = rng.beta(np.repeat(pg, per) * spread, np.repeat(1 - pg, per) * spread)
    labels = [f"g{i}" for i in np.repeat(np.arange(clusters), per)]
    return rng.binomial(trials, pt) / trials, labels


def test_monte_carlo_cr1_t_covers_with_five_clusters() -> None:
    """5 clusters of 10 tasks, 8 trials each, 2000 replications: CR1 + t(4) covers 0.942 here
    (20,000 replications: 0.947); the plain sandwich with z (CR0 + z) 0.834 (0.844)."""
    rng = np.random.default_rng(20240611)
    truth, reps, hit_t, hit_z = 0.6, 2000, 0, 0
    for _ in range(reps):
        x, labels = simulate_clustered(rng, 5)
        e = mean_estimate(x, labels, bounds=(-np.inf, np.inf))
        hit_t += e.ci[0] <= truth <= e.ci[1]
        se0 = e.se * math.sqrt(4 / 5)  # CR0: without the G/(G − 1) factor
        hit_z += abs(e.value - truth) <= est.Z_95 * se0
    assert hit_t / reps >= 0.93
    assert hit_z / reps < hit_t / reps - 0.05  # why the small-sample correction


def test_monte_carlo_t_covers_with_ten_tasks() -> None:
    """10 unclustered tasks (p ~ Beta(6, 4), 8 trials), 2000 replications: the t(9) interval
    covers 0.945 here (20,000 replications: 0.949); mean ± 1.96·SE 0.916 (0.918)."""
    rng = np.random.default_rng(7)
    truth, reps, hit_t, hit_z = 0.6, 2000, 0, 0
    for _ in range(reps):
        x = rng.binomial(8, rng.beta(6, 4, 10)) / 8
        e = mean_estimate(x, bounds=(-np.inf, np.inf))
        hit_t += e.ci[0] <= truth <= e.ci[1]
        hit_z += abs(e.value - truth) <= est.Z_95 * e.se
    assert hit_t / reps >= 0.93
    assert hit_z / reps < hit_t / reps


class TestFewUnitsWarning:
    def test_counts_clusters_when_clustered(self) -> None:
        """With groups, the few-units warning counts clusters."""
        counts = {f"t{i}": (4, i % 5) for i in range(40)}
        groups = {f"t{i}": f"g{i % 6}" for i in range(40)}
        sm = summarise(task_stats(outcomes(counts, groups), 2))
        (w,) = [w for w in sm.warnings if w.startswith("only")]
        assert w.startswith("only 6 clusters:") and "CR2 and t(5)" in w
        assert "normal approximation" not in w

    def test_counts_tasks_otherwise(self) -> None:
        """Without groups, the few-units warning counts tasks."""
        sm = summarise(task_stats(outcomes({f"t{i}": (4, i % 5) for i in range(8)}), 2))
        (w,) = [w for w in sm.warnings if w.startswith("only")]
        assert w.startswith("only 8 tasks:") and "beta-binomial posterior" in w

    def test_no_warning_from_enough_clusters(self) -> None:
        """Enough clusters give no few-units warning."""
        counts = {f"t{i}": (4, i % 5) for i in range(90)}
        groups = {f"t{i}": f"g{i % MIN_TASKS_FOR_CI}" for i in range(90)}
        sm = summarise(task_stats(outcomes(counts, groups), 2))
        assert not [w for w in sm.warnings if w.startswith("only")]


# --- labels that need evidence -----------------------------------------------------------------


def test_one_trial_is_unrepeated_everywhere() -> None:
    """One trial is unrepeated whichever way it went; two clean trials are undetermined, 36 stable."""
    st = task_stats(outcomes({"once_pass": (1, 1), "once_fail": (1, 0), "twice": (2, 2), "none": (0, 0),
                              "many": (36, 36)}), 1)
    assert st.classes == [est.UNREPEATED, est.UNREPEATED, "undetermined", est.NO_TRIALS, est.STABLE_PASS]
    assert summarise(st).flaky_tasks == 0 and not st.flaky().any()


def test_report_shows_unrepeated(tmp_path: Path) -> None:
    """The JSON report shows one-trial tasks as unrepeated."""
    log = tmp_path / "once.jsonl"
    log.write_text('{"task": "a", "passed": true}\n{"task": "b", "passed": true}\n{"task": "b", "passed": true}\n')
    code, out, _ = run_cli("report", log, "--format", "json")
    assert code == 0
    classes = {t["task"]: t["class"] for t in json.loads(out)["runs"][0]["tasks"]}
    assert classes == {"a": "unrepeated", "b": "undetermined"}


# --- the gate with evidence ---------------------------------------------------------------------


class TestEvidence:
    def test_band(self) -> None:
        """The flakiness cap's band is the two rates whose flakiness equals the cap, summing to 1."""
        p1, p2 = flakiness_cap_band(0.2)
        assert 4 * p1 * (1 - p1) == pytest.approx(0.2) and 4 * p2 * (1 - p2) == pytest.approx(0.2)
        assert p1 + p2 == pytest.approx(1.0)

    def test_rules_out_by_clopper_pearson(self) -> None:
        """A task rules out the cap when its Clopper-Pearson interval leaves the band (69 clean trials for 0.2)."""
        # All-pass: L = 0.025^(1/n) ≥ p2 from n = ceil(log 0.025 / log p2) = 69 on, at cap 0.2.
        p1, p2 = flakiness_cap_band(0.2)
        first = math.ceil(math.log(0.025) / math.log(p2))
        assert first == 69
        n = np.array([first - 1, first, first, 30])
        c = np.array([first - 1, first, 0, 15])
        assert rules_out_flakiness(n, c, 0.2).tolist() == [False, True, True, False]
        assert clean_trials_needed(5, 5, 0.2) == first - 5
        assert clean_trials_needed(12, 0, 0.2) == first - 12  # mostly failing: failures needed
        assert clean_trials_needed(0, 0, 0.2) == first
        assert clean_trials_needed(12, 12, 0.0) is None and clean_trials_needed(1, 1, 1.0) == 0

    def test_needed_trials_are_the_fewest(self) -> None:
        """The clean trials said to be needed are the fewest that rule the cap out."""
        for n, c in [(20, 19), (40, 38), (10, 1)]:
            m = clean_trials_needed(n, c, 0.3)
            assert m is not None and m > 0
            more = (n + m, c + m) if 2 * c >= n else (n + m, c)
            fewer = (n + m - 1, c + m - 1) if 2 * c >= n else (n + m - 1, c)
            assert rules_out_flakiness(np.array([more[0]]), np.array([more[1]]), 0.3)[0]
            assert not rules_out_flakiness(np.array([fewer[0]]), np.array([fewer[1]]), 0.3)[0]

    def test_five_of_five_clears_the_point_rule_only(self) -> None:
        """Five passes of five clear the point rule but not the evidence rule."""
        # A task with p = 0.9 passes 5 of 5 trials 59% of the time: its point flakiness is 0.
        st = task_stats(outcomes({"lucky": (5, 5), "solid": (80, 80)}), 5)
        sm = summarise(st)
        assert gate(st, sm, None, 0.2).passed
        g = gate(st, sm, None, 0.2, require_evidence=True)
        assert not g.passed and g.too_flaky == [] and g.too_few_trials == [("lucky", 64)]
        assert g.cap_failed and not g.floor_failed
        assert "too few trials to rule out flakiness above the cap 0.2" in g.reasons[0]


def write_log(path: Path, counts: dict[str, tuple[int, int]]) -> Path:
    with path.open("w") as out:
        for task, (n, c) in counts.items():
            for i in range(n):
                out.write(json.dumps({"task": task, "trial": i, "passed": i < c}) + "\n")
    return path


class TestGateCli:
    def test_lucky_task_passes_by_default_and_fails_with_evidence(self, tmp_path: Path) -> None:
        """gate passes a 5-of-5 task by default and fails it with --require-evidence."""
        log = write_log(tmp_path / "lucky.jsonl", {"lucky": (5, 5), "solid": (80, 80)})
        code, out, _ = run_cli("gate", log, "--max-flakiness", "0.2")
        assert code == 0 and out.splitlines()[0] == "PASS lucky: pass^5 = 1.000; flakiness cap 0.2: ok"
        code, out, _ = run_cli("gate", log, "--max-flakiness", "0.2", "--require-evidence")
        assert code == 1
        first, *reasons = out.splitlines()
        assert first == ("FAIL lucky: pass^5 = 1.000; flakiness cap 0.2 with evidence at 95%: "
                         "FAILED (1 with too few trials to tell)")
        assert reasons == ["  - 1 task(s) have too few trials to rule out flakiness above the cap 0.2 "
                           "at 95%: lucky (64 more clean trials needed)"]

    def test_line_names_the_failing_rule(self, tmp_path: Path) -> None:
        """gate's line names each failing rule."""
        log = write_log(tmp_path / "mixed.jsonl", {"flaky": (12, 6), "ok": (12, 12), "short": (5, 5)})
        code, out, _ = run_cli("gate", log, "-k", "5", "--min-pass-hat-k", "0.5", "--max-flakiness", "0.2",
                               "--require-evidence")
        assert code == 1
        first = out.splitlines()[0]
        assert "(floor 0.5: ok)" in first
        assert "FAILED (1 task(s) above it, 2 with too few trials to tell)" in first
        # the two lists are apart: over the cap, and too few trials to tell
        assert "flaky (1.000)" in out and "short (64 more clean trials needed)" in out
        assert "flaky (" not in out.splitlines()[-1]
        code, out, _ = run_cli("gate", log, "-k", "5", "--min-pass-hat-k", "0.9")
        assert code == 1 and out.splitlines()[0].endswith("(floor 0.9: FAILED)")

    def test_json_lists_too_few_trials(self, tmp_path: Path) -> None:
        """gate's JSON lists the tasks with too few trials for evidence."""
        log = write_log(tmp_path / "lucky.jsonl", {"lucky": (5, 5), "solid": (80, 80)})
        code, out, _ = run_cli("gate", log, "--max-flakiness", "0.2", "--require-evidence", "--format", "json")
        (r,) = json.loads(out)["runs"]
        assert code == 1 and r["too_flaky"] == [] and r["cap_failed"] and not r["floor_failed"]
        assert r["too_few_trials"] == [{"task": "lucky", "more_clean_trials": 64}]

    def test_require_evidence_needs_a_cap(self) -> None:
        """--require-evidence without --max-flakiness is a usage error, exit 2."""
        code, _, err = run_cli("gate", BASELINE, "--min-pass-hat-k", "0.5", "--require-evidence")
        assert code == 2 and "--require-evidence goes with --max-flakiness" in err


class TestReportPasskCi:
    def test_exact_by_default_bootstrap_on_request(self) -> None:
        """report's pass^k interval is exact by default and bootstrap with --passk-ci bootstrap."""
        code, out, _ = run_cli("report", BASELINE, "-k", "5", "--format", "json")
        assert code == 0
        tasks = {t["task"]: t for t in json.loads(out)["runs"][0]["tasks"]}
        ref = sps.binomtest(10, 12).proportion_ci(method="exact")
        assert tasks["searchRunbook"]["pass_hat_k_ci"] == pytest.approx([ref.low**5, ref.high**5], rel=1e-8)
        assert tasks["getAlertStatus"]["pass_hat_k_ci"] == pytest.approx([0.025 ** (5 / 12), 1.0])
        code, out, _ = run_cli("report", BASELINE, "-k", "5", "--format", "json", "--passk-ci", "bootstrap")
        boot = {t["task"]: t for t in json.loads(out)["runs"][0]["tasks"]}
        assert code == 0 and boot["getAlertStatus"]["pass_hat_k_ci"] == [1.0, 1.0]

    def test_bad_method_is_a_usage_error(self) -> None:
        """An unknown --passk-ci method is a usage error, exit 2."""
        code, _, err = run_cli("report", BASELINE, "--passk-ci", "wald")
        assert code == 2 and "--passk-ci" in err
