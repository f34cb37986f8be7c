"""How often a task's class is right: the evidence classes and the empirical-Bayes ranking, simulated.

The suite is the one users' suites look like: 300 tasks, 30 truly flaky (p uniform in 0.2–0.8) and
270 stable (p uniform within 0.1 of 0 or 1, half each side), every task run n = 3, 5 or 10 times.
"Truly flaky" is flakiness 4p(1 − p) above the cap (default 0.36, p strictly between 0.1 and 0.9).
For each n, over ``--reps`` suites (seed ``--seed`` + n), it measures:

- the old label "mixed" (passed and failed): the share of the tasks so labelled that are stable;
- the class ``flaky``: the share of truly stable tasks labelled flaky (bound: 2.5%), the share of
  tasks with p in 0.3–0.7 labelled flaky, and of the truly flaky;
- the ranking's precision at the true count K (the share of truly flaky tasks among the first K):
  by the empirical-Bayes P(flaky) against by the observed flakiness 4p̂(1 − p̂) (ties in a random order);
- the expected number of truly flaky tasks, Σ P(flaky), against the true count, and how often its
  95% Poisson-binomial interval holds the true count.

Run::

    .venv/bin/python benchmarks/bench_classes.py                 # 400 suites per n, prints the table
    .venv/bin/python benchmarks/bench_classes.py --docs          # and writes it into docs/calibration.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from flaketui.stats.classes import DEFAULT_FLAKY_CAP, cap_rates, evidence_classes, mixed
from flaketui.stats.empirical_bayes import flaky_posterior
from flaketui.stats.estimators import FLAKY

TASKS, FLAKY_TASKS = 300, 30


def suite_rates(rng: np.random.Generator) -> np.ndarray:
    """The issue's suite: 30 tasks with p in 0.2–0.8, 135 within 0.1 of 0, 135 within 0.1 of 1."""
    stable = TASKS - FLAKY_TASKS
    return np.concatenate([rng.uniform(0.2, 0.8, FLAKY_TASKS), rng.uniform(0.0, 0.1, stable // 2),
                           rng.uniform(0.9, 1.0, stable - stable // 2)])


def precision_at(score: np.ndarray, truth: np.ndarray, k: int, rng: np.random.Generator) -> float:
    """The share of truly flaky tasks among the ``k`` highest scores (ties in a random order)."""
    order = np.lexsort((rng.random(score.size), -score))
    return float(truth[order[:k]].mean()) if k else float("nan")


def measure(n: int, reps: int, seed: int, cap: float) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    p_lo, p_hi = cap_rates(cap)
    sums = dict.fromkeys(("mixed_stable_share", "stable_called_flaky", "mid_called_flaky", "flaky_called_flaky",
                          "prec_eb", "prec_phat", "expected", "true", "covered"), 0.0)
    stable_total = called_stable = mixed_total = mixed_stable = mid_total = mid_called = 0.0
    flaky_total = flaky_called = 0.0
    for _ in range(reps):
        p = suite_rates(rng)
        trials = np.full(TASKS, n)
        c = rng.binomial(trials, p)
        truth = (p > p_lo) & (p < p_hi)
        labels = np.asarray(evidence_classes(trials, c, cap), dtype=object) == FLAKY
        mix = mixed(trials, c)
        mixed_total += mix.sum()
        mixed_stable += (mix & ~truth).sum()
        stable_total += (~truth).sum()
        called_stable += (labels & ~truth).sum()
        mid = (p >= 0.3) & (p <= 0.7)
        mid_total += mid.sum()
        mid_called += (labels & mid).sum()
        flaky_total += truth.sum()
        flaky_called += (labels & truth).sum()
        post = flaky_posterior(trials, c, cap)
        k = int(truth.sum())
        phat = c / n
        sums["prec_eb"] += precision_at(post.p_flaky, truth, k, rng)
        sums["prec_phat"] += precision_at(4 * phat * (1 - phat), truth, k, rng)
        sums["expected"] += post.expected
        sums["true"] += k
        sums["covered"] += post.interval[0] <= k <= post.interval[1]
    return {
        "n": n,
        "mixed_stable_share": mixed_stable / max(mixed_total, 1),
        "stable_called_flaky": called_stable / stable_total,
        "mid_called_flaky": mid_called / mid_total,
        "flaky_called_flaky": flaky_called / flaky_total,
        "prec_eb": sums["prec_eb"] / reps,
        "prec_phat": sums["prec_phat"] / reps,
        "expected": sums["expected"] / reps,
        "true": sums["true"] / reps,
        "covered": sums["covered"] / reps,
    }


HEADER = ("n", "mixed: share stable", "stable called flaky", "p in 0.3–0.7 called flaky", "truly flaky called flaky",
          "precision@K, EB", "precision@K, p̂", "Σ P(flaky)", "true count", "Σ P interval holds it")


def row(r: dict[str, float]) -> list[str]:
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return [str(int(r["n"])), pct(r["mixed_stable_share"]), pct(r["stable_called_flaky"]), pct(r["mid_called_flaky"]),
            pct(r["flaky_called_flaky"]), f"{r['prec_eb']:.3f}", f"{r['prec_phat']:.3f}", f"{r['expected']:.1f}",
            f"{r['true']:.1f}", pct(r["covered"])]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400, help="suites simulated per n (default 400)")
    ap.add_argument("--seed", type=int, default=20261207, help="base seed; n is added (default 20261207)")
    ap.add_argument("--cap", type=float, default=DEFAULT_FLAKY_CAP)
    ap.add_argument("--docs", action="store_true", help="write the table into docs/calibration.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = [measure(n, args.reps, args.seed + n, args.cap) for n in (3, 5, 10)]
    elapsed = time.perf_counter() - t0
    for r in rows:
        print("  ".join(f"{h}={v}" for h, v in zip(HEADER, row(r), strict=True)))
    print(f"{elapsed:.0f} s")
    if args.docs:
        here = str(Path(__file__).resolve().parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        from docs_tables import DOCS, markdown_table, write_section

        text = (f"300 tasks (30 with p uniform in 0.2–0.8, 135 within 0.1 of 0, 135 within 0.1 of 1), cap "
                f"{args.cap:g}; {args.reps} suites per n, seed {args.seed} + n.\n\n"
                + markdown_table(HEADER, [row(r) for r in rows]))
        write_section(DOCS / "calibration.md", "classes", text)


if __name__ == "__main__":
    main()
