"""``flaketui gate``: the CI gate (exit 1 when it fails)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from flaketui.cli.common import EXIT_GATE_FAILED, EXIT_OK, FRACTION, check_k, load, main, run_stats, write_json
from flaketui.cli.options import flag_option, flaky_cap_option, k_option, log_options, run_option
from flaketui.model import FieldMap
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions


@main.command()
@click.argument("logs", nargs=-1, required=True)
@k_option("k for pass^k (default: the trials most tasks have, errored included).")
@click.option("--min-pass-hat-k", type=FRACTION, default=None, help="Fail if suite pass^k is below this.")
@click.option("--max-flakiness", type=FRACTION, default=None, help="Fail if any task's flakiness is above this.")
@flag_option("--require-evidence",
             "With --max-flakiness: a task clears the cap only if its trials rule out flakiness "
             "above it at 95% (its two-sided Clopper-Pearson interval for the pass rate lies "
             "where 4p(1-p) <= cap), not merely if its observed flakiness is within it. Tasks "
             "with too few trials to tell are listed apart, with the clean trials each needs "
             "(at a cap of 0.2 a task that always passes needs 69).")
@run_option("Only this run (repeatable; default: every run).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@flaky_cap_option
@log_options
def gate(logs: tuple[str, ...], k: int | None, min_pass_hat_k: float | None,
         max_flakiness: float | None, require_evidence: bool, run: tuple[str, ...], fmt: str,
         flaky_cap: float | None, fields: FieldMap, load_options: LoadOptions) -> None:
    """CI gate: suite pass^k >= floor and no task's flakiness > cap. Exit 0 pass, 1 fail, 2 usage."""
    from flaketui.output.gate import gate_json, verdict_line
    from flaketui.stats import gate as run_gate
    from flaketui.stats import summarise

    check_k(k)
    if min_pass_hat_k is None and max_flakiness is None:
        raise click.UsageError("give --min-pass-hat-k, --max-flakiness or both")
    if require_evidence and max_flakiness is None:
        raise click.UsageError("--require-evidence goes with --max-flakiness")
    _, stats = run_stats(load(logs, fields, load_options), run, k, flaky_cap=flaky_cap)
    summaries = [summarise(st) for st in stats]
    results = [run_gate(st, sm, min_pass_hat_k, max_flakiness, require_evidence=require_evidence)
               for st, sm in zip(stats, summaries, strict=True)]
    if fmt == "json":
        doc = gate_json(results)
        for entry, r, sm in zip(doc["runs"], results, summaries, strict=True):
            # The tasks' classes, as report states them (the gate's own rule is --max-flakiness).
            entry["classes"] = {"flaky_cap": sm.flaky_cap, "flaky": sm.flaky_tasks,
                                "undetermined": sm.undetermined_tasks, "stable": sm.stable_tasks,
                                "mixed": sm.mixed_tasks}
            entry["floor_failed"] = r.floor_failed
            entry["cap_failed"] = r.cap_failed
            if r.require_evidence:
                entry["too_few_trials"] = [{"task": t, "more_clean_trials": m} for t, m in r.too_few_trials]
        modes = list(dict.fromkeys(st.errored_as for st in stats))
        write_json({**doc, "errored_as": modes[0] if len(modes) == 1 else "mixed" if modes else "apart"})
    else:
        for r in results:
            click.echo(verdict_line(r))
            for reason in r.reasons:
                click.echo(f"  - {visible(reason)}")
    sys.exit(EXIT_OK if all(r.passed for r in results) else EXIT_GATE_FAILED)
