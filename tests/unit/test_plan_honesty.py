"""``plan``: a task whose every trial errored gets no trials ("fix the harness
first"); "flaky before in RUN" names only runs loaded before the planned one; its flaky
count says why it differs from the task table's."""

from __future__ import annotations

import numpy as np

from flaketui.model import RunOutcomes
from flaketui.output.plan import plan_json, run_lines
from flaketui.stats import task_stats
from flaketui.stats.estimators import FLAKY
from flaketui.stats.plan import HARNESS_FIRST, PlanOptions, make_plan
from flaketui.stats.risk import HIGH, LOW


def outcomes(run: str, counts: dict[str, tuple[int, int, int]], first_row: int = 0) -> RunOutcomes:
    """(n, passes, errored) per task; rows numbered from ``first_row`` (the load order)."""
    tasks = list(counts)
    n = np.array([counts[t][0] for t in tasks])
    c = np.array([counts[t][1] for t in tasks])
    e = np.array([counts[t][2] for t in tasks])
    bounds = np.r_[0, np.cumsum(n + e)]
    return RunOutcomes(run, tasks, n, c, e, [None] * len(tasks),
                       np.arange(first_row, first_row + int((n + e).sum())), bounds)


def test_a_task_whose_every_trial_errored_gets_no_trials() -> None:
    """A task whose every trial errored gets no trials."""
    run = outcomes("tb", {"build-initramfs-qemu": (0, 0, 5), **{f"t{i}": (5, i % 2 * 3, 0) for i in range(6)}})
    plan = make_plan([run], PlanOptions(budget=200, min_trials=10, low_min_trials=3))
    rows = {t.task: t for t in plan.runs[0].tasks}
    broken = rows["build-initramfs-qemu"]
    assert broken.extra == 0 and broken.why == HARNESS_FIRST and broken.all_errored
    assert "fix the harness first" in broken.why
    assert plan.spent == plan.budget  # the budget went to the others
    assert "build-initramfs-qemu" not in {line.task for line in plan.lines()}
    assert any("errored on every trial: fix the harness first" in line for line in run_lines(plan.runs[0]))
    task = next(t for t in plan_json(plan)["runs"][0]["tasks"] if t["task"] == "build-initramfs-qemu")
    assert task["errored"] == 5 and task["extra_trials"] == 0


def test_flaky_before_names_only_runs_loaded_before() -> None:
    """Flaky before names only runs loaded before."""
    a = outcomes("a", {"t": (6, 6, 0), "u": (6, 3, 0)}, first_row=0)   # loaded first
    b = outcomes("b", {"t": (6, 3, 0), "u": (6, 3, 0)}, first_row=100)  # loaded second
    plan_a = make_plan([a], PlanOptions(budget=0), others=[b])
    tiers_a = {t.task: (t.tier, t.tier_reason) for t in plan_a.runs[0].tasks}
    # t is flaky only in b, which came after a; u is flaky in a itself: neither is "before".
    assert tiers_a["t"][0] == LOW and "flaky before" not in tiers_a["t"][1]
    assert tiers_a["u"][0] == LOW and "flaky before" not in tiers_a["u"][1]
    plan_b = make_plan([b], PlanOptions(budget=0), others=[a])
    tiers_b = {t.task: (t.tier, t.tier_reason) for t in plan_b.runs[0].tasks}
    assert tiers_b["u"] == (HIGH, "flaky before in a")
    assert tiers_b["t"][0] == LOW  # stable in a, flaky only in b itself
    # Both planned together: the same, each against the runs before it.
    both = make_plan([b, a], PlanOptions(budget=0))
    by_run = {r.run: {t.task: t.tier_reason for t in r.tasks} for r in both.runs}
    assert by_run["b"]["u"] == "flaky before in a" and "flaky before" not in by_run["a"]["u"]


def test_the_flaky_count_says_why_it_differs_from_the_table() -> None:
    """The flaky count says why it differs from the table."""
    run = outcomes("r", {f"t{i}": (12, 6 if i < 3 else 11, 0) for i in range(8)})
    plan = make_plan([run], PlanOptions(budget=0))
    table_mixed = int(task_stats(run, 5).mixed.sum())
    decided = plan.runs[0].counts().get(FLAKY, 0)
    assert table_mixed == 8 and decided < table_mixed
    lines = run_lines(plan.runs[0])
    assert any(line.startswith(f"{table_mixed} task(s) both passed and failed (the task table's mixed): "
                               f"{decided} decided flaky here") for line in lines)
