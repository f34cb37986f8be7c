"""Clustered suite intervals: CR2 with Bell–McCaffrey degrees of freedom, pinned to a direct matrix
computation of the general formulas, and the edges (one cluster, clusters of one task, zero variance)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flaketui.model import RunOutcomes
from flaketui.stats.suite import mean_estimate, summarise, task_stats


def cr2_by_matrices(x: np.ndarray, labels: list[str]) -> tuple[float, float]:
    """CR2's SE of the regression of x on a constant and Bell–McCaffrey's ν, by the textbook
    matrices (Bell & McCaffrey 2002; Imbens & Kolesár 2016, eq. 11): A_g = (I − H_gg)^(−1/2) by an
    eigendecomposition, the sandwich B·Σ_g X_gᵀA_g e_g e_gᵀA_g X_g·B, and ν = (Σλ)²/Σλ² over the
    eigenvalues of GᵀG with G_g = (I − H)_{·g} A_g X_g B."""
    t = x.size
    design = np.ones((t, 1))
    bread = np.linalg.inv(design.T @ design)
    hat = design @ bread @ design.T
    resid = x - x.mean()
    meat = np.zeros((1, 1))
    columns = []
    for label in sorted(set(labels)):
        idx = [i for i, g in enumerate(labels) if g == label]
        w, v = np.linalg.eigh(np.eye(len(idx)) - hat[np.ix_(idx, idx)])
        adjust = v @ np.diag(w ** -0.5) @ v.T
        u = design[idx].T @ adjust @ resid[idx][:, None]
        meat += u @ u.T
        columns.append((np.eye(t) - hat)[:, idx] @ adjust @ design[idx] @ bread)
    lam = np.linalg.eigvalsh(np.hstack(columns).T @ np.hstack(columns))
    return float(np.sqrt((bread @ meat @ bread)[0, 0])), float(lam.sum() ** 2 / (lam**2).sum())


@pytest.mark.parametrize("sizes", [(40, 2, 2, 2, 2, 2, 2, 2), (47, 1, 1, 1, 1, 1, 1, 1), (3, 1, 1, 10),
                                   (5, 5, 5, 5), (2, 9), (20, 1)])
def test_cr2_matches_the_matrix_formulas(sizes: tuple[int, ...]) -> None:
    """CR2's SE and Bell–McCaffrey ν in closed form equal the general matrix computation."""
    rng = np.random.default_rng(sum(sizes))
    labels = [f"g{i}" for i, s in enumerate(sizes) for _ in range(s)]
    x = rng.binomial(8, rng.beta(3, 2, len(labels))) / 8
    se, nu = cr2_by_matrices(x, labels)
    e = mean_estimate(x, labels, bounds=(-np.inf, np.inf))
    assert e.method == "CR2" and e.se == pytest.approx(se, rel=1e-10) and e.df == pytest.approx(nu, rel=1e-10)
    from scipy import stats as sps

    half = sps.t.ppf(0.975, nu) * se
    assert e.ci == pytest.approx((x.mean() - half, x.mean() + half), rel=1e-10)
    assert e.n_clusters == len(sizes) and e.largest_share == pytest.approx(max(sizes) / len(labels))


@pytest.mark.parametrize("sizes", [(40, 2, 2, 2, 2, 2, 2, 2), (47, 1, 1, 1, 1, 1, 1, 1), (7,) * 8, (10,) * 5])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-2.0, 3.0)])
def test_cr2_interval_on_the_logit_scale_matches_scipy(sizes: tuple[int, ...], bounds: tuple[float, float]) -> None:
    """A rate's CR2 interval is the delta-method interval on the logit scale, by the matrix SE and scipy."""
    from scipy import special
    from scipy import stats as sps

    rng = np.random.default_rng(len(sizes) + sizes[0])
    labels = [f"g{i}" for i, s in enumerate(sizes) for _ in range(s)]
    z = rng.binomial(8, rng.beta(2, 6, len(labels))) / 8
    lo, hi = bounds
    x = lo + (hi - lo) * z
    se, nu = cr2_by_matrices(x, labels)
    half = sps.t.ppf(0.975, nu) * se / ((hi - lo) * z.mean() * (1 - z.mean()))
    want = tuple(lo + (hi - lo) * special.expit(special.logit(z.mean()) + s * half) for s in (-1, 1))
    e = mean_estimate(x, labels, bounds=bounds)
    assert e.ci == pytest.approx(want, rel=1e-10)
    assert e.ci[1] - x.mean() > x.mean() - e.ci[0]  # a mean below the middle reaches further up
    lin = mean_estimate(x, labels, bounds=bounds, ci_scale="linear")
    assert lin.se == e.se and lin.ci == pytest.approx((x.mean() - half * (hi - lo) * z.mean() * (1 - z.mean()),
                                                       x.mean() + half * (hi - lo) * z.mean() * (1 - z.mean())))


