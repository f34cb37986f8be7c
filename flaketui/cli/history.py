"""``flaketui history``: record runs into a history, and each task's lifecycle over them.

``record LOG…`` records each run of the logs (a run recorded before is left as it is);
``status`` gives each task's state (stable, failing, flaky, fixed, regressed, quarantined) with
its evidence and owner; ``quarantine TASK`` / ``unquarantine TASK`` set and lift a person's
quarantine (``--until`` / ``--until-clean``: one that ends by itself); ``trend`` the suite over
the recorded runs; ``notify`` posts each lifecycle transition to a webhook once; ``issue-body
TASK`` prints a Markdown issue. The history is ``--history URL``, else ``$FLAKETUI_HISTORY``, else SQLite in the
user data folder. Errors (an unreachable URL, a newer schema, a locked file) are one line,
exit 2, and leave the history as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import (
    SECONDS,
    FiniteFloat,
    LoadProgress,
    fail,
    flaky_cap_option,
    load,
    log_options,
    main,
    write_json,
)
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
    func = click.option("--wait", "wait", type=SECONDS, default=DEFAULT_WAIT, show_default=True,
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
      flaketui history quarantine TASK --why "times out on the sandbox" --ticket URL --until-clean 3
      flaketui history notify --format slack        # $FLAKETUI_WEBHOOK: each change posted once
      flaketui history trend --format html --out trend.html
    """


@history.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--causes", is_flag=True, default=False,
              help="Also record each flaky task's suggested source of flakiness and its first "
                   "divergence step, from its traces (as report --causes; reads the flaky tasks' traces).")
@click.option("--notify", "notify_url", default=None, metavar="URL",
              help="Then post each transition not yet notified to this webhook, as history notify does.")
@click.option("--notify-format", "notify_fmt", type=click.Choice(["json", "slack"]), default="json",
              show_default=True, help="With --notify: the message body.")
@flaky_cap_option
@history_options
@log_options
def record(logs: tuple[str, ...], causes: bool, notify_url: str | None, notify_fmt: str, flaky_cap: float | None,
           history: str | None, wait: float, fields: FieldMap) -> None:
    """Record each run of LOGS in the history (a run recorded before changes nothing); the
    transitions it finds (a task newly flaky, regressed, fixed) are the classes against --flaky-cap."""
    record_log(load(logs, fields), history, wait, causes=causes, flaky_cap=flaky_cap)
    if notify_url:
        notify_all(history, wait, notify_url, notify_fmt)


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
        done = store.record(records, flaky_cap=_flaky_cap(flaky_cap))
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
    """:func:`flaketui.session.jobs.find_causes` with the load's progress bar counting the tasks read."""
    from flaketui.session import jobs

    bar = CauseProgress()
    try:
        return jobs.find_causes(log, runs, workers, grades_field, rescoring, progress=bar.update)
    finally:
        bar.close()


NOTIFY = "flaketui.notify"
"""Where ``--notify`` / ``--notify-format`` keep their values in the click context's ``meta``
(the commands that take :func:`record_options` do not see them: :func:`record_log` does)."""


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
    func = click.option("--history", "history", default=None, metavar="URL",
                        help="With --record: the history (as flaketui history: default "
                             "$FLAKETUI_HISTORY, else history.sqlite in the user data folder).")(func)
    return click.option("--record", "record", is_flag=True, default=False, callback=_kept,
                        help="After the output, record every run loaded in the history (as flaketui "
                             "history record; a run recorded before is left as it is), one line a run on "
                             "stderr. A history that cannot be used: one line on stderr and exit 2, the "
                             "output already written.")(func)


def _flaky_cap(flaky_cap: float | None) -> float:
    """``--flaky-cap`` as given, or the report's default."""
    from flaketui.stats.classes import DEFAULT_FLAKY_CAP

    return DEFAULT_FLAKY_CAP if flaky_cap is None else flaky_cap


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
              type=click.Choice(["stable", "failing", "flaky", "undetermined", "fixed", "regressed", "quarantined"]),
              help="Only tasks in this state (repeatable).")
