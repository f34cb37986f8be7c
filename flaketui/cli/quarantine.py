"""``flaketui quarantine LOG…``: the tasks that passed and failed, as a list for CI (JUnit XML, JSON, or ids)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import FRACTION, active_quarantines, check_k, fail, load, main, run_stats, write_json
from flaketui.cli.options import flag_option, history_option, k_option, log_options, run_option
from flaketui.model import FieldMap

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions


@main.command()
@click.argument("logs", nargs=-1, required=False)
@click.option("--max-flakiness", type=FRACTION, default=None, metavar="Y",
              help="Quarantine only mixed tasks whose flakiness 4·p̂·(1−p̂) exceeds Y "
                   "(default: every task that both passed and failed).")
@run_option()
@click.option("--format", "fmt", type=click.Choice(["json", "junit", "ids"]), default="ids",
              show_default=True,
              help="junit: JUnit XML (one testcase per task, flaky ones as flakyFailure); json: a list "
                   "of the quarantined tasks; ids: task ids one per line.")
@k_option("k for the statistics (default: the trials most tasks have, errored included).")
@flag_option("--from-history", "Instead: the tasks quarantined in the history (flaketui history quarantine, not "
             "lifted), with who, when, why and the ticket (json: a list of {task, who, at, why, ticket}); "
             "LOGS optional, given: only their tasks (of --run's runs).")
@history_option("With --from-history: the history (as flaketui history: default $FLAKETUI_HISTORY, "
                "else history.sqlite in the user data folder).")
@log_options
def quarantine(logs: tuple[str, ...], max_flakiness: float | None, run: tuple[str, ...], fmt: str,
               k: int | None, from_history: bool, history: str | None, fields: FieldMap,
               load_options: LoadOptions) -> None:
    """The mixed tasks (passed and failed) of each run in LOGS, to keep out of a CI gate (or, with --from-history,
    the tasks quarantined in the history)."""
    from flaketui.output.quarantine import junit_chunks, quarantine_ids, quarantine_json, quarantine_list

    check_k(k)
    if from_history:
        if max_flakiness is not None:
            raise click.UsageError("--max-flakiness goes without --from-history")
        print_from_history(logs, run, fmt, history, fields, load_options)
        return
    if not logs:
        raise click.UsageError("give LOGS (or --from-history)")
    _, stats = run_stats(load(logs, fields, load_options), run, k)
    lists = [quarantine_list(st, max_flakiness) for st in stats]
    if fmt == "junit":
        for text in junit_chunks(lists):  # written as it is made
            sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    elif fmt == "json":
        write_json(quarantine_json(lists))
    else:
        sys.stdout.write(quarantine_ids(lists))
        sys.stdout.flush()


def print_from_history(logs: tuple[str, ...], run: tuple[str, ...], fmt: str, history: str | None,
                       fields: FieldMap, load_options: LoadOptions | None = None) -> None:
    """``quarantine --from-history``: the history's active quarantines, in ``fmt`` (with LOGS,
    only their tasks)."""
    from flaketui.output.quarantine import history_ids, history_junit_chunks

    tasks: set[str] | None = None
    if logs:
        log = load(logs, fields, load_options)
        for name in run:
            if name not in log.runs:
                fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
        tasks = {t for name in (run or log.runs) for t in log.run_outcomes(name).tasks}
    active = active_quarantines(history)
    entries: list[dict[str, Any]] = [{"task": task, **q} for task, q in active.items()
                                     if tasks is None or task in tasks]
    if fmt == "junit":
        for text in history_junit_chunks(entries):
            sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    elif fmt == "json":
        write_json([{k: e[k] for k in ("task", "who", "at", "why", "ticket")} for e in entries])
    else:
        sys.stdout.write(history_ids(entries))
        sys.stdout.flush()
