"""The click options two or more commands take, each declared once (help text and default).

A command module imports its shared options from here, never from another command: the
commands stand apart (the import contract "Commands stand apart" in ``pyproject.toml``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from flaketui.cli.common import DEFAULT_TOP, DEFAULT_WAIT, MAX_SECONDS, NOTIFY, OPEN_FRACTION, SECONDS, FiniteFloat
from flaketui.model import ERRORED_AS, FieldMap


def log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options every command that reads logs takes: field names, the pass threshold, the
    cache and where to parse (``--scheduler``: a Dask cluster). The command receives them as
    ``fields`` (a :class:`~flaketui.model.FieldMap`) and ``load_options`` (a
    :class:`~flaketui.loading.options.LoadOptions`, which it passes to every load: no module
    global is set)."""

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
    @flag_option("--runs-as-trials", "Read the runs given (one agent's repeated runs) as trials of one run.")
    @click.option("--planned-trials", "planned_trials", type=click.IntRange(min=1), default=None, metavar="N",
                  help="Read only the first N trials of each task (in trial order): the design fixed before "
                       "any outcome was seen, so trials added after looking (plan --budget) do not bias p̂ "
                       "and pass^k.")
    @click.option("--problems", "all_problems", is_flag=True, default=False,
                  help="Name every problem met while loading, one line each (default: one line per kind).")
    @flag_option("--no-cache", "Parse the logs again instead of reading the index cache.")
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
        timeout = kwargs.pop("timeout")
        if timeout <= 0:
            raise click.BadParameter(f"{timeout:g} is not a number of seconds above 0", param_hint="--timeout")
        from flaketui.loading.distributed import scheduler_address
        from flaketui.loading.options import LoadOptions

        kwargs["load_options"] = LoadOptions(
            sources_roots=tuple(kwargs.pop("sources_roots")), timeout=timeout, max_bytes=kwargs.pop("max_bytes"),
            use_cache=not kwargs.pop("no_cache"), scheduler=scheduler_address(kwargs.pop("scheduler")),
            show_all_problems=kwargs.pop("all_problems"))
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


def triage_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--triage PATH``: where the app keeps triage notes."""
    return click.option(
        "--triage", "triage", default=None, metavar="PATH",
        help="Triage notes file (default: LOG.triage.json beside the first log, or "
             "DIR/flaketui.triage.json when it is a folder).")(func)


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


def alpha_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--alpha``: the level of the per-task tests (after Holm), the verdict and ``--baseline``."""
    return click.option("--alpha", type=FiniteFloat(1e-9, 0.5), default=0.05, show_default=True,
                        help="Significance level: a task is flipped when its Holm-adjusted p is below it.")(func)


def baseline_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--baseline RUN``: every other run against RUN, Holm across the comparisons."""
    return click.option("--baseline", default=None, metavar="RUN",
                        help="Compare every other run in LOGS against RUN (the primary test's "
                             "p-values Holm-adjusted across the comparisons).")(func)


def config_field_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--config-field NAME`` (repeatable): configuration fields read from each run's first trial."""
    return click.option("--config-field", "config_field", multiple=True, metavar="NAME",
                        help="A configuration field of the trials (model, temperature, seed, commit…; "
                             "dotted names reach inside objects). Repeatable. Runs differing in more "
                             "than one are flagged as confounded.")(func)


def out_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--out FILE``: where ``--format html`` writes its page (default stdout; ``-`` is stdout)."""
    return click.option("--out", "out", default=None, metavar="FILE",
                        help="With --format html: write the page to FILE (atomically) instead of stdout.")(func)


def divergence_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--divergence actions|all``: what counts as the traces' first divergence."""
    return click.option(
        "--divergence", type=click.Choice(["actions", "all"]), default=None,
        help="What counts as a divergence: the agent's actions (tool calls and final answer) or "
             "every step (default: actions when a trace has a user role besides the agent).")(func)


def history_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--history URL`` and ``--wait SECONDS``, which every history command takes."""
    func = click.option("--wait", "wait", type=SECONDS, default=DEFAULT_WAIT, show_default=True,
                        metavar="SECONDS",
                        help="Seconds to wait for a history another flaketui is writing "
                             "(or for a server to answer).")(func)
    return history_option("The history: sqlite:///PATH or postgresql://USER@HOST/DB (default "
                          "$FLAKETUI_HISTORY, else history.sqlite in the user data folder).")(func)


def history_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--history URL``: which history a command reads or records into, ``text`` saying what for."""
    return click.option("--history", "history", default=None, metavar="URL", help=text)


def _kept(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep ``--record`` / ``--notify`` / ``--notify-format`` for :func:`record_log`; ``--notify``
    without ``--record`` is a usage error (checked by whichever of the two click processes last)."""
    kept = ctx.meta.setdefault(NOTIFY, {})
    kept[param.name] = value
    if "record" in kept and "notify" in kept and kept["notify"] and not kept["record"]:
        raise click.UsageError("--notify goes with --record")
    return value


def record_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--record``, ``--history URL`` and ``--notify URL`` for a command that loads runs
    (``report``, ``compare``)."""
    func = click.option("--notify-format", "notify_format", type=click.Choice(["json", "slack"]), default="json",
                        show_default=True, expose_value=False, callback=_kept,
                        help="With --notify: the message body (as flaketui history notify).")(func)
    func = click.option("--notify", "notify", default=None, metavar="URL", expose_value=False, callback=_kept,
                        help="With --record: then post each transition not yet notified (a task newly flaky, "
                             "regressed, fixed; a quarantine ended) to this webhook, as flaketui history "
                             "notify does.")(func)
    func = history_option("With --record: the history (as flaketui history: default "
                          "$FLAKETUI_HISTORY, else history.sqlite in the user data folder).")(func)
    return click.option("--record", "record", is_flag=True, default=False, callback=_kept,
                        help="After the output, record every run loaded in the history (as flaketui "
                             "history record; a run recorded before is left as it is), one line a run on "
                             "stderr. A history that cannot be used: one line on stderr and exit 2, the "
                             "output already written.")(func)


# --- options several commands take, each command saying in its own words what for ----------


def k_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-k K``: k for pass@k and pass^k (None: the trials most tasks have)."""
    return click.option("-k", type=int, default=None, help=text)


def run_option(text: str = "Only this run (repeatable).") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--run NAME`` (repeatable): only these runs of the logs."""
    return click.option("--run", "run", multiple=True, help=text)


def runs_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--runs NAME_A NAME_B``: the two runs of the logs a command sets side by side."""
    return click.option("--runs", nargs=2, default=None, metavar="NAME_A NAME_B", help=text)


def ignore_key_option(text: str = "Another step key to ignore when comparing traces."
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--ignore-key KEY`` (repeatable): a step key the trace comparisons leave out."""
    return click.option("--ignore-key", multiple=True, help=text)


def flag_option(flag: str, text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An on/off flag, off unless given (``--record`` gives the parameter ``record``): the one way a
    command declares a plain flag, so that every flag's default and help read alike."""
    return click.option(flag, is_flag=True, default=False, help=text)


def watch_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--watch``: follow logs still being written."""
    return flag_option("--watch", text)


def causes_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--causes``: each flaky task's suggested source of flakiness, read from its traces."""
    return flag_option("--causes", text)


def owners_option(text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--owners FILE``: a CODEOWNERS-style owners file."""
    return click.option("--owners", "owners", default=None, metavar="FILE", help=text)


def cap_option(text: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--cap X``: the history lifecycle's cap on a fixed task's failure rate."""
    return click.option("--cap", type=FiniteFloat(), default=0.1, show_default=True, metavar="X", help=text)
