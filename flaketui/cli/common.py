"""What the commands share besides their options (:mod:`flaketui.cli.options`): the command
group, loading with progress, the one-line errors, writing JSON, chunks and pages, recording
into the history.

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from flaketui import __version__
from flaketui.model import FieldMap, InputError, RunOutcomes, TrialLog
from flaketui.sanitize import mask_url, visible

if TYPE_CHECKING:
    from flaketui.history.store import RunRecord, Store
    from flaketui.loading.options import LoadOptions
    from flaketui.output.html import PageInfo
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


DEFAULT_WAIT = 10.0
"""Seconds to wait for a busy history (``--wait``'s default)."""
NOTIFY = "flaketui.notify"
"""Where ``--notify`` / ``--notify-format`` keep their values in the click context's ``meta``
(the commands that take :func:`~flaketui.cli.options.record_options` do not see them:
:func:`record_log` does)."""
FILES_NAMED = 3
"""Files named in a kind's summary line; the rest are counted."""


def report_problems(log: TrialLog, start: int = 0, show_all: bool = False) -> None:
    """Name the problems on stderr (from ``log.problems[start]``: --watch names only the new
    ones): a kind that occurs once as ``file:line: reason``, a kind that occurs more as one
    line, ``80 × duplicate trial … kept the first (files: …; first: file:line)``; with
    ``show_all`` (``--problems``), every problem on a line of its own."""
    from flaketui.loading.loader import problem_kinds

    problems = log.problems[start:]
    if not problems:
        return
    if show_all:
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


def load(paths: Sequence[str], fields: FieldMap, options: LoadOptions | None = None) -> TrialLog:
    """Load logs for a command with its ``--sources-root``, ``--timeout``, ``--no-cache``, …
    (``options``; None: the defaults): problems to stderr, input errors to exit 2, and a
    progress bar on stderr when loading takes over a second (see :class:`LoadProgress`)."""
    from flaketui.loading import load_logs

    bar = LoadProgress()
    try:
        log = load_logs(paths, fields, progress=bar.update, options=options)
    except InputError as exc:
        bar.close()
        fail(str(exc))
    bar.close()
    report_problems(log, show_all=options is not None and options.show_all_problems)
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

    def __enter__(self) -> LoadProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    return outcome_stats([log.run_outcomes(r) for r in pick_runs(log, run)], k, passk_ci, flaky_cap)


def outcome_stats(outcomes: list[RunOutcomes], k: int | None, passk_ci: str = "exact",
                  flaky_cap: float | None = None) -> tuple[int, list[TaskStats]]:
    """:func:`run_stats` of runs' outcomes, emptying ``outcomes`` as it goes: each run's trial
    arrays are let go once its statistics are made (those share its per-task counts)."""
    from flaketui.stats import default_k, task_stats
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    kk = k or default_k(outcomes)
    cap = DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap
    stats = []
    while outcomes:
        stats.append(task_stats(outcomes.pop(0), kk, passk_ci, cap))
    return kk, stats


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


# --- --format html (report, compare, diff, history trend) -----------------------------------


def check_out(out: str | None, fmt: str) -> None:
    """``--out`` goes with ``--format html``, into a folder that exists (else exit 2)."""
    if out is None:
        return
    if fmt != "html":
        raise click.UsageError("--out goes with --format html")
    if out != "-" and not (Path(out).parent if str(Path(out).parent) else Path(".")).is_dir():
        fail(f"--out {out}: folder {Path(out).parent} does not exist")


@contextlib.contextmanager
def html_out(out: str | None) -> Iterator[Callable[[str], Any]]:
    """A ``write(text)`` for the page: to stdout, or to ``out`` by
    :func:`flaketui.safefile.atomic_open` (a temporary file of a random name, renamed over
    ``out`` when the page is whole: no half page, never written through a link; exit 2 on error)."""
    if out is None or out == "-":
        buf = sys.stdout.buffer
        yield lambda text: buf.write(text.encode("utf-8", "replace"))
        buf.flush()
        return
    from flaketui.safefile import atomic_open

    try:
        with atomic_open(out, text=True) as fh:
            yield fh.write
    except OSError as exc:
        fail(f"--out {out}: {exc.strerror or exc}")
    click.echo(f"flaketui: wrote {visible(out)}", err=True)


def page_info(*logs: TrialLog) -> PageInfo:
    """The command line, the logs read and the runs' metadata, for the page's last section."""
    from flaketui.output.html import PageInfo

    meta: dict[str, Any] = {}
    for log in logs:
        meta.update(log.run_meta)
    sources = list(dict.fromkeys(s.path for log in logs for s in log.sources))
    return PageInfo(command=["flaketui", *sys.argv[1:]], sources=sources, meta=meta, loading=loading_lines(*logs))


def loading_lines(*logs: TrialLog) -> list[str]:
    """What loading met, for a page: the lines skipped, counted (``2 lines skipped while
    loading``), then each note in its own words (``note: …``)."""
    from flaketui.output.report import problems_line

    problems = [p for log in logs for p in log.problems]
    skipped = problems_line([p for p in problems if not p.notice])
    return ([skipped] if skipped else []) + [f"note: {visible(str(p))}" for p in problems if p.notice]


# --- the history (history, report --record, compare --record, quarantine --from-history) ----------


@contextlib.contextmanager
def opened(history: str | None, wait: float) -> Iterator[Store]:
    """The history, open and migrated; its errors (opening it, or in the ``with`` body) as one
    line and exit 2."""
    from flaketui.history import HistoryError, open_store

    try:
        with open_store(history, timeout=wait) as store:
            yield store
    except HistoryError as exc:
        fail(str(exc))


def record_log(log: TrialLog | Sequence[TrialLog], history: str | None, wait: float = DEFAULT_WAIT,
               causes: bool = False, err: bool = False, flaky_cap: float | None = None) -> None:
    """Record each run of ``log`` (or of each of several logs, in one transaction) in the
    history (as ``history record``: a run recorded before is left as it is), one line a run
    ("recorded: RUN (N tasks, run #K)" or "already recorded: …") on stdout, or stderr with
    ``err``; a history that cannot be used: one line, exit 2. Transitions are found with the
    classes against ``flaky_cap`` (None: the command's ``--flaky-cap`` when it has one, as
    ``report --record`` does, else the default). Imports SQLAlchemy only when called."""
    ctx = click.get_current_context(silent=True)
    if flaky_cap is None and ctx is not None:
        flaky_cap = ctx.params.get("flaky_cap")
    records = []
    for one in [log] if isinstance(log, TrialLog) else log:
        records += run_records(one, causes)
    with opened(history, wait) as store:
        done = store.record(records, flaky_cap=flaky_cap_or_default(flaky_cap))
    for rec in done:
        what = "recorded" if rec.new else "already recorded"
        click.echo(f"{what}: {visible(rec.name)} ({rec.tasks} tasks, run #{rec.run_id})", err=err)
    kept = ctx.meta.get(NOTIFY, {}) if ctx is not None else {}
    if kept.get("notify"):
        notify_all(history, wait, kept["notify"], kept.get("notify_format") or "json")


def run_records(log: TrialLog, causes: bool = False) -> list[RunRecord]:
    """A :class:`~flaketui.history.RunRecord` for each run of ``log`` (with ``causes``, each
    flaky task's suggested source and first divergence step, read from its traces)."""
    from flaketui.history.recording import run_records as records_of

    if not causes:
        return records_of(log, None)
    from flaketui.session.jobs import find_causes

    with CauseProgress() as bar:
        return records_of(log, find_causes(log, log.runs, progress=bar.update))


class CauseProgress(LoadProgress):
    """The load's progress bar on stderr (same rules: after a second, on a terminal, not for piped
    JSON), counting the flaky tasks whose traces ``--causes`` reads instead of bytes: give its
    :meth:`update` to :func:`flaketui.session.jobs.find_causes` as ``progress``."""

    def columns(self) -> tuple[str, Any]:
        """The bar counts tasks (``3/10``), not bytes."""
        from rich.progress import MofNCompleteColumn

        return "Reading traces", MofNCompleteColumn()


def flaky_cap_or_default(flaky_cap: float | None) -> float:
    """``--flaky-cap`` as given, or the report's default."""
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    return DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap


def active_quarantines(history: str | None, wait: float = DEFAULT_WAIT) -> dict[str, dict[str, Any]]:
    """The history's active quarantines (set with ``history quarantine``, not lifted), by task:
    who, at, why, ticket, in the order they were set."""
    with opened(history, wait) as store:
        return store.data(recent=0).quarantines


def notify_all(history: str | None, wait: float, url: str, fmt: str, owners: str | None = None,
               connect_timeout: float | None = None, read_timeout: float | None = None,
               tries: int | None = None) -> None:
    """Post each transition not yet notified to ``url`` (one message each, oldest first), one
    line each on stderr; any not delivered: kept for the next time, one line and exit 2."""
    from flaketui.history.notify import (BACKOFF, CONNECT_TIMEOUT, READ_TIMEOUT, TRIES, body, post, shown_webhook,
                                         webhook_problem)
    from flaketui.history.owners import OwnersError, owners_of, read_owners

    problem = webhook_problem(url)
    if problem is not None:  # before any transition is claimed
        fail(problem)

    try:
        rules = read_owners(owners) if owners else []
    except OwnersError as exc:
        fail(str(exc))
    failed = sent = 0
    n_tries = tries or TRIES
    # How long one message may take (every try timing out, the backoff between them), and a margin.
    per_try = (connect_timeout or CONNECT_TIMEOUT) + (read_timeout or READ_TIMEOUT)
    lease = n_tries * per_try + BACKOFF * 2 ** n_tries + 30
    with opened(history, wait) as store:
        store.end_due()
        for tr in store.transitions(pending=True):
            own = list(owners_of([tr["task"]], rules, [tr["group_name"]])[0]) if rules else []
            why: list[str] = []

            def send(tr: dict[str, Any] = tr, own: list[str] = own, why: list[str] = why) -> bool:
                got = post(url, body(tr, own, fmt), connect_timeout or CONNECT_TIMEOUT,
                           read_timeout or READ_TIMEOUT, tries or TRIES)
                why.append(got.why)
                return got.ok

            done = store.deliver(tr["id"], send, lease=lease)
            if done:
                sent += 1
                click.echo(visible(f"notified: {tr['task']} {tr['kind']}"), err=True)
            elif done is False:
                failed += 1
                click.echo(visible(f"not notified: {tr['task']} {tr['kind']}: {why[-1]}"), err=True)
                break  # the webhook is failing: the rest wait for the next time too, in order
    if failed:
        fail(f"webhook {shown_webhook(url)} did not take the messages; they are kept and sent next time")
    click.echo(f"{sent} notification{'s' if sent != 1 else ''} sent to {shown_webhook(url)}", err=True)


def emit(fmt: str, value: Any, as_json: Callable[[Any], Any], as_csv: Callable[[Any], str],
         as_markdown: Callable[[Any], str], as_table: Callable[[Any], Any]) -> None:
    """Print ``value`` in ``fmt`` with the renderer of that format."""
    from flaketui.output import report as out

    if fmt == "json":
        write_json(as_json(value))
    elif fmt == "csv":
        click.echo(as_csv(value), nl=False)
    elif fmt == "markdown":
        click.echo(as_markdown(value), nl=False)
    else:
        out.print_renderable(as_table(value))


def print_baseline(log: TrialLog, baseline: str, alpha: float, fmt: str) -> None:
    """``--baseline RUN``: every other run of ``log`` against RUN, Holm across the comparisons."""
    from flaketui.output import compare as out
    from flaketui.session.filters import baseline_comparisons

    emit(fmt, baseline_comparisons(log, baseline, alpha), out.baseline_json, out.baseline_csv,
         out.baseline_markdown, out.baseline_table)
