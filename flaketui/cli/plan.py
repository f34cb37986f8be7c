"""``flaketui plan``: how many more trials, on which tasks, and why.

Registered on the main command group by :mod:`flaketui.cli`. Exit codes: 0
success (also when part of the budget cannot be spent: the output says why),
2 usage or input error, always as one line on stderr.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from flaketui.cli import common as base
from flaketui.cli.options import log_options, run_option
from flaketui.model import FieldMap
from flaketui.safefile import atomic_write

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions
    from flaketui.stats.plan import Plan

MAX_BUDGET = 10**12
"""Largest --budget: far beyond any eval, and within the 64-bit integers of the JSON output."""


class OneLineErrors(click.Command):
    """A command whose usage errors are one line and exit 2 (never click's usage block)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            base.fail(exc.format_message().replace("\n", " "))
            raise  # unreachable: fail() exits


def render(plan: Plan, fmt: str, width: int | None = None) -> bytes:
    """The plan in ``fmt`` (table, json or jsonl) as bytes."""
    from flaketui.output import plan as plan_report

    if fmt == "json":
        return orjson.dumps(plan_report.plan_json(plan), option=orjson.OPT_INDENT_2) + b"\n"
    if fmt == "jsonl":
        return b"".join(orjson.dumps(line.to_json()) + b"\n" for line in plan.lines())
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width or 200, no_color=True, highlight=False,
                      emoji=False, soft_wrap=False)
    console.print(plan_report.plan_renderable(plan))
    return buf.getvalue().encode()


@click.command("plan", cls=OneLineErrors)
@click.argument("logs", nargs=-1, required=True)
@click.option("--budget", type=click.IntRange(min=0, max=MAX_BUDGET), default=0, show_default=True,
              help="Further trials to allocate across tasks.")
@click.option("--allocate", "allocation", type=click.Choice(["variance", "classes"]), default="variance",
              show_default=True,
              help="Where --budget goes. variance: where it shrinks the suite pass^k's uncertainty most. "
                   "classes: where it is most likely to decide a task's class (flaky or stable against the cap "
                   "4m(1-m) of --margin), by each task's empirical-Bayes posterior; the suite's figures "
                   "should then come from the trials before the plan's.")
@click.option("--target-width", type=base.FiniteFloat(0, 1, low_open=True), default=0.1,
              show_default=True,
              help="Wilson interval width a task needs no more than (caps its trials).")
@run_option("Only this run (repeatable; default: every run).")
@click.option("-k", type=click.IntRange(min=1), default=None,
              help="k of the suite pass^k to pin down (default: the trials most tasks have).")
@click.option("--min-trials", type=click.IntRange(min=0), default=10, show_default=True,
              help="Minimum n of high-risk tasks (tagged, or flaky before).")
@click.option("--low-min-trials", type=click.IntRange(min=0), default=3, show_default=True,
              help="Minimum n of the other (read-only, stable) tasks.")
@click.option("--risk-tag", multiple=True, metavar="TAG",
              help="A tag (in a trial's tags or risk field) that marks a high-risk task "
                   "(repeatable; default: high-risk, write).")
@click.option("--margin", type=base.FiniteFloat(0, 0.5, low_open=True, high_open=True),
              default=0.1, show_default=True,
              help="Width of the stable zones: stable-pass when the confidence sequence "
                   "(valid however often you look) lies above 1 - margin.")
@click.option("--bound-target", type=base.OPEN_FRACTION,
              default=0.01, show_default=True,
              help="Failure rate the rule of three should bound for clean tasks.")
@click.option("--confidence", type=base.OPEN_FRACTION,
              default=0.95, show_default=True)
@click.option("--power", type=base.OPEN_FRACTION, default=0.8,
              show_default=True, help="Power of the sample-size figures.")
@click.option("--alpha", type=base.OPEN_FRACTION, default=0.05,
              show_default=True, help="Two-sided significance of the sample-size figures.")
