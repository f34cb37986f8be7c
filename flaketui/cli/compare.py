"""``flaketui compare A B``: the paired comparison of two runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from flaketui.cli.common import (
    check_triage,
    fail,
    load,
    log_options,
    main,
    triage_option,
    write_json,
)
from flaketui.cli.tui import divergence_option
from flaketui.model import FieldMap, InputError, TrialLog


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--runs", nargs=2, default=None, metavar="NAME_A NAME_B",
              help="Compare these two runs inside LOGS (else LOGS are two files, one run each).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown"]),
              default="table", show_default=True)
@click.option("--tui", is_flag=True, help="Open the app on the comparison pane instead.")
@click.option("--ignore-key", multiple=True,
              help="Another step key to ignore when comparing traces (with --tui).")
@divergence_option
@triage_option
@log_options
def compare(logs: tuple[str, ...], runs: tuple[str, str] | None, fmt: str, tui: bool,
            ignore_key: tuple[str, ...], divergence: str | None, triage: str | None,
            fields: FieldMap) -> None:
    """Paired comparison of run B against run A: flips, sign test, mean difference."""
    from flaketui.output import report as out
    from flaketui.stats import compare_runs, task_stats

    if tui:
        open_comparison(logs, runs, triage, fields, ignore_key, divergence)
        return

    a, b = resolve_pair(logs, runs, fields)
    stats_a = task_stats(a[0].run_outcomes(a[1]), 1)
    stats_b = task_stats(b[0].run_outcomes(b[1]), 1)
    result = compare_runs(stats_a, stats_b)
    if fmt == "json":
        write_json(out.compare_json(result))
    elif fmt == "csv":
        click.echo(out.compare_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(out.compare_markdown(result), nl=False)
    else:
        out.print_renderable(out.compare_table(result))


def open_comparison(logs: Sequence[str], runs: tuple[str, str] | None, triage: str | None,
                    fields: FieldMap, ignore_keys: Sequence[str] = (), divergence: str | None = None) -> None:
    """``compare --tui``: the app, opened on the comparison pane of A and B."""
    from flaketui.loading import expand_paths

    if not runs and len(logs) != 2:
        raise click.UsageError("give two logs A and B (one run each), or --runs NAME_A NAME_B")
    check_triage(triage)
    try:
        expand_paths(logs)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import AppOptions, FlakeApp

    app = FlakeApp(AppOptions(logs, fields=fields, triage=triage, compare=runs or (),
                              ignore_keys=tuple(ignore_keys), divergence=divergence))
    app.run()
    sys.exit(app.return_code or 0)


def resolve_pair(
    logs: Sequence[str], runs: tuple[str, str] | None, fields: FieldMap
) -> tuple[tuple[TrialLog, str], tuple[TrialLog, str]]:
    """The (log, run name) of A and B: two runs inside LOGS, or two files of one run each."""
    if runs:
        log = load(logs, fields)
        for name in runs:
            if name not in log.runs:
                fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
        return (log, runs[0]), (log, runs[1])
    if len(logs) != 2:
        raise click.UsageError("give two logs A and B (one run each), or --runs NAME_A NAME_B")
    pair = []
    for path in logs:
        log = load([path], fields)
        if len(log.runs) != 1:
            fail(f"{path} holds {len(log.runs)} runs ({', '.join(log.runs)}); "
                 "choose two with --runs NAME_A NAME_B")
        pair.append((log, log.runs[0]))
    return pair[0], pair[1]


