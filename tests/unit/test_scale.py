"""Statistics at scale: the binomial quantiles behind the pass^k interval, computed once per
distinct (n, c) and without scipy when that is cheap, equal scipy's on every pair."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom

from flaketui.stats import estimators


@pytest.mark.parametrize("q", [0.025, 0.975, 0.5])
def test_small_pairs_match_scipy_ppf(q: float) -> None:
    """The binomial quantiles equal scipy's binom.ppf for every pair up to n = 150."""
    # Expected values: scipy.stats.binom.ppf(q, n, c/n) for every 1 <= n <= 150, 0 <= c <= n.
    pairs = [(n, c) for n in range(1, 151) for c in range(n + 1)]
    n = np.array([p[0] for p in pairs], dtype=np.float64)
    c = np.array([p[1] for p in pairs], dtype=np.float64)
    ours = estimators.binomial_quantile(n, c, q)
    assert np.array_equal(ours, binom.ppf(q, n, c / n))
    # the pure-Python sum and scipy's bdtr agree pair by pair
    small = np.array([estimators._quantile_small(int(a), int(b), q) for a, b in pairs])
    assert np.array_equal(small, estimators._quantile_bdtr(n.astype(np.int64), c.astype(np.int64), q))


def test_many_tasks_share_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many tasks share pairs and get the same quantiles."""
    rng = np.random.default_rng(3)
    n = rng.integers(1, 30, 100_000).astype(np.float64)
    c = np.floor(rng.uniform(0, 1, n.shape) * (n + 1)).clip(0, n)
    got = estimators.binomial_quantile(n, c, 0.975)
    assert np.array_equal(got, binom.ppf(0.975, n, c / n))
    # past the budget of pmf terms, scipy's bdtr takes over with the same answer
    monkeypatch.setattr(estimators, "_PURE_CDF_TERMS", 0)
    assert np.array_equal(estimators.binomial_quantile(n, c, 0.975), got)


def test_report_statistics_do_not_import_scipy() -> None:
    """The report's statistics do not import scipy."""
    code = (
        "import sys, numpy as np\n"
        "from flaketui.model import RunOutcomes\n"
        "from flaketui.stats import task_stats, summarise\n"
        "T = 100_000\n"
        "n = np.full(T, 20); c = np.arange(T) % 21\n"
        "o = RunOutcomes('r', [f't{i}' for i in range(T)], n, c, np.zeros(T, np.int64), [None] * T,"
        " np.arange(T), np.arange(T + 1))\n"
        "summarise(task_stats(o, 5))\n"
        "print('scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_grouping_orders_as_lexsort(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Grouping orders trials as lexsort does."""
    # run_outcomes and the duplicate check sort by one int64 key; the order must be
    # the (task, trial) lexsort order, stable, whether or not the log is already sorted
    import orjson

    from flaketui.loading import load_logs

    rng = np.random.default_rng(11)
    for shuffled in (False, True):
        recs = [{"run": f"r{r}", "task": f"t{t}", "trial": k, "passed": bool(rng.integers(2))}
                for r in range(2) for t in range(30) for k in range(5)]
        recs += [dict(recs[7], passed=not recs[7]["passed"])]  # one duplicate, dropped
        if shuffled:
            rng.shuffle(recs)  # type: ignore[arg-type]
        p = tmp_path / f"log{int(shuffled)}.jsonl"
        p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
        log = load_logs([p])
        assert len(log) == 300 and len(log.problems) == 1
        for run in log.runs:
            o = log.run_outcomes(run)
            rows = np.flatnonzero(log.run == log.runs.index(run))
            ref = rows[np.lexsort((log.trial[rows], log.task[rows]))]
            assert np.array_equal(o.rows, ref)
