"""The plan of the next run: every figure per task and per suite, and the budget's allocation.

Assembles the topic modules: :mod:`~flaketui.stats.precision` (decisions, rule
of three, Wilson width), :mod:`~flaketui.stats.risk` (tiers and their minimum
trials), :mod:`~flaketui.stats.allocation` (where a budget of further trials
goes), :mod:`~flaketui.stats.projection` (pass@k and pass^k beyond the trials)
and :mod:`~flaketui.stats.power` (tasks needed to detect a difference, for the
paired analysis actually run: mean p̂ differences over K trials per task).
Pure numpy: no Textual, no Rich, no disk (the tags and temperatures come from
:func:`flaketui.loading.extras.read_task_extras`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from flaketui.model import RunOutcomes
from flaketui.stats.allocation import allocate, allocate_classes, pass_hat_k_variance_coef
from flaketui.stats.arrays import Floats, Ints
from flaketui.stats.classes import STABLE_CLASSES, cap_of_margin, mixed
from flaketui.stats.empirical_bayes import fit_prior
from flaketui.stats.estimators import CONFIDENCE, FLAKY, NO_TRIALS, Interval, p_hat, rule_of_three, wilson_interval
from flaketui.stats.power import (
    Discordance,
    MeanDifferenceSize,
    SampleSize,
    VarianceSplit,
    discordance,
    tasks_independent,
    tasks_paired,
    tasks_paired_means,
    variance_split,
    z_sum,
)
from flaketui.stats.precision import (
    DESIGN_NOT_TESTS,
    UNDECIDED,
    clean_trials_to_decide,
    confidence_sequence,
    decide,
    more_clean_trials,
    more_trials_to_decide,
    trials_for_width,
    trials_to_bound,
)
from flaketui.stats.projection import INDEPENDENCE_CAVEAT, LOW_TEMPERATURE, ProjectionRow, projection
from flaketui.stats.risk import DEFAULT_RISK_TAGS, HIGH, TaskTraits, Tier, tier_of
from flaketui.stats.suite import MeanEstimate, default_k, summarise, task_stats

ALLOCATIONS = ("variance", "classes")
"""The ways ``plan --budget`` spends its trials (``--allocate``)."""

DESIGN_NOTE = (
    "trials allocated by class look at the outcomes so far: the suite's p̂ and pass^k over all trials "
    "are not those of a fixed design; estimate them from each task's trials before this plan's "
    "(the same number for every task)"
)
"""What a class-driven plan says about the suite's estimates."""


@dataclass(frozen=True)
class PlanOptions:
    """Every knob of a plan, with the defaults of ``flaketui plan``."""

    budget: int = 0
    k: int | None = None
    """k of the suite pass^k whose variance is shrunk; default the trials most tasks have (:func:`default_k`)."""
    confidence: float = CONFIDENCE
    margin: float = 0.1
    """Width of the stable zones of :func:`decide`."""
    target_width: float = 0.1
    """Wilson width a task needs no more than; also the cap of its further trials."""
    bound_target: float = 0.01
    """Failure rate the rule of three should bound for clean tasks."""
    min_trials: int = 10
    """Minimum n of the high tier (tagged high-risk or write, or flaky before)."""
    low_min_trials: int = 3
    """Minimum n of the low tier (read-only, stable)."""
    risk_tags: tuple[str, ...] = DEFAULT_RISK_TAGS
    power: float = 0.8
    alpha: float = 0.05
    effect: float = 0.05
    """Difference of pass rates the sample-size figures are for."""
    horizons: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100)
    """k values of the pass@k / pass^k projection (k itself is added)."""
    allocation: str = "variance"
    """Where the budget goes: ``variance`` (shrinks the suite pass^k's variance most,
    :func:`~flaketui.stats.allocation.allocate`) or ``classes`` (most likely to decide a task's class
    against the cap 4m(1 − m) of the margin, :func:`~flaketui.stats.allocation.allocate_classes`)."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad option."""
        if not isinstance(self.budget, int) or self.budget < 0:
            raise ValueError(f"budget ({self.budget}) must be a whole number >= 0")
        if self.k is not None and self.k < 1:
            raise ValueError(f"k ({self.k}) must be >= 1")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence ({self.confidence}) must be between 0 and 1")
        if not 0 < self.margin < 0.5:
            raise ValueError(f"margin ({self.margin}) must be between 0 and 0.5")
        if not 0 < self.target_width <= 1:
            raise ValueError(f"target width ({self.target_width}) must be above 0 and at most 1")
        if not 0 < self.bound_target < 1:
            raise ValueError(f"bound target ({self.bound_target}) must be between 0 and 1")
        if self.min_trials < 0 or self.low_min_trials < 0:
            raise ValueError("minimum trials must be >= 0")
        if not 0 < self.effect < 1:
            raise ValueError(f"effect ({self.effect}) must be between 0 and 1")
        if self.allocation not in ALLOCATIONS:
            raise ValueError(f"allocation ({self.allocation!r}) must be one of {', '.join(ALLOCATIONS)}")
        z_sum(self.power, self.alpha)


