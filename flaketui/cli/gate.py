"""``flaketui gate``: the CI gate (exit 1 when it fails)."""

from __future__ import annotations

import sys

import click

from flaketui.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    FRACTION,
    check_k,
    load,
    log_options,
    main,
    run_stats,
    write_json,
)
from flaketui.model import FieldMap
from flaketui.sanitize import visible


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None, help="k for pass^k (default: the smallest trial count).")
@click.option("--min-pass-hat-k", type=FRACTION, default=None, help="Fail if suite pass^k is below this.")
@click.option("--max-flakiness", type=FRACTION, default=None, help="Fail if any task's flakiness is above this.")
@click.option("--run", "run", multiple=True, help="Only this run (repeatable; default: every run).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@log_options
def gate(logs: tuple[str, ...], k: int | None, min_pass_hat_k: float | None,
         max_flakiness: float | None, run: tuple[str, ...], fmt: str, fields: FieldMap) -> None:
    """CI gate: suite pass^k >= floor and no task's flakiness > cap. Exit 0 pass, 1 fail."""
    from flaketui.output import report as out
    from flaketui.stats import gate as run_gate
    from flaketui.stats import summarise

    check_k(k)
    if min_pass_hat_k is None and max_flakiness is None:
        raise click.UsageError("give --min-pass-hat-k, --max-flakiness or both")
    _, stats = run_stats(load(logs, fields), run, k)
    results = [run_gate(st, summarise(st), min_pass_hat_k, max_flakiness) for st in stats]
    if fmt == "json":
        write_json({**out.gate_json(results), "errored_as": fields.errored_as})
    else:
        for r in results:
            verdict = "PASS" if r.passed else "FAIL"
            click.echo(f"{verdict} {visible(r.run)}: pass^{r.k} = {r.pass_hat_k:.3f}"
                       + (f" (floor {r.min_pass_hat_k:g})" if r.min_pass_hat_k is not None else "")
                       + (f", flakiness cap {r.max_flakiness:g}" if r.max_flakiness is not None else ""))
            for reason in r.reasons:
                click.echo(f"  - {visible(reason)}")
    sys.exit(EXIT_OK if all(r.passed for r in results) else EXIT_GATE_FAILED)


