"""A smoke run of benchmarks/bench_score_calibration.py at tiny sizes, so the script does not rot; the
per-task cells check the interval against the exact Clopper-Pearson guarantee where scores are 0/1."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_score_calibration.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_score_calibration", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_score_calibration"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_cells_and_page(bench: ModuleType) -> None:
    """Every law and trial count has a row per interval, every run cell a row, and the page names the seed."""
    tasks = bench.per_task(1, 400)
    runs = bench.per_run(1, 5)
    assert len(tasks) == len(bench.LAWS) * len(bench.TRIALS) * len(bench.METHODS)
    assert len(runs) == 2 * len(bench.TASKS)
    page = bench.page(tasks, runs, 400, 5, 1)
    assert "seed 1" in page and "score CI" in page


def test_all_or_nothing_scores_give_the_exact_binomial_guarantee(bench: ModuleType) -> None:
    """With 0/1 scores the interval is Clopper-Pearson: its exact coverage at p = 0.9 is at least 95% (scipy)."""
    from scipy import stats

    from flaketui.stats.scores import mean_score_interval

    for n in bench.TRIALS:
        ci = mean_score_interval([n] * (n + 1), list(range(n + 1)))
        covers = (ci.low <= 0.9) & (0.9 <= ci.high)
        assert float(stats.binom.pmf(range(n + 1), n, 0.9)[covers].sum()) >= 0.95 - 1e-12
    with pytest.raises(SystemExit):
        bench.main(["--help"])
