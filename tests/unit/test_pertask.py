"""Per-task Fisher tests, Holm / BH adjustments and the paired permutation test, pinned to scipy and statsmodels.

Every expected value is computed here by scipy.stats (fisher_exact, binomtest,
permutation_test) or statsmodels.stats.multitest.multipletests on generated cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from flaketui.model import RunOutcomes
from flaketui.stats import compare_runs, task_stats
from flaketui.stats import exact as exact_mod
from flaketui.stats.exact import fisher_pvalue, sign_test_pvalue
from flaketui.stats.permutation import paired_permutation_test
from flaketui.stats.pertask import (
    UNTESTABLE_NOTE,
    benjamini_hochberg,
    fisher_min_pvalues,
    holm,
    per_task_tests,
    tarone_family,
)


def outcomes(run: str, n: np.ndarray, c: np.ndarray, groups: list[str | None] | None = None) -> RunOutcomes:
    tasks = [f"t{i}" for i in range(len(n))]
    bounds = np.r_[0, np.cumsum(n)]
    return RunOutcomes(run, tasks, n, c, np.zeros_like(n), groups or [None] * len(n),
                       np.arange(int(n.sum())), bounds)


def generated_pair(seed: int, tasks: int = 300, trials: int = 8):
    rng = np.random.default_rng(seed)
    p_a = rng.choice([0.0, 0.3, 0.7, 0.95, 1.0], size=tasks)
    p_b = np.where(rng.random(tasks) < 0.15, rng.random(tasks), p_a)
    n_a = rng.integers(1, trials + 1, tasks)
    n_b = rng.integers(1, trials + 1, tasks)
    c_a, c_b = rng.binomial(n_a, p_a), rng.binomial(n_b, p_b)
    return compare_runs(task_stats(outcomes("A", n_a, c_a), 1), task_stats(outcomes("B", n_b, c_b), 1))


class TestExact:
    def test_fisher_matches_scipy(self) -> None:
        """Fisher's exact test equals scipy's on random tables."""
        rng = np.random.default_rng(3)
        for _ in range(500):
            na, nb = (int(x) for x in rng.integers(0, 30, 2))
            ca, cb = int(rng.integers(0, na + 1)), int(rng.integers(0, nb + 1))
            ref = sps.fisher_exact([[ca, na - ca], [cb, nb - cb]]).pvalue
            assert fisher_pvalue(ca, na, cb, nb) == pytest.approx(ref, rel=1e-12, abs=1e-300)

    def test_fisher_large_tables_go_to_scipy(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Large tables go to scipy's Fisher test."""
        monkeypatch.setattr(exact_mod, "FISHER_EXACT_MAX_N", 10)
        ref = sps.fisher_exact([[30, 20], [10, 40]]).pvalue
        assert fisher_pvalue(30, 50, 10, 50) == pytest.approx(ref, rel=1e-12)

    @pytest.mark.parametrize("fixed,broken", [(0, 1), (7, 4), (6, 2), (10, 1), (1, 1), (252, 282), (0, 40)])
    def test_sign_test_matches_binomtest(self, fixed: int, broken: int) -> None:
        """The sign test's p equals scipy's binomtest."""
        ref = sps.binomtest(fixed, fixed + broken, 0.5).pvalue
        assert sign_test_pvalue(fixed, broken) == pytest.approx(ref, rel=1e-12)


