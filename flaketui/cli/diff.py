"""``flaketui diff LOG… --task T``: two trials' traces compared, for scripts and bug reports.

The pair: with ``--trials I J``, trial I of run A beside trial J of run B; else,
with two runs (``--runs A B``, or the first two runs loaded), the trials of A and B
sharing the longest prefix (a passing A beside a failing B when there are such,
else a failing A beside a passing B, else any two); with one run, a passing and a
failing trial sharing the longest prefix, as the app's trace screen picks them.
The comparison is :func:`flaketui.traces.diff_traces`: the first divergence
(1-based steps in each trace), every differing field with its two values, the rows
around it. Text and Markdown pass log strings through :func:`flaketui.sanitize.visible`;
JSON is the log's own values.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import FiniteFloat, fail, load, log_options, main, write_json
from flaketui.cli.tui import divergence_option
from flaketui.model import ERRORED, PASS, FieldMap, InputError, Trial, TrialLog
from flaketui.sanitize import markdown_text, visible

if TYPE_CHECKING:  # the trace modules load when a diff runs (not for every command's start)
    from flaketui.output.html import PageInfo, TracePair
    from flaketui.traces import Normaliser, TraceDiff


@dataclass(frozen=True)
class Pair:
    """The two trials compared."""

    a: Trial
    b: Trial


def _trials(log: TrialLog, run: str, task: str) -> list[Trial]:
    from flaketui.loading import read_trial

    outcomes = log.run_outcomes(run)
    if task not in outcomes.tasks:
        fail(f"run {visible(run)!r} has no task {visible(task)!r}")
    from flaketui.loading.formats.parquet_checks import SourceRefused

    try:
        return [read_trial(log, r) for r in outcomes.task_rows(outcomes.index(task)).tolist()]
    except (SourceRefused, InputError) as exc:  # a trial table's source it will not follow: one line
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read the trials of {visible(task)!r}: {exc.strerror or exc}")
    return []  # not reached: fail exits


def _by_number(trials: Sequence[Trial], number: int, run: str) -> Trial:
    for t in trials:
        if t.trial == number:
            return t
    have = ", ".join(str(t.trial) for t in trials[:20])
    fail(f"run {visible(run)!r} has no trial {number} of this task (trials: {have})")
    raise AssertionError  # fail() exits


def _best(a: Sequence[Trial], b: Sequence[Trial], norm: Normaliser, mode: str | None) -> Pair | None:
    """The pair of ``a`` × ``b`` sharing the longest prefix (of actions, or of steps)."""
    a = [t for t in a if t.trace is not None]
    b = [t for t in b if t.trace is not None]
    if not a or not b:
        return None
    from flaketui.traces.task_view import pair_across

    best = pair_across(a, b, True, norm, mode)
    assert best is not None
    return Pair(a[best[0]], b[best[1]])


def choose_pair(log: TrialLog, task: str, runs: tuple[str, str] | None, trials: tuple[int, int] | None,
                norm: Normaliser, mode: str | None) -> Pair:
    """The two trials to compare (see the module's docstring); exits 2 naming what is missing."""
    for name in runs or ():
        if name not in log.runs:
            fail(f"no run named {visible(name)!r}; runs: {visible(', '.join(log.runs))}")
    if runs is None and len(log.runs) >= 2:
        runs = (log.runs[0], log.runs[1])
    if runs is None:
        run = log.runs[0]
        found = [t for t in _trials(log, run, task) if t.outcome != ERRORED]
        if trials is not None:
            return Pair(_by_number(found, trials[0], run), _by_number(found, trials[1], run))
        passing = [t for t in found if t.outcome == PASS]
        failing = [t for t in found if t.outcome != PASS]
        pair = _best(passing, failing, norm, mode)
        if pair is None:
            if not any(t.trace is not None for t in found):
                fail(f"task {visible(task)!r} has no trial with a trace in run {visible(run)!r}: "
                     f"{_no_trace(log, run)}")
            kinds = "passing" if not [t for t in passing if t.trace is not None] else "failing"
            fail(f"task {visible(task)!r} has no {kinds} trial with a trace in run {visible(run)!r}; "
                 "name two with --trials I J")
        assert pair is not None
        return pair
    side_a = [t for t in _trials(log, runs[0], task) if t.outcome != ERRORED]
    side_b = [t for t in _trials(log, runs[1], task) if t.outcome != ERRORED]
    if trials is not None:
        return Pair(_by_number(side_a, trials[0], runs[0]), _by_number(side_b, trials[1], runs[1]))
    for want_a, want_b in ((True, False), (False, True)):
        pair = _best([t for t in side_a if t.passed == want_a], [t for t in side_b if t.passed == want_b],
                     norm, mode)
        if pair is not None:
            return pair
    pair = _best(side_a, side_b, norm, mode)
    if pair is None:
        fail(f"task {visible(task)!r} has no trial with a trace in run {visible(runs[0])!r} "
             f"or in run {visible(runs[1])!r}: {_no_trace(log, runs[0])}")
    assert pair is not None
    return pair


def _no_trace(log: TrialLog, run: str) -> str:
    """Why ``run``'s trials have no trace, in its harness's words."""
    import numpy as np

    from flaketui.loading.formats import no_trace_reason

    return no_trace_reason(log, np.flatnonzero(log.run == log.runs.index(run))[:1].tolist())


def diff_json(task: str, pair: Pair, d: TraceDiff) -> dict[str, Any]:
    """``{"task", "run_a", "trial_a", "run_b", "trial_b", "passed_a", "passed_b", **d.to_json()}``."""
    return {"task": task, "run_a": pair.a.run, "trial_a": pair.a.trial, "run_b": pair.b.run,
            "trial_b": pair.b.trial, "passed_a": pair.a.passed, "passed_b": pair.b.passed, **d.to_json()}


def _value(v: Any) -> str:
    from flaketui.traces import MISSING
    from flaketui.traces.normalise import json_text

    return "(none)" if v is MISSING else visible(v if isinstance(v, str) else json_text(v))


def _side(t: Trial) -> str:
    return visible(f"{t.run} trial {t.trial} ({'pass' if t.passed else 'fail'})")


def _step(n: Any) -> str:
    """A step's name: its harness id (log text, made visible) or its position; ``—`` for none."""
    return "—" if n is None else visible(str(n))


def diff_text(task: str, pair: Pair, d: TraceDiff) -> str:
    """The comparison as plain text (log strings made visible, one change a line)."""
    lines = [f"task {visible(task)}: A = {_side(pair.a)}, B = {_side(pair.b)}",
             f"divergence mode: {d.mode}"]
    if d.step_a is None:
        lines.append("first divergence: none (the traces do not differ in this mode)")
    else:
        lines.append(f"first divergence: step {_step(d.name_a(d.step_a))} of A, step {_step(d.name_b(d.step_b))} of B"
                     + ("" if not (d.ids_a or d.ids_b) else " (as the log numbers its steps)"))
    if d.changes:
        lines += ["", "changes (step A / step B  field: A → B):"]
        for c in d.changes:
            note = "" if c.counts else f"   (not counted in {d.mode} mode)"
            head = f"{c.path}: " if c.path else ""
            lines.append(f"  {_step(d.name_a(c.step_a)):>4} / {_step(d.name_b(c.step_b)):<4}  {visible(head)}"
                         f"{_value(c.a)} → {_value(c.b)}{note}")
    if d.around:
        lines += ["", "around the divergence (A | B):"]
        for r in d.around:
            mark = "▶" if (r.step_a, r.step_b) == (d.step_a, d.step_b) else ("≠" if r.tag != "equal" else " ")
            lines.append(f"{mark} {_step(d.name_a(r.step_a)):>4} {visible(r.line_a or '')}")
            lines.append(f"  {_step(d.name_b(r.step_b)):>4} {visible(r.line_b or '')}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return markdown_text(text)


def diff_markdown(task: str, pair: Pair, d: TraceDiff) -> str:
    """The comparison as Markdown: a summary, a table of changes, the rows around the divergence."""
    first = ("none" if d.step_a is None
             else f"step {_md(_step(d.name_a(d.step_a)))} of A, step {_md(_step(d.name_b(d.step_b)))} of B")
    lines = [f"## {_md(task)}: {_md(_side(pair.a))} vs {_md(_side(pair.b))}", "",
             f"- divergence mode: {d.mode}", f"- first divergence: {first}", ""]
    if d.changes:
        lines += ["| step A | step B | field | A | B | counts |", "|---:|---:|---|---|---|---|"]
        for c in d.changes:
            lines.append(f"| {_md(_step(d.name_a(c.step_a)))} | {_md(_step(d.name_b(c.step_b)))} | {_md(c.path or '(step)')} | "
                         f"{_md(_value(c.a))} | {_md(_value(c.b))} | {'yes' if c.counts else 'no'} |")
        lines.append("")
    if d.around:
        lines += ["| step A | A | step B | B |", "|---:|---|---:|---|"]
        for r in d.around:
            lines.append(f"| {_md(_step(d.name_a(r.step_a)))} | {_md(r.line_a or '')} | {_md(_step(d.name_b(r.step_b)))} | "
                         f"{_md(r.line_b or '')} |")
        lines.append("")
    return "\n".join(lines)


# --- --format html (report, compare, diff) -------------------------------------------------


def out_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--out FILE``: where ``--format html`` writes its page (default stdout; ``-`` is stdout)."""
    return click.option("--out", "out", default=None, metavar="FILE",
                        help="With --format html: write the page to FILE (atomically) instead of stdout.")(func)


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
    from flaketui.sanitize import visible

    problems = [p for log in logs for p in log.problems]
    skipped = problems_line([p for p in problems if not p.notice])
    return ([skipped] if skipped else []) + [f"note: {visible(str(p))}" for p in problems if p.notice]


def trace_pair(task: str, pair: Pair, norm: Normaliser, mode: str | None) -> TracePair:
    """``pair`` compared for the page (:data:`~flaketui.output.html.TRACE_CONTEXT` rows either
    side of the divergence, lines cut at :data:`~flaketui.output.html.LINE_WIDTH`)."""
    from flaketui.output.html import LINE_WIDTH, TRACE_CONTEXT, TracePair
    from flaketui.traces import diff_traces

    d = diff_traces(pair.a.trace, pair.b.trace, mode, norm, context=TRACE_CONTEXT, width=LINE_WIDTH)
    return TracePair(task, _label(pair.a), _label(pair.b), d)


def _label(t: Trial) -> str:
    return f"{t.run} trial {t.trial} ({'pass' if t.passed else 'fail'})"


def flaky_pairs(log: TrialLog, run: str, tasks: Sequence[str], mode: str | None = None) -> dict[str, TracePair]:
    """For each of ``tasks`` of ``run``: a passing and a failing trial sharing the longest
    prefix (as ``diff`` picks them), compared; tasks without such a pair are left out (a task
    none of whose trials has a trace is not read at all)."""
    from flaketui.loading import read_trial
    from flaketui.traces import Normaliser

    norm = Normaliser()
    outcomes = log.run_outcomes(run)
    where = {t: i for i, t in enumerate(outcomes.tasks)} if tasks else {}
    out: dict[str, TracePair] = {}
    for task in tasks:
        rows = outcomes.task_rows(where[task])
        if not log.has_trace[rows].any():
            continue
        found = [t for t in (read_trial(log, r) for r in rows.tolist()) if t.outcome != ERRORED]
        pair = _best([t for t in found if t.outcome == PASS], [t for t in found if t.outcome != PASS], norm, mode)
        if pair is not None:
            out[task] = trace_pair(task, pair, norm, mode)
    return out


def cross_pairs(side_a: tuple[TrialLog, str], side_b: tuple[TrialLog, str], tasks: Sequence[str],
                mode: str | None = None) -> dict[str, TracePair]:
    """For each of ``tasks``: a trial of run A beside one of run B, picked as ``diff --runs A B``
    picks them (a passing A beside a failing B, else the reverse, else any two)."""
    from flaketui.traces import Normaliser

    norm = Normaliser()
    out: dict[str, TracePair] = {}
    for task in tasks:
        a = [t for t in _trials(*side_a, task) if t.outcome != ERRORED]
        b = [t for t in _trials(*side_b, task) if t.outcome != ERRORED]
        pair = None
        for want_a, want_b in ((True, False), (False, True)):
            pair = pair or _best([t for t in a if t.passed == want_a], [t for t in b if t.passed == want_b], norm, mode)
        pair = pair or _best(a, b, norm, mode)
        if pair is not None:
            out[task] = trace_pair(task, pair, norm, mode)
    return out


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--task", required=True, help="The task whose traces are compared.")
@click.option("--runs", nargs=2, default=None, metavar="NAME_A NAME_B",
              help="Compare a trial of run A with one of run B (default with two runs: the first two).")
@click.option("--trials", nargs=2, type=int, default=None, metavar="I J",
              help="Trial numbers: I of run A (or of the one run), J of run B.")
@divergence_option
@click.option("--ignore-key", multiple=True, help="Another step key to ignore when comparing traces.")
@click.option("--tolerance", type=FiniteFloat(0.0), default=0.0, show_default=True,
              help="Numbers this close (absolutely or relatively) are equal.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "html"]), default="text",
              show_default=True, help="html: one self-contained page (no network), to stdout or --out.")
@out_option
@log_options
def diff(logs: tuple[str, ...], task: str, runs: tuple[str, str] | None, trials: tuple[int, int] | None,
         divergence: str | None, ignore_key: tuple[str, ...], tolerance: float, fmt: str, out: str | None,
         fields: FieldMap) -> None:
    """Compare two trials' traces of TASK: the first divergence and every differing field."""
    if not tolerance >= 0 or tolerance == float("inf"):
        fail("--tolerance must be a finite number >= 0")
    check_out(out, fmt)
    log = load(logs, fields)
    from flaketui.traces import Normaliser, diff_traces

    norm = Normaliser.with_keys(ignore_key)
    pair = choose_pair(log, task, runs, trials, norm, divergence)
    d = diff_traces(pair.a.trace, pair.b.trace, divergence, norm, tolerance)
    if fmt == "html":
        from flaketui.output.html import LINE_WIDTH, TRACE_CONTEXT, TracePair, write_diff_html

        page = diff_traces(pair.a.trace, pair.b.trace, divergence, norm, tolerance, context=TRACE_CONTEXT,
                           width=LINE_WIDTH)
        with html_out(out) as write:
            write_diff_html(write, TracePair(task, _label(pair.a), _label(pair.b), page), page_info(log))
    elif fmt == "json":
        write_json(diff_json(task, pair, d))
    elif fmt == "markdown":
        click.echo(diff_markdown(task, pair, d), nl=False)
    else:
        click.echo(diff_text(task, pair, d), nl=False)
