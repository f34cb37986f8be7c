"""Output of ``flaketui plan``: plain lines (shared with the app), a Rich table, JSON and JSONL.

The JSON field names and the JSONL plan lines are a contract for scripts and
harnesses (the manual, docs/planning.md).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

from flaketui.model import natural_key
from flaketui.output import formatting as fmt
from flaketui.sanitize import visible
from flaketui.stats.estimators import FLAKY, NO_TRIALS, STABLE_FAIL, STABLE_PASS
from flaketui.stats.plan import Plan, RunPlan, TaskPlan
from flaketui.stats.power import MeanDifferenceSize, SampleSize
from flaketui.stats.precision import PEEKING, UNDECIDED, trials_to_bound
from flaketui.stats.projection import ProjectionRow

DECISIONS = (STABLE_PASS, STABLE_FAIL, FLAKY, UNDECIDED, NO_TRIALS)
"""Decisions in the order they are counted."""


def percent(x: float) -> str:
    """A confidence or power as ``95%`` (``99.5%`` when not whole)."""
    v = x * 100
    return f"{v:.0f}%" if abs(v - round(v)) < 1e-9 else f"{v:.1f}%"


def count(x: int | None) -> str:
    """A whole number with thousands separators, or a dash."""
    return fmt.DASH if x is None else f"{x:,}"


def display_order(run: RunPlan) -> list[TaskPlan]:
    """Tasks given trials first (most first), then undecided, then the rest; by name within."""
    rank = {UNDECIDED: 0, NO_TRIALS: 0, FLAKY: 1, STABLE_PASS: 2, STABLE_FAIL: 3}
    return sorted(run.tasks, key=lambda t: (-t.extra, rank.get(t.decision, 4), natural_key(t.task)))


def header_lines(plan: Plan) -> list[str]:
    """Budget and the definition of a decided task."""
    o = plan.options
    m = o.margin
    spent = (f"budget {plan.budget:,} trials, {plan.spent:,} planned" if plan.budget
             else "no budget given (--budget N plans further trials)")
    return [
        f"plan: {len(plan.runs)} run(s), k = {plan.k}, {spent}",
        f"decided = the {percent(o.confidence)} confidence sequence lies within one zone: "
        f"stable-fail [0, {m:g}], flaky [{m:g}, {1 - m:g}], stable-pass [{1 - m:g}, 1] "
        f"({plan.decide_clean} clean trials decide a task)",
        PEEKING,
    ]


def run_lines(run: RunPlan) -> list[str]:
    """A run's decisions and the uncertainty of its suite pass^k, now and after the plan."""
    c = run.counts()
    counts = ", ".join(f"{c[d]} {d}" for d in DECISIONS if c.get(d))
    extra = sum(t.extra for t in run.tasks)
    given = sum(1 for t in run.tasks if t.extra)
    k = run.k
    lines = [
        f"run {visible(run.run)}: {len(run.tasks)} tasks: {counts}",
        f"suite pass^{k} = {fmt.rate(run.pass_hat_k.value)} {fmt.suite_interval(run.pass_hat_k)}; "
        f"SE from finite trials {fmt.rate(run.se_now)} now"
        + (f", {fmt.rate(run.se_after)} after {extra:,} more trials on {given} tasks"
           if extra else ""),
    ]
    both, decided = run.both_ways(), c.get(FLAKY, 0)
    if both != decided:  # the task table marks these mixed: say why this count differs
        lines.append(f"{both:,} task(s) both passed and failed (the task table's mixed): "
                     f"{decided:,} decided flaky here, the other {both - decided:,} undecided "
                     "until their confidence sequence lies within one zone")
    broken = run.all_errored()
    if broken:
        lines.append(f"{broken:,} task(s) errored on every trial: fix the harness first "
                     "(no trials planned for them)")
    return lines


def task_lines(t: TaskPlan, plan: Plan) -> list[str]:
    """Every figure of one task, as short sentences (the app's plan view)."""
    o = plan.options
    lines = [
        f"{visible(t.task)}: {t.passes}/{t.n} passed, p̂ {fmt.rate(t.p_hat)} {fmt.interval(*t.ci)}",
        f"decision: {t.decision} (confidence sequence {fmt.interval(*t.cs)}"
        + (f"; {t.to_decide:,} more clean trials decide it" if t.to_decide else "") + ")",
    ]
    if t.rule_of_three is not None and t.more_clean is not None:
        what = "failure" if t.passes == t.n else "pass"
        lines.append(
            f"rule of three (fixed-n): {what} rate < {t.rule_of_three:.3g}; "
            + (f"{t.more_clean:,} more clean trials for < {o.bound_target:g}"
               if t.more_clean else f"already < {o.bound_target:g}")
        )
    elif t.n:
        lines.append("rule of three (fixed-n): n/a (it both passed and failed)")
    more = max(0, t.trials_for_width - t.n)
    lines.append(f"Wilson width ≤ {o.target_width:g}: {t.trials_for_width:,} trials"
                 + (f" ({more:,} more)" if more else " (reached)"))
    lines.append(f"tier {t.tier} ({t.tier_reason}): min {t.minimum} trials")
    lines.append(f"plan: +{t.extra:,}: {t.why}")
    return lines