class TestAdjustments:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_holm_and_bh_match_statsmodels(self, seed: int) -> None:
        """Holm and Benjamini-Hochberg adjustments equal statsmodels' multipletests, ties included."""
        rng = np.random.default_rng(seed)
        p = np.r_[rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 40), [0.02, 0.02, 1.0]]  # ties too
        assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-15)
        assert benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1], abs=1e-15)

    def test_fisher_min_pvalue_is_the_smallest_over_every_table(self) -> None:
        """The smallest attainable Fisher p is the minimum over every table with the margins."""
        for na, nb, k in [(8, 8, 8), (8, 8, 3), (5, 12, 9), (1, 1, 1), (3, 7, 10)]:
            tables = range(max(0, k - nb), min(k, na) + 1)
            ref = min(sps.fisher_exact([[x, na - x], [k - x, nb - k + x]]).pvalue for x in tables)
            got = fisher_min_pvalues(np.array([na]), np.array([nb]), np.array([k]))[0]
            assert got == pytest.approx(ref, rel=1e-12)

    def test_tarone_family_is_the_smallest_consistent_k(self) -> None:
        """Tarone's family is the smallest consistent k."""
        rng = np.random.default_rng(5)
        p_min = np.r_[rng.uniform(1e-6, 1e-3, 30), rng.uniform(1e-3, 1, 200)]
        fam = tarone_family(p_min, 0.05)
        k = next(k for k in range(1, p_min.size + 1) if np.sum(p_min < 0.05 / k) <= k)
        assert fam.tolist() == (p_min < 0.05 / k).tolist()


class TestPerTask:
    @pytest.mark.parametrize("seed", [0, 1])
    def test_pinned_to_scipy_and_statsmodels(self, seed: int) -> None:
        """Per-task tests on generated pairs equal scipy and statsmodels."""
        cmp = generated_pair(seed)
        res = per_task_tests(cmp)
        assert res.tested
        ref_p = np.array([sps.fisher_exact([[a, na - a], [b, nb - b]]).pvalue for a, na, b, nb in zip(
            cmp.a.passes, cmp.a.n, cmp.b.passes, cmp.b.n, strict=True)])
        assert res.p_value == pytest.approx(ref_p, rel=1e-12)
        # Holm over Tarone's family, BH over the tasks whose margins admit another table.
        p_min = np.array([min(sps.fisher_exact([[x, na - x], [a + b - x, nb - a - b + x]]).pvalue
                              for x in range(max(0, a + b - nb), min(a + b, na) + 1))
                          for a, na, b, nb in zip(cmp.a.passes, cmp.a.n, cmp.b.passes, cmp.b.n, strict=True)])
        k = next(k for k in range(1, p_min.size + 1) if np.sum(p_min < 0.05 / k) <= k)
        fam = p_min < 0.05 / k
        assert res.family == int(fam.sum()) > 0
        assert res.p_adjusted[fam] == pytest.approx(multipletests(ref_p[fam], method="holm")[1], abs=1e-15)
        assert np.all(res.p_adjusted[~fam] == 1.0)
        open_ = p_min < 1
        assert res.q_value[open_] == pytest.approx(multipletests(ref_p[open_], method="fdr_bh")[1], abs=1e-15)
        assert np.array_equal(res.flipped, res.changed & (res.p_adjusted < 0.05))
        assert set(res.flipped_fixed) | set(res.flipped_broken) == {cmp.tasks[i] for i in np.flatnonzero(res.flipped)}
        assert not res.moved[res.flipped].any()

    def test_json_rows_and_lists(self) -> None:
        """Per-task results give the JSON rows and lists."""
        a = task_stats(outcomes("A", np.array([20, 20, 20, 5]), np.array([20, 0, 10, 2])), 1)
        b = task_stats(outcomes("B", np.array([20, 20, 20, 5]), np.array([0, 20, 10, 3])), 1)
        res = per_task_tests(compare_runs(a, b))
        out = res.to_json()
        assert out["flipped_broken"] == ["t0"] and out["flipped_fixed"] == ["t1"]
        assert res.moved_fixed == ["t3"] and res.flip_order() == [0, 1, 3]
        row = out["per_task"][0]
        assert list(row) == ["task", "passes_a", "n_a", "passes_b", "n_b", "p_value", "p_adjusted", "q_value",
                             "flipped", "changed"]
        ref = sps.fisher_exact([[20, 0], [0, 20]]).pvalue
        assert row["p_value"] == pytest.approx(ref) and row["flipped"] is True
        assert out["per_task"][2]["p_value"] == 1.0 and out["per_task"][2]["flipped"] is False

    def test_one_trial_per_task_marks_changes_never_flips(self) -> None:
        """With one trial per task changes are marked, never flips."""
        n = np.ones(6, dtype=np.int64)
        a = task_stats(outcomes("A", n, np.array([0, 0, 1, 1, 0, 1])), 1)
        b = task_stats(outcomes("B", n, np.array([1, 0, 0, 1, 1, 1])), 1)
        res = per_task_tests(compare_runs(a, b))
        assert not res.tested and res.single_trial
        assert res.flipped_fixed == [] and res.flipped_broken == []
        assert res.moved_fixed == ["t0", "t4"] and res.moved_broken == ["t2"]
        out = res.to_json()
        assert [r["changed"] for r in out["per_task"]] == [True, False, True, False, True, False]
        assert out["per_task_note"] == UNTESTABLE_NOTE and out["per_task"][0]["p_value"] is None

    def test_no_common_task(self) -> None:
        """Two runs without a common task test nothing."""
        a = task_stats(outcomes("A", np.array([4]), np.array([2])), 1)
        b = task_stats(RunOutcomes("B", ["other"], np.array([4]), np.array([1]), np.zeros(1, dtype=np.int64),
                                   [None], np.arange(4), np.array([0, 4])), 1)
        res = per_task_tests(compare_runs(a, b))
        assert res.tasks == [] and not res.single_trial and "per_task_note" not in res.to_json()

    def test_errored_only_task_is_not_tested(self) -> None:
        """A task with only errored trials is not tested."""
        a = task_stats(outcomes("A", np.array([0, 8]), np.array([0, 8])), 1)
        b = task_stats(outcomes("B", np.array([8, 8]), np.array([0, 0])), 1)
        res = per_task_tests(compare_runs(a, b))
        assert np.isnan(res.p_value[0]) and not res.flipped[0] and res.to_json()["per_task"][0]["q_value"] is None
        assert res.flipped_broken == ["t1"]