@click.option("--owner", "owner", default=None, metavar="NAME", help="Only this owner's tasks.")
@click.option("--last", "last", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="p̂ of each task in the last N runs.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@flaky_cap_option
@history_options
def status(cap: float, owners: str | None, state: tuple[str, ...], owner: str | None, last: int,
           fmt: str, flaky_cap: float | None, history: str | None, wait: float) -> None:
    """Each task's lifecycle state over the recorded runs, with its evidence and owner: flaky
    only when its trials over the runs show it against --flaky-cap (as report's class),
    undetermined when they cannot yet tell."""
    from flaketui.history.owners import OwnersError, read_owners
    from flaketui.history.status import status_doc

    if not 0 < cap < 1:
        raise click.BadParameter(f"{cap:g} is not a failure rate between 0 and 1", param_hint="--cap")
    try:
        rules = read_owners(owners) if owners else []
    except OwnersError as exc:
        fail(str(exc))
    data = read_fast(history, last, wait)
    if data is None:
        with opened(history, wait) as store:
            data = store.data(recent=last)
    doc = status_doc(data, cap, rules, state, owner, _flaky_cap(flaky_cap))
    if fmt == "json":
        write_json(doc)
    else:
        click.echo("\n".join(table_lines(doc)))


def read_fast(history: str | None, recent: int, wait: float) -> Any:
    """``history status`` 's data from a SQLite history already at the newest schema, through
    stdlib sqlite3, read-only, without importing SQLAlchemy or Alembic
    (:func:`flaketui.history.snapshot.read_sqlite`); None otherwise (the full store then opens,
    migrates or says what is wrong)."""
    from flaketui.history.snapshot import default_url, read_sqlite

    return read_sqlite(history or default_url(), recent, wait)


def table_lines(doc: dict[str, Any]) -> list[str]:
    """``history status`` as a plain table: one line a task, p̂ in recent runs as a sparkline."""
    head = ("TASK", "STATE", "OWNER", "FIRST MIXED", "LAST MIXED", "CLEAN", "RUNS", "P̂ (recent)")
    rows = []
    for t in doc["tasks"]:
        st = t["state"]
        if t["quarantine"] is not None and t["quarantine"]["ready_to_lift"]:
            st += ": ready to lift"
        elif t["state"] == "undetermined" and t.get("trials_to_decide"):
            st += f": {t['trials_to_decide']} trials to decide"
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
             f"fixed at cap {doc['cap']:g}: {doc['trials_needed']} clean trials; flaky against flakiness cap "
             f"{doc['flaky_cap']:g}", fmt_row(head)]
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
    for e in doc.get("ending", []):
        lines.append(visible(f"ends by itself: {e['task']}: {e['ends']}"))
    return lines


@history.command("quarantine")
@click.argument("task")
@click.option("--why", required=True, help="Why the task is quarantined.")
@click.option("--ticket", default=None, metavar="URL", help="The ticket tracking the fix.")
@click.option("--who", default=None, help="Who quarantines it (default $FLAKETUI_USER, else the login name).")
@click.option("--until", "until", default=None, metavar="DATE",
              help="End the quarantine by itself at DATE (2026-12-31, or an ISO time; UTC unless it says).")
@click.option("--until-clean", "until_clean", type=click.IntRange(min=1), default=None, metavar="N",
              help="End it by itself once N runs recorded after now are clean in a row.")