def legend(plan: Plan) -> str:
    """What the columns of the task table mean."""
    o = plan.options
    return (
        f"CI: fixed-n Wilson interval; decision: by the confidence sequence; tier ≥m: risk tier "
        "and its minimum trials; bound: rule-of-three bound (fixed-n) on the failure "
        "(all passed) or pass (all failed) rate; +clean: clean trials more to bound it below "
        f"{o.bound_target:g}; n→{o.target_width:g}: trials for a Wilson width ≤ "
        f"{o.target_width:g}; extra: trials planned (up to the width target, or for a clean "
        f"task up to the {plan.decide_clean} clean trials that decide it)"
    )


def _sample(s: SampleSize | None, unit: str) -> str:
    if s is None:
        return fmt.DASH
    return f"{count(s.tasks)} {unit}" if s.tasks is not None else s.note or fmt.DASH


def _means(s: MeanDifferenceSize | None) -> str:
    """Tasks needed by the paired analysis of means, and what raising K does."""
    if s is None:
        return fmt.DASH
    if s.tasks is None:
        return s.note or fmt.DASH
    others = ", ".join(f"K = {k}: {t:,}" for k, t in s.by_k if k != s.k)
    return (f"{s.tasks:,} tasks at K = {s.k} trials per task ({others}; "
            f"K → ∞: {count(s.floor)})")


def sample_size_lines(plan: Plan) -> list[str]:
    """Tasks needed to detect a difference: independent design, paired means, McNemar."""
    o = plan.options
    ind = plan.independent
    lines = [
        f"tasks needed to detect a difference (power {percent(o.power)}, two-sided α "
        f"{percent(o.alpha)}):",
        f"  {fmt.rate(ind.p1)} vs {fmt.rate(ind.p2)} (effect {o.effect:g}): independent samples "
        f"{_sample(ind, 'tasks per model')}",
    ]
    split, cmp = plan.split, plan.comparison
    if split is not None and plan.paired_means is not None:
        source = (f"between {visible(cmp.run_a)} and {visible(cmp.run_b)}"
                  if cmp is not None and split.source == "two runs" else "from one run")
        lines.append(
            f"  paired (same tasks, mean p̂ difference, Miller 2024; σ²_between "
            f"{split.between:.4f}, σ²_within {split.within:.3f} {source}): "
            f"{_means(plan.paired_means)}"
            + (f"; at least {count(plan.paired_means_low.tasks)} tasks"
               if plan.paired_means_low is not None else ""))
        if split.note:
            lines.append(f"    ({split.note})")
    elif cmp is not None:
        lines.append("  paired means: one trial per task, so the paired analysis is McNemar's (below)")
    else:
        lines.append("  paired design: needs tasks with two or more trials")
    if cmp is None or plan.paired is None:
        return lines
    k_now = split.k if split is not None else 0
    if k_now <= 1:
        lines.append(
            f"  McNemar (one trial per task, discordance ψ = {fmt.rate(cmp.discordance)}): "
            f"{_sample(plan.paired, 'task pairs')}"
            + (f" ({plan.paired.note})" if plan.paired.note else ""))
    lines.append(
        f"  observed {cmp.run_a} {fmt.rate(cmp.pass_a)} vs {cmp.run_b} {fmt.rate(cmp.pass_b)} "
        f"(δ = {cmp.difference:+z.3f}): independent "
        f"{_sample(plan.observed_independent, 'tasks per model')}, paired "
        + (f"{count(plan.observed_paired_means.tasks)} tasks at K = {plan.observed_paired_means.k}"
           if plan.observed_paired_means is not None and plan.observed_paired_means.tasks is not None
           else fmt.DASH)
        + (f", McNemar {_sample(plan.observed_paired, 'task pairs')}" if k_now <= 1 else "")
        + f" (this suite has {cmp.tasks})"
    )
    return lines


