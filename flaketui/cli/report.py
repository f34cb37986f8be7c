"""``flaketui report``: per-task and suite statistics, once or ``--watch``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import click

from flaketui.cli.common import (
    EXIT_OK,
    check_k,
    fail,
    load,
    log_options,
    main,
    report_problems,
    run_stats,
    write_json,
)
from flaketui.cli.compare import alpha_option, baseline_comparisons, baseline_option, print_baseline
from flaketui.model import FieldMap, InputError, TrialLog


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None,
              help="k for pass@k and pass^k (default: the smallest trial count of any task).")
@click.option("--run", "run", multiple=True, help="Only this run (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown"]),
              default="table", show_default=True)
@click.option("--watch", is_flag=True, default=False,
              help="Follow logs still being written: print the report again when they change "
                   "(Ctrl-C stops).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at the logs with --watch.")
@baseline_option
@alpha_option
@log_options
def report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
           interval: float, baseline: str | None, alpha: float, fields: FieldMap) -> None:
    """Per-task and suite statistics of each run in LOGS."""
    check_k(k)
    if baseline is not None:
        if watch:
            raise click.UsageError("--baseline and --watch cannot be combined")
        log = load(logs, fields)
        if fmt == "json":  # one document: the report with a "baseline" object
            from flaketui.output import report as out
            from flaketui.stats import summarise

            kk, stats = run_stats(log, run, k)
            doc = out.report_json(kk, [(st, summarise(st)) for st in stats])
            doc["baseline"] = out.baseline_json(baseline_comparisons(log, baseline, alpha))
            write_json(doc)
            return
        print_report(log, k, run, fmt)
        print_baseline(log, baseline, alpha, fmt)
        return
    if watch:
        watch_report(logs, fields, interval,
                     lambda log, again: print_report(log, k, run, fmt, clear=again))
    print_report(load(logs, fields), k, run, fmt)


def print_report(log: TrialLog, k: int | None, run: Sequence[str], fmt: str,
                 clear: bool = False) -> None:
    """Print the report of ``log`` in ``fmt`` (``clear``: wipe the terminal first, for --watch)."""
    from flaketui.output import report as out
    from flaketui.stats import summarise

    kk, stats = run_stats(log, run, k)
    results = [(st, summarise(st)) for st in stats]
    if fmt == "json":
        write_json(out.report_json(kk, results))
    elif fmt == "csv":
        click.echo(out.report_csv(kk, results), nl=False)
    elif fmt == "markdown":
        click.echo(out.report_markdown(kk, results), nl=False)
    else:
        console = out.console()
        if clear and console.is_terminal:
            console.clear()
        console.print(f"[bold]k = {kk}[/]" + ("" if k else " (smallest trial count of any task; -k to change)"))
        for st, sm in results:
            console.print(out.report_table(st, sm))


def watch_report(logs: Sequence[str], fields: FieldMap, interval: float,
                 show: Callable[[TrialLog, bool], None]) -> None:
    """Show the logs, then again each time a look finds them changed, until Ctrl-C (exit 0).

    New problems are named as they appear; while no usable trial is there yet, one
    line on stderr says so.
    """
    import time

    from flaketui.loading.watch import LogWatcher

    watcher = LogWatcher(logs, fields)
    shown = 0
    waiting = False
    try:
        try:
            watcher.poll()
        except InputError as exc:
            fail(str(exc))
        changed, again = True, False
        while True:
            if changed:
                try:
                    log = watcher.log()
                except InputError as exc:
                    if not waiting:
                        click.echo(f"flaketui: waiting: {exc}", err=True)
                    waiting = True
                else:
                    waiting = False
                    report_problems(log, start=shown)
                    shown = len(log.problems)
                    show(log, again)
                    again = True
            time.sleep(interval)
            changed = watcher.poll()
    except KeyboardInterrupt:
        sys.exit(EXIT_OK)