@dataclass(frozen=True)
class TaskPlan:
    """One task of a run in a plan: its figures and its share of the budget."""

    run: str
    task: str
    n: int
    passes: int
    p_hat: float
    ci: tuple[float, float]
    width: float
    decision: str
    """stable-pass, stable-fail, flaky, undecided or no-trials (:func:`decide`)."""
    rule_of_three: float | None
    """Fixed-n bound on the failure rate (all passed) or pass rate (all failed); None otherwise."""
    more_clean: int | None
    """Further clean trials to bound that rate below the bound target; None if flaky."""
    trials_for_width: int
    """Total trials for a Wilson interval no wider than the target width."""
    tier: str
    tier_reason: str
    minimum: int
    extra: int
    why: str
    cs: tuple[float, float] = (0.0, 1.0)
    """The confidence sequence the decision reads (:func:`confidence_sequence`)."""
    to_decide: int | None = None
    """Further clean trials until a task that passed (failed) every trial is decided; None otherwise."""
    errored: int = 0
    """Errored trials of the task: when every trial errored (n = 0) it gets none planned, the
    harness is fixed first (:data:`HARNESS_FIRST`)."""

    @property
    def all_errored(self) -> bool:
        """Whether the task has trials and every one of them errored."""
        return self.n == 0 and self.errored > 0


@dataclass(frozen=True)
class RunPlan:
    """A run's tasks in a plan and its suite figures."""

    run: str
    k: int
    tasks: list[TaskPlan]
    pass_hat_k: MeanEstimate
    se_now: float
    """Measurement part of the SE of suite pass^k now: √(Σ a_i/n_i)/T (delta method)."""
    se_after: float
    """The same after the planned trials, if each task keeps its rate."""
    projection: list[ProjectionRow]
    temperature: float | None
    """Median sampling temperature of the run's trials, if the log records one."""

    def counts(self) -> dict[str, int]:
        """Tasks per decision."""
        out: dict[str, int] = {}
        for t in self.tasks:
            out[t.decision] = out.get(t.decision, 0) + 1
        return out

    def both_ways(self) -> int:
        """Tasks that both passed and failed: the task table's (and the report's) flaky
        class; :meth:`counts` ``flaky`` holds only those decided flaky (their confidence
        sequence lies within the flaky zone), a subset."""
        return sum(1 for t in self.tasks if 0 < t.passes < t.n)

    def all_errored(self) -> int:
        """Tasks whose every trial errored (none planned: the harness is fixed first)."""
        return sum(1 for t in self.tasks if t.all_errored)