@history_options
def quarantine_task(task: str, why: str, ticket: str | None, who: str | None, until: str | None,
                    until_clean: int | None, history: str | None, wait: float) -> None:
    """Quarantine TASK: its state is reported as quarantined until unquarantine (or, with
    --until / --until-clean, until it ends by itself, with its evidence, and the gate counts it again)."""
    if not why.strip():
        raise click.BadParameter("say why the task is quarantined", param_hint="--why")
    when = parse_until(until) if until is not None else None
    with opened(history, wait) as store:
        store.quarantine(task, _who(who), why, ticket, until=when, until_clean=until_clean)
    ends = []
    if when is not None:
        ends.append(f"at {when.isoformat(timespec='seconds')}")
    if until_clean is not None:
        ends.append(f"after {until_clean} clean run{'s' if until_clean != 1 else ''}")
    click.echo(f"quarantined: {visible(task)}" + (f" (ends by itself {' or '.join(ends)})" if ends else ""))


def parse_until(text: str) -> Any:
    """``--until`` 's DATE as an aware datetime (a date alone: its midnight, UTC), to come."""
    import datetime as dt

    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a date (2026-12-31) or an ISO time",
                                 param_hint="--until") from None
    when = when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)
    if when <= dt.datetime.now(dt.timezone.utc):
        raise click.BadParameter(f"{text!r} has passed: a quarantine ends by itself at a time to come",
                                 param_hint="--until")
    return when


@history.command("unquarantine")
@click.argument("task")
@click.option("--who", default=None, help="Who lifts it (default $FLAKETUI_USER, else the login name).")
@history_options
def unquarantine_task(task: str, who: str | None, history: str | None, wait: float) -> None:
    """Lift TASK's quarantine."""
    with opened(history, wait) as store:
        store.unquarantine(task, _who(who))
    click.echo(f"unquarantined: {visible(task)}")


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


TIMEOUT_MAX = 600.0
"""The longest a notifier waits to connect or for an answer (nan and inf refused with it: a
socket cannot take them, and a notifier must end)."""


@history.command()
@click.option("--webhook", "webhook", required=True, envvar="FLAKETUI_WEBHOOK", metavar="URL",
              help="Where to post (default $FLAKETUI_WEBHOOK: keeps a webhook's secret off the command line).")
@click.option("--format", "fmt", type=click.Choice(["json", "slack"]), default="json", show_default=True,
              help="slack: a body Slack's incoming webhooks take (blocks, escaped); json: one generic object.")
@click.option("--owners", "owners", default=None, metavar="FILE",
              help="A CODEOWNERS-style file naming each task's owner in the message.")
@click.option("--connect-timeout", type=FiniteFloat(0.01, TIMEOUT_MAX), default=5.0, show_default=True,
              metavar="SECONDS", help=f"At most {TIMEOUT_MAX:g}.")
@click.option("--read-timeout", type=FiniteFloat(0.01, TIMEOUT_MAX), default=10.0, show_default=True, metavar="SECONDS",
              help=f"At most {TIMEOUT_MAX:g}.")
@click.option("--tries", type=click.IntRange(min=1, max=10), default=3, show_default=True,
              help="Tries per message, backing off 0.5 s, 1 s, … between them.")
@history_options
def notify(webhook: str, fmt: str, owners: str | None, connect_timeout: float, read_timeout: float, tries: int,
           history: str | None, wait: float) -> None:
    """Post one message per lifecycle transition not notified yet (a task newly flaky,
    regressed, fixed; a quarantine ended), each once: a failed post is kept for the next time."""
    notify_all(history, wait, webhook, fmt, owners, connect_timeout, read_timeout, tries)


@history.command()
@click.option("-k", "k", type=click.IntRange(min=1), default=None,
              help="k for pass^k (default: the trials most recorded results have).")
@click.option("--cap", type=FiniteFloat(), default=0.1, show_default=True, metavar="X",
              help="The lifecycle's cap (as history status).")
@click.option("--last", "last", type=click.IntRange(min=0), default=30, show_default=True, metavar="N",
              help="The last N recorded runs (0: every one).")
@click.option("--task", "task", multiple=True, help="Only these tasks' p̂ (repeatable; default every task).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "html"]), default="table",
              show_default=True)
