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
    CauseProgress,
    FiniteFloat,
    RowChoice,
    check_k,
    check_out,
    check_rows,
    fail,
    html_out,
    load,
    main,
    outcome_stats,
    page_info,
    pick_runs,
    print_baseline,
    record_log,
    report_problems,
    run_stats,
    write_chunks,
    write_json,
)
from flaketui.cli.options import (
    alpha_option,
    baseline_option,
    causes_option,
    flaky_cap_option,
    k_option,
    log_options,
    out_option,
    passk_ci_option,
    record_options,
    rows_options,
    run_option,
    watch_option,
)
from flaketui.model import FieldMap, InputError, RunOutcomes, TrialLog
from flaketui.sanitize import visible

if TYPE_CHECKING:  # the core's modules load when a report with these options runs
    from flaketui.loading.options import LoadOptions
    from flaketui.output.report import Causes, ReportNotes
    from flaketui.traces.burst import Exclusion
    from flaketui.traces.causes import Rescoring


def with_causes(name: str, metavar: str, text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option that goes with ``--causes`` (a usage error without it): where ``--causes`` reads
    more of what a trial says."""
    return click.option(name, name.lstrip("-").replace("-", "_"), default=None, metavar=metavar,
                        help=f"With --causes: {text}")


@main.command()
@click.argument("logs", nargs=-1, required=True)
@k_option("k for pass@k and pass^k (default: the trials most tasks have, errored included; "
          "tasks with fewer are left out of pass@k and pass^k, and counted).")
@run_option()
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown", "html"]),
              default="table", show_default=True,
              help="html: one self-contained page (no network): summary, curves, the sortable task table, "
                   "each mixed task's traces (and with --causes its suspected source), to stdout or --out.")
@out_option
@watch_option("Follow logs still being written: print the report again when they change (Ctrl-C stops).")
@click.option("--interval", type=FiniteFloat(0.05, MAX_SECONDS), default=1.0, show_default=True,
              help="Seconds between looks at the logs with --watch.")
@rows_options("tasks", "flakiest")
@baseline_option
@alpha_option
@causes_option("Suggest each mixed task's (passed and failed) source of flakiness (sampling, tool-nondeterminism, "
               "ordering-concurrency, environment, harness-bug, user-simulator, grader, burst, "
               "unknown) from its traces, grades and start times, with the evidence and the decisive "
               "fork; failure modes and outage windows too. Reads the mixed tasks' traces only.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes reading traces for --causes: 2 reads two tasks at once in two processes "
                   "(same output; faster only on a big suite with two idle cores, as each process first "
                   "gets a copy of the loaded log); 1 reads them here, one by one.")
@with_causes("--grades-field", "PATH", "the (dotted) field holding each trial's several grades (a list of "
             "scores, or grader → grade), read for the grader source (default: grades, "
             "judge_grades, scores, judgements).")
@with_causes("--rescored", "LOG", "a second log of the same trials re-scored, paired by task and trial "
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
           fields: FieldMap, load_options: LoadOptions) -> None:
    """Per-task and suite statistics of each run in LOGS."""
    if record and watch:
        raise click.UsageError("--record goes without --watch")
    if record and exclude:
        raise click.UsageError("--record goes without --exclude-window (the history keeps every trial)")
    extra = CauseOptions(grades_field, rescored, check_windows(exclude))
    log = make_report(logs, k, run, fmt, watch, interval, top, all_rows, baseline, alpha, causes, workers,
                      passk_ci, out, fields, extra, flaky_cap, load_options, keep_log=record)
    if record:
        assert log is not None
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
                extra: CauseOptions | None = None, flaky_cap: float | None = None,
                load_options: LoadOptions | None = None, keep_log: bool = True) -> TrialLog | None:
    """``report`` without ``--record``: the report printed; the log it loaded, or None where it was let
    go before the statistics were made (not ``keep_log``: nothing is recorded). Classes against
    ``flaky_cap``; with ``load_options``, the command's ``--sources-root``, ``--no-cache``, …"""
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
        log = load(logs, fields, load_options)
        if fmt == "json":  # one document: the report with a "baseline" object
            from flaketui.output.compare import baseline_json
            from flaketui.output.report import report_json
            from flaketui.session.filters import baseline_comparisons
            from flaketui.stats import summarise

            kk, stats = run_stats(log, run, k, passk_ci, flaky_cap)
            doc = report_json(kk, [(st, summarise(st)) for st in stats])
            doc["baseline"] = baseline_json(baseline_comparisons(log, baseline, alpha))
            write_json(doc)
            return log
        print_report(log, k, run, fmt, rows=rows, passk_ci=passk_ci, flaky_cap=flaky_cap)
        print_baseline(log, baseline, alpha, fmt)
        return log
    if watch:
        watch_report(logs, fields, interval, load_options,
                     lambda log, again: print_report(log, k, run, fmt, clear=again, causes=causes,
                                                     workers=workers, rows=dataclasses.replace(rows, watch=True),
                                                     passk_ci=passk_ci, extra=extra, flaky_cap=flaky_cap))
    loaded = load(logs, fields, load_options)
    runs = pick_runs(loaded, run)
    if fmt == "html":
        log = loaded.without_metrics()  # the report shows none
        del loaded
        print_html(log, k, run, causes, workers, passk_ci, out, rows, extra, flaky_cap)
        return log
    from flaketui.session.filters import report_inputs

    rescored = load((extra.rescored,), fields, load_options) if extra.rescored is not None else None
    given = report_inputs(loaded, runs, extra.windows, rescored, keep_locations=causes)
    del loaded, rescored  # the log as loaded (its metrics, its spans) is let go: 1M tasks, 125 MB of peak
    if given.exclusion is not None and fmt == "csv":  # the other formats say it in the document; CSV can't
        for r in runs:
            click.echo(f"flaketui: run {visible(r)}: {given.exclusion.line(r)}", err=True)
    with frozen():  # the log lives as long as the report: the collector need not walk it
        read = read_report(given.log, run, causes=causes, workers=workers, extra=extra, exclusion=given.exclusion,
                           rescoring=given.rescoring, errored=given.errored, retries=given.retries)
        log = given.log if keep_log else None
        # What follows reads only `read`: the trial table is let go before the statistics are made,
        # so the two are never held at once (the peak of a report of a million tasks).
        del given
        print_read(read, k, fmt, rows=rows, passk_ci=passk_ci, flaky_cap=flaky_cap)
    return log


def print_html(log: TrialLog, k: int | None, run: Sequence[str], causes: bool, workers: int, passk_ci: str,
               out: str | None, rows: RowChoice, extra: CauseOptions | None = None,
               flaky_cap: float | None = None) -> None:
    """``report --format html``: the page, with the traces of each run's
    :data:`~flaketui.output.html.TRACE_TASKS` flakiest tasks (and with ``causes`` every flaky
    task's suggested source), to stdout or ``out``; the table has ``--top N`` rows, every row
    with ``--all``, else :data:`~flaketui.output.html.TABLE_ROWS`."""
    from flaketui.output.html import TABLE_ROWS, TRACE_TASKS, write_report_html
    from flaketui.output.report import ReportNotes, display_order
    from flaketui.session.filters import errored_kinds
    from flaketui.session.pairs import flaky_pairs
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
    runs = [st.run for st in stats]
    notes = ReportNotes.of(log, runs, errored=errored_kinds(log, runs))
    with html_out(out) as write:
        write_report_html(write, kk, results, found, pairs, info,
                          top=None if rows.all else rows.top or TABLE_ROWS, notes=notes)


@dataclasses.dataclass
class ReportRead:
    """All a report reads of its log: each run's outcomes, the causes found and the run-level notes
    (with the trials an exclusion window left out). The report is made from these alone, so the
    log may be let go before the statistics are."""

    outcomes: list[RunOutcomes] | None
    """Each run's, handed over once (:meth:`take_outcomes`)."""
    found: Causes | None
    notes: ReportNotes

    def take_outcomes(self) -> list[RunOutcomes]:
        """The runs' outcomes, handed over once: the report lets each go as its statistics are
        made, so a second report from the same reading would have none (an error, not an empty
        report)."""
        if self.outcomes is None:
            raise RuntimeError("this report's outcomes were handed over already")
        outcomes, self.outcomes = self.outcomes, None
        return outcomes


def read_report(log: TrialLog, run: Sequence[str], causes: bool = False, workers: int = 1,
                extra: CauseOptions | None = None, exclusion: Exclusion | None = None,
                rescoring: Mapping[str, Rescoring] | None = None,
                errored: Mapping[str, Mapping[str, int]] | None | str = "count",
                retries: Mapping[str, Any] | None = None) -> ReportRead:
    """What the report of the runs ``run`` of ``log`` (all when empty) reads of it (``causes``:
    each flaky task's suggested source, read with ``workers`` processes (``extra``: where the
    grades are, the re-scored grades ``rescoring``); ``exclusion``: the trials
    ``--exclude-window`` left out, said per task and in the summary; ``errored``: the errored
    trials by kind, ``"count"`` to count them here, from ``log``; ``retries``: each run's retry
    audit, :func:`~flaketui.session.filters.retry_audits`)."""
    from flaketui.output import report as out

    runs = pick_runs(log, run)
    outcomes = [apart_from_log(log.run_outcomes(r)) for r in runs]
    found = report_causes(log, runs, workers, extra, rescoring) if causes else None
    if errored == "count":
        from flaketui.session.filters import errored_kinds

        errored = errored_kinds(log, runs)
    notes = out.ReportNotes.of(log, runs, exclusion=exclusion, rescoring=rescoring, errored=errored,
                               retries=retries)
    return ReportRead(outcomes, found, notes)


def apart_from_log(o: RunOutcomes) -> RunOutcomes:
    """``o`` holding nothing of its log, so that letting the log go frees it: a run's trial scores
    are the log's own column (from the index cache, a view of its whole mapping), kept as a copy
    where the statistics read them (some partial credit) and dropped where they do not."""
    import numpy as np

    from flaketui.stats.scores import is_graded

    if o.trial_scores is None:
        return o
    if is_graded(o.trial_scores):
        return dataclasses.replace(o, trial_scores=np.array(o.trial_scores))
    return dataclasses.replace(o, trial_scores=None, trial_errored=None)


def print_report(log: TrialLog, k: int | None, run: Sequence[str], fmt: str,
                 clear: bool = False, causes: bool = False, workers: int = 1,
                 rows: RowChoice | None = None, passk_ci: str = "exact", extra: CauseOptions | None = None,
                 exclusion: Exclusion | None = None, rescoring: Mapping[str, Rescoring] | None = None,
                 errored: Mapping[str, Mapping[str, int]] | None | str = "count",
                 retries: Mapping[str, Any] | None = None, flaky_cap: float | None = None) -> None:
    """Print the report of ``log`` in ``fmt`` (:func:`read_report` says what it reads;
    ``clear``: wipe the terminal first, for --watch; the rest as :func:`print_read`)."""
    read = read_report(log, run, causes, workers, extra, exclusion, rescoring, errored, retries)
    print_read(read, k, fmt, clear=clear, rows=rows, passk_ci=passk_ci, flaky_cap=flaky_cap)


def print_read(read: ReportRead, k: int | None, fmt: str, clear: bool = False, rows: RowChoice | None = None,
               passk_ci: str = "exact", flaky_cap: float | None = None) -> None:
    """Print the report ``read`` holds in ``fmt`` at ``k`` (None: the trials most tasks have;
    ``clear``: wipe the terminal first, for --watch; ``rows``: which tasks the table and
    Markdown show; ``passk_ci``: the pass^k interval, ``exact`` or ``bootstrap``; classes
    against ``flaky_cap``). Each format is written a few thousand rows at a time, so a million
    tasks take no more memory than a hundred."""
    from flaketui.output import report as out
    from flaketui.stats import summarise

    rows = rows or RowChoice()
    kk, stats = outcome_stats(read.take_outcomes(), k, passk_ci, flaky_cap)
    results = [(st, summarise(st)) for st in stats]
    found, notes = read.found, read.notes
    if fmt == "json" and found is None and notes.exclusion is None:  # the tasks written as they are made
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
    """:func:`~flaketui.session.jobs.find_causes` with ``--grades-field`` and the re-scored grades, a
    progress bar on stderr counting the tasks read."""
    from flaketui.session.jobs import find_causes

    with CauseProgress() as bar:
        return find_causes(log, runs, workers, extra.grades_field if extra else None, rescoring,
                           progress=bar.update)


def watch_report(logs: Sequence[str], fields: FieldMap, interval: float, load_options: LoadOptions | None,
                 show: Callable[[TrialLog, bool], None]) -> None:
    """Show the logs, then again each time a look finds them changed, until Ctrl-C (exit 0).

    New problems are named as they appear; while no usable trial is there yet, one
    line on stderr says so.
    """
    import time

    from flaketui.loading.watch import LogWatcher

    watcher = LogWatcher(logs, fields, load_options)
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
                    report_problems(log, start=shown,
                                    show_all=load_options is not None and load_options.show_all_problems)
                    shown = len(log.problems)
                    show(log, again)
                    again = True
            time.sleep(interval)
            changed = watcher.poll()
    except KeyboardInterrupt:
        sys.exit(EXIT_OK)


