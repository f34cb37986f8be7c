"""``flaketui history``: record runs into a history, and each task's lifecycle over them.

``record LOG…`` records each run of the logs (a run recorded before is left as it is);
``status`` gives each task's state (stable, failing, flaky, fixed, regressed, quarantined) with
its evidence and owner; ``quarantine TASK`` / ``unquarantine TASK`` set and lift a person's
quarantine. The history is ``--history URL``, else ``$FLAKETUI_HISTORY``, else SQLite in the
user data folder. Errors (an unreachable URL, a newer schema, a locked file) are one line,
exit 2, and leave the history as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import FiniteFloat, LoadProgress, fail, load, log_options, main, write_json
from flaketui.model import FieldMap, TrialLog
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.history.store import RunRecord, Store
    from flaketui.output.report import Causes

SPARK = "▁▂▃▄▅▆▇█"
DEFAULT_WAIT = 10.0
"""Seconds to wait for a busy history (``--wait``'s default)."""


def history_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--history URL`` and ``--wait SECONDS``, which every history command takes."""
    func = click.option("--wait", "wait", type=click.FloatRange(min=0), default=DEFAULT_WAIT, show_default=True,
                        metavar="SECONDS",
                        help="Seconds to wait for a history another flaketui is writing "
                             "(or for a server to answer).")(func)
    return click.option("--history", "history", default=None, metavar="URL",
                        help="The history: sqlite:///PATH or postgresql://USER@HOST/DB (default "
                             "$FLAKETUI_HISTORY, else history.sqlite in the user data folder).")(func)


@contextmanager
def opened(history: str | None, wait: float) -> Iterator[Store]:
    """The history, open and migrated; its errors (opening it, or in the ``with`` body) as one
    line and exit 2."""
    from flaketui.history import HistoryError, open_store

    try:
        with open_store(history, timeout=wait) as store:
            yield store
    except HistoryError as exc:
        fail(str(exc))


def _who(who: str | None) -> str:
    if who:
        return who
    import getpass

    try:
        return os.environ.get("FLAKETUI_USER") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@main.group()
def history() -> None:
    """A history of runs, and each task's lifecycle over them (stable, flaky, fixed, …).

    In CI, every job records into one history (a PostgreSQL server; recorders can run at once)
    and reads the quarantines from it:

    \b
      export FLAKETUI_HISTORY=postgresql://ci@db.example/flaketui   # from the CI's secrets
      flaketui report runs/ --record                # the report; each run recorded once
      flaketui quarantine --from-history runs/ > skip.txt   # the quarantined tasks to skip
      flaketui history status --state regressed --state flaky --format json > history.json
      flaketui history quarantine TASK --why "times out on the sandbox" --ticket URL
    """


@history.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--causes", is_flag=True, default=False,
              help="Also record each flaky task's suggested source of flakiness and its first "
                   "divergence step, from its traces (as report --causes; reads the flaky tasks' traces).")
@history_options
@log_options
def record(logs: tuple[str, ...], causes: bool, history: str | None, wait: float, fields: FieldMap) -> None:
    """Record each run of LOGS in the history (a run recorded before changes nothing)."""
    record_log(load(logs, fields), history, wait, causes=causes)


def record_log(log: TrialLog | Sequence[TrialLog], history: str | None, wait: float = DEFAULT_WAIT,
               causes: bool = False, err: bool = False) -> None:
    """Record each run of ``log`` (or of each of several logs, in one transaction) in the
    history (as ``history record``: a run recorded before is left as it is), one line a run
    ("recorded: RUN (N tasks, run #K)" or "already recorded: …") on stdout, or stderr with
    ``err``; a history that cannot be used: one line, exit 2. Imports SQLAlchemy only when called."""
    records = []
    for one in [log] if isinstance(log, TrialLog) else log:
        records += run_records(one, causes)
    with opened(history, wait) as store:
        done = store.record(records)
    for rec in done:
        what = "recorded" if rec.new else "already recorded"
        click.echo(f"{what}: {visible(rec.name)} ({rec.tasks} tasks, run #{rec.run_id})", err=err)


def run_records(log: TrialLog, causes: bool = False) -> list[RunRecord]:
    """A :class:`~flaketui.history.RunRecord` for each run of ``log`` (with ``causes``, each
    flaky task's suggested source and first divergence step, read from its traces)."""
    from flaketui.history.recording import run_records as records_of

    return records_of(log, find_causes(log, log.runs) if causes else None)


# CauseProgress and find_causes live here, not in flaketui.cli.report (which re-exports them):
# report imports this module for --record, and history record --causes needs them (no cycle).
class CauseProgress(LoadProgress):
    """The load's progress bar on stderr (same rules: after a second, on a terminal, not for piped
    JSON), counting the flaky tasks whose traces ``--causes`` reads instead of bytes."""

    def columns(self) -> tuple[str, Any]:
        """The bar counts tasks (``3/10``), not bytes."""
        from rich.progress import MofNCompleteColumn

        return "Reading traces", MofNCompleteColumn()


def find_causes(log: TrialLog, runs: Sequence[str], workers: int = 1, grades_field: str | None = None,
                rescoring: Mapping[str, Any] | None = None) -> Causes:
    """Each run's flaky tasks' suggested sources of flakiness (reads only their traces);
    ``grades_field``: where each trial's grades are; ``rescoring``: run → its
    :class:`~flaketui.traces.causes.Rescoring` (``--rescored``)."""
    import functools

    from flaketui.loading import read_trial
    from flaketui.traces.causes import flaky_rows, suggest_causes

    todo = {r: flaky_rows(log.run_outcomes(r)) for r in runs}
    total = sum(len(rows) for rows in todo.values())
    bar = CauseProgress()
    done = 0
    out: dict[str, Any] = {}
    try:
        for r, rows in todo.items():
            out[r] = suggest_causes(functools.partial(read_trial, log), rows, workers=workers,
                                    progress=lambda n, _total, before=done: bar.update(before + n, total),
                                    grades_field=grades_field,
                                    rescored=rescoring[r].grades if rescoring and r in rescoring else None)
            done += len(rows)
    finally:
        bar.close()
    return out


def record_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--record`` and ``--history URL`` for a command that loads runs (``report``, ``compare``)."""
    func = click.option("--history", "history", default=None, metavar="URL",
                        help="With --record: the history (as flaketui history: default "
                             "$FLAKETUI_HISTORY, else history.sqlite in the user data folder).")(func)
    return click.option("--record", "record", is_flag=True, default=False,
                        help="After the output, record every run loaded in the history (as flaketui "
                             "history record; a run recorded before is left as it is), one line a run on "
                             "stderr. A history that cannot be used: one line on stderr and exit 2, the "
                             "output already written.")(func)


def active_quarantines(history: str | None, wait: float = DEFAULT_WAIT) -> dict[str, dict[str, Any]]:
    """The history's active quarantines (set with ``history quarantine``, not lifted), by task:
    who, at, why, ticket, in the order they were set."""
    with opened(history, wait) as store:
        return store.data(recent=0).quarantines


@history.command()
@click.option("--cap", type=FiniteFloat(), default=0.1, show_default=True, metavar="X",
              help="A task is fixed when the 95% upper bound of its failure rate, from its clean "
                   "trials since its last flaky or failing run, is at most X (0.1: 29 trials).")
@click.option("--owners", "owners", default=None, metavar="FILE",
              help="A CODEOWNERS-style file: PATTERN OWNER… lines, globs over task ids or groups, "
                   "the last match wins.")
@click.option("--state", "state", multiple=True,
              type=click.Choice(["stable", "failing", "flaky", "fixed", "regressed", "quarantined"]),
              help="Only tasks in this state (repeatable).")
@click.option("--owner", "owner", default=None, metavar="NAME", help="Only this owner's tasks.")
@click.option("--last", "last", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="p̂ of each task in the last N runs.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@history_options
def status(cap: float, owners: str | None, state: tuple[str, ...], owner: str | None, last: int,
           fmt: str, history: str | None, wait: float) -> None:
    """Each task's lifecycle state over the recorded runs, with its evidence and owner."""
    from flaketui.history.owners import OwnersError, read_owners
    from flaketui.history.status import status_doc

    if not 0 < cap < 1:
        raise click.BadParameter(f"{cap:g} is not a failure rate between 0 and 1", param_hint="--cap")
    try:
        rules = read_owners(owners) if owners else []
    except OwnersError as exc:
        fail(str(exc))
    with opened(history, wait) as store:
        data = store.data(recent=last)
    doc = status_doc(data, cap, rules, state, owner)
    if fmt == "json":
        write_json(doc)
    else:
        click.echo("\n".join(table_lines(doc)))


def table_lines(doc: dict[str, Any]) -> list[str]:
    """``history status`` as a plain table: one line a task, p̂ in recent runs as a sparkline."""
    head = ("TASK", "STATE", "OWNER", "FIRST FLAKY", "LAST FLAKY", "CLEAN", "RUNS", "P̂ (recent)")
    rows = []
    for t in doc["tasks"]:
        st = t["state"]
        if t["quarantine"] is not None and t["quarantine"]["ready_to_lift"]:
            st += ": ready to lift"
        elif t["trials_to_fixed"]:
            st += f": {t['trials_to_fixed']} clean trials to fixed"
        spark = "".join("·" if p is None else SPARK[min(int(p * len(SPARK)), len(SPARK) - 1)] for p in t["p_hat"])
        rows.append((visible(t["task"]), st, visible(" ".join(t["owner"])) or "-",
                     visible(t["first_seen_flaky"] or "-"), visible(t["last_seen_flaky"] or "-"),
                     str(t["clean_trials_since"]), str(t["runs_seen"]), spark))
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(head)]
    fmt_row = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    counts = ", ".join(f"{n} {s}" for s, n in doc["counts"].items() if n)
    lines = [f"{doc['runs']} runs recorded; {len(doc['tasks'])} tasks shown ({counts or 'none'}); "
             f"fixed at cap {doc['cap']:g}: {doc['trials_needed']} clean trials", fmt_row(head)]
    lines += [fmt_row(r) for r in rows]
    for group in doc.get("by_owner", []):
        owned = ", ".join(f"{n} {s}" for s, n in group["counts"].items())
        who = visible(group["owner"]) if group["owner"] is not None else "(no owner)"
        lines.append(f"owner {who}: {group['tasks']} tasks ({owned})")
    for t in doc["tasks"]:
        q = t["quarantine"]
        if q is not None:
            ticket = f" {q['ticket']}" if q["ticket"] else ""
            lines.append(visible(f"quarantined: {t['task']} by {q['who']} at {q['at']}: {q['why']}{ticket}"))
    return lines


@history.command("quarantine")
@click.argument("task")
@click.option("--why", required=True, help="Why the task is quarantined.")
@click.option("--ticket", default=None, metavar="URL", help="The ticket tracking the fix.")
@click.option("--who", default=None, help="Who quarantines it (default $FLAKETUI_USER, else the login name).")
@history_options
def quarantine_task(task: str, why: str, ticket: str | None, who: str | None, history: str | None,
                    wait: float) -> None:
    """Quarantine TASK: its state is reported as quarantined until unquarantine."""
    if not why.strip():
        raise click.BadParameter("say why the task is quarantined", param_hint="--why")
    with opened(history, wait) as store:
        store.quarantine(task, _who(who), why, ticket)
    click.echo(f"quarantined: {visible(task)}")


@history.command("unquarantine")
@click.argument("task")
@click.option("--who", default=None, help="Who lifts it (default $FLAKETUI_USER, else the login name).")
@history_options
def unquarantine_task(task: str, who: str | None, history: str | None, wait: float) -> None:
    """Lift TASK's quarantine."""
    with opened(history, wait) as store:
        store.unquarantine(task, _who(who))
    click.echo(f"unquarantined: {visible(task)}")
