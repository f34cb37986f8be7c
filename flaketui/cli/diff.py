"""``flaketui diff LOG… --task T``: two trials' traces compared, for scripts and bug reports.

The pair (:func:`flaketui.session.pairs.choose_pair`): with ``--trials I J``, trial I
of run A beside trial J of run B; else, with two runs (``--runs A B``, or the first two
runs loaded), the trials of A and B sharing the longest prefix (a passing A beside a
failing B when there are such, else a failing A beside a passing B, else any two); with
one run, a passing and a failing trial sharing the longest prefix, as the app's trace
screen picks them.
The comparison is :func:`flaketui.traces.diff_traces`: the first divergence
(1-based steps in each trace), every differing field with its two values, the rows
around it. Text and Markdown pass log strings through :func:`flaketui.sanitize.visible`;
JSON is the log's own values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from flaketui.cli.common import FiniteFloat, check_out, fail, html_out, load, main, page_info, write_json
from flaketui.cli.options import divergence_option, ignore_key_option, log_options, out_option, runs_option
from flaketui.model import FieldMap, Trial
from flaketui.sanitize import markdown_text, visible

if TYPE_CHECKING:  # the trace modules load when a diff runs (not for every command's start)
    from flaketui.loading.options import LoadOptions
    from flaketui.session.pairs import Pair
    from flaketui.traces import TraceDiff


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
        lines += _md_table("| step A | step B | field | A | B | counts |", "|---:|---:|---|---|---|---|",
                           ([_step(d.name_a(c.step_a)), _step(d.name_b(c.step_b)), c.path or "(step)", _value(c.a),
                             _value(c.b), "yes" if c.counts else "no"] for c in d.changes))
    if d.around:
        lines += _md_table("| step A | A | step B | B |", "|---:|---|---:|---|",
                           ([_step(d.name_a(r.step_a)), r.line_a or "", _step(d.name_b(r.step_b)), r.line_b or ""]
                            for r in d.around))
    return "\n".join(lines)


def _md_table(header: str, rule: str, rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines (each cell escaped: :func:`_md`), then a blank line."""
    return [header, rule, *("| " + " | ".join(map(_md, cells)) + " |" for cells in rows), ""]


@main.command()
@click.argument("logs", nargs=-1, required=True)
@click.option("--task", required=True, help="The task whose traces are compared.")
@runs_option("Compare a trial of run A with one of run B (default with two runs: the first two).")
@click.option("--trials", nargs=2, type=int, default=None, metavar="I J",
              help="Trial numbers: I of run A (or of the one run), J of run B.")
@divergence_option
@ignore_key_option()
@click.option("--tolerance", type=FiniteFloat(0.0), default=0.0, show_default=True,
              help="Numbers this close (absolutely or relatively) are equal.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "html"]), default="text",
              show_default=True, help="html: one self-contained page (no network), to stdout or --out.")
@out_option
@log_options
def diff(logs: tuple[str, ...], task: str, runs: tuple[str, str] | None, trials: tuple[int, int] | None,
         divergence: str | None, ignore_key: tuple[str, ...], tolerance: float, fmt: str, out: str | None,
         fields: FieldMap, load_options: LoadOptions) -> None:
    """Compare two trials' traces of TASK: the first divergence and every differing field."""
    if not tolerance >= 0 or tolerance == float("inf"):
        fail("--tolerance must be a finite number >= 0")
    check_out(out, fmt)
    log = load(logs, fields, load_options)
    from flaketui.session.pairs import choose_pair, label
    from flaketui.traces import Normaliser, diff_traces

    norm = Normaliser.with_keys(ignore_key)
    pair = choose_pair(log, task, runs, trials, norm, divergence)
    if fmt == "html":
        from flaketui.output.html import write_diff_html
        from flaketui.output.trace_pair import LINE_WIDTH, TRACE_CONTEXT, TracePair

        page = diff_traces(pair.a.trace, pair.b.trace, divergence, norm, tolerance, context=TRACE_CONTEXT,
                           width=LINE_WIDTH)
        with html_out(out) as write:
            write_diff_html(write, TracePair(task, label(pair.a), label(pair.b), page), page_info(log))
        return
    d = diff_traces(pair.a.trace, pair.b.trace, divergence, norm, tolerance)
    if fmt == "json":
        write_json(diff_json(task, pair, d))
    elif fmt == "markdown":
        click.echo(diff_markdown(task, pair, d), nl=False)
    else:
        click.echo(diff_text(task, pair, d), nl=False)
