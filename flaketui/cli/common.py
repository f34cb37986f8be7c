"""What every command shares: the command group, log options, loading with progress, errors.

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from flaketui import __version__
from flaketui.model import ERRORED_AS, FieldMap, InputError, TrialLog
from flaketui.sanitize import mask_url, visible

if TYPE_CHECKING:
    from flaketui.stats.suite import TaskStats


EXIT_OK, EXIT_GATE_FAILED, EXIT_INPUT = 0, 1, 2
MAX_PROBLEMS_SHOWN = 20
"""Bad lines named one by one on stderr; the rest are summarised."""

OPTIONAL_PACKAGES = {"sqlalchemy": "sqlalchemy", "alembic": "alembic", "psycopg": "psycopg[binary]",
                     "pyarrow": "pyarrow", "fsspec": "fsspec", "s3fs": "s3fs", "gcsfs": "gcsfs",
                     "distributed": "distributed", "aiohttp": "aiohttp"}
"""Packages a feature imports when used (the history, Parquet, remote logs, Dask), by module:
one missing is a one-line hint (exit 2), not a traceback."""


class DefaultGroup(click.Group):
    """A group that runs ``open`` when the first argument is not a subcommand.

    Commands in :attr:`LAZY` are imported only when run (or listed by --help), so
    that ``report`` does not wait for their imports.
    """

    LAZY = {"plan": "flaketui.cli.plan:plan"}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if (args and args[0] not in self.commands and args[0] not in self.LAZY
                and args[0] not in ("--help", "-h", "--version")):
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; when its reader closes the pipe (``flaketui report BIG | head``),
        stop quietly with exit 0: the reader has what it wanted, and exit 1 would read as a
        failed gate."""
        try:
            return super().invoke(ctx)
        except InputError as exc:  # met after the load (a trial read back for its traces): one line
            fail(str(exc))
        except ModuleNotFoundError as exc:  # an optional package a feature needs: one line, exit 2
            if (exc.name or "").split(".")[0] not in OPTIONAL_PACKAGES:
                raise
            package = OPTIONAL_PACKAGES[(exc.name or "").split(".")[0]]
            fail(f"this needs the Python package {package}, which is not installed: pip install '{package}'")
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)  # the flush at exit must not fail again
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            ctx.exit(EXIT_OK)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            import importlib

            module, attr = self.LAZY[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


def fail(message: str) -> None:
    """Print one line on stderr (every URL in it masked: :func:`~flaketui.sanitize.mask_url`) and
    exit with the input-error code."""
    click.echo(f"flaketui: error: {visible(mask_url(message))}", err=True)
    sys.exit(EXIT_INPUT)


SHOW_ALL_PROBLEMS = False
"""``--problems``: name every problem on stderr, one line each, instead of one line per kind."""
FILES_NAMED = 3
"""Files named in a kind's summary line; the rest are counted."""


def report_problems(log: TrialLog, start: int = 0) -> None:
    """Name the problems on stderr (from ``log.problems[start]``: --watch names only the new
    ones): a kind that occurs once as ``file:line: reason``, a kind that occurs more as one
    line, ``80 × duplicate trial … kept the first (files: …; first: file:line)``; with
    ``--problems`` (:data:`SHOW_ALL_PROBLEMS`), every problem on a line of its own."""
    from flaketui.loading.loader import problem_kinds

    problems = log.problems[start:]
    if not problems:
        return
    if SHOW_ALL_PROBLEMS:
        for p in problems:
            click.echo(f"flaketui: {'note:' if p.notice else 'skipped'} {visible(p)}", err=True)
        return
    summarised = False
    for group in problem_kinds(problems):
        label = "note:" if group.notice else "skipped"
        if group.count == 1 and len(group.problems) == 1:
            click.echo(f"flaketui: {label} {visible(group.problems[0])}", err=True)
            continue
        summarised = True
        paths = list(dict.fromkeys(p.path for p in group.problems))
        files = ", ".join(paths[:FILES_NAMED]) + (f", and {len(paths) - FILES_NAMED} more"
                                                  if len(paths) > FILES_NAMED else "")
        where = f"files: {files}; first: {group.problems[0]}" if group.problems else "counted, not named"
        click.echo(f"flaketui: {label} {group.count} × {visible(group.kind)} ({visible(where)})", err=True)
    if summarised:
        click.echo("flaketui: --problems names each one", err=True)


def log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options every command that reads logs takes: field names, the pass threshold, the
    cache and where to parse (``--scheduler``: a Dask cluster, for every load of the process)."""

    @click.option("--threshold", "--pass-threshold", "threshold", type=FiniteFloat(), default=1 - 1e-6,
                  show_default=True, help="A score or reward passes when it is >= this.")
    @click.option("--reward", "--scorer", "reward", default="reward", show_default=True, metavar="NAME",
                  help="Which named reward (Harbor's verifier_result.rewards) or scorer (Inspect; default: "
                       "the log's first) decides a trial's pass.")
    @click.option("--run-field", multiple=True, help="Field holding the run name.")
    @click.option("--task-field", multiple=True, help="Field holding the task id.")
    @click.option("--trial-field", multiple=True, help="Field holding the trial number.")
    @click.option("--pass-field", multiple=True, help="Field holding pass/fail (bool or 0/1).")
    @click.option("--score-field", multiple=True, metavar="PATH",
                  help="Field holding a trial's numeric score (dotted for a nested one: result.score), "
                       "compared with --threshold for pass/fail and averaged as the mean score.")
    @click.option("--trace-field", multiple=True, help="Field holding the list of steps.")
    @click.option("--records-field", default=None, metavar="PATH",
                  help="Dotted field of a JSON object whose array holds the trials.")
    @click.option("--errored-as", type=click.Choice(list(ERRORED_AS)), default="harness", show_default=True,
                  help="Errored trials: as each run's harness counts them (harness: Harbor by their reward, "
                       "a trial without one failing; Terminal-Bench as failures; JSON Lines apart), left out "
                       "of n (apart), counted as failures (fail), or by their score (score).")
    @click.option("--run-name-from", type=click.Choice(["file", "folder", "field"]), default="file",
                  show_default=True, help="Name a run without a run field by its file, its folder, "
                  "or the harness's own run id.")
    @click.option("--runs-as-trials", is_flag=True, default=False,
                  help="Read the runs given (one agent's repeated runs) as trials of one run.")
    @click.option("--planned-trials", "planned_trials", type=click.IntRange(min=1), default=None, metavar="N",
                  help="Read only the first N trials of each task (in trial order): the design fixed before "
                       "any outcome was seen, so trials added after looking (plan --budget) do not bias p̂ "
                       "and pass^k.")
    @click.option("--problems", "all_problems", is_flag=True, default=False,
                  help="Name every problem met while loading, one line each (default: one line per kind).")
    @click.option("--no-cache", is_flag=True, default=False,
                  help="Parse the logs again instead of reading the index cache.")
    @click.option("--scheduler", default=None, metavar="ADDRESS",
                  help="Parse on this Dask cluster (tcp://HOST:8786; default $FLAKETUI_SCHEDULER).")
    @click.option("--timeout", "timeout", type=FiniteFloat(0.0, MAX_SECONDS), default=30.0, show_default=True,
                  metavar="SECONDS",
                  help="Remote logs: seconds a store may take to connect and to send each piece of an "
                       "answer; a load asks nothing new after 20 times this.")
    @click.option("--max-bytes", "max_bytes", type=click.IntRange(min=1), default=2 << 30,
                  show_default=True, metavar="BYTES",
                  help="Remote logs: the most bytes a file read whole (.json, .eval, ...; not JSON "
                       "Lines, which is streamed) may declare; a larger one is skipped unread.")
    @click.option("--sources-root", "sources_roots", multiple=True, metavar="DIR",
                  help="A folder (or URL prefix) a Parquet trial table's source column may point into, "
                       "besides the table's own folder; a table flaketui export wrote for you may point "
                       "anywhere. Repeatable.")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from flaketui.loading.formats import parquet_checks

        parquet_checks.SOURCES_ROOTS = tuple(kwargs.pop("sources_roots"))
        from flaketui.loading import location

        timeout = kwargs.pop("timeout")
        if timeout <= 0:
            raise click.BadParameter(f"{timeout:g} is not a number of seconds above 0", param_hint="--timeout")
        location.TIMEOUT = timeout
        location.MAX_BYTES = kwargs.pop("max_bytes")
        global SHOW_ALL_PROBLEMS
        SHOW_ALL_PROBLEMS = kwargs.pop("all_problems")
        if kwargs.pop("no_cache"):
            from flaketui.loading import cache

            cache.ENABLED = False
        from flaketui.loading import distributed

        distributed.SCHEDULER = distributed.scheduler_address(kwargs.pop("scheduler"))
        base = FieldMap()
        kwargs["fields"] = FieldMap(
            run=tuple(kwargs.pop("run_field")) or base.run,
            task=tuple(kwargs.pop("task_field")) or base.task,
            trial=tuple(kwargs.pop("trial_field")) or base.trial,
            passed=tuple(kwargs.pop("pass_field")) or base.passed,
            score=tuple(kwargs.pop("score_field")) or base.score,
            trace=tuple(kwargs.pop("trace_field")) or base.trace,
            threshold=kwargs.pop("threshold"),
            records_field=kwargs.pop("records_field"),
            errored_as=kwargs.pop("errored_as"),
            run_name_from=kwargs.pop("run_name_from"),
            runs_as_trials=kwargs.pop("runs_as_trials"),
            reward=kwargs.pop("reward"),
            planned_trials=kwargs.pop("planned_trials"),
        )
        return func(*args, **kwargs)

    return wrapper


def load(paths: Sequence[str], fields: FieldMap) -> TrialLog:
    """Load logs for a command: problems to stderr, input errors to exit 2, and a
    progress bar on stderr when loading takes over a second (see :class:`LoadProgress`)."""
    from flaketui.loading import load_logs

    bar = LoadProgress()
    try:
        log = load_logs(paths, fields, progress=bar.update)
    except InputError as exc:
        bar.close()
        fail(str(exc))
    bar.close()
    report_problems(log)
    return log


class LoadProgress:
    """A Rich progress bar on stderr for a load that has run for over :attr:`DELAY` seconds.

    Shown only when stderr is a terminal, and not when stdout is piped JSON or CSV
    (``--format json`` / ``csv``), whose readers want a quiet stderr.
    """

    DELAY = 1.0
    """Seconds before the bar appears: quick loads print nothing."""

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._bar: Any = None
        self._task: Any = None
        self.enabled = _stream_is_tty(sys.stderr) and not self._machine_output()

    @staticmethod
    def _machine_output() -> bool:
        ctx = click.get_current_context(silent=True)
        fmt = ctx.params.get("fmt") if ctx is not None else None
        return fmt in ("json", "csv") and not _stream_is_tty(sys.stdout)

    def update(self, done: int, total: int) -> None:
        """Called by the loader with bytes done and total."""
        if not self.enabled or (self._bar is None and self._clock() - self._start < self.DELAY):
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TimeRemainingColumn

            label, count = self.columns()
            self._bar = Progress(label, BarColumn(), count, TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)
        self._bar.update(self._task, completed=done, total=total)

    def columns(self) -> tuple[str, Any]:
        """The bar's label and the column that counts what is done (here: bytes)."""
        from rich.progress import DownloadColumn

        return "Loading", DownloadColumn()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stream_is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def write_chunks(chunks: Iterable[str]) -> None:
    """Write text to stdout piece by piece (never the whole output in memory at once)."""
    for text in chunks:
        sys.stdout.write(text)
    sys.stdout.flush()


JSON_DEPTH = 128
"""Levels of nesting a JSON output keeps when a value from a log is deeper than orjson writes
(254): deeper lists and objects become a text that says they were cut."""


def write_json(doc: Any) -> None:
    """Write ``doc`` to stdout as indented JSON (the scripts' contract). A value nested deeper than
    orjson writes (a log's trace argument 260 lists deep) is cut at :data:`JSON_DEPTH` levels
    (:func:`~flaketui.sanitize.cut_deep`), with a note on stderr saying so."""
    try:
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    except TypeError as exc:
        if "ecursion" not in str(exc):
            raise
        from flaketui.sanitize import cut_deep

        doc, cut = cut_deep(doc, JSON_DEPTH)
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        click.echo(f"flaketui: note: {cut} value{'s' if cut != 1 else ''} nested over {JSON_DEPTH} levels "
                   "cut in the JSON output", err=True)
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()


def run_stats(log: TrialLog, run: Sequence[str], k: int | None,
              passk_ci: str = "exact", flaky_cap: float | None = None) -> tuple[int, list[TaskStats]]:
    """K (given, or the trials most tasks have, errored included: :func:`~flaketui.stats.default_k`)
    and the task statistics of each run, with the pass^k interval ``passk_ci`` (``exact`` or
    ``bootstrap``) and the classes stated against ``flaky_cap`` (None: the default)."""
    from flaketui.stats import default_k, task_stats
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    outcomes = [log.run_outcomes(r) for r in pick_runs(log, run)]
    kk = k or default_k(outcomes)
    cap = DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap
    return kk, [task_stats(o, kk, passk_ci, cap) for o in outcomes]


def flaky_cap_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--flaky-cap F``: the flakiness 4p(1 − p) above which a task is flaky (its class is stated against it)."""
    return click.option(
        "--flaky-cap", "flaky_cap", type=OPEN_FRACTION,
        default=None, metavar="F",
        help="A task is flaky when its flakiness 4p(1-p) exceeds F: its class is flaky when its exact "
             "95% interval of p rules out flakiness at or below F, stable when it rules out flakiness "
             "above F, undetermined otherwise. Default 0.36: a pass rate between 0.1 and 0.9.")(func)


def passk_ci_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--passk-ci [exact|bootstrap]``: how each task's pass^k interval is computed."""
    return click.option(
        "--passk-ci", "passk_ci", type=click.Choice(["exact", "bootstrap"]), default="exact",
        show_default=True,
        help="Each task's pass^k interval. exact: the Clopper-Pearson bounds of p raised to the "
             "power k, covering pass^k at least 95% of the time for every p. bootstrap: the "
             "percentile bootstrap of the unbiased estimate, which collapses to [1, 1] when every "
             "trial passed; at n = 8, k = 4 it covers only 53% / 33% / 8% of the time at "
             "p = 0.9 / 0.95 / 0.99.")(func)


def pick_runs(log: TrialLog, run: Sequence[str]) -> list[str]:
    for name in run:
        if name not in log.runs:
            fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
    return list(run) or list(log.runs)


K_MAX = 2**31 - 1
"""The largest k accepted: far beyond any task's trials, small enough for every output."""


def check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise click.BadParameter(f"k ({k}) must be >= 1", param_hint="-k")
    if k is not None and k > K_MAX:
        raise click.BadParameter(f"k ({k}) must be at most {K_MAX}", param_hint="-k")


class FiniteFloat(click.ParamType):
    """A float that is a number (``nan`` and ``inf`` are refused: ``--max-flakiness nan``
    would let every task pass the gate, and click's ``FloatRange`` lets ``nan`` through, as no
    comparison with it is true), optionally within [low, high] (``low_open`` / ``high_open``:
    that end excluded). The one type of every numeric option that takes a fraction."""

    name = "float"

    def __init__(self, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"{visible(repr(value))} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{visible(repr(value))} is not a finite number", param, ctx)
        below = self.low is not None and (x <= self.low if self.low_open else x < self.low)
        above = self.high is not None and (x >= self.high if self.high_open else x > self.high)
        if below or above:
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            self.fail(f"{x:g} is not in {'(' if self.low_open else '['}{lo}, {hi}{')' if self.high_open else ']'}",
                      param, ctx)
        return x


FRACTION = FiniteFloat(0.0, 1.0)
OPEN_FRACTION = FiniteFloat(0.0, 1.0, low_open=True, high_open=True)
MAX_SECONDS = 7 * 24 * 3600.0
"""The longest wait or timeout an option takes (a week): beyond, a clock's arithmetic overflows."""
SECONDS = FiniteFloat(0.0, MAX_SECONDS)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flaketui")
def main() -> None:
    """Find, understand and gate flaky AI-agent evaluation tasks.

    flaketui LOG... opens the app on trial logs (JSONL, .jsonl.gz, .json arrays,
    directories, globs). The subcommands print reports for scripts and CI.
    """


def triage_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--triage PATH``: where the app keeps triage notes."""
    return click.option(
        "--triage", "triage", default=None, metavar="PATH",
        help="Triage notes file (default: LOG.triage.json beside the first log, or "
             "DIR/flaketui.triage.json when it is a folder).")(func)


def check_triage(path: str | None) -> None:
    """A --triage PATH must be a file in a folder that exists."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        fail(f"--triage {path}: is a folder; give a file name, e.g. {p / 'notes.triage.json'}")
    if not p.parent.is_dir():
        fail(f"--triage {path}: folder {p.parent} does not exist")


DEFAULT_TOP = 50
"""Tasks per run the table shows on a terminal when a run has more than a screenful."""

RICH_ROWS = 500
"""Up to this many rows a terminal table is laid out by Rich (fitted to a narrow terminal);
beyond, it is written row by row."""


@dataclass(frozen=True)
class RowChoice:
    """Which of a run's tasks the table shows: ``--top N``, ``--all``, or the default (every
    task when piped; on a terminal, the :data:`DEFAULT_TOP` flakiest when a run has more tasks
    than the screen has lines, or with ``--watch`` the flakiest that fit the screen)."""

    top: int | None = None
    all: bool = False
    watch: bool = False

    def shown(self, tasks: int, terminal: bool, height: int, head: int) -> int | None:
        """How many of ``tasks`` to show (None: all) on a ``height``-line screen or a pipe, below
        ``head`` lines of summary."""
        if self.all:
            return None
        if self.top is not None:
            return self.top if self.top < tasks else None
        if not terminal or tasks <= height:
            return None
        fits = max(height - head - 4, 5)  # the header, its rule, the left-out line, a blank
        return min(DEFAULT_TOP, fits) if self.watch else DEFAULT_TOP


def rows_options(what: str, first: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--top N`` and ``--all``: how many rows (``what``: tasks, changed tasks) the table shows,
    the ``first`` (flakiest, most changed) first."""
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option("--all", "all_rows", is_flag=True, default=False,
                            help=f"The table shows every one of the {what}, whatever the terminal "
                                 "(written row by row).")(func)
        return click.option(
            "--top", type=int, default=None, metavar="N",
            help=f"The table (and Markdown) show the N {first} {what} of each run and say how many are "
                 f"left out. Default: on a terminal, the {DEFAULT_TOP} {first} when there are more than "
                 "the screen has lines (report --watch: what fits the screen); piped, every one.")(func)
    return decorate


def check_rows(top: int | None, all_rows: bool, fmt: str) -> RowChoice:
    """``--top`` / ``--all`` as given: usage errors (exit 2) for a count below 1, both at once,
    or --top with a format that always lists every task."""
    if top is not None and top < 1:
        raise click.BadParameter(f"{top} is not a count of tasks (1 or more)", param_hint="--top")
    if top is not None and all_rows:
        raise click.UsageError("--top and --all cannot be combined")
    if top is not None and fmt in ("json", "csv"):
        raise click.UsageError(f"--top goes with --format table or markdown ({fmt} lists every task)")
    return RowChoice(top, all_rows)
