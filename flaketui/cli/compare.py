"""``flaketui compare A B``: the paired comparison of two runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from flaketui.cli.common import (
    RICH_ROWS,
    RowChoice,
    check_out,
    check_rows,
    check_triage,
    emit,
    fail,
    html_out,
    load,
    main,
    page_info,
    print_baseline,
    record_log,
)
from flaketui.cli.options import (
    alpha_option,
    baseline_option,
    config_field_option,
    divergence_option,
    flag_option,
    ignore_key_option,
    log_options,
    record_options,
    rows_options,
    runs_option,
    triage_option,
)
from flaketui.model import FieldMap, InputError, RunOutcomes, TrialLog
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions
    from flaketui.output.compare import CompareView, ScoredView


@main.command()
@click.argument("logs", nargs=-1, required=True)
@runs_option("Compare these two runs inside LOGS (else LOGS are two files, one run each).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown", "html"]),
              default="table", show_default=True,
              help="html: one self-contained page (no network): the verdict, the changed tasks and the "
                   "flipped tasks' traces, to stdout or --out. markdown --summary: a PR comment.")
@flag_option("--summary", "With --format markdown: a PR comment (under GitHub's 65,536 characters; the verdict "
             "first, each section in a <details> block).")
@click.option("--out", "out_path", default=None, metavar="FILE",
              help="With --format html: write the page to FILE (atomically) instead of stdout.")
@flag_option("--tui", "Open the app on the comparison pane instead.")
@alpha_option
@click.option("--by", "by", type=click.Choice(["score", "pass"]), default=None,
              help="What the verdict compares: the trials' graded scores (the default when both runs have "
                   "scores and one has partial credit) or pass/fail (the default otherwise).")
@baseline_option
@config_field_option
@ignore_key_option("Another step key to ignore when comparing traces (with --tui).")
@divergence_option
@rows_options("changed tasks", "most changed")
@triage_option
@record_options
@log_options
def compare(logs: tuple[str, ...], runs: tuple[str, str] | None, fmt: str, tui: bool, alpha: float, by: str | None,
            baseline: str | None, config_field: tuple[str, ...], ignore_key: tuple[str, ...],
            divergence: str | None, top: int | None, all_rows: bool, triage: str | None,
            summary: bool, out_path: str | None, record: bool, history: str | None, fields: FieldMap,
            load_options: LoadOptions) -> None:
    """Paired comparison of run B against run A: the verdict by one primary test (the within-task
    permutation test, valid with unequal trials), the mean difference with its CI, the secondary
    tests where valid, and the flipped and moved tasks."""
    if record and tui:
        raise click.UsageError("--record goes without --tui")
    loaded = make_compare(logs, runs, fmt, tui, alpha, baseline, config_field, ignore_key, divergence, top,
                          all_rows, triage, summary, out_path, fields, by, load_options)
    if record:
        record_log(loaded, history, err=True)


def make_compare(logs: tuple[str, ...], runs: tuple[str, str] | None, fmt: str, tui: bool, alpha: float,
                 baseline: str | None, config_field: tuple[str, ...], ignore_key: tuple[str, ...],
                 divergence: str | None, top: int | None, all_rows: bool, triage: str | None,
                 summary: bool, out_path: str | None, fields: FieldMap, by: str | None = None,
                 load_options: LoadOptions | None = None) -> list[TrialLog]:
    """``compare`` without ``--record``: the comparison printed; the logs it loaded (each once).
    ``by``: ``score``, ``pass`` or None (score when both runs are graded: :func:`score_comparison`)."""
    from flaketui.output import compare as out
    from flaketui.stats import compare_runs, task_stats

    choice = check_rows(top, all_rows, fmt)
    check_out(out_path, fmt)
    if summary and fmt != "markdown":
        raise click.UsageError("--summary goes with --format markdown")
    if fmt == "html" and (tui or baseline is not None):
        raise click.UsageError("--format html goes without --tui and --baseline")
    if by == "score" and (tui or baseline is not None):
        raise click.UsageError("--by score goes without --tui and --baseline (they compare pass rates)")
    if tui:
        open_comparison(logs, runs, triage, fields, ignore_key, divergence, load_options)
        return []
    if baseline is not None:
        log = load(logs, fields, load_options)
        print_baseline(log, baseline, alpha, fmt)
        return [log]

    a, b = resolve_pair(logs, runs, fields, load_options)
    loaded = [a[0]] if a[0] is b[0] else [a[0], b[0]]
    outcomes_a, outcomes_b = a[0].run_outcomes(a[1]), b[0].run_outcomes(b[1])
    stats_a = task_stats(outcomes_a, 1)
    stats_b = task_stats(outcomes_b, 1)
    view = out.compare_view(compare_runs(stats_a, stats_b), alpha,
                            read_config(a, config_field), read_config(b, config_field),
                            score_comparison(outcomes_a, outcomes_b, by, alpha))
    if fmt == "table":
        print_compare_table(view, choice)
        return loaded
    if fmt == "html":
        print_compare_html(view, a, b, divergence, out_path)
        return loaded
    if summary:
        click.echo(out.compare_summary_markdown(view), nl=False)
        return loaded
    modes = list(dict.fromkeys([stats_a.errored_as, stats_b.errored_as]))
    emit(fmt, view, lambda v: {**out.compare_json(v), "errored_as": modes[0] if len(modes) == 1 else "mixed"},
         out.compare_csv,
         lambda v: out.compare_markdown(v, choice.top), out.compare_table)
    return loaded


def score_comparison(a: RunOutcomes, b: RunOutcomes, by: str | None, alpha: float) -> ScoredView | None:
    """The comparison by score when ``by`` asks for it (or, when None, both runs have scores and one
    has partial credit); None to compare by pass/fail. ``--by score`` on runs without scores: exit 2."""
    import numpy as np

    from flaketui.output.compare import ScoredView
    from flaketui.stats.score_compare import compare_scores, graded_pair

    if by == "pass":
        return None
    if by is None and not graded_pair(a, b):
        return None
    if a.trial_scores is None or b.trial_scores is None or not (
            np.isfinite(a.trial_scores).any() and np.isfinite(b.trial_scores).any()):
        missing = [visible(o.run) for o in (a, b) if o.trial_scores is None or not np.isfinite(o.trial_scores).any()]
        fail(f"--by score: no graded scores in run {' and '.join(missing)} (its trials have pass/fail only); "
             "--by pass compares pass rates")
    why = "--by score" if by == "score" else "both runs have graded scores; --by pass compares pass rates"
    return ScoredView(compare_scores(a, b, alpha), why)


def print_compare_html(view: CompareView, a: tuple[TrialLog, str], b: tuple[TrialLog, str],
                       divergence: str | None, out: str | None) -> None:
    """``compare --format html``: the page, with a trial of A beside one of B for the first
    :data:`~flaketui.output.html.TRACE_TASKS` changed tasks (flipped first)."""
    from flaketui.output.html import TRACE_TASKS, write_compare_html
    from flaketui.session.pairs import cross_pairs

    tasks = [r.task for r in view.rows()[:TRACE_TASKS]]
    pairs = cross_pairs(a, b, tasks, divergence)
    info = page_info(a[0]) if a[0] is b[0] else page_info(a[0], b[0])
    with html_out(out) as write:
        write_compare_html(write, view, pairs, info)


def print_compare_table(view: CompareView, choice: RowChoice) -> None:
    """The comparison's table: on a terminal, the most changed tasks that fit (``--top``, ``--all``)
    laid out by Rich; piped or past :data:`RICH_ROWS` rows, written a few thousand rows at a time."""
    from flaketui.output import compare as out
    from flaketui.output.report import console, left_out_text

    con = console()
    rows = view.rows()
    shown = choice.shown(len(rows), con.is_terminal, con.height, len(view.lines()) + 2)
    if con.is_terminal and min(len(rows), shown or len(rows)) <= RICH_ROWS:
        con.print(out.compare_table(view, rows[:shown], len(rows) - len(rows[:shown])))
        return
    picked = rows[:shown]
    lines = out.compare_lines_streamed(view, picked, con.width if con.is_terminal else 1000)
    if lines is None:  # wider than the page: Rich wraps the cells
        con.print(out.compare_table(view, picked, len(rows) - len(picked)))
        return
    con.print(out.compare_head(view))
    for text in lines:
        con.file.write(text)
    con.file.flush()
    if len(picked) < len(rows):
        con.print(left_out_text(len(rows) - len(picked), len(picked), *out.CHANGED))


def read_config(side: tuple[TrialLog, str], names: Sequence[str]) -> dict[str, str]:
    """The ``--config-field`` values of a run's first trial (none named: the usual ones,
    :data:`~flaketui.stats.confounds.DEFAULT_CONFIG_FIELDS`, those present); a file that cannot be
    read again: exit 2."""
    from flaketui.loading import read_trial
    from flaketui.stats.confounds import DEFAULT_CONFIG_FIELDS, run_config

    try:
        return run_config(side[0], side[1], names or DEFAULT_CONFIG_FIELDS, read_trial)
    except (OSError, InputError) as exc:
        fail(f"reading the configuration of run {visible(side[1])}: {visible(exc)}")
        raise  # unreachable: fail exits


def open_comparison(logs: Sequence[str], runs: tuple[str, str] | None, triage: str | None,
                    fields: FieldMap, ignore_keys: Sequence[str] = (), divergence: str | None = None,
                    load_options: LoadOptions | None = None) -> None:
    """``compare --tui``: the app, opened on the comparison pane of A and B."""
    from flaketui.loading import expand_paths

    if not runs and len(logs) != 2:
        raise click.UsageError("give two logs A and B (one run each), or --runs NAME_A NAME_B")
    check_triage(triage)
    try:
        expand_paths(logs, options=load_options)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import AppOptions, FlakeApp

    app = FlakeApp(AppOptions(logs, fields=fields, triage=triage, compare=runs or (), load=load_options,
                              ignore_keys=tuple(ignore_keys), divergence=divergence))
    app.run()
    sys.exit(app.return_code or 0)


def resolve_pair(
    logs: Sequence[str], runs: tuple[str, str] | None, fields: FieldMap, load_options: LoadOptions | None = None
) -> tuple[tuple[TrialLog, str], tuple[TrialLog, str]]:
    """The (log, run name) of A and B: two runs inside LOGS, or two files of one run each."""
    if runs:
        log = load(logs, fields, load_options)
        for name in runs:
            if name not in log.runs:
                fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
        if runs[0] == runs[1]:
            fail(f"cannot compare run {runs[0]!r} with itself: give two different runs")
        return (log, runs[0]), (log, runs[1])
    if len(logs) != 2:
        raise click.UsageError("give two logs A and B (one run each), or --runs NAME_A NAME_B")
    pair = []
    for path in logs:
        log = load([path], fields, load_options)
        if len(log.runs) != 1:
            fail(f"{path} holds {len(log.runs)} runs ({', '.join(log.runs)}); "
                 "choose two with --runs NAME_A NAME_B")
        pair.append((log, log.runs[0]))
    if pair[0][1] == pair[1][1]:
        if pair[0][0].sources == pair[1][0].sources:
            fail(f"cannot compare run {pair[0][1]!r} with itself: A and B are the same logs")
        from flaketui.loading.runnames import distinct_names

        names = distinct_names(logs, pair[0][1])
        click.echo(f"flaketui: both runs are named {visible(pair[0][1])!r}: compared as "
                   f"{visible(names[0])!r} and {visible(names[1])!r}", err=True)
        for (log, old), new in zip(pair, names, strict=True):
            log.runs[log.runs.index(old)] = new
        pair = [(pair[0][0], names[0]), (pair[1][0], names[1])]
    return pair[0], pair[1]


