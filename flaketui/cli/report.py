"""``flaketui report``: per-task and suite statistics, once or ``--watch``."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from flaketui._runtime import frozen
from flaketui.cli.common import (
    EXIT_OK,
    MAX_SECONDS,
    RICH_ROWS,
    FiniteFloat,
    RowChoice,
    check_k,
    check_rows,
    fail,
    load,
    log_options,
    main,
    flaky_cap_option,
    passk_ci_option,
    pick_runs,
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

if TYPE_CHECKING:  # the core's modules load when a report with these options runs
    from flaketui.output.report import Causes
    from flaketui.traces.burst import Exclusion
    from flaketui.traces.causes import Rescoring


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
@click.option("--interval", type=FiniteFloat(0.05, MAX_SECONDS), default=1.0, show_default=True,
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
@click.option("--grades-field", "grades_field", default=None, metavar="PATH",
              help="With --causes: the (dotted) field holding each trial's several grades (a list of "
                   "scores, or grader → grade), read for the grader source (default: grades, "
                   "judge_grades, scores, judgements).")
@click.option("--rescored", "rescored", default=None, metavar="LOG",
              help="With --causes: a second log of the same trials re-scored, paired by task and trial "
                   "number (and run, where the names match); where the two grades of a trial disagree, "
                   "that is the grader. Trials not paired are counted and said.")
@click.option("--exclude-window", "exclude", multiple=True, metavar="START/END",
              help="Leave the trials that started in this window (ISO 8601 times or epoch seconds, e.g. "
                   "2026-11-20T12:00:00Z/2026-11-20T12:15:00Z; repeatable) out of the rates, as an "
                   "outage's: counted per task and in the summary. --causes offers the outage windows it finds.")
@passk_ci_option
@flaky_cap_option
@record_options
@log_options
def report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
           interval: float, top: int | None, all_rows: bool, baseline: str | None, alpha: float,
           causes: bool, workers: int, grades_field: str | None, rescored: str | None, exclude: tuple[str, ...],
           passk_ci: str, flaky_cap: float | None, out: str | None, record: bool, history: str | None,
           fields: FieldMap) -> None:
    """Per-task and suite statistics of each run in LOGS."""
    if record and watch:
        raise click.UsageError("--record goes without --watch")
    if record and exclude:
        raise click.UsageError("--record goes without --exclude-window (the history keeps every trial)")
    extra = CauseOptions(grades_field, rescored, check_windows(exclude))
    log = make_report(logs, k, run, fmt, watch, interval, top, all_rows, baseline, alpha, causes, workers,
                      passk_ci, out, fields, extra, flaky_cap)
    if record:
        record_log(log, history, err=True)


@dataclasses.dataclass(frozen=True)
class CauseOptions:
    """``--grades-field``, ``--rescored`` and ``--exclude-window`` (the windows parsed)."""

    grades_field: str | None = None
    rescored: str | None = None
    windows: tuple[tuple[float, float], ...] = ()


def check_windows(texts: Sequence[str]) -> tuple[tuple[float, float], ...]:
    """Each ``--exclude-window`` as (start, end) epoch seconds; a bad one is a usage error (exit 2)."""
    if not texts:  # the trace modules load only when a window is given
        return ()
    from flaketui.traces.burst import parse_window

    out = []
    for text in texts:
        try:
            start, end = parse_window(text)
        except (ValueError, OverflowError) as exc:
            raise click.BadParameter(visible(str(exc)), param_hint="--exclude-window") from None
        if not all(math.isfinite(x) and 0 <= x <= LATEST_EPOCH for x in (start, end)):
            raise click.BadParameter(f"{visible(repr(text))}: each end must be a time between 1970 and 9999",
                                     param_hint="--exclude-window")
        out.append((start, end))
    return tuple(out)


LATEST_EPOCH = 253402300799.0
"""9999-12-31T23:59:59Z in epoch seconds: the latest time a window may name (Python's datetime
ends there; beyond, showing the window would overflow)."""


def make_report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
                interval: float, top: int | None, all_rows: bool, baseline: str | None, alpha: float,
                causes: bool, workers: int, passk_ci: str, out: str | None, fields: FieldMap,
                extra: CauseOptions | None = None, flaky_cap: float | None = None) -> TrialLog:
    """``report`` without ``--record``: the report printed; the log it loaded (classes against ``flaky_cap``)."""
    extra = extra or CauseOptions()
    check_k(k)
    check_out(out, fmt)
    if not causes and (extra.grades_field is not None or extra.rescored is not None):
        raise click.UsageError("--grades-field and --rescored go with --causes")
    if extra.windows and (watch or baseline is not None or fmt == "html"):
        raise click.UsageError("--exclude-window goes without --watch and --baseline, with --format table, "
                               "json, csv or markdown")
    if extra.rescored is not None and (watch or fmt == "html"):
        raise click.UsageError("--rescored goes without --watch, with --format table, json or markdown")
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

            kk, stats = run_stats(log, run, k, passk_ci, flaky_cap)
            doc = out.report_json(kk, [(st, summarise(st)) for st in stats])
            doc["baseline"] = out.baseline_json(baseline_comparisons(log, baseline, alpha))
            write_json(doc)
            return log
        print_report(log, k, run, fmt, rows=rows, passk_ci=passk_ci, flaky_cap=flaky_cap)
        print_baseline(log, baseline, alpha, fmt)
        return log
    if watch:
        watch_report(logs, fields, interval,
                     lambda log, again: print_report(log, k, run, fmt, clear=again, causes=causes,
                                                     workers=workers, rows=dataclasses.replace(rows, watch=True),
                                                     passk_ci=passk_ci, extra=extra, flaky_cap=flaky_cap))
    log = load(logs, fields)
    retries = retry_audits(log, run)  # before the metrics are let go: a trial's attempt is one
    log = log.without_metrics()  # the report shows none; the log with them is let go (1M tasks: 125 MB)
    if fmt == "html":
        print_html(log, k, run, causes, workers, passk_ci, out, rows, extra, flaky_cap)
        return log
    exclusion = None
    if extra.windows:
        log, exclusion = exclude_windows(log, extra.windows)
        if fmt == "csv":  # the other formats say it in the document; CSV has no place for it
            for r in pick_runs(log, run):
                click.echo(f"flaketui: run {visible(r)}: {exclusion.line(r)}", err=True)
    rescoring = pair_rescored(log, load((extra.rescored,), fields)) if extra.rescored is not None else None
    errored = errored_kinds(log, run)  # read back from the trials' records: before their spans are let go
    if not causes:  # no trace is read: the trials' byte spans and lines are let go (1M trials: 48 MB)
        log = log.without_locations()
    with frozen():  # the log lives as long as the report: the collector need not walk it
        print_report(log, k, run, fmt, causes=causes, workers=workers, rows=rows, passk_ci=passk_ci,
                     extra=extra, exclusion=exclusion, rescoring=rescoring, errored=errored, retries=retries,
                     flaky_cap=flaky_cap)
    return log


def retry_audits(log: TrialLog, run: Sequence[str]) -> dict[str, Any] | None:
    """Each run's retry audit (:func:`flaketui.stats.retries.retry_audit`) where its trials carry
    an attempt (the metric :data:`~flaketui.loading.records.ATTEMPT`) and some were retried;
    None when no trial carries one."""
    from flaketui.loading.records import ATTEMPT

    attempt = log.metrics.get(ATTEMPT)
    if attempt is None:
        return None
    import numpy as np

    from flaketui.stats.retries import retry_audit

    out = {}
    for name in pick_runs(log, run):
        r = log.runs.index(name)
        rows = np.flatnonzero(log.run == r)
        audit = retry_audit(log.task[rows], log.outcome[rows], attempt[rows], log.tasks,
                            errored_as=log.fields.errored_as)
        if audit is not None:
            out[name] = audit
    return out


def errored_kinds(log: TrialLog, run: Sequence[str]) -> Mapping[str, Mapping[str, int]] | None:
    """The errored trials of the runs reported, by kind (:func:`~flaketui.loading.error_types.errored_by_type`)."""
    from flaketui.loading import error_types

    return error_types.errored_by_type(log, pick_runs(log, run), limit=error_types.MAX_READS)


def exclude_windows(log: TrialLog, windows: Sequence[tuple[float, float]]) -> tuple[TrialLog, Exclusion]:
    """``log`` without the trials that started in one of ``windows``, and what was left out.

    Each trial's start time is read back from its record (its trace is not built: about
    0.3 ms a trial); a trial without one is kept and counted as untimed.
    """
    import numpy as np

    from flaketui.loading import read_trial
    from flaketui.traces.burst import Exclusion, in_windows, trial_time

    times = [trial_time(read_trial(log, r, max_steps=0).extra) for r in range(len(log))]
    out = in_windows(times, windows)
    by_task: dict[str, dict[str, int]] = {}
    for r in np.flatnonzero(out).tolist():
        counts = by_task.setdefault(log.runs[int(log.run[r])], {})
        name = log.tasks[int(log.task[r])]
        counts[name] = counts.get(name, 0) + 1
    kept = log.take(~out)
    emptied: dict[str, tuple[str, ...]] = {}
    for name, counts in by_task.items():
        left = set(kept.run_outcomes(name).tasks)
        emptied[name] = tuple(t for t in counts if t not in left)
    untimed = sum(t is None for t in times)
    return kept, Exclusion(tuple(windows), by_task, emptied, untimed)


def pair_rescored(log: TrialLog, again: TrialLog) -> dict[str, Rescoring]:
    """Each run's re-scored grades (task → trial → 1 pass / 0 fail), paired by task and trial number.

    A run of ``log`` is paired with the run of ``again`` of its name, else, when ``again`` has
    one run, with that one; no run pairing: exit 2. An errored re-scored trial gives no grade.
    """
    import numpy as np

    from flaketui.model import ERRORED, PASS
    from flaketui.traces.causes import Rescoring

    out: dict[str, Rescoring] = {}
    for name in log.runs:
        other = name if name in again.runs else (again.runs[0] if len(again.runs) == 1 else None)
        if other is None:
            fail(f"--rescored: no run of the re-scored log pairs with run {visible(name)!r} "
                 f"(its runs: {visible(', '.join(again.runs))})")
        assert other is not None
        rows = np.flatnonzero(again.run == again.runs.index(other))
        grades: dict[tuple[str, int], float] = {}
        for r in rows.tolist():
            if int(again.outcome[r]) != ERRORED:
                grades[(again.tasks[int(again.task[r])], int(again.trial[r]))] = \
                    1.0 if int(again.outcome[r]) == PASS else 0.0
        mine = np.flatnonzero(log.run == log.runs.index(name))
        by_task: dict[str, dict[int, float]] = {}
        paired = 0
        seen = set()
        for r in mine.tolist():
            key = (log.tasks[int(log.task[r])], int(log.trial[r]))
            if key in grades and int(log.outcome[r]) != ERRORED:
                by_task.setdefault(key[0], {})[key[1]] = grades[key]
                paired += 1
                seen.add(key)
        unpaired = int((log.outcome[mine] != ERRORED).sum()) - paired
        out[name] = Rescoring(by_task, paired, unpaired, len(grades) - len(seen), other)
    return out


def print_html(log: TrialLog, k: int | None, run: Sequence[str], causes: bool, workers: int, passk_ci: str,
               out: str | None, rows: RowChoice, extra: CauseOptions | None = None,
               flaky_cap: float | None = None) -> None:
    """``report --format html``: the page, with the traces of each run's
    :data:`~flaketui.output.html.TRACE_TASKS` flakiest tasks (and with ``causes`` every flaky
    task's suggested source), to stdout or ``out``; the table has ``--top N`` rows, every row
    with ``--all``, else :data:`~flaketui.output.html.TABLE_ROWS`."""
    from flaketui.cli.diff import flaky_pairs, html_out, page_info
    from flaketui.output.html import TABLE_ROWS, TRACE_TASKS, write_report_html
    from flaketui.output.report import display_order
    from flaketui.stats import summarise

    kk, stats = run_stats(log, run, k, passk_ci, flaky_cap)
    results = [(st, summarise(st)) for st in stats]
    found = report_causes(log, [st.run for st in stats], workers, extra) if causes else None
    pairs: dict[str, Any] = {}
    for st in stats:
        is_flaky = st.mixed  # a trace pair needs a passing and a failing trial
        flaky = [st.tasks[i] for i in display_order(st).tolist() if is_flaky[i]][:TRACE_TASKS]
        pairs[st.run] = flaky_pairs(log, st.run, flaky)
    info = page_info(log)
    from flaketui.output.report import ReportNotes

    notes = ReportNotes.of(log, [st.run for st in stats], errored=errored_kinds(log, run))
    with html_out(out) as write:
        write_report_html(write, kk, results, found, pairs, info,
                          top=None if rows.all else rows.top or TABLE_ROWS, notes=notes)


def print_report(log: TrialLog, k: int | None, run: Sequence[str], fmt: str,
                 clear: bool = False, causes: bool = False, workers: int = 1,
                 rows: RowChoice | None = None, passk_ci: str = "exact", extra: CauseOptions | None = None,
                 exclusion: Exclusion | None = None, rescoring: Mapping[str, Rescoring] | None = None,
                 errored: Mapping[str, Mapping[str, int]] | None | str = "count",
                 retries: Mapping[str, Any] | None = None, flaky_cap: float | None = None) -> None:
    """Print the report of ``log`` in ``fmt`` (``clear``: wipe the terminal first, for --watch;
    ``causes``: with each flaky task's suggested source of flakiness, read with ``workers`` processes
    (``extra``: where the grades are, the re-scored grades ``rescoring``); ``rows``: which tasks the
    table and Markdown show; ``passk_ci``: the pass^k interval, ``exact`` or ``bootstrap``;
    ``exclusion``: the trials ``--exclude-window`` left out, said per task and in the summary;
    ``errored``: the errored trials by kind, ``"count"`` to count them here, from ``log``;
    ``retries``: each run's retry audit, :func:`retry_audits`).
    Each format is written a few thousand rows at a time, so a million tasks take no more memory
    than a hundred."""
    from flaketui.output import report as out
    from flaketui.stats import summarise

    rows = rows or RowChoice()
    kk, stats = run_stats(log, run, k, passk_ci, flaky_cap)
    results = [(st, summarise(st)) for st in stats]
    found = report_causes(log, [st.run for st in stats], workers, extra, rescoring) if causes else None
    notes = out.ReportNotes.of(log, [st.run for st in stats], exclusion=exclusion, rescoring=rescoring,
                               errored=errored_kinds(log, run) if errored == "count" else errored,
                               retries=retries)
    if fmt == "json" and found is None and exclusion is None:  # the tasks written as they are made
        from flaketui.output.json_stream import write_report_json

        write_report_json(sys.stdout.buffer.write, kk, results, notes)
        sys.stdout.flush()
    elif fmt == "json":
        write_json(out.report_json(kk, results, found, notes=notes))
    elif fmt == "csv":
        write_chunks(out.csv_chunks(kk, results))
    elif fmt == "markdown":
        write_chunks(out.markdown_chunks(kk, results, found, top=rows.top, notes=notes))
    else:
        console = out.console()
        if clear and console.is_terminal:
            console.clear()
        console.print(f"[bold]k = {kk}[/]" + ("" if k else " (the trials most tasks have; -k to change)"))
        for st, sm in results:
            # and "k = …", the causes line
            head = len(out.summary_lines(sm, notes)) + len(notes.lines(sm.run)) + len(sm.warnings) + 2
            top = rows.shown(len(st), console.is_terminal, console.height, head)
            if console.is_terminal and min(len(st), top or len(st)) <= RICH_ROWS:
                console.print(out.report_table(st, sm, found, top=top, notes=notes))  # fitted by Rich
            else:
                out.print_streamed_table(console, st, sm, found, top=top, notes=notes)


def report_causes(log: TrialLog, runs: Sequence[str], workers: int = 1, extra: CauseOptions | None = None,
                  rescoring: Mapping[str, Rescoring] | None = None) -> Causes:
    """:func:`~flaketui.cli.history.find_causes` with ``--grades-field`` and the re-scored grades."""
    return find_causes(log, runs, workers, extra.grades_field if extra else None, rescoring)


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


