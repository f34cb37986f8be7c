"""How often a task's class is right: the evidence classes and the empirical-Bayes ranking, simulated.

The suite is the one users' suites look like: 300 tasks, 30 truly flaky (p uniform in 0.2–0.8) and
270 stable (p uniform within 0.1 of 0 or 1, half each side), every task run n = 3, 5 or 10 times.
"Truly flaky" is flakiness 4p(1 − p) above the cap (default 0.36, p strictly between 0.1 and 0.9).
For each n, over ``--reps`` suites (seed ``--seed`` + n), it measures:

- the old label "mixed" (passed and failed): the share of the tasks so labelled that are stable;
- the class ``flaky``: the share of truly stable tasks labelled flaky (bound: 2.5%), the share of
  tasks with p in 0.3–0.7 labelled flaky, and of the truly flaky;
- the ranking's precision at the true count K (the share of truly flaky tasks among the first K):
  by the empirical-Bayes P(flaky) against by the observed flakiness 4p̂(1 − p̂) (ties in a random order,
  its expectation over the orders), and their paired difference with its 95% interval;
- the expected number of truly flaky tasks, Σ P(flaky), against the true count, and how often its
  95% Poisson-binomial interval holds the true count.

Then ``plan --budget --allocate classes`` against uniform trials at equal budget (``--alloc-reps``
suites per budget, seed ``--seed`` + budget): every task starts with 5 trials; the budget (5, 15 or
30 more trials a task on average) is spent in three plans, each rerun on the trials so far
(:func:`~flaketui.stats.allocation.allocate_classes` under the run's empirical-Bayes posterior,
none to a task the confidence sequence has decided), or uniformly. A task is misclassified when its
final class is not its true one (flaky, stable-pass or stable-fail by its p against the cap;
``undetermined`` counts as misclassified). The suite's mean pass rate from each task's first 5
trials (the design-free estimator) and from all its trials measure the bias the data-driven
design brings.

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

from flaketui.stats.allocation import allocate_classes
from flaketui.stats.classes import DEFAULT_FLAKY_CAP, cap_rates, evidence_classes, mixed
from flaketui.stats.empirical_bayes import fit_prior, flaky_posterior
from flaketui.stats.estimators import FLAKY, STABLE_FAIL, STABLE_PASS
from flaketui.stats.precision import UNDECIDED, decide

TASKS, FLAKY_TASKS = 300, 30


def suite_rates(rng: np.random.Generator, spread: float = 0.1) -> np.ndarray:
    """The issue's suite: 30 tasks with p in 0.2–0.8, 135 within ``spread`` of 0, 135 within it of 1
    (0.1: the stable tasks crowd the default cap's rates 0.1 and 0.9)."""
    stable = TASKS - FLAKY_TASKS
    return np.concatenate([rng.uniform(0.2, 0.8, FLAKY_TASKS), rng.uniform(0.0, spread, stable // 2),
                           rng.uniform(1.0 - spread, 1.0, stable - stable // 2)])


def precision_at(score: np.ndarray, truth: np.ndarray, k: int) -> float:
    """The share of truly flaky tasks among the ``k`` highest scores, ties in a random order: its
    expectation over the orders, exactly (the tasks above the k-th score, and of the tied group at
    it the places left times the group's share of truly flaky tasks). Drawing one order per suite
    instead added noise of about ±0.002 to a figure whose two rankings tie on every tied group."""
    if not k:
        return float("nan")
    kth = np.sort(score)[::-1][k - 1]
    above, tied = score > kth, score == kth
    left = k - int(above.sum())
    return float((truth[above].sum() + left * truth[tied].mean()) / k)


def measure(n: int, reps: int, seed: int, cap: float, spread: float = 0.1) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    p_lo, p_hi = cap_rates(cap)
    sums = dict.fromkeys(("mixed_stable_share", "stable_called_flaky", "mid_called_flaky", "flaky_called_flaky",
                          "prec_eb", "prec_phat", "expected", "true", "covered"), 0.0)
    stable_total = called_stable = mixed_total = mixed_stable = mid_total = mid_called = 0.0
    flaky_total = flaky_called = 0.0
    diffs: list[float] = []
    for _ in range(reps):
        p = suite_rates(rng, spread)
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
        observed = 4 * c * (n - c) / n**2  # 4p̂(1 − p̂) from whole numbers: mirror images tie exactly
        eb, ph = precision_at(post.p_flaky, truth, k), precision_at(observed, truth, k)
        sums["prec_eb"] += eb
        sums["prec_phat"] += ph
        diffs.append(eb - ph)
        sums["expected"] += post.expected
        sums["true"] += k
        sums["covered"] += post.interval[0] <= k <= post.interval[1]
    return {
        "n": n,
        "spread": spread,
        "mixed_stable_share": mixed_stable / max(mixed_total, 1),
        "stable_called_flaky": called_stable / stable_total,
        "mid_called_flaky": mid_called / mid_total,
        "flaky_called_flaky": flaky_called / flaky_total,
        "prec_eb": sums["prec_eb"] / reps,
        "prec_phat": sums["prec_phat"] / reps,
        "prec_diff_se": float(np.std(diffs, ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan"),
        "expected": sums["expected"] / reps,
        "true": sums["true"] / reps,
        "covered": sums["covered"] / reps,
    }


HEADER = ("stable tasks within", "n", "mixed: share stable", "stable called flaky", "p in 0.3–0.7 called flaky",
          "truly flaky called flaky",
          "precision@K, EB", "precision@K, p̂", "EB − p̂ (95% CI)", "Σ P(flaky)", "true count", "Σ P interval holds it")


def row(r: dict[str, float]) -> list[str]:
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    return [f"{r['spread']:g} of 0 or 1", str(int(r["n"])), pct(r["mixed_stable_share"]), pct(r["stable_called_flaky"]),
            pct(r["mid_called_flaky"]), pct(r["flaky_called_flaky"]), f"{r['prec_eb']:.3f}", f"{r['prec_phat']:.3f}",
            f"{r['prec_eb'] - r['prec_phat']:+.4f} ± {1.96 * r['prec_diff_se']:.4f}", f"{r['expected']:.1f}",
            f"{r['true']:.1f}", pct(r["covered"])]


def true_classes(p: np.ndarray, cap: float) -> np.ndarray:
    """Each task's class had it infinitely many trials."""
    p_lo, p_hi = cap_rates(cap)
    return np.where((p > p_lo) & (p < p_hi), FLAKY, np.where(p >= 0.5, STABLE_PASS, STABLE_FAIL))


def misclassified(n: np.ndarray, c: np.ndarray, p: np.ndarray, cap: float) -> int:
    """Tasks whose class is not their true one (undetermined included)."""
    return int(np.sum(np.asarray(evidence_classes(n, c, cap), dtype=object) != true_classes(p, cap)))


def measure_allocation(per_task: int, reps: int, seed: int, cap: float, start: int = 5,
                       plans: int = 3) -> dict[str, float]:
    """Misclassified tasks after ``per_task`` more trials a task on average, uniform against
    class-driven in ``plans`` reruns of the plan; and the bias of the suite's mean pass rate."""
    rng = np.random.default_rng(seed)
    uniform = targeted = doubling = bias_first = bias_all = 0.0
    for _ in range(reps):
        p = suite_rates(rng)
        n = np.full(TASKS, start)
        c = rng.binomial(n, p)
        uniform += misclassified(n + per_task, c + rng.binomial(per_task, p), p, cap)
        nn, cc = plan_trials(n, c, p, per_task * TASKS, plans, cap, rng)
        targeted += misclassified(nn, cc, p, cap)
        bias_first += float(np.mean(c / start) - p.mean())
        bias_all += float(np.mean(cc / nn) - p.mean())
        doubling += misclassified(*plan_trials(n, c, p, per_task * TASKS, plans, cap, rng, doubling=True), p, cap)
    return {"per_task": per_task, "uniform": uniform / reps, "targeted": targeted / reps,
            "doubling": doubling / reps, "bias_first": bias_first / reps, "bias_all": bias_all / reps}


def plan_trials(n: np.ndarray, c: np.ndarray, p: np.ndarray, budget: int, plans: int, cap: float,
                rng: np.random.Generator, doubling: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The trials and passes after ``plans`` reruns of the class-driven plan, each spending an equal share of
    what is left of ``budget``; with ``doubling`` a plan gives a task at most as many trials as it has (the
    batched variant: a clean task's thirty trials come over three plans, so one that fails early is dropped)."""
    p_lo = cap_rates(cap)[0]
    nn, cc, left = n.copy(), c.copy(), budget
    for look in range(plans):
        prior = fit_prior(nn, cc)
        open_ = np.asarray(decide(nn, cc, p_lo), dtype=object) == UNDECIDED
        alloc = allocate_classes(nn, cc, prior.a + cc, prior.b + nn - cc, left // (plans - look), open_, cap,
                                 batch=nn if doubling else None)
        cc = cc + rng.binomial(alloc.extra, p)
        nn = nn + alloc.extra
        left -= alloc.spent
    return nn, cc


ALLOC_HEADER = ("more trials a task", "misclassified, uniform", "misclassified, by class", "change",
                "by class, doubling at most (contrast)", "bias of mean p̂, first 5 trials",
                "bias of mean p̂, all trials")


def alloc_row(r: dict[str, float]) -> list[str]:
    return [str(int(r["per_task"])), f"{r['uniform']:.1f}", f"{r['targeted']:.1f}",
            f"{100 * (r['targeted'] / r['uniform'] - 1):+.1f}%",
            f"{r['doubling']:.1f} ({100 * (r['doubling'] / r['uniform'] - 1):+.1f}%)",
            f"{r['bias_first']:+.4f}", f"{r['bias_all']:+.4f}"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400, help="suites simulated per n (default 400)")
    ap.add_argument("--seed", type=int, default=20261207, help="base seed; n is added (default 20261207)")
    ap.add_argument("--cap", type=float, default=DEFAULT_FLAKY_CAP)
    ap.add_argument("--alloc-reps", type=int, default=40, help="suites per budget of the allocation (default 40)")
    ap.add_argument("--docs", action="store_true", help="write the table into docs/calibration.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = [measure(n, args.reps, args.seed + n, args.cap, spread) for spread in (0.1, 0.02) for n in (3, 5, 10)]
    alloc = [measure_allocation(per, args.alloc_reps, args.seed + per, args.cap) for per in (5, 15, 30)]
    elapsed = time.perf_counter() - t0
    for r in rows:
        print("  ".join(f"{h}={v}" for h, v in zip(HEADER, row(r), strict=True)))
    for r in alloc:
        print("  ".join(f"{h}={v}" for h, v in zip(ALLOC_HEADER, alloc_row(r), strict=True)))
    print(f"{elapsed:.0f} s")
    if args.docs:
        here = str(Path(__file__).resolve().parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        from docs_tables import DOCS, markdown_table, write_section

        text = (f"300 tasks (30 with p uniform in 0.2–0.8, 135 within 0.1 of 0, 135 within 0.1 of 1; the second block "
                f"within 0.02), cap "
                f"{args.cap:g}; {args.reps} suites per n, seed {args.seed} + n. The empirical-Bayes P(flaky) uses the "
                "symmetric prior Beta(a, a) unless the likelihood-ratio test rejects it (an unrestricted fit let a "
                "chance tilt of the fitted mean rank first the mixed tasks of the side with more unlucky stable "
                "tasks, and lost up to 0.02 of precision at n = 3). Under the symmetric prior P(flaky) and "
                "4p̂(1 − p̂) both fall with |c − n/2|, so both rankings order the tasks alike and their precisions "
                "are equal wherever the suite does not reject the symmetric prior; the precision is the expectation "
                "over the random orders of tied tasks, computed exactly. The 0.002 by which the EB ranking once "
                "trailed was rounding: a task's P(flaky) and its mirror image's (n − c passes) differed in the last "
                "bit, which broke the ties the other way from a random order; they are now computed from one "
                "image. The EB − p̂ column is the mean paired difference with its 95% interval over the suites. "
                "The second block moves the stable tasks to within 0.02 of 0 or 1, away from the cap's rates.\n\n"
                + markdown_table(HEADER, [row(r) for r in rows]) + "\n\n"
                "Σ P(flaky) is a model figure, and `report` says so (\"under a Beta prior fitted to the tasks (a "
                "model)\"): the count one smooth Beta prior implies. Where the stable tasks crowd the cap's rates "
                "(within 0.1 of 0 or 1, the cap's rates being 0.1 and 0.9) it overstates about threefold, and "
                "about 1.4-fold when they sit within 0.02. Fitted to a suite whose tasks are nearly all at the two "
                "ends, the U-shaped Beta keeps mass all across the flaky band, and with 3 to 10 trials nothing "
                "tells a stable task at p = 0.93 that failed once from a flaky one at 0.85: each of the hundred "
                "or so mixed tasks, most of them stable and unlucky, gets a P(flaky) near one half. The true "
                "count turns on where the stable tasks sit within a few hundredths of the cap's rates, which so "
                "few trials cannot show and no prior fitted to them can recover (a mixture prior would have to "
                "guess the same split). Its interval is the Poisson-binomial spread given the prior, not a "
                "confidence interval for the true count, and holds it seldom; the ranking by P(flaky) and the "
                "evidence classes do not rest on it.")
        write_section(DOCS / "calibration.md", "classes", text)
        text = (f"Every task starts with 5 trials; {args.alloc_reps} suites per budget, seed {args.seed} + budget; "
                "three plans per budget, each spending an equal share of what is left.\n\n"
                + markdown_table(ALLOC_HEADER, [alloc_row(r) for r in alloc]) + "\n\n"
                "The bar the issue sets, misclassified tasks down at least 30% at equal budget, holds at 30 more "
                "trials a task and not at 5 or 15, and on this suite the arithmetic leaves no rule room to clear it "
                "there: most of "
                "its tasks are stable, and a stable task is called so only after 36 trials all alike (31 more "
                "than its first 5, at the default cap). A task drawn within 0.1 of 1 that passed its first 5 "
                "passes 31 more about a third of the time (∫p³⁶ dp / ∫p⁵ dp over 0.9–1 = 0.34; the tasks near 0 "
                "alike), and nothing in five clean trials tells the likely ones apart, so a stable call costs "
                "about 31/0.34 ≈ 90 trials: 1,500 more trials (5 a task) buy about 16 and 4,500 (15 a task) "
                "about 50, against the 287 and 280 tasks uniform trials leave misclassified, −6% and −18%, the "
                "figures measured (the flaky tasks add a little, uniform trials decide many of them too). "
                "No rule can clear the bar at 5 more trials a task: even one that foresaw which clean tasks stay "
                "clean, and spent 31 trials on each of those alone, makes at most 1,500 / 31 = 48 stable calls; "
                "with all 30 flaky tasks decided as well, at most 78 tasks are right and at least 222 "
                "misclassified, −22.6% against uniform's 286.7. At 15 a task that bound is −55% (145 stable "
                "calls), so there the shortfall is the rule's, which cannot tell the clean tasks that will stay "
                "clean from the rest. "
                "Spending in smaller steps, so that a clean task that fails early is dropped before its 31 trials "
                "are spent (the contrast column: a plan gives a task at most as many trials as it already has, "
                "still choosing it for the 31 it needs, so they come over three plans), gained about a point at "
                "15 more trials a task and lost at 5 and 30, where the tasks a later plan starts cannot finish "
                "within the three plans; the default gives a task its trials in one plan.")
        write_section(DOCS / "calibration.md", "classes-allocation", text)


if __name__ == "__main__":
    main()