def projection_header(k_name: str = "k") -> list[str]:
    """Column names of the projection table."""
    return [k_name, "pass@k measured", "pass^k measured", "pass@k projected",
            "pass^k projected", "pass^k pessimistic"]


def projection_rows(run: RunPlan) -> list[list[str]]:
    """The projection as table cells (measured where every task has k trials).

    A measured figure over only the tasks with at least k trials would sit next to
    a projection over all of them; it is shown as a dash instead.
    """
    tasks = sum(1 for t in run.tasks if t.n > 0)

    def measured(r: ProjectionRow, x: float) -> str:
        return fmt.rate(x) if r.measured_tasks == tasks else fmt.DASH

    return [
        [str(r.k), measured(r, r.measured_pass_at_k), measured(r, r.measured_pass_hat_k),
         fmt.rate(r.pass_at_k), fmt.rate(r.pass_hat_k), fmt.rate(r.pass_hat_k_low)]
        for r in run.projection
    ]


def rule_of_three_lines(plan: Plan) -> list[str]:
    """The rule of three and the one-in-a-million statement."""
    conf = plan.options.confidence
    alpha = 1 - conf
    return [
        f"rule of three (fixed-n): 0 failures in n trials bound the failure rate below "
        f"1 − {alpha:g}^(1/n) ≈ 3/n: below 1% needs {trials_to_bound(0.01, conf):,} "
        "clean trials, "
        f"0.1% {trials_to_bound(0.001, conf):,}",
        plan.notes[0],
    ]


def footer_lines(plan: Plan) -> list[str]:
    """Caveats and what happened to the budget."""
    lines = [f"note: {n}" for n in plan.notes[1:]]
    given = len(plan.lines())
    if plan.budget:
        lines.append(f"rerun plan: {plan.spent:,} trials on {given} task(s); "
                     "--format jsonl --out plan.jsonl writes it for a harness")
    return lines


# --- JSON -------------------------------------------------------------------------


ANALYSES = {"independent": "two-proportion z-test, one trial per task and model",
            "paired": "McNemar's test, one trial per task",
            "paired-means": "paired test of mean p̂ differences over K trials per task (Miller 2024)"}
"""The analysis each sample size is for (the ``analysis`` field of the JSON)."""


def _size_json(s: SampleSize | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"tasks": s.tasks, "p1": fmt.json_float(s.p1), "p2": fmt.json_float(s.p2),
            "power": s.power, "alpha": s.alpha, "design": s.design,
            "analysis": ANALYSES.get(s.design, s.design),
            "discordance": fmt.json_float(s.discordance), "note": s.note}


def _means_json(s: MeanDifferenceSize | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"tasks": s.tasks, "k": s.k, "difference": fmt.json_float(s.difference),
            "between_variance": fmt.json_float(s.between),
            "within_variance": fmt.json_float(s.within), "power": s.power, "alpha": s.alpha,
            "design": s.design, "analysis": ANALYSES[s.design],
            "by_k": [{"k": k, "tasks": t} for k, t in s.by_k], "tasks_any_k": s.floor,
            "note": s.note}


def task_json(t: TaskPlan) -> dict[str, Any]:
    return {
        "task": t.task, "n": t.n, "passes": t.passes, "p_hat": fmt.json_float(t.p_hat),
        "p_hat_ci": fmt.json_interval(*t.ci), "width": fmt.json_float(t.width),
        "decision": t.decision, "confidence_sequence": fmt.json_interval(*t.cs),
        "more_trials_to_decide": t.to_decide, "rule_of_three": t.rule_of_three,
        "more_clean_trials": t.more_clean, "trials_for_width": t.trials_for_width,
        "tier": t.tier, "tier_reason": t.tier_reason, "min_trials": t.minimum,
        "extra_trials": t.extra, "why": t.why, "errored": t.errored,
    }


