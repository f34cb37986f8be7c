"""The command line: ``flaketui LOG...`` opens the app; ``report``, ``compare``,
``gate`` and ``demo`` are subcommands.

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from flaketui import __version__
from flaketui.model import FieldMap, InputError, TrialLog

if TYPE_CHECKING:
    from flaketui.stats.suite import TaskStats

EXIT_OK, EXIT_GATE_FAILED, EXIT_INPUT = 0, 1, 2
MAX_PROBLEMS_SHOWN = 20
"""Bad lines named one by one on stderr; the rest are summarised."""

FIXTURES = Path(__file__).resolve().parent / "demo"
"""The demo logs shipped in the package (the top-level fixtures/, gzip-compressed)."""


class DefaultGroup(click.Group):
    """A group that runs ``open`` when the first argument is not a subcommand.

    Commands in :attr:`LAZY` are imported only when run (or listed by --help), so
    that ``report`` does not wait for their imports.
    """

    LAZY = {"plan": "flaketui.plan_cli:plan"}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if (args and args[0] not in self.commands and args[0] not in self.LAZY
                and args[0] not in ("--help", "-h", "--version")):
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            import importlib

            module, attr = self.LAZY[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


def fail(message: str) -> None:
    """Print one line on stderr and exit with the input-error code."""
    click.echo(f"flaketui: error: {message}", err=True)
    sys.exit(EXIT_INPUT)


def report_problems(log: TrialLog, start: int = 0) -> None:
    """Name each skipped line on stderr (file:line: reason), the first 20 one by one
    (from ``log.problems[start]``: --watch names only the new ones)."""
    problems = log.problems[start:]
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        click.echo(f"flaketui: {'note:' if p.notice else 'skipped'} {p}", err=True)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        more = len(problems) - MAX_PROBLEMS_SHOWN
        by_reason: dict[str, int] = {}
        for p in problems[MAX_PROBLEMS_SHOWN:]:
            key = p.reason.split(" (")[0].split(":")[0]
            by_reason[key] = by_reason.get(key, 0) + 1
        summary = "; ".join(f"{n} × {r}" for r, n in sorted(by_reason.items(), key=lambda x: -x[1]))
        click.echo(f"flaketui: … and {more} more problems ({summary})", err=True)


def log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options every command that reads logs takes: field names and the pass threshold."""

    @click.option("--threshold", type=FiniteFloat(), default=1 - 1e-6, show_default=True,
                  help="A score or reward passes when it is >= this.")
    @click.option("--run-field", multiple=True, help="Field holding the run name.")
    @click.option("--task-field", multiple=True, help="Field holding the task id.")
    @click.option("--trial-field", multiple=True, help="Field holding the trial number.")
    @click.option("--pass-field", multiple=True, help="Field holding pass/fail (bool or 0/1).")
    @click.option("--score-field", multiple=True, help="Numeric field compared with --threshold.")
    @click.option("--trace-field", multiple=True, help="Field holding the list of steps.")
    @click.option("--records-field", default=None, metavar="PATH",
                  help="Dotted field of a JSON object whose array holds the trials.")
    @click.option("--errored-as", type=click.Choice(["apart", "fail"]), default="apart", show_default=True,
                  help="Errored trials: left out of n (apart) or counted as failures (fail).")
    @click.option("--run-name-from", type=click.Choice(["file", "folder", "field"]), default="file",
                  show_default=True, help="Name a run without a run field by its file, its folder, "
                  "or the harness's own run id.")
    @click.option("--runs-as-trials", is_flag=True, default=False,
                  help="Read the runs given (one agent's repeated runs) as trials of one run.")
    @click.option("--no-cache", is_flag=True, default=False,
                  help="Parse the logs again instead of reading the index cache.")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.pop("no_cache"):
            from flaketui.loading import cache

            cache.ENABLED = False
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
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

            self._bar = Progress("Loading", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("load", total=total)
        self._bar.update(self._task, completed=done, total=total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stream_is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def write_json(doc: Any) -> None:
    """Write ``doc`` to stdout as indented JSON (the scripts' contract)."""
    sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()


def run_stats(log: TrialLog, run: Sequence[str], k: int | None) -> tuple[int, list[TaskStats]]:
    """K (given, or the smallest trial count of any task) and the task statistics of each run."""
    from flaketui.stats import default_k, task_stats

    outcomes = [log.run_outcomes(r) for r in pick_runs(log, run)]
    kk = k or default_k(outcomes)
    return kk, [task_stats(o, kk) for o in outcomes]


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
    would let every task pass the gate), optionally within [low, high]."""

    name = "float"

    def __init__(self, low: float | None = None, high: float | None = None) -> None:
        self.low, self.high = low, high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if (self.low is not None and x < self.low) or (self.high is not None and x > self.high):
            self.fail(f"{x:g} is not between {self.low:g} and {self.high:g}", param, ctx)
        return x


FRACTION = FiniteFloat(0.0, 1.0)


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


@main.command("open")
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None, help="k for pass@k and pass^k (default: smallest n).")
@click.option("--min-pass-hat-k", type=FRACTION, default=None, help="Show the gate verdict: pass^k floor.")
@click.option("--max-flakiness", type=FRACTION, default=None, help="Show the gate verdict: flakiness cap.")
@click.option("--ignore-key", multiple=True, help="Another step key to ignore when comparing traces.")
@click.option("--watch", is_flag=True, default=False,
              help="Follow logs still being written: new trials appear as they land.")
@triage_option
@log_options
def open_app(logs: tuple[str, ...], k: int | None, min_pass_hat_k: float | None,
             max_flakiness: float | None, ignore_key: tuple[str, ...], watch: bool,
             triage: str | None, fields: FieldMap) -> None:
    """Open the app on LOGS."""
    check_k(k)
    check_triage(triage)
    from flaketui.loading import expand_paths

    try:
        expand_paths(logs)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import make_app

    app = make_app(list(logs), k=k, fields=fields, min_pass_hat_k=min_pass_hat_k,
                   max_flakiness=max_flakiness, ignore_keys=ignore_key, triage=triage, watch=watch)
    app.run()
    sys.exit(app.return_code or 0)


@main.command()
@click.option("-k", type=int, default=5, show_default=True,
              help="k for pass@k and pass^k (5, as in the README's figures).")
@click.option("--triage", "triage", default=None, metavar="PATH",
              help="Triage notes file (default: demo.triage.json in the user data folder).")
def demo(k: int | None, triage: str | None) -> None:
    """Open the app on the bundled on-call fixtures."""
    if not FIXTURES.is_dir():
        fail(f"the bundled demo logs are not at {FIXTURES}: this flaketui install is incomplete; "
             "reinstall it with pip")
    check_triage(triage)
    if triage is None:
        import platformdirs

        folder = platformdirs.user_data_path("flaketui")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"cannot create {folder} for the demo's triage notes ({exc.strerror}); "
                 "give --triage PATH")
        triage = str(folder / "demo.triage.json")
    from flaketui.app.app import make_app

    app = make_app([str(FIXTURES)], k=k, triage=triage)
    app.run()


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None,
              help="k for pass@k and pass^k (default: the smallest trial count of any task).")
@click.option("--run", "run", multiple=True, help="Only this run (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown"]),
              default="table", show_default=True)
@click.option("--watch", is_flag=True, default=False,
              help="Follow logs still being written: print the report again when they change "
                   "(Ctrl-C stops).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at the logs with --watch.")
@log_options
def report(logs: tuple[str, ...], k: int | None, run: tuple[str, ...], fmt: str, watch: bool,
           interval: float, fields: FieldMap) -> None:
    """Per-task and suite statistics of each run in LOGS."""
    check_k(k)
    if watch:
        watch_report(logs, fields, interval,
                     lambda log, again: print_report(log, k, run, fmt, clear=again))
    print_report(load(logs, fields), k, run, fmt)


def print_report(log: TrialLog, k: int | None, run: Sequence[str], fmt: str,
                 clear: bool = False) -> None:
    """Print the report of ``log`` in ``fmt`` (``clear``: wipe the terminal first, for --watch)."""
    from flaketui import report as out
    from flaketui.stats import summarise

    kk, stats = run_stats(log, run, k)
    results = [(st, summarise(st)) for st in stats]
    if fmt == "json":
        write_json(out.report_json(kk, results))
    elif fmt == "csv":
        click.echo(out.report_csv(kk, results), nl=False)
    elif fmt == "markdown":
        click.echo(out.report_markdown(kk, results), nl=False)
    else:
        console = out.console()
        if clear and console.is_terminal:
            console.clear()
        console.print(f"[bold]k = {kk}[/]" + ("" if k else " (smallest trial count of any task; -k to change)"))
        for st, sm in results:
            console.print(out.report_table(st, sm))


def watch_report(logs: Sequence[str], fields: FieldMap, interval: float,
                 show: Callable[[TrialLog, bool], None]) -> None:
    """Show the logs, then again each time a look finds them changed, until Ctrl-C (exit 0).

    New problems are named as they appear; while no usable trial is there yet, one
    line on stderr says so.
    """
    import time

    from flaketui.loading.watch import LogWatcher

    watcher = LogWatcher(logs, fields)
    shown = 0
    waiting = False
    try:
        try:
            watcher.poll()
        except InputError as exc:
            fail(str(exc))
        changed, again = True, False
        while True:
            if changed:
                try:
                    log = watcher.log()
                except InputError as exc:
                    if not waiting:
                        click.echo(f"flaketui: waiting: {exc}", err=True)
                    waiting = True
                else:
                    waiting = False
                    report_problems(log, start=shown)
                    shown = len(log.problems)
                    show(log, again)
                    again = True
            time.sleep(interval)
            changed = watcher.poll()
    except KeyboardInterrupt:
        sys.exit(EXIT_OK)


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--runs", nargs=2, default=None, metavar="NAME_A NAME_B",
              help="Compare these two runs inside LOGS (else LOGS are two files, one run each).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown"]),
              default="table", show_default=True)
@click.option("--tui", is_flag=True, help="Open the app on the comparison pane instead.")
@triage_option
@log_options
def compare(logs: tuple[str, ...], runs: tuple[str, str] | None, fmt: str, tui: bool,
            triage: str | None, fields: FieldMap) -> None:
    """Paired comparison of run B against run A: flips, sign test, mean difference."""
    from flaketui import report as out
    from flaketui.stats import compare_runs, task_stats

    if tui:
        open_comparison(logs, runs, triage, fields)
        return

    a, b = resolve_pair(logs, runs, fields)
    stats_a = task_stats(a[0].run_outcomes(a[1]), 1)
    stats_b = task_stats(b[0].run_outcomes(b[1]), 1)
    result = compare_runs(stats_a, stats_b)
    if fmt == "json":
        write_json({**out.compare_json(result), "errored_as": fields.errored_as})
    elif fmt == "csv":
        click.echo(out.compare_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(out.compare_markdown(result), nl=False)
    else:
        out.print_renderable(out.compare_table(result))


def open_comparison(logs: Sequence[str], runs: tuple[str, str] | None, triage: str | None,
                    fields: FieldMap) -> None:
    """``compare --tui``: the app, opened on the comparison pane of A and B."""
    from flaketui.loading import expand_paths

    if not runs and len(logs) != 2:
        raise click.UsageError("give two logs A and B (one run each), or --runs NAME_A NAME_B")
    check_triage(triage)
    try:
        expand_paths(logs)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import make_app

    app = make_app(list(logs), fields=fields, triage=triage, compare=runs or ())
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
        if runs[0] == runs[1]:
            fail(f"cannot compare run {runs[0]!r} with itself: give two different runs")
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
    if pair[0][1] == pair[1][1]:
        if pair[0][0].sources == pair[1][0].sources:
            fail(f"cannot compare run {pair[0][1]!r} with itself: A and B are the same logs")
        from flaketui.loading.runnames import distinct_names

        names = distinct_names(logs, pair[0][1])
        click.echo(f"flaketui: both runs are named {pair[0][1]!r}: compared as {names[0]!r} "
                   f"and {names[1]!r}", err=True)
        for (log, old), new in zip(pair, names, strict=True):
            log.runs[log.runs.index(old)] = new
        pair = [(pair[0][0], names[0]), (pair[1][0], names[1])]
    return pair[0], pair[1]


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
    from flaketui import report as out
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
            click.echo(f"{verdict} {r.run}: pass^{r.k} = {r.pass_hat_k:.3f}"
                       + (f" (floor {r.min_pass_hat_k:g})" if r.min_pass_hat_k is not None else "")
                       + (f", flakiness cap {r.max_flakiness:g}" if r.max_flakiness is not None else ""))
            for reason in r.reasons:
                click.echo(f"  - {reason}")
    sys.exit(EXIT_OK if all(r.passed for r in results) else EXIT_GATE_FAILED)


@main.group()
def triage() -> None:
    """Triage notes (cause labels, notes, reviewed marks) made in the app."""


@triage.command("export")
@click.argument("logs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown",
              show_default=True)
@click.option("--triage", "triage_path", default=None, metavar="PATH",
              help="The triage file (default: next to the first log, as the app uses).")
@click.option("--runs", nargs=2, default=None, metavar="NAME_A NAME_B",
              help="The comparison to report (default: the first two runs, and every pair "
                   "with notes).")
@click.option("-k", type=int, default=None, help="k for pass^k of flaky tasks (default: smallest n).")
@log_options
def triage_export(logs: tuple[str, ...], fmt: str, triage_path: str | None,
                  runs: tuple[str, str] | None, k: int | None, fields: FieldMap) -> None:
    """Write the review of LOGS as a report: per flip and per flaky task, figures, label, note."""
    from flaketui import review
    from flaketui.stats import compare_runs
    from flaketui.triage import TriageFileError, default_triage_path, load_entries

    check_k(k)
    log = load(logs, fields)
    path = Path(triage_path) if triage_path else default_triage_path(logs)
    try:
        entries = load_entries(path)
    except TriageFileError as exc:
        fail(f"triage file {exc}")
    for name in runs or ():
        if name not in log.runs:
            fail(f"no run named {name!r}; runs: {', '.join(log.runs)}")
    if not path.exists():
        click.echo(f"flaketui: no triage notes at {path} yet", err=True)
    kk, all_stats = run_stats(log, (), k)
    stats = {st.run: st for st in all_stats}
    pairs = review.comparison_pairs(log.runs, entries, runs)
    comparisons = [compare_runs(stats[a], stats[b]) for a, b in pairs]
    doc = review.triage_export(str(path), kk, comparisons, list(stats.values()), entries)
    if fmt == "json":
        write_json(doc)
    else:
        click.echo(review.triage_markdown(doc, comparisons), nl=False)
