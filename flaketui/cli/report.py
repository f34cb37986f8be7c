"""``flaketui report``: per-task and suite statistics, once or ``--watch``."""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from flaketui.cli.common import (
    EXIT_OK,
    RICH_ROWS,
    RowChoice,
    check_k,
    check_rows,
    fail,
    load,
    log_options,
    main,
    passk_ci_option,
    report_problems,
    rows_options,
    run_stats,
    write_chunks,
    write_json,
)
from flaketui.cli.compare import alpha_option, baseline_comparisons, baseline_option, print_baseline
from flaketui.cli.diff import check_out, out_option
from flaketui.cli.history import CauseProgress, find_causes, record_log, record_options  # noqa: F401  (CauseProgress: re-exported)
from flaketui.model import FieldMap, InputError, TrialLog
from flaketui.sanitize import visible


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None,
              help="k for pass@k and pass^k (default: the trials most tasks have, errored included; "
                   "tasks with fewer are left out of pass@k and pass^k, and counted).")
@click.option("--run", "run", multiple=True, help="Only this run (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown", "html"]),
              default="table", show_default=True,
              help="html: one self-contained page (no network): summary, curves, the sortable task table, "
                   "each flaky task's traces (and with --causes its suspected source), to stdout or --out.")
@out_option
@click.option("--watch", is_flag=True, default=False,
              help="Follow logs still being written: print the report again when they change "
                   "(Ctrl-C stops).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at the logs with --watch.")
@rows_options("tasks", "flakiest")
@baseline_option
@alpha_option
@click.option("--causes", is_flag=True, default=False,
              help="Suggest each flaky task's source of flakiness (sampling, tool-nondeterminism, "
                   "ordering-concurrency, environment, harness-bug, user-simulator, grader, burst, "
                   "unknown) from its traces, grades and start times, with the evidence and the decisive "
                   "fork; failure modes and outage windows too. Reads the flaky tasks' traces only.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes reading traces for --causes: 2 reads two tasks at once in two processes "
                   "(same output; faster only on a big suite with two idle cores, as each process first "
                   "gets a copy of the loaded log); 1 reads them here, one by one.")
@passk_ci_option
@record_options
@log_options
def report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
           interval: float, top: int | None, all_rows: bool, baseline: str | None, alpha: float,
           causes: bool, workers: int, passk_ci: str, out: str | None, record: bool, history: str | None,
           fields: FieldMap) -> None:
    """Per-task and suite statistics of each run in LOGS."""
    if record and watch:
        raise click.UsageError("--record goes without --watch")
    log = make_report(logs, k, run, fmt, watch, interval, top, all_rows, baseline, alpha, causes, workers,
                      passk_ci, out, fields)
    if record:
        record_log(log, history, err=True)


def make_report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
                interval: float, top: int | None, all_rows: bool, baseline: str | None, alpha: float,
                causes: bool, workers: int, passk_ci: str, out: str | None, fields: FieldMap) -> TrialLog:
    """``report`` without ``--record``: the report printed; the log it loaded."""
    check_k(k)
    check_out(out, fmt)
    if fmt == "html" and (watch or baseline is not None):
        raise click.UsageError("--format html goes without --watch and --baseline")
    if fmt == "csv" and causes:
        raise click.UsageError("--causes goes with --format table, json or markdown (not csv)")
    rows = check_rows(top, all_rows, fmt)
    if baseline is not None:
        if watch:
            raise click.UsageError("--baseline and --watch cannot be combined")
        log = load(logs, fields)
        if fmt == "json":  # one document: the report with a "baseline" object
            from flaketui.output import report as out
            from flaketui.stats import summarise

            kk, stats = run_stats(log, run, k, passk_ci)
            doc = out.report_json(kk, [(st, summarise(st)) for st in stats])
            doc["baseline"] = out.baseline_json(baseline_comparisons(log, baseline, alpha))
            write_json(doc)
            return log
        print_report(log, k, run, fmt, rows=rows, passk_ci=passk_ci)
        print_baseline(log, baseline, alpha, fmt)
        return log
    if watch:
        watch_report(logs, fields, interval,
                     lambda log, again: print_report(log, k, run, fmt, clear=again, causes=causes,
                                                     workers=workers, rows=dataclasses.replace(rows, watch=True),
                                                     passk_ci=passk_ci))
    log = load(logs, fields).without_metrics()  # the report shows none
    if fmt == "html":
        print_html(log, k, run, causes, workers, passk_ci, out, rows)
        return log
    if not causes:  # no trace is read: the trials' byte spans and lines are let go (1M trials: 48 MB)
        log = log.without_locations()
    # While the report is made, the cyclic collector (run by every import and list that follows)
    # need not walk the log's objects each time (1M tasks: 20 ms); frozen objects are still
    # freed by their reference counts.
    gc.freeze()
    try:
        print_report(log, k, run, fmt, causes=causes, workers=workers, rows=rows, passk_ci=passk_ci)
    finally:
        gc.unfreeze()
    return log


