"""``flaketui export``: every trial as one row of a Parquet or CSV table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flaketui.cli.common import fail, load, main, write_chunks
from flaketui.cli.options import flag_option, log_options
from flaketui.model import FieldMap, InputError
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default=None,
              help="The table's format (default: from --out's extension: .csv is CSV, .parquet or "
                   ".pq is Parquet; - is CSV on standard output).")
@click.option("--out", "out", required=True, metavar="PATH",
              help="The file to write (replaced whole when complete; - for CSV on standard output).")
@flag_option("--raw", "CSV: write text cells as they are (no quote before =, +, -, @; on a terminal, "
             "control characters are still spelled out).")
@log_options
def export(logs: tuple[str, ...], fmt: str | None, out: str, raw: bool, fields: FieldMap,
           load_options: LoadOptions) -> None:
    """Write one row per trial of LOGS (run, task, trial, outcome, score, group, metrics and
    where its line lives: source, offset, length) for DuckDB, Spark or a warehouse. flaketui
    reads a Parquet table back as a log, traces included."""
    from flaketui.output import trials

    fmt = fmt or format_of(out)
    if out == "-" and fmt == "parquet":
        fail("--out -: Parquet is written to a file; give a path")
    path = Path(out)
    if out != "-" and not path.parent.is_dir():
        fail(f"--out {out}: folder {path.parent} does not exist")
    log = load(logs, fields, load_options)  # its problems named on stderr once
    try:
        if fmt == "parquet":
            trials.write_parquet(log, path)
        elif out == "-":
            write_chunks(trials.trials_csv_chunks(log, raw, terminal=sys.stdout.isatty()))
        else:
            from flaketui.safefile import atomic_write

            atomic_write(path, (text.encode("utf-8") for text in trials.trials_csv_chunks(log, raw)))
    except InputError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"--out {visible(out)}: {exc.strerror or exc}")
    if out != "-":
        click.echo(f"flaketui: wrote {len(log)} trials to {visible(out)}", err=True)


SUFFIX_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
"""The format ``export`` writes for a name ending so, when ``--format`` is not given."""


def format_of(out: str) -> str:
    """The format for ``--out`` without ``--format``: from its extension (``-``, standard
    output, is CSV); an extension it does not know is a usage error naming the choices."""
    if out == "-":
        return "csv"
    fmt = SUFFIX_FORMATS.get(Path(out).suffix.lower())
    if fmt is None:
        raise click.UsageError(
            f"--out {visible(out)}: cannot tell the format from its extension: name it .csv, "
            f".parquet or .pq, or give --format parquet|csv", ctx=click.get_current_context())
    return fmt
