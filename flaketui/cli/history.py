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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import (
    FiniteFloat,
    fail,
    flaky_cap_or_default,
    html_out,
    load,
    main,
    notify_all,
    opened,
    record_log,
    write_json,
)
from flaketui.cli.options import (
    cap_option,
    causes_option,
    flaky_cap_option,
    history_options,
    log_options,
    owners_option,
)
from flaketui.model import FieldMap
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions

SPARK = "▁▂▃▄▅▆▇█"


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
@causes_option("Also record each mixed task's (passed and failed) suggested source of flakiness and its first "
               "divergence step, from its traces (as report --causes; reads the mixed tasks' traces).")
@click.option("--notify", "notify_url", default=None, metavar="URL",
              help="Then post each transition not yet notified to this webhook, as history notify does.")
@click.option("--notify-format", "notify_fmt", type=click.Choice(["json", "slack"]), default="json",
              show_default=True, help="With --notify: the message body.")
@flaky_cap_option
@history_options
@log_options
def record(logs: tuple[str, ...], causes: bool, notify_url: str | None, notify_fmt: str, flaky_cap: float | None,
           history: str | None, wait: float, fields: FieldMap, load_options: LoadOptions) -> None:
    """Record each run of LOGS in the history (a run recorded before changes nothing); the
    transitions it finds (a task newly flaky, regressed, fixed) are the classes against --flaky-cap."""
    record_log(load(logs, fields, load_options), history, wait, causes=causes, flaky_cap=flaky_cap)
    if notify_url:
        notify_all(history, wait, notify_url, notify_fmt)


@history.command()
@cap_option("A task is fixed when the 95% upper bound of its failure rate, from its clean "
            "trials since its last flaky or failing run, is at most X (0.1: 29 trials).")
@owners_option("A CODEOWNERS-style file: PATTERN OWNER… lines, globs over task ids or groups, the last match wins.")
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
    doc = status_doc(data, cap, rules, state, owner, flaky_cap_or_default(flaky_cap))
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


TIMEOUT_MAX = 600.0
"""The longest a notifier waits to connect or for an answer (nan and inf refused with it: a
socket cannot take them, and a notifier must end)."""


@history.command()
@click.option("--webhook", "webhook", required=True, envvar="FLAKETUI_WEBHOOK", metavar="URL",
              help="Where to post (default $FLAKETUI_WEBHOOK: keeps a webhook's secret off the command line).")
@click.option("--format", "fmt", type=click.Choice(["json", "slack"]), default="json", show_default=True,
              help="slack: a body Slack's incoming webhooks take (blocks, escaped); json: one generic object.")
@owners_option("A CODEOWNERS-style file naming each task's owner in the message.")
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
@cap_option("The lifecycle's cap (as history status).")
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
        doc = trend_doc(make_trend(store, k, cap, last, list(task) or None, flaky_cap_or_default(flaky_cap)))
    if fmt == "json":
        write_json(doc)
    elif fmt == "html":
        from flaketui.output.html import PageInfo
        from flaketui.output.trend import write_trend_html

        with html_out(out) as write:
            write_trend_html(write, doc, PageInfo())
    else:
        from flaketui.output.trend import trend_lines

        click.echo("\n".join(trend_lines(doc)))


@history.command("issue-body")
@click.argument("task")
@owners_option("A CODEOWNERS-style file naming the owner.")
@cap_option()
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
        tl = task_timeline(store, task, cap, rules, flaky_cap_or_default(flaky_cap))
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