@dataclass(frozen=True)
class Plan:
    """A whole plan: runs, budget spent, sample sizes and caveats."""

    options: PlanOptions
    k: int
    runs: list[RunPlan]
    budget: int
    spent: int
    reason: str
    independent: SampleSize
    """Tasks per model to detect ``effect`` around the first run's pass@1."""
    comparison: Discordance | None
    """The discordance of the first two runs (planned first, then ``others``)."""
    paired: SampleSize | None
    """Pairs to detect ``effect`` with the observed discordance."""
    observed_independent: SampleSize | None
    """Tasks per model to detect the observed difference of the two runs."""
    observed_paired: SampleSize | None
    million: int
    """Clean trials to bound a one-in-a-million rate (≈ 3 million)."""
    notes: list[str] = field(default_factory=list)
    split: VarianceSplit | None = None
    """σ²_between and σ²_within of the paired analysis, from two runs (or one, with an assumption)."""
    paired_means: MeanDifferenceSize | None = None
    """Tasks to detect ``effect`` by mean p̂ differences over K trials per task (Miller 2024)."""
    observed_paired_means: MeanDifferenceSize | None = None
    """The same for the observed difference of the two runs."""
    paired_means_low: MeanDifferenceSize | None = None
    """With one run: ``paired_means`` if the difference were the same on every task (a lower bound)."""
    decide_clean: int = 0
    """Trials, all passing or all failing, at which a task is decided (confidence sequence)."""

    def lines(self) -> list[PlanLine]:
        """The rerun plan for a harness: one entry per task given trials."""
        return [PlanLine(t.run, t.task, t.extra, t.why) for r in self.runs for t in r.tasks if t.extra > 0]


@dataclass(frozen=True)
class PlanLine:
    """One line of the rerun plan (``plan --format jsonl``): a task given further trials."""

    run: str
    task: str
    extra_trials: int
    why: str

    def to_json(self) -> dict[str, str | int]:
        """The JSON object of the line: its fields in order (the harness contract)."""
        return {"run": self.run, "task": self.task, "extra_trials": self.extra_trials, "why": self.why}


@dataclass(frozen=True)
class _RunFigures:
    """A run's per-task figures before the allocation (arrays over its tasks)."""

    outcome: RunOutcomes
    phat: Floats
    ci: Interval
    cs: Interval
    decisions: list[str]
    width: Floats
    need_w: Ints
    r3: Floats
    clean: Floats
    to_decide: Floats
    need: Ints
    tiers: list[Tier]
    minimum: Ints
    temperature: float | None