def test_logit_scale_keeps_a_mean_at_a_bound_as_a_point() -> None:
    """Every task at 0 (or a mean at a bound): the one-point interval, not NaN; a tiny mean stays above 0."""
    labels = [f"g{i % 4}" for i in range(12)]
    assert mean_estimate(np.zeros(12), labels).ci == (0.0, 0.0)
    tiny = mean_estimate(np.r_[np.zeros(11), 1e-300], labels)
    assert 0.0 <= tiny.ci[0] <= tiny.value <= tiny.ci[1] <= 1.0


def test_unknown_ci_scale_is_refused() -> None:
    """A CI scale other than logit and linear is a ValueError."""
    with pytest.raises(ValueError, match="ci_scale"):
        mean_estimate(np.ones(3), ["a", "a", "b"], ci_scale="probit")


def test_balanced_cr2_is_cr1() -> None:
    """With clusters of equal size CR2 equals CR1 and ν = G − 1."""
    x = np.random.default_rng(3).random(30)
    labels = [f"g{i // 6}" for i in range(30)]
    cr2 = mean_estimate(x, labels, bounds=(-9, 9))
    cr1 = mean_estimate(x, labels, bounds=(-9, 9), cluster_method="CR1")
    assert cr2.se == pytest.approx(cr1.se, rel=1e-12) and cr2.df == pytest.approx(4.0, rel=1e-12)


def test_one_task_clusters_give_the_t_interval() -> None:
    """Every cluster of one task is the unclustered one-sample t interval."""
    x = np.array([0.2, 0.4, 1.0, 0.9, 0.5])
    e = mean_estimate(x, [f"c{i}" for i in range(5)])
    assert not e.clustered and e.df == 4 and e.method == "t"
    assert e.se == pytest.approx(x.std(ddof=1) / math.sqrt(5))


def test_one_cluster_has_no_interval() -> None:
    """All tasks in one cluster: no interval, and the warning says why."""
    e = mean_estimate(np.array([0.1, 0.5, 0.9]), ["a", "a", "a"])
    assert e.clustered and math.isnan(e.se) and all(map(math.isnan, e.ci))


def test_zero_variance_clusters_give_a_point() -> None:
    """Every task at the same value: SE 0 and an interval of one point, not NaN."""
    e = mean_estimate(np.ones(12), [f"g{i % 3 if i < 9 else 3}" for i in range(12)])
    assert e.se == 0 and e.ci == (1.0, 1.0)


def test_unknown_cluster_method_is_refused() -> None:
    """A cluster method other than CR2 and CR1 is a ValueError."""
    with pytest.raises(ValueError, match="cluster_method"):
        mean_estimate(np.ones(3), ["a", "a", "b"], cluster_method="CR3")


def test_warning_names_the_largest_clusters_share() -> None:
    """A cluster holding more than half the tasks is named with its share and the degrees of freedom."""
    sizes = (40, 2, 2, 2, 2, 2, 2, 2)
    groups = [f"g{i}" for i, s in enumerate(sizes) for _ in range(s)]
    n = np.full(len(groups), 4)
    c = np.arange(len(groups)) % 5
    o = RunOutcomes("r", [f"t{i}" for i in range(n.size)], n, c, np.zeros_like(n), groups,
                    np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])
    sm = summarise(task_stats(o, 2))
    (w,) = [w for w in sm.warnings if w.startswith("the largest cluster")]
    assert "74% of the tasks" in w and "CR2" in w


@pytest.mark.parametrize("df", [0.7, 1.2681, 1.665, 3.79, 12.5, 299.5, 1000.25])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_quantile_at_fractional_df_matches_scipy(df: float, confidence: float) -> None:
    """The t quantile at CR2's non-whole degrees of freedom (computed without scipy) is scipy's."""
    from scipy import stats as sps

    from flaketui.stats.estimators import t_value

    assert t_value(df, confidence) == pytest.approx(sps.t.ppf(0.5 + confidence / 2, df), rel=1e-10)