class TestPermutation:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_exact_matches_scipy(self, seed: int) -> None:
        """The exact paired permutation test equals scipy's permutation_test."""
        d = np.random.default_rng(seed).choice([-1, -0.5, -0.125, 0, 0.25, 0.5, 1], size=14)
        ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
        res = paired_permutation_test(d)
        assert res.exact and res.pvalue == pytest.approx(ref, rel=1e-12)

    @pytest.mark.slow
    def test_monte_carlo_close_to_exact(self) -> None:
        """The Monte Carlo permutation p is close to the exact one."""
        d = np.random.default_rng(7).normal(0.1, 0.5, 18)
        ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
        res = paired_permutation_test(d, exact_max=10)
        assert not res.exact and res.resamples == 20_000
        assert abs(res.pvalue - ref) < 4 * np.sqrt(ref * (1 - ref) / 20_000) + 1 / 20_001
        assert paired_permutation_test(d, exact_max=10).pvalue == res.pvalue  # fixed seed

    def test_normal_limit_close_to_monte_carlo(self) -> None:
        """The normal limit is close to Monte Carlo on many tasks."""
        d = np.random.default_rng(8).normal(0.01, 0.3, 3000)
        normal = paired_permutation_test(d, normal_min=1000)
        mc = paired_permutation_test(d)
        assert normal.resamples == 0 and mc.resamples == 20_000
        assert abs(normal.pvalue - mc.pvalue) < 4 * np.sqrt(mc.pvalue * (1 - mc.pvalue) / 20_000) + 0.005

    def test_clusters_flip_as_units(self) -> None:
        """Clusters flip their signs as units."""
        d = np.array([0.5, 0.25, -0.25, 0.75, 0.5, 0.125])
        groups = ["g1", "g1", "g2", "g2", None, "g3"]
        res = paired_permutation_test(d, groups)
        sums = np.array([0.75, 0.5, 0.5, 0.125])
        ref = sps.permutation_test((sums,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
        assert res.clustered and res.units == 4 and res.pvalue == pytest.approx(ref)