def print_html(log: TrialLog, k: int | None, run: Sequence[str], causes: bool, workers: int, passk_ci: str,
               out: str | None, rows: RowChoice) -> None:
    """``report --format html``: the page, with the traces of each run's
    :data:`~flaketui.output.html.TRACE_TASKS` flakiest tasks (and with ``causes`` every flaky
    task's suggested source), to stdout or ``out``; the table has ``--top N`` rows, every row
    with ``--all``, else :data:`~flaketui.output.html.TABLE_ROWS`."""
    from flaketui.cli.diff import flaky_pairs, html_out, page_info
    from flaketui.output.html import TABLE_ROWS, TRACE_TASKS, write_report_html
    from flaketui.output.report import display_order
    from flaketui.stats import summarise

    kk, stats = run_stats(log, run, k, passk_ci)
    results = [(st, summarise(st)) for st in stats]
    found = find_causes(log, [st.run for st in stats], workers) if causes else None
    pairs: dict[str, Any] = {}
    for st in stats:
        is_flaky = st.flaky()
        flaky = [st.tasks[i] for i in display_order(st).tolist() if is_flaky[i]][:TRACE_TASKS]
        pairs[st.run] = flaky_pairs(log, st.run, flaky)
    info = page_info(log)
    with html_out(out) as write:
        write_report_html(write, kk, results, found, pairs, info,
                          top=None if rows.all else rows.top or TABLE_ROWS)


def print_report(log: TrialLog, k: int | None, run: Sequence[str], fmt: str,
                 clear: bool = False, causes: bool = False, workers: int = 1,
                 rows: RowChoice | None = None, passk_ci: str = "exact") -> None:
    """Print the report of ``log`` in ``fmt`` (``clear``: wipe the terminal first, for --watch;
    ``causes``: with each flaky task's suggested source of flakiness, read with ``workers`` processes;
    ``rows``: which tasks the table and Markdown show; ``passk_ci``: the pass^k interval, ``exact`` or
    ``bootstrap``). Each format is written a few thousand
    rows at a time, so a million tasks take no more memory than a hundred."""
    from flaketui.output import report as out
    from flaketui.stats import summarise

    rows = rows or RowChoice()
    kk, stats = run_stats(log, run, k, passk_ci)
    results = [(st, summarise(st)) for st in stats]
    found = find_causes(log, [st.run for st in stats], workers) if causes else None
    if fmt == "json" and found is None:  # the tasks written as they are made (issue 15)
        from flaketui.output.json_stream import write_report_json

        write_report_json(sys.stdout.buffer.write, kk, results)
        sys.stdout.flush()
    elif fmt == "json":
        write_json(out.report_json(kk, results, found))
    elif fmt == "csv":
        write_chunks(out.csv_chunks(kk, results))
    elif fmt == "markdown":
        write_chunks(out.markdown_chunks(kk, results, found, top=rows.top))
    else:
        console = out.console()
        if clear and console.is_terminal:
            console.clear()
        console.print(f"[bold]k = {kk}[/]" + ("" if k else " (the trials most tasks have; -k to change)"))
        for st, sm in results:
            head = len(out.summary_lines(sm)) + len(sm.warnings) + 2  # and "k = …", the causes line
            top = rows.shown(len(st), console.is_terminal, console.height, head)
            if console.is_terminal and min(len(st), top or len(st)) <= RICH_ROWS:
                console.print(out.report_table(st, sm, found, top=top))  # fitted to the terminal by Rich
            else:
                out.print_streamed_table(console, st, sm, found, top=top)


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
                        click.echo(f"flaketui: waiting: {visible(str(exc))}", err=True)
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


