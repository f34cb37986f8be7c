"""``flaketui triage export``: the review of flips and mixed tasks as a report."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flaketui.cli.common import check_k, fail, load, main, run_stats, write_json
from flaketui.cli.options import divergence_option, k_option, log_options, runs_option
from flaketui.model import FieldMap
from flaketui.sanitize import mask_url, visible

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions


@main.group()
def triage() -> None:
    """Triage notes (cause labels, notes, reviewed marks) made in the app."""


@triage.command("export")
@click.argument("logs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown",
              show_default=True)
@click.option("--triage", "triage_path", default=None, metavar="PATH",
              help="The triage file (default: next to the first log, as the app uses).")
@runs_option("The comparison to report (default: the first two runs, and every pair with notes).")
@k_option("k for pass^k of mixed tasks (default: the trials most tasks have).")
@divergence_option
@log_options
def triage_export(logs: tuple[str, ...], fmt: str, triage_path: str | None,
                  runs: tuple[str, str] | None, k: int | None, divergence: str | None, fields: FieldMap,
                  load_options: LoadOptions) -> None:
    """Write the review of LOGS as a report: per flip and per mixed task (passed and failed), figures, label, note; per
    flip, where its runs' traces first part and the suggested source."""
    from flaketui.loading import read_trial
    from flaketui.output import review
    from flaketui.stats import compare_runs
    from flaketui.triage import TriageFileError, default_triage_path, load_entries

    check_k(k)
    log = load(logs, fields, load_options)
    path = Path(triage_path) if triage_path else default_triage_path(logs)
    try:
        entries = load_entries(path)
    except TriageFileError as exc:
        fail(f"triage file {exc}")
    for name in runs or ():
        if name not in log.runs:
            fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
    if not path.exists():
        click.echo(f"flaketui: no triage notes at {visible(mask_url(path))} yet", err=True)
    kk, all_stats = run_stats(log, (), k)
    stats = {st.run: st for st in all_stats}
    pairs = review.comparison_pairs(log.runs, entries, runs)
    comparisons = [compare_runs(stats[a], stats[b]) for a, b in pairs]
    read = partial(read_trial, log)
    divergences = [review.flip_divergences(log, c, read, mode=divergence) for c in comparisons]
    from flaketui.stats.confounds import DEFAULT_CONFIG_FIELDS, confound_values, run_config

    configs = {r: run_config(log, r, DEFAULT_CONFIG_FIELDS, read_trial) for pair in pairs for r in pair}
    confounds = [confound_values(configs[a], configs[b]) for a, b in pairs]
    doc = review.triage_export(str(path), kk, comparisons, list(stats.values()), entries, divergences, confounds)
    if fmt == "json":
        write_json(doc)
    else:
        click.echo(review.triage_markdown(doc, comparisons), nl=False)