def plan_json(plan: Plan) -> dict[str, Any]:
    """The ``plan --format json`` document."""
    o = plan.options
    cmp = plan.comparison
    return {
        "k": plan.k,
        "confidence": o.confidence,
        "margin": o.margin,
        "target_width": o.target_width,
        "bound_target": o.bound_target,
        "decision_rule": PEEKING,
        "clean_trials_to_decide": plan.decide_clean,
        "rule_of_three_validity": "fixed-n",
        "budget": plan.budget,
        "spent": plan.spent,
        "unspent_reason": plan.reason or None,
        "runs": [
            {
                "run": r.run,
                "decisions": r.counts(),
                "pass_hat_k": fmt.json_float(r.pass_hat_k.value),
                "pass_hat_k_ci": fmt.json_interval(*r.pass_hat_k.ci),
                "se_now": fmt.json_float(r.se_now),
                "se_after": fmt.json_float(r.se_after),
                "temperature": r.temperature,
                "projection": [
                    {"k": p.k, "measured_pass_at_k": fmt.json_float(p.measured_pass_at_k),
                     "measured_pass_hat_k": fmt.json_float(p.measured_pass_hat_k),
                     "measured_tasks": p.measured_tasks,
                     "pass_at_k": fmt.json_float(p.pass_at_k),
                     "pass_hat_k": fmt.json_float(p.pass_hat_k),
                     "pass_hat_k_pessimistic": fmt.json_float(p.pass_hat_k_low)}
                    for p in r.projection
                ],
                "tasks": [task_json(t) for t in r.tasks],
            }
            for r in plan.runs
        ],
        "sample_size": {
            "effect": o.effect,
            "independent": _size_json(plan.independent),
            "paired": _size_json(plan.paired),
            "paired_means": _means_json(plan.paired_means),
            "paired_means_lower_bound": _means_json(plan.paired_means_low),
            "variance_split": None if plan.split is None else {
                "between": fmt.json_float(plan.split.between),
                "within": fmt.json_float(plan.split.within), "k": plan.split.k,
                "tasks": plan.split.tasks, "source": plan.split.source, "note": plan.split.note},
            "comparison": None if cmp is None else {
                "run_a": cmp.run_a, "run_b": cmp.run_b, "tasks": cmp.tasks,
                "pass_a": fmt.json_float(cmp.pass_a), "pass_b": fmt.json_float(cmp.pass_b),
                "discordance": fmt.json_float(cmp.discordance),
                "difference": fmt.json_float(cmp.difference),
                "independent": _size_json(plan.observed_independent),
                "paired": _size_json(plan.observed_paired),
                "paired_means": _means_json(plan.observed_paired_means),
            },
        },
        "one_in_a_million_trials": plan.million,
        "notes": plan.notes,
        "plan": [line.to_json() for line in plan.lines()],
    }


# --- Rich -------------------------------------------------------------------------

_MARKUP_LIKE = re.compile(r"\[[a-zA-Z#/@]|\\|:\S*:")
"""Text that Rich might read as markup or an emoji code in a cell given as a string."""


class TaskTable:
    """A run's task table: Rich lays it out; on a console without styles, rows are plain text.

    Rich renders a cell in about 0.1 ms, which is minutes for a suite of a million tasks.
    The column widths depend only on the header and on each column's widest cell, so Rich
    lays out the header and those few rows, and every row is then padded to those widths
    as Rich would pad it. Rows Rich could render differently (markup or emoji-like text,
    control or zero-width characters, a name cut with …) make the whole table Rich's.
    """

    STYLES = {FLAKY: "bold red", STABLE_FAIL: "dim", STABLE_PASS: "green", UNDECIDED: "yellow"}
    """Style of each decision (seen only on a terminal)."""

    def __init__(self, names: list[str], cells: list[list[str]], tasks: list[TaskPlan],
                 longest: int) -> None:
        self.names = names
        """Column names after ``task``."""
        self.cells = cells
        """One row of cells per task, its name first, in the order of ``tasks``."""
        self.tasks = tasks
        self.longest = longest
        """Length of the longest task name of the run."""

    @staticmethod
    def justify(name: str) -> Literal["left", "right"]:
        """How a column's cells are aligned."""
        return "left" if name in ("task", "decision", "tier") else "right"

    def table(self, rows: list[int]) -> Any:
        """A Rich table of the rows at these positions (every row: the table as printed)."""
        from rich.table import Table
        from rich.text import Text

        table = Table(show_edge=False, pad_edge=False, header_style="bold")
        # In a narrow terminal the task names give way (cut with …); figures never do.
        table.add_column("task", no_wrap=True, min_width=min(12, self.longest), max_width=40,
                         overflow="ellipsis")
        for j, name in enumerate(self.names):
            table.add_column(name, justify=self.justify(name), no_wrap=True,
                             min_width=max([len(name)] + [len(r[j + 1]) for r in self.cells]))
        for i in rows:
            t, cells = self.tasks[i], list[Any](self.cells[i])
            cells[0] = Text(cells[0])  # a name from the log: never markup
            cells[5] = Text(cells[5], style=self.STYLES.get(t.decision, ""))
            cells[6] = Text(cells[6], style="bold" if t.extra else "dim")
            table.add_row(*cells)
        return table

    def __rich_console__(self, console: Any, options: Any) -> Any:
        every = range(len(self.cells))
        if console.color_system is not None or not all(map(_plain, self.cells)):
            yield self.table(list(every))
            return
        from rich.segment import Segment

        widest: set[int] = set()
        for column in zip(*self.cells, strict=True):
            widths = [_width(c) for c in column]
            widest.add(max(every, key=widths.__getitem__))
            # Rich's narrowest width is the longest word (plain cells have no space but " ").
            words = [max(map(_width, c.split()), default=0) if " " in c else w
                     for c, w in zip(column, widths, strict=True)]
            widest.add(max(every, key=words.__getitem__))
        lines = console.render_lines(self.table(sorted(widest)), options, pad=False)
        rule = "".join(s.text for s in lines[1]) if len(lines) > 1 else ""
        parts = rule.split("╇")
        if set(rule) - {"━", "╇"} or len(parts) != len(self.names) + 1:
            yield self.table(list(every))  # a header of more than one line: Rich lays it all out
            return
        widths = [len(parts[0]) - 1, *(len(x) - 2 for x in parts[1:-1]), len(parts[-1]) - 1]
        if any(_width(c) > w for cells in self.cells for c, w in zip(cells, widths, strict=True)):
            yield self.table(list(every))  # a name cut with …
            return
        for line in lines[:2]:
            yield from line
            yield Segment.line()
        left = [self.justify(n) == "left" for n in ["task", *self.names]]
        for cells in self.cells:
            padded = [c + " " * (w - _width(c)) if lft else " " * (w - _width(c)) + c
                      for c, w, lft in zip(cells, widths, left, strict=True)]
            yield Segment(" │ ".join(padded))
            yield Segment.line()


