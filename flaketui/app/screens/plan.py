"""The plan view: how many more trials, on which tasks, and why.

Opened with ``p`` from the task table. At the top, the run's decisions and the
uncertainty of its suite pass^k; on the left every figure of the highlighted
task (decision by a confidence sequence, valid however often the plan is looked
at; the fixed-n rule of three; trials to the target Wilson width; risk tier); on
the right the tasks needed to detect a difference (independent, and paired means
at the run's K trials per task: the analysis ``compare`` runs) and pass@k /
pass^k projected beyond the trials measured. Type a budget and
press enter: the table shows where the trials go and why. The plan is computed
in a thread worker (reading each task's tags from disk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Header, Input, Label, Static
from textual.worker import Worker

from flaketui.app.screens.base import FlakeScreen, back_key
from flaketui.app.widgets.footer import KeyFooter
from flaketui.loading.extras import TaskExtras
from flaketui.output import formatting as fmt
from flaketui.output import plan as plan_report
from flaketui.sanitize import visible
from flaketui.stats.estimators import FLAKY, STABLE_FAIL, STABLE_PASS
from flaketui.stats.plan import Plan, PlanOptions, RunPlan, TaskPlan
from flaketui.stats.precision import UNDECIDED

if TYPE_CHECKING:
    pass

MAX_BUDGET = 10**9
"""Largest budget the box accepts."""

SHORT_SCREEN = 30
"""Screen height under which the plan's head and panels are cut (the table keeps ten rows and more)."""

DECISION_STYLES = {FLAKY: "bold yellow", STABLE_FAIL: "red", STABLE_PASS: "green",
                   UNDECIDED: "cyan"}
"""Colour of each decision in the table."""


@dataclass
class PlanReady(Message):
    """A plan is computed (posted from the planning worker)."""

    plan: Plan


