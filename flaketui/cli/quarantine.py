"""``flaketui quarantine LOG…``: the flaky tasks as a list for CI (JUnit XML, JSON, or ids)."""

from __future__ import annotations

import sys

import click

from flaketui.cli.common import FRACTION, check_k, load, log_options, main, run_stats, write_json
from flaketui.model import FieldMap


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--max-flakiness", type=FRACTION, default=None, metavar="Y",
              help="Quarantine only flaky tasks whose flakiness 4·p̂·(1−p̂) exceeds Y "
                   "(default: every task that both passed and failed).")
@click.option("--run", "run", multiple=True, help="Only this run (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["json", "junit", "ids"]), default="ids",
              show_default=True,
              help="junit: JUnit XML (one testcase per task, flaky ones as flakyFailure); json: a list "
                   "of the quarantined tasks; ids: task ids one per line.")
@click.option("-k", type=int, default=None,
              help="k for the statistics (default: the trials most tasks have, errored included).")
@log_options
def quarantine(logs: tuple[str, ...], max_flakiness: float | None, run: tuple[str, ...], fmt: str,
               k: int | None, fields: FieldMap) -> None:
    """The flaky tasks of each run in LOGS, to keep out of a CI gate."""
    from flaketui.output.quarantine import junit_chunks, quarantine_ids, quarantine_json, quarantine_list

    check_k(k)
    _, stats = run_stats(load(logs, fields), run, k)
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