def _width(cell: str) -> int:
    """Terminal cells a cell's text takes (Rich's ``cell_len``; ``len`` for ASCII)."""
    return len(cell) if cell.isascii() else _cell_len(cell)


@functools.lru_cache(maxsize=4096)
def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _plain(cells: list[str]) -> bool:
    """Whether Rich renders every one of these cells as its own text, on one line."""
    return all(c.isprintable() and (not _MARKUP_LIKE.search(c) or _markup_free(c)) for c in cells)


def _markup_free(cell: str) -> bool:
    """Whether markup and emoji codes leave this cell's text as it is."""
    from rich.errors import MarkupError
    from rich.text import Text

    try:
        return Text.from_markup(cell, emoji=True).plain == cell
    except MarkupError:
        return False


def plan_renderable(plan: Plan) -> Any:
    """Every section of the plan as one Rich renderable."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text(_shown(header_lines(plan)), style="bold"), Text("")]
    o = plan.options
    for run in plan.runs:
        parts.append(Text(_shown(run_lines(run)), style="bold"))
        # The planned trials come right after the decision, so an 80-column terminal shows them.
        names = ["n", "pass", "p̂", f"{percent(o.confidence)} CI", "decision", "extra", "tier",
                 "bound", "+clean", f"n→{o.target_width:g}"]
        order = display_order(run)
        rows = [
            [visible(t.task), str(t.n), str(t.passes), fmt.rate(t.p_hat), fmt.interval(*t.ci), t.decision,
             f"{t.extra:,}", f"{t.tier} ≥{t.minimum}",
             fmt.DASH if t.rule_of_three is None else f"{t.rule_of_three:.3g}",
             count(t.more_clean), f"{t.trials_for_width:,}"]
            for t in order
        ]
        longest = max((len(t.task) for t in run.tasks), default=4)
        parts += [TaskTable(names, rows, order, longest), Text(legend(plan), style="dim"), Text("")]
        given = [t for t in order if t.extra]
        if given:
            parts.append(Text(f"{visible(run.run)}: where the trials go", style="bold"))
            parts.append(Text(_shown(f"  +{t.extra} {t.task}: {t.why}" for t in given)))
            parts.append(Text(""))
        proj = Table(title=Text(f"{visible(run.run)}: pass@k and pass^k beyond the trials measured"),
                     title_justify="left", show_edge=False, pad_edge=False, header_style="bold")
        for name in projection_header():
            proj.add_column(name, justify="right")
        for row in projection_rows(run):
            proj.add_row(*row)
        parts += [proj, Text("")]
    parts.append(Text(_shown(sample_size_lines(plan))))
    parts.append(Text(_shown(rule_of_three_lines(plan))))
    parts.append(Text(_shown(footer_lines(plan)), style="yellow"))
    return Group(*parts)


def _shown(lines: Any) -> str:
    """Lines that may quote names from the logs (runs, tasks), their control characters spelled out."""
    return visible("\n".join(lines), multiline=True)