class PlanScreen(FlakeScreen[None]):
    """The plan of the next run of one run, with the figures of one highlighted task.

    Args:
        run: The run to plan (its tasks receive the trials).
        task: The task to show first (the one highlighted in the task table).
        budget: The budget to plan with at first (0: figures only).
    """

    DEFAULT_CSS = """
    PlanScreen #plan-head { height: auto; padding: 0 1; background: $boost; }
    PlanScreen #plan-panels { height: auto; max-height: 11; }
    PlanScreen #plan-task { width: 1fr; height: auto; padding: 0 1; border-right: vkey $primary; }
    PlanScreen #plan-suite { width: 1fr; height: auto; padding: 0 1; }
    PlanScreen #plan-budget-row { height: 3; }
    PlanScreen #plan-budget-label { width: auto; padding: 1 1 0 1; }
    PlanScreen #budget { width: 24; }
    PlanScreen #plan-status { width: 1fr; padding: 1 1 0 1; }
    PlanScreen #plan-table { height: 1fr; }
    PlanScreen.-computing #plan-status { color: $text-muted; }
    PlanScreen.-short #plan-head { max-height: 2; overflow-y: hidden; }
    PlanScreen.-short #plan-panels { max-height: 5; }
    """

    BINDINGS = [
        back_key("plan-back", "the task table"),
        Binding("b", "focus_budget", "Budget", id="plan-focus-budget",
                tooltip="Type the number of further trials to allocate"),
        Binding("t", "focus_table", "Table", id="plan-focus-table", show=False,
                tooltip="Move to the allocation table"),
    ]

    AUTO_FOCUS = "#plan-table"
    STATUS = "#plan-status"
    """The table has the keys when the view opens (``b`` moves to the budget box)."""

    budget: reactive[int] = reactive(0, init=False)
    """Further trials to allocate; setting it recomputes the plan."""

    def __init__(self, run: str, task: str | None = None, budget: int = 0) -> None:
        super().__init__()
        self.run_name = run
        self.task_name = task
        """The task whose figures are shown on the left."""
        self.plan: Plan | None = None
        """The latest plan (None while the first is computed)."""
        self._extras: dict[tuple[str, str], TaskExtras] | None = None
        self.set_reactive(PlanScreen.budget, budget)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Planning…", id="plan-head")
        with Horizontal(id="plan-panels"):
            yield Static("", id="plan-task")
            yield Static("", id="plan-suite")
        with Horizontal(id="plan-budget-row"):
            yield Label("budget", id="plan-budget-label")
            yield Input(str(self.budget) if self.budget else "",
                        placeholder="further trials ⏎", id="budget")
            yield Static("", id="plan-status")
        yield DataTable(id="plan-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_resize(self) -> None:
        """On a short terminal the head and the panels are cut, so that the table keeps its rows."""
        self.set_class(self.app.size.height < SHORT_SCREEN, "-short")

    def on_mount(self) -> None:
        self.on_resize()
        self.sub_title = f"plan · {visible(self.run_name)}"
        table = self.query_one(DataTable)
        table.add_column("task", key="task")
        for label, key in (("n", "n"), ("pass", "pass"), ("p̂", "p_hat"), ("95% CI", "ci")):
            table.add_column(label, key=key)
        table.add_column("decision", key="decision")
        table.add_column("tier", key="tier")
        table.add_column("+trials", key="extra")
        table.add_column("why", key="why")
        self.compute(self.budget)

    # -- computing ----------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="plan", description="Planning")
    def compute(self, budget: int) -> None:
        """Plan the run with ``budget`` further trials (in a thread)."""
        from flaketui.loading.extras import read_task_extras
        from flaketui.stats.plan import make_plan

        app = self.flake_app
        log = app.trial_log
        if log is None:
            return
        outcomes = app.session.run(self.run_name).outcomes  # grouped once, shared with the task table
        if self._extras is None:
            found = read_task_extras(log, outcomes)
            self._extras = {(self.run_name, t): e for t, e in found.items()}
        others = [app.session.run(r).outcomes for r in log.runs if r != self.run_name]
        plan = make_plan([outcomes], PlanOptions(budget=budget, k=app.k), self._extras, others)
        self.post_message(PlanReady(plan))

    def watch_budget(self, budget: int) -> None:
        self.add_class("-computing")
        self.query_one("#plan-status", Static).update(f"planning {budget:,} trials…")
        self.compute(budget)

    @on(PlanReady)
    def plan_ready(self, event: PlanReady) -> None:
        self.remove_class("-computing")
        self.plan = event.plan
        self.show_plan()

    def show_worker_error(self, worker: Worker[object]) -> None:
        """The plan failed: not computing any more, and the error where the status was."""
        self.remove_class("-computing")
        super().show_worker_error(worker)

    # -- showing ------------------------------------------------------------------------

    @property
    def run_plan(self) -> RunPlan | None:
        return self.plan.runs[0] if self.plan and self.plan.runs else None

    def show_plan(self) -> None:
        """Fill every panel and the table from :attr:`plan`."""
        plan, run = self.plan, self.run_plan
        if plan is None or run is None:
            return
        head = Text()
        head.append(visible("\n".join(plan_report.header_lines(plan)[1:] + plan_report.run_lines(run)),
                            multiline=True))
        self.query_one("#plan-head", Static).update(head)
        self.query_one("#plan-suite", Static).update(self.suite_text(plan, run))
        status = Text()
        if plan.budget:
            given = sum(1 for t in run.tasks if t.extra)
            status.append(f"{plan.spent:,} of {plan.budget:,} trials planned on {given} task(s)",
                          style="bold")
            if plan.reason:
                status.append(f" · {plan.reason}", style="yellow")
        else:
            status.append("b: type a budget and press enter to plan further trials", style="dim")
        self.query_one("#plan-status", Static).update(status)
        table = self.query_one(DataTable)
        table.clear()
        order = plan_report.display_order(run)
        for t in order:
            table.add_row(
                Text(visible(t.task)), str(t.n), str(t.passes), fmt.rate(t.p_hat), fmt.interval(*t.ci),
                Text(t.decision, style=DECISION_STYLES.get(t.decision, "")),
                f"{t.tier} ≥{t.minimum}",
                Text(f"{t.extra:,}" if t.extra else "0", style="bold" if t.extra else "dim"),
                Text(visible(t.why), style="" if t.extra else "dim"),
                key=t.task,
            )
        names = [t.task for t in order]
        if self.task_name not in names:
            self.task_name = names[0] if names else None
        if self.task_name is not None:
            table.move_cursor(row=names.index(self.task_name), animate=False)
        self.show_task()

    def task_plan(self) -> TaskPlan | None:
        """The highlighted task's plan."""
        run = self.run_plan
        if run is None:
            return None
        return next((t for t in run.tasks if t.task == self.task_name), None)

    def show_task(self) -> None:
        """The left panel: every figure of the highlighted task."""
        t, plan = self.task_plan(), self.plan
        if t is None or plan is None:
            self.query_one("#plan-task", Static).update("")
            return
        lines = plan_report.task_lines(t, plan)
        text = Text()
        text.append(visible(lines[0]), style="bold")
        for line in lines[1:]:
            text.append("\n" + visible(line))
        self.query_one("#plan-task", Static).update(text)

    @staticmethod
    def suite_text(plan: Plan, run: RunPlan) -> Text:
        """The right panel: sample sizes, a short projection and the rule of three."""
        o = plan.options
        ind, cmp = plan.independent, plan.comparison
        count = plan_report.count
        text = Text()
        text.append("tasks to detect a difference", style="bold")
        text.append(f" (power {plan_report.percent(o.power)}, α {plan_report.percent(o.alpha)})\n",
                    style="dim")
        line = f"±{o.effect:g} at {fmt.rate(ind.p1)}: independent {count(ind.tasks)}"
        if cmp is not None and plan.paired_means is not None:
            line += f" · paired {count(plan.paired_means.tasks)} at K = {plan.paired_means.k}"
        text.append(visible(line) + "\n")
        if cmp is not None and plan.observed_independent and plan.observed_paired_means:
            text.append(f"seen {fmt.rate(cmp.pass_a)} → {fmt.rate(cmp.pass_b)}: "
                        f"independent {count(plan.observed_independent.tasks)} · paired "
                        f"{count(plan.observed_paired_means.tasks)}\n")
        else:
            text.append("paired: load a second run of the same tasks\n", style="dim")
        keep = sorted({1, run.k, 10, 100})
        rows = {int(r[0]): r for r in plan_report.projection_rows(run)}
        cols = [k for k in keep if k in rows]
        text.append("projected, independent trials", style="bold")
        text.append(" (low temperature: too high)\n", style="dim")
        text.append("k       " + "".join(f"{k:>7}" for k in cols) + "\n", style="dim")
        for label, idx in (("pass@k  ", 3), ("pass^k  ", 4), ("worst   ", 5)):
            text.append(label + "".join(f"{rows[k][idx]:>7}" for k in cols) + "\n")
        text.append(f"1 in a million: ~{plan.million:,} trials: by design, not tests",
                    style="dim")
        return text

    # -- input and actions --------------------------------------------------------------

    @on(Input.Submitted, "#budget")
    def budget_submitted(self, event: Input.Submitted) -> None:
        raw = event.value.strip().replace(",", "").replace("_", "")
        try:
            value = int(raw or "0")
        except ValueError:
            value = -1
        if not 0 <= value <= MAX_BUDGET:
            self.query_one("#plan-status", Static).update(Text(
                f"budget must be a whole number from 0 to {MAX_BUDGET:,}, not {event.value!r}",
                style="bold red"))
            return
        if value == self.budget and self.plan is not None:
            self.show_plan()
        self.budget = value
        self.query_one(DataTable).focus()

    @on(DataTable.RowHighlighted, "#plan-table")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self.task_name = str(event.row_key.value)
            self.show_task()

    def action_back(self) -> None:
        """Return to the task table."""
        self.dismiss()

    def action_focus_budget(self) -> None:
        """Move to the budget box."""
        self.query_one("#budget", Input).focus()

    def action_focus_table(self) -> None:
        """Move to the allocation table."""
        self.query_one(DataTable).focus()