@click.option("--effect", type=base.OPEN_FRACTION, default=0.05,
              show_default=True, help="Difference of pass rates to size the suite for.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "jsonl"]), default="table",
              show_default=True, help="jsonl: one {run, task, extra_trials, why} line per task.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path, allow_dash=True), default=None,
              help="Write to this file (atomically) instead of stdout (- is stdout).")
@click.option("--emit", "emit", type=click.Choice(["inspect", "harbor", "tau2"]), default=None,
              help="Print the shell commands that run the planned extra trials on exactly the planned "
                   "tasks in this harness (tasks needing the same count in one command), instead of the plan.")
@log_options
def plan(logs: tuple[str, ...], budget: int, target_width: float, run: tuple[str, ...],
         k: int | None, min_trials: int, low_min_trials: int, risk_tag: tuple[str, ...],
         margin: float, bound_target: float, confidence: float, power: float, alpha: float,
         effect: float, fmt: str, out: Path | None, emit: str | None, allocation: str, fields: FieldMap,
         load_options: LoadOptions) -> None:
    """Plan the next run of LOGS: which tasks need more trials, how many, and why.

    Per task: decided or not (by a confidence sequence: valid however often you rerun
    the plan), the fixed-n rule-of-three bound, trials to a target Wilson width. Per
    suite: tasks needed to detect a difference (independent; paired, for mean p̂
    differences over K trials per task, and McNemar's for one trial per task),
    pass@k / pass^k projected beyond the trials measured. With --budget N: N further
    trials allocated where they shrink the uncertainty of the suite pass^k most.
    """
    from flaketui.loading.extras import TaskExtras, read_task_extras
    from flaketui.loading.options import LoadOptions
    from flaketui.stats.plan import PlanOptions, make_plan

    if out is not None and str(out) == "-":
        out = None
    if out is not None and not (out.parent if str(out.parent) else Path(".")).is_dir():
        base.fail(f"--out {out}: folder {out.parent} does not exist")
    options = PlanOptions(
        budget=budget, k=k, confidence=confidence, margin=margin, target_width=target_width,
        bound_target=bound_target, min_trials=min_trials, low_min_trials=low_min_trials,
        risk_tags=tuple(risk_tag) or PlanOptions().risk_tags, power=power, alpha=alpha,
        effect=effect, allocation=allocation,
    )
    log = base.load(logs, fields, load_options)
    names = base.pick_runs(log, run)
    outcomes = [log.run_outcomes(r) for r in names]
    extras: dict[tuple[str, str], TaskExtras] = {}
    for o in outcomes:
        for task, e in read_task_extras(log, o).items():
            extras[(o.run, task)] = e
    others = [log.run_outcomes(r) for r in log.runs if r not in names]
    try:
        result = make_plan(outcomes, options, extras, others)
    except ValueError as exc:
        base.fail(str(exc))
    if result.reason:
        click.echo(f"flaketui: {result.reason}", err=True)
    if emit is not None:
        from flaketui.output.emit import batches, commands

        known = {r: {k: str(v) for k, v in log.run_meta.get(r, {}).items()
                     if k in ("agent", "model", "dataset", "path") and isinstance(v, (str, int, float))}
                 for r in names}
        text = commands(emit, batches((ln.run, ln.task, ln.extra_trials) for ln in result.lines()), known).encode()
        if out is None:
            sys.stdout.buffer.write(text)
            sys.stdout.flush()
            return
        try:
            atomic_write(out, text)
        except OSError as exc:
            base.fail(f"--out {out}: {exc.strerror or exc}")
        click.echo(f"flaketui: wrote {out}", err=True)
        return
    if out is None and fmt == "table":
        from flaketui.output.plan import plan_renderable
        from flaketui.output.report import console

        console().print(plan_renderable(result), highlight=False, emoji=False)
    elif out is None:
        sys.stdout.buffer.write(render(result, fmt))
        sys.stdout.flush()
    else:
        data = render(result, fmt)
        try:
            atomic_write(out, data)
        except OSError as exc:
            base.fail(f"--out {out}: {exc.strerror or exc}")
        click.echo(f"flaketui: wrote {out} ({len(result.lines())} task(s), "
                   f"{result.spent:,} trials)", err=True)