def make_plan(
    outcomes: Sequence[RunOutcomes],
    options: PlanOptions,
    extras: Mapping[tuple[str, str], TaskTraits] | None = None,
    others: Sequence[RunOutcomes] = (),
) -> Plan:
    """Plan the next run of every run in ``outcomes`` with one shared budget.

    Parameters
    ----------
    outcomes : sequence of RunOutcomes
        The runs to plan (their tasks are the units that receive trials).
    options : PlanOptions
        Budget, k, thresholds and tiers.
    extras : mapping, optional
        (run, task) → tags and temperature read from the log
        (:func:`flaketui.loading.extras.read_task_extras`).
    others : sequence of RunOutcomes, optional
        Other loaded runs, not planned: a task flaky in one loaded before a planned
        run (planned or not) was "flaky before" there; and when only one run is
        planned, the first of them is the second run of the paired sample size.

    Notes
    -----
    The objective is the sum over runs of the variance of the run's suite
    pass^k from finite trials: Σ_r (1/T_r²) Σ_i a_i/n_i with a_i from
    :func:`pass_hat_k_variance_coef`. Tasks decided by :func:`decide` (a
    confidence sequence, valid however often the plan is rerun) get no trial
    beyond their risk minimum; an undecided task gets at most the trials that
    bring its Wilson interval to the target width or, for a task that passed
    (or failed) every trial, the clean trials that would decide it, whichever
    is more: a width target alone would leave such a task undecided forever.

    The paired sample size is Miller's, for the analysis the comparison runs
    (mean p̂ differences over K trials per task), with σ²_between and
    σ²_within estimated from the first two runs, or from the first run alone
    with an assumed σ²_between (an upper bound, and the lower bound beside it,
    as its note says). McNemar's figure
    (one trial per task) is kept alongside, labelled as such.
    """
    options.check()
    if not outcomes:
        raise ValueError("no run to plan")
    extras = extras or {}
    k = options.k or default_k(outcomes)
    conf = options.confidence
    loaded = _load_order([*outcomes, *others])
    flaky_at: list[tuple[int, str, list[str]]] = []  # (load position, run, its flaky tasks)
    for o in [*outcomes, *others]:
        flaky_at.append((loaded[o.run], o.run,
                         [t for t, m in zip(o.tasks, mixed(o.n, o.passes).tolist(), strict=True) if m]))
    flaky_at.sort()

    # Per-unit arrays over every (run, task), in run order then task order.
    unit_n, unit_c, unit_w, unit_min, unit_elig, unit_cap = [], [], [], [], [], []
    per_run: list[_RunFigures] = []
    for o in outcomes:
        n, c = o.n.astype(np.int64), o.passes.astype(np.int64)
        t_count = max(1, int(np.sum(n > 0)))
        phat = p_hat(n, c)
        ci = wilson_interval(n, c, conf)
        cs = confidence_sequence(n, c, conf)
        decisions = decide(n, c, options.margin, conf)
        width_now = np.where(n > 0, ci.high - ci.low, 1.0)
        need_w = trials_for_width(np.where(n > 0, np.nan_to_num(phat, nan=0.5), 0.5),
                                  options.target_width, conf)
        r3 = rule_of_three(n, conf)
        clean = more_clean_trials(n, c, options.bound_target, conf)
        to_decide = more_trials_to_decide(n, c, options.margin, conf)
        need = np.where(np.isnan(to_decide), need_w,
                        np.maximum(need_w, n + np.nan_to_num(to_decide))).astype(np.int64)
        # "Flaky before": flaky in a run loaded before this one, never this run or a later one.
        flaky_in: dict[str, list[str]] = {}
        for at, run, tasks in flaky_at:
            if at < loaded[o.run]:
                for t in tasks:
                    flaky_in.setdefault(t, []).append(run)
        tiers = _tiers(o, extras, flaky_in, options.risk_tags)
        high = np.fromiter((tier.name == HIGH for tier in tiers), dtype=bool, count=len(tiers))
        minimum = np.where(high, max(options.min_trials, 1), max(options.low_min_trials, 1)).astype(np.int64)
        eligible = np.isin(np.asarray(decisions, dtype=object), [UNDECIDED, NO_TRIALS])
        # Every trial errored: more trials would error too; none planned, not even the minimum.
        broken = (n == 0) & (np.asarray(o.errored, dtype=np.int64) > 0)
        eligible &= ~broken
        minimum[broken] = 0
        # allocate() caps the trials beyond the risk minimum, so count from max(n, minimum).
        cap = np.maximum(0, need - np.maximum(n, minimum))
        unit_n.append(n)
        unit_c.append(c)
        unit_w.append(np.full(n.shape, 1.0 / t_count**2))
        unit_min.append(minimum)
        unit_elig.append(eligible)
        unit_cap.append(cap)
        temps = [e.temperature for t in o.tasks
                 if (e := extras.get((o.run, t))) is not None and e.temperature is not None]
        per_run.append(_RunFigures(
            outcome=o, phat=phat, ci=ci, cs=cs, decisions=decisions, width=width_now, need_w=need_w,
            r3=r3, clean=clean, to_decide=to_decide, need=need, tiers=tiers, minimum=minimum,
            temperature=float(np.median(temps)) if temps else None))
    n_all = np.concatenate(unit_n)
    c_all = np.concatenate(unit_c)
    a_all = pass_hat_k_variance_coef(n_all, c_all, k, conf) * np.concatenate(unit_w)
    if options.allocation == "classes":
        # Each run's empirical-Bayes posterior of each task's pass rate (its own prior).
        priors = [fit_prior(n, c) for n, c in zip(unit_n, unit_c, strict=True)]
        alpha = np.concatenate([pr.a + c for pr, c in zip(priors, unit_c, strict=True)])
        beta = np.concatenate([pr.b + n - c for pr, n, c in zip(priors, unit_n, unit_c, strict=True)])
        alloc = allocate_classes(n_all, c_all, alpha, beta, options.budget, np.concatenate(unit_elig),
                                 cap_of_margin(options.margin), minimum=np.concatenate(unit_min))
    else:
        alloc = allocate(n_all, a_all, options.budget, np.concatenate(unit_elig),
                         np.concatenate(unit_cap), np.concatenate(unit_min))

    runs: list[RunPlan] = []
    start = 0
    for info in per_run:
        o = info.outcome
        size = len(o.tasks)
        extra = alloc.extra[start : start + size]
        topup = alloc.topup[start : start + size]
        a_run = a_all[start : start + size]
        start += size
        # Whole columns become Python numbers at once (one .tolist() each, not one int() per cell).
        rows: list[TaskPlan] = []
        for (task, n_i, c_i, e_i, p, low, high, cs_low, cs_high, w, decision, r3, clean, more, need_w,
             need, tier, m, x, up) in zip(
            o.tasks, o.n.astype(np.int64).tolist(), o.passes.astype(np.int64).tolist(),
            np.asarray(o.errored, dtype=np.int64).tolist(),
            info.phat.tolist(), info.ci.low.tolist(), info.ci.high.tolist(),
            info.cs.low.tolist(), info.cs.high.tolist(), info.width.tolist(),
            info.decisions, info.r3.tolist(), info.clean.tolist(), info.to_decide.tolist(),
            info.need_w.tolist(), info.need.tolist(),
            info.tiers, info.minimum.tolist(), extra.tolist(), topup.tolist(), strict=True,
        ):
            one_sided = n_i > 0 and (c_i == 0 or c_i == n_i)
            rows.append(TaskPlan(
                run=o.run, task=task, n=n_i, passes=c_i, p_hat=p, ci=(low, high), width=w,
                decision=decision,
                rule_of_three=r3 if one_sided else None,
                more_clean=int(clean) if one_sided else None,
                trials_for_width=need_w, tier=tier.name, tier_reason=tier.reason, minimum=m,
                extra=x,
                why=(HARNESS_FIRST if n_i == 0 and e_i > 0 else
                     _why(decision, x, up, tier.reason, m, p, cs_low, cs_high, k, options.budget,
                          n_i >= need, options.allocation)),
                cs=(cs_low, cs_high),
                to_decide=int(more) if one_sided else None,
                errored=e_i,
            ))
        stats = task_stats(o, k)
        summary = summarise(stats)
        n_now = o.n.astype(np.float64)
        has = n_now > 0
        se_now = float(np.sqrt(np.sum(a_run[has] / n_now[has]))) if has.any() else float("nan")
        n_after = n_now + extra
        has_after = n_after > 0
        se_after = (float(np.sqrt(np.sum(a_run[has_after] / n_after[has_after])))
                    if has_after.any() else float("nan"))
        horizons = sorted(set(options.horizons) | {k})
        runs.append(RunPlan(
            run=o.run, k=k, tasks=rows, pass_hat_k=summary.pass_hat_k,
            se_now=se_now, se_after=se_after,
            projection=projection(o.n, o.passes, horizons, conf),
            temperature=info.temperature,
        ))

    first = outcomes[0]
    has1 = first.n > 0
    p1 = float(np.mean(first.passes[has1] / first.n[has1])) if has1.any() else 0.5
    p2 = p1 + options.effect if p1 + options.effect <= 1 else p1 - options.effect
    independent = tasks_independent(p1, p2, options.power, options.alpha)
    comparison = paired = obs_ind = obs_paired = obs_means = None
    pair = [*outcomes, *others][:2]
    split = variance_split(pair[0], pair[1] if len(pair) == 2 else None)
    means = (tasks_paired_means(split.between, split.within, split.k, p2 - p1, options.power,
                                options.alpha, note=split.note)
             if split.k >= 1 else None)
    means_low = (tasks_paired_means(0.0, split.within, split.k, p2 - p1, options.power,
                                    options.alpha)
                 if split.k >= 1 and split.source == "one run" else None)
    if len(pair) == 2:
        comparison = discordance(pair[0], pair[1])
        if split.k >= 1 and comparison.tasks and comparison.difference == comparison.difference:
            obs_means = tasks_paired_means(split.between, split.within, split.k,
                                           comparison.difference, options.power, options.alpha,
                                           note=split.note)
        if comparison.tasks:
            paired = tasks_paired(comparison.discordance, p2 - p1, options.power, options.alpha, p1)
            obs_ind = tasks_independent(comparison.pass_a, comparison.pass_b, options.power,
                                        options.alpha)
            obs_paired = tasks_paired(comparison.discordance, comparison.difference,
                                      options.power, options.alpha, comparison.pass_a)
    million = trials_to_bound(1e-6, conf)
    notes = [DESIGN_NOT_TESTS.format(n=million), INDEPENDENCE_CAVEAT]
    for r in runs:
        if r.temperature is not None and r.temperature <= LOW_TEMPERATURE:
            notes.append(
                f"run {r.run} was sampled at temperature {r.temperature:g}: its trials are "
                "probably near copies of each other, so more of them will add little"
            )
    if alloc.reason:
        notes.append(alloc.reason)
    if options.allocation == "classes" and alloc.spent:
        notes.append(DESIGN_NOTE)
    return Plan(options=options, k=k, runs=runs, budget=alloc.budget, spent=alloc.spent,
                reason=alloc.reason, independent=independent, comparison=comparison,
                paired=paired, observed_independent=obs_ind, observed_paired=obs_paired,
                million=million, notes=notes, split=split, paired_means=means,
                observed_paired_means=obs_means, paired_means_low=means_low,
                decide_clean=clean_trials_to_decide(options.margin, conf))