@click.option("--out", "out", default=None, metavar="FILE", help="With --format html: write the page here.")
@flaky_cap_option
@history_options
def trend(k: int | None, cap: float, last: int, task: tuple[str, ...], fmt: str, out: str | None,
          flaky_cap: float | None, history: str | None, wait: float) -> None:
    """The suite over the recorded runs: pass@1 and pass^k with intervals per run, tasks flaky /
    undetermined (the report's classes of that run, against --flaky-cap) / quarantined, each task's p̂
    per run, and where tasks turned flaky, regressed or were fixed."""
    from flaketui.history.trend import trend as make_trend
    from flaketui.history.trend import trend_doc

    if not 0 < cap < 1:
        raise click.BadParameter(f"{cap:g} is not a failure rate between 0 and 1", param_hint="--cap")
    with opened(history, wait) as store:
        doc = trend_doc(make_trend(store, k, cap, last, list(task) or None, _flaky_cap(flaky_cap)))
    if fmt == "json":
        write_json(doc)
    elif fmt == "html":
        from flaketui.cli.diff import html_out
        from flaketui.output.html import PageInfo
        from flaketui.output.trend import write_trend_html

        with html_out(out) as write:
            write_trend_html(write, doc, PageInfo())
    else:
        from flaketui.output.trend import trend_lines

        click.echo("\n".join(trend_lines(doc)))


@history.command("issue-body")
@click.argument("task")
@click.option("--owners", "owners", default=None, metavar="FILE", help="A CODEOWNERS-style file naming the owner.")
@click.option("--cap", type=FiniteFloat(), default=0.1, show_default=True, metavar="X")
@flaky_cap_option
@click.option("--log", "logs", multiple=True, metavar="LOG",
              help="The latest flaky or failing run's log (repeatable): its traces give the first divergence "
                   "and suggested source (else those recorded with history record --causes).")
@history_options
def issue_body(task: str, owners: str | None, cap: float, flaky_cap: float | None, logs: tuple[str, ...],
               history: str | None, wait: float) -> None:
    """A Markdown issue for TASK (state, owner, evidence, its latest flaky run's first
    divergence and suggested source, the commands to reproduce), to pipe into gh issue create."""
    from flaketui.history.issue import issue_markdown
    from flaketui.history.owners import OwnersError, read_owners
    from flaketui.history.status import task_timeline

    try:
        rules = read_owners(owners) if owners else []
    except OwnersError as exc:
        fail(str(exc))
    with opened(history, wait) as store:
        tl = task_timeline(store, task, cap, rules, _flaky_cap(flaky_cap))
        if not tl.runs:
            fail(f"no recorded run has task {visible(task)!r}")
        latest = store.latest_bad(task)
    if logs and latest is not None:
        latest = {**latest, **divergence_from_log(logs, latest["run"], task)}
    click.echo(issue_markdown(tl, latest), nl=False)


def divergence_from_log(logs: Sequence[str], run: str, task: str) -> dict[str, Any]:
    """``task`` 's first divergence, suggested source and evidence line in ``run`` of ``logs``,
    read from its traces (``log``: the log named, for the commands to reproduce; ``log_note``:
    why nothing was found)."""
    import functools

    from flaketui.history.recording import divergence_step
    from flaketui.loading import read_trial
    from flaketui.traces.causes import flaky_rows, suggest_causes

    log = load(logs, FieldMap())
    found: dict[str, Any] = {"log": list(logs)}
    if run not in log.runs:
        return {**found, "log_note": f"the log has no run {run!r}"}
    rows = flaky_rows(log.run_outcomes(run))
    if task not in rows:
        return {**found, "log_note": f"task {task!r} is not flaky in run {run!r} of the log"}
    got = suggest_causes(functools.partial(read_trial, log), {task: rows[task]}).get(task)
    if got is None:
        return {**found, "log_note": "no suggestion from the traces"}
    ev = got.evidence
    return {**found, "suggested_source": got.cause, "first_divergence": divergence_step(ev),
            "divergence_evidence": None if ev is None else ev.text()}
