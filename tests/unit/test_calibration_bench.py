"""A smoke run of benchmarks/bench_calibration.py at tiny sizes, so the script does not rot.

The Monte-Carlo cells run a handful of reps (their figures are noise); the exact figures are
checked against values worked out by hand: 0.9^5 for the point-flakiness gate at 5 trials,
Clopper-Pearson's guarantee for the exact pass^k interval.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_calibration.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_calibration", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_calibration"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def check_rows(rows: list, family: str) -> None:
    assert rows
    for row in rows:
        assert row.family == family
        assert 0.0 <= row.measured <= 1.0
        assert row.verdict in ("yes", "yes (conservative)", "no", "—")


def test_compare_cells(bench: ModuleType) -> None:
    """The calibration bench's comparison cells give well-formed rows."""
    null = bench.comparison_cell("Uniform(0, 1)", 1, 10, tasks=6, gain=0.0, reps=3, seed=1)
    alt = bench.comparison_cell("Beta(8, 1)", 4, 4, tasks=6, gain=0.2, reps=3, seed=1)
    check_rows(null + alt, "compare")
    assert [r.kind for r in null] == ["type1", "type1", "coverage"]
    assert alt[0].kind == "power" and alt[0].se is not None
    # E[min(p + 0.2, 1) − p] for p ~ Uniform(0, 1) is 0.8·0.2 + 0.2²/2 = 0.18.
    assert bench.clipped_gain(1.0, 1.0, 0.2) == pytest.approx(0.18)


def test_baseline_and_per_task_cells(bench: ModuleType) -> None:
    """The baseline and per-task cells give well-formed rows."""
    check_rows(bench.baseline_cell("Uniform(0, 1)", 2, 2, tasks=5, runs=2, reps=2, seed=1), "baseline")
    check_rows(bench.pertask_cell("Beta(8, 1)", 3, 3, tasks=5, reps=2, seed=1), "per-task")


def test_per_task_intervals_exact(bench: ModuleType) -> None:
    """The per-task interval rows' exact coverage is at least nominal."""
    rows = bench.per_task_interval_rows(grid=19)
    check_rows(rows, "per-task intervals")
    exact = [r for r in rows if "exact" in r.situation]
    assert exact and all(r.measured >= 0.95 - 1e-9 for r in exact)  # Clopper-Pearson's guarantee
    assert all(r.se is None for r in rows)


def test_suite_cells(bench: ModuleType) -> None:
    """The suite cells give well-formed rows."""
    rows = bench.suite_cell("unclustered", (6.0, 4.0), 5, reps=20, seed=1)
    rows += bench.suite_cell("clustered", None, 3, reps=20, seed=1)
    check_rows(rows, "suite intervals")
    assert bench.beta_mean_power(6.0, 4.0, 2) == pytest.approx(6 / 10 * 7 / 11)
    # E[p²] = E[E[p² | μ]] = E[μ(κμ + 1)/(κ + 1)] = (κ·E[μ²] + E[μ])/(κ + 1), κ = 10, μ ~ Beta(6, 4).
    assert bench.clustered_truth(2) == pytest.approx((10 * 6 / 10 * 7 / 11 + 0.6) / 11)


def test_exact_families(bench: ModuleType) -> None:
    """The plan decisions err at most 5%, and the gate's point rule at 5 trials passes only p̂ of 0 or 1."""
    peek = bench.peeking_rows()
    check_rows(peek, "plan decisions")
    assert all(r.measured <= 0.05 for r in peek if r.kind == "type1")
    gate = bench.gate_rows(trials=(5,), grid=9)
    check_rows(gate, "gate")
    point = next(r for r in gate if r.kind == "info")
    # Only p̂ = 1 and p̂ = 0 have point flakiness ≤ 0.2 at 5 trials.
    assert point.measured == pytest.approx(0.9**5 + 0.1**5)
    assert all(r.measured == 0.0 for r in gate if r.kind == "type1")  # 5 trials cannot rule flakiness out


def test_plan_cell_and_page(bench: ModuleType) -> None:
    """The plan and gate cells give rows and the page renders."""
    rows = bench.plan_cell("same gain, K = 5", reps=2, seed=1)
    check_rows(rows, "plan power")
    rows += bench.gate_rows(trials=(5,), grid=9)
    page = bench.markdown(rows, bench.Config(reps=2), 1.0, "bench_calibration.py --reps 2")
    assert "| situation | figure | measured | nominal | within 1 point? |" in page
    assert "## 8. `plan`'s power" in page and "## 7. `gate --require-evidence` (exact)" in page
    for row in rows:
        if row.missed:
            assert f"**{row.situation}, {row.figure}:" in page


def test_family_rerun_replaces_only_its_section(bench: ModuleType) -> None:
    """A ``--family`` rerun swaps that family's section into the page and keeps every other one."""
    title5, title6 = bench.FAMILIES["suite intervals"], bench.FAMILIES["plan decisions"]
    old = (f"# Calibration\n\n- This run: `full`, 13 min.\n\n## {title5}\n\nold five\n\n## {title6}\n\nsix\n\n"
           "## Classes\n\n<!-- generated: classes -->\nkept\n<!-- end generated: classes -->\n")
    new = f"# Calibration\n\n- This run: `bench --family x`, 1 min.\n\n## {title5}\n\nnew five\n"
    page = bench.replace_sections(old, new, ("suite intervals",))
    assert "new five" in page and "old five" not in page and "\nsix\n" in page and "\nkept\n" in page
    assert page.count("## ") == old.count("## ") and "regenerated section(s) 5" in page


def test_wild_cluster_interval_holds_the_mean(bench: ModuleType) -> None:
    """The wild cluster bootstrap contrast gives an interval around the mean, within [0, 1]."""
    import numpy as np

    rng = np.random.default_rng(5)
    sizes = np.array([6, 2, 2, 2, 2])
    x = rng.random(int(sizes.sum()))
    weights = bench.WEBB[rng.integers(0, 6, size=(199, sizes.size))]
    lo, hi = bench.wild_cluster_interval(x, sizes, weights)
    assert 0.0 <= lo < x.mean() < hi <= 1.0


def test_wild_cluster_interval_ends_where_the_brute_force_p_value_crosses_alpha(bench: ModuleType) -> None:
    """At the WCR contrast's bounds its p-value, refitted by brute force over all 6⁴ Webb weight vectors, crosses 5%."""
    import itertools

    import numpy as np

    from flaketui.stats.suite import mean_estimate

    sizes = np.array([4, 2, 3, 3])
    labels = [f"g{g}" for g in np.repeat(np.arange(4), sizes)]
    x = np.array([0.5, 0.4, 0.35, 0.6, 0.6, 0.8, 0.45, 0.3, 0.5, 0.7, 0.55, 0.65])
    weights = np.array(list(itertools.product(bench.WEBB, repeat=4)))
    lo, hi = bench.wild_cluster_interval(x, sizes, weights)
    assert 0 < lo < x.mean() < hi < 1
    se = mean_estimate(x, labels, ci_scale="linear").se

    def p_value(mu0: float) -> float:
        t = abs(x.mean() - mu0) / se
        hits = 0
        for w in weights:
            star = mu0 + np.repeat(w, sizes) * (x - mu0)
            est = mean_estimate(star, labels, bounds=(-np.inf, np.inf), ci_scale="linear")
            hits += abs(est.value - mu0) / est.se >= t - 1e-12
        return hits / len(weights)

    for bound, inward in ((lo, 1.0), (hi, -1.0)):
        assert p_value(bound + inward * 1e-6) > 0.05 >= p_value(bound - inward * 1e-6)