HARNESS_FIRST = "every trial errored: fix the harness first (no trials planned)"
"""The reason a task whose every trial errored (n = 0) gets no trial: more would error too."""


def _load_order(runs: Sequence[RunOutcomes]) -> dict[str, int]:
    """Each run's place in the load order: its trials' rows in the log are run by run in the
    order the runs were loaded (the loader sorts by run first), so the run with the first
    row came first; a run without trials goes last."""
    first = {o.run: int(o.rows.min()) if len(o.rows) else np.iinfo(np.int64).max for o in runs}
    return {run: i for i, run in enumerate(sorted(first, key=lambda r: (first[r], r)))}


def _tiers(o: RunOutcomes, extras: Mapping[tuple[str, str], TaskTraits],
           flaky_in: Mapping[str, Sequence[str]], risk_tags: Sequence[str]) -> list[Tier]:
    """The tier of each task of a run (:func:`~flaketui.stats.risk.tier_of`)."""
    none: frozenset[str] = frozenset()
    return [tier_of(traits.tags if (traits := extras.get((o.run, t))) is not None else none,
                    flaky_in.get(t, ()), risk_tags) for t in o.tasks]


def _why(decision: str, extra: int, topup: int, tier_reason: str, minimum: int, p: float,
         low: float, high: float, k: int, budget: int, precise: bool, allocation: str = "variance") -> str:
    """A one-line reason for a task's share of the budget (or for none)."""
    parts = []
    if topup:
        parts.append(f"{tier_reason}: minimum {minimum} trials")
    greedy = extra - topup
    if greedy:
        if decision == NO_TRIALS:
            parts.append("no non-errored trial yet")
        else:
            parts.append(f"undecided, p̂ {p:z.3f} (95% confidence sequence [{low:z.2f}, {high:z.2f}]): "
                         + ("most likely to decide its class" if allocation == "classes" else
                            f"largest cut in the variance of suite pass^{k}"))
    if parts:
        return "; ".join(parts)
    if decision in STABLE_CLASSES:
        return f"decided {decision}"
    if decision == FLAKY:
        return "decided flaky: fix it, more trials only say how flaky"
    if precise:
        return "target width reached"
    if budget == 0:
        return "no budget given"
    if allocation == "classes":
        return "none: less likely to decide its class than the tasks given trials"
    return f"none: cuts the variance of suite pass^{k} less than the tasks given trials"
