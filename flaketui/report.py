"""Output of the command line: Rich tables, and the JSON / CSV / Markdown contracts.

The JSON field names are a contract for scripts (README, "JSON output").
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from flaketui import formatting as fmt
from flaketui.model import natural_key
from flaketui.stats.suite import GateResult, MeanEstimate, SuiteSummary, TaskStats

if TYPE_CHECKING:  # Rich and the comparison helpers load when a table or comparison is printed
    from rich.console import Console, Group

    from flaketui.stats.paired import PairedComparison

FORMATS = ("table", "json", "csv", "markdown")
CURVE_IN_TEXT = 12
"""The pass^k row (k = 1..K) is printed above a table when K is at most this."""


def display_order(stats: TaskStats) -> list[int]:
    """Most dangerous first: flakiness descending, then p̂ ascending, then name."""
    flak = np.nan_to_num(stats.flakiness, nan=-1.0)
    phat = np.nan_to_num(stats.p_hat, nan=2.0)
    names = [natural_key(t) for t in stats.tasks]
    return sorted(range(len(stats)), key=lambda i: (-flak[i], phat[i], names[i]))


# --- JSON -------------------------------------------------------------------


def _estimate(e: MeanEstimate) -> tuple[float | None, list[float | None] | None]:
    return fmt.json_float(e.value), fmt.json_interval(*e.ci)


def summary_json(s: SuiteSummary) -> dict[str, Any]:
    p1, p1_ci = _estimate(s.pass_at_1)
    phk, phk_ci = _estimate(s.pass_hat_k)
    return {
        "tasks": s.tasks,
        "trials": s.trials,
        "errored": s.errored,
        "pass_at_1": p1,
        "pass_at_1_ci": p1_ci,
        "pass_at_k": fmt.json_float(s.pass_at_k.value),
        "pass_at_k_ci": fmt.json_interval(*s.pass_at_k.ci),
        "pass_hat_k": phk,
        "pass_hat_k_ci": phk_ci,
        "flaky_tasks": s.flaky_tasks,
        "clustered_se": s.pass_at_1.clustered,
        "tasks_below_k": s.tasks_below_k,
        "warnings": list(s.warnings),
        "pass_hat_k_curve": [fmt.json_float(v) for v in s.pass_hat_k_curve],
        "errored_as": s.errored_as,
        "pass_at_1_errored_range": fmt.json_interval(*s.pass_at_1_errored_range),
    }


def _floats(values: Any) -> list[float | None]:
    """An array as JSON floats, NaN as ``null`` (fmt.json_float over a whole column)."""
    arr = np.asarray(values, dtype=np.float64)
    out: list[float | None] = arr.tolist()
    for i in np.flatnonzero(np.isnan(arr)).tolist():
        out[i] = None
    return out


def _intervals(low: Any, high: Any) -> list[list[float | None] | None]:
    """Arrays of bounds as JSON intervals, ``null`` where one is missing (fmt.json_interval)."""
    pairs = np.stack([np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)], axis=1)
    out: list[list[float | None] | None] = pairs.tolist()
    for i in np.flatnonzero(np.isnan(pairs).any(axis=1)).tolist():
        out[i] = None
    return out


def tasks_json(st: TaskStats) -> list[dict[str, Any]]:
    """One object per task, built column by column (10k tasks in a few ms)."""
    columns = zip(
        st.tasks, np.asarray(st.n).tolist(), np.asarray(st.passes).tolist(),
        np.asarray(st.errored).tolist(), _floats(st.p_hat),
        _intervals(st.p_hat_ci.low, st.p_hat_ci.high), _floats(st.pass_at_k),
        _floats(st.pass_hat_k), _intervals(st.pass_hat_k_ci.low, st.pass_hat_k_ci.high),
        _floats(st.flakiness), st.classes, _floats(st.rule_of_three), st.groups,
        strict=True,
    )
    return [
        {"task": task, "n": n, "passes": c, "errored": e, "p_hat": p, "p_hat_ci": p_ci,
         "pass_at_k": at_k, "pass_hat_k": hat_k, "pass_hat_k_ci": hat_ci, "flakiness": flak,
         "class": cls, "rule_of_three": r3, "group": group}
        for task, n, c, e, p, p_ci, at_k, hat_k, hat_ci, flak, cls, r3, group in columns
    ]


def report_json(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]]) -> dict[str, Any]:
    """The ``report --format json`` document."""
    return {
        "k": k,
        "errored_as": runs[0][1].errored_as if runs else "apart",
        "runs": [
            {"run": st.run, "summary": summary_json(sm), "tasks": tasks_json(st)} for st, sm in runs
        ],
    }


def compare_json(c: PairedComparison) -> dict[str, Any]:
    """The ``compare --format json`` document."""
    from flaketui.stats.paired import verdict
    return {
        "run_a": c.run_a,
        "run_b": c.run_b,
        "tasks": len(c.tasks),
        "fixed": c.fixed,
        "broken": c.broken,
        "unchanged": c.unchanged,
        "sign_test_p": c.test.pvalue,
        "mean_diff": fmt.json_float(c.mean_diff.value),
        "mean_diff_ci": fmt.json_interval(*c.mean_diff.ci),
        "only_a": c.only_a,
        "only_b": c.only_b,
        "verdict": verdict(c),
        "flips": [
            {
                "task": t,
                "p_hat_a": fmt.json_float(c.p_a[i]),
                "p_hat_b": fmt.json_float(c.p_b[i]),
                "n_a": int(c.n_a[i]),
                "n_b": int(c.n_b[i]),
            }
            for i, t in enumerate(c.tasks)
            if t in set(c.fixed) | set(c.broken)
        ],
    }


def gate_json(results: Sequence[GateResult]) -> dict[str, Any]:
    """The ``gate --format json`` document."""
    return {
        "passed": all(r.passed for r in results),
        "runs": [
            {
                "run": r.run,
                "k": r.k,
                "passed": r.passed,
                "pass_hat_k": fmt.json_float(r.pass_hat_k),
                "min_pass_hat_k": r.min_pass_hat_k,
                "max_flakiness": r.max_flakiness,
                "too_flaky": [{"task": t, "flakiness": f} for t, f in r.too_flaky],
                "reasons": r.reasons,
            }
            for r in results
        ],
    }


# --- CSV and Markdown ---------------------------------------------------------

CSV_COLUMNS = (
    "run", "k", "task", "n", "passes", "errored", "p_hat", "p_hat_low", "p_hat_high",
    "pass_at_k", "pass_hat_k", "pass_hat_k_low", "pass_hat_k_high", "flakiness", "class",
)


def report_csv(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]]) -> str:
    """One row per (run, task); empty cells for missing values."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for st, _ in runs:
        for row in tasks_json(st):
            lo, hi = row["p_hat_ci"] or (None, None)
            klo, khi = row["pass_hat_k_ci"] or (None, None)
            w.writerow(
                [st.run, k, row["task"], row["n"], row["passes"], row["errored"],
                 _cell(row["p_hat"]), _cell(lo), _cell(hi), _cell(row["pass_at_k"]),
                 _cell(row["pass_hat_k"]), _cell(klo), _cell(khi), _cell(row["flakiness"]),
                 row["class"]]
            )
    return out.getvalue()


def compare_csv(c: PairedComparison) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["task", "change", "p_hat_a", "p_hat_b", "n_a", "n_b", "delta"])
    fixed, broken = set(c.fixed), set(c.broken)
    for i, t in enumerate(c.tasks):
        change = "fixed" if t in fixed else "broken" if t in broken else "unchanged"
        w.writerow([t, change, _cell(c.p_a[i]), _cell(c.p_b[i]), int(c.n_a[i]), int(c.n_b[i]),
                    _cell(c.p_b[i] - c.p_a[i])])
    return out.getvalue()


def _cell(x: Any) -> str:
    return "" if fmt.is_missing(x) else f"{float(x):.6g}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def summary_lines(s: SuiteSummary) -> list[str]:
    """The suite summary as plain lines (shared by table and Markdown output)."""
    k = s.k
    lines = [
        f"run {s.run}: {s.tasks} tasks, {s.trials} trials, {s.errored} errored, "
        f"{s.flaky_tasks} flaky, k = {k}"
        + (" (clustered SE)" if s.pass_at_1.clustered else ""),
        f"pass@1 = {fmt.rate(s.pass_at_1.value)} {fmt.interval(*s.pass_at_1.ci)}   "
        f"pass@{k} = {fmt.rate(s.pass_at_k.value)} {fmt.interval(*s.pass_at_k.ci)}   "
        f"pass^{k} = {fmt.rate(s.pass_hat_k.value)} {fmt.interval(*s.pass_hat_k.ci)}",
    ]
    if 1 < k <= CURVE_IN_TEXT:
        lines.append(f"pass^k for k=1..{len(s.pass_hat_k_curve)}: " + " ".join(fmt.rate(v) for v in s.pass_hat_k_curve))
    if s.errored or s.errored_as != "apart":
        low, high = s.pass_at_1_errored_range
        how = "left out of n" if s.errored_as == "apart" else "counted as failures"
        lines.append(f"errored trials {how} (--errored-as {s.errored_as}); had they all failed / all "
                     f"passed, pass@1 = {fmt.rate(low)} / {fmt.rate(high)}")
    return lines


def report_markdown(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]]) -> str:
    parts = []
    for st, sm in runs:
        lines = summary_lines(sm)
        parts.append(f"## {_md_escape(st.run)}\n\n" + "  \n".join(lines) + "\n")
        for w in sm.warnings:
            parts.append(f"> warning: {_md_escape(w)}\n")
        head = (f"| task | n | passes | p̂ | 95% CI | pass@{k} | pass^{k} | pass^{k} CI | flakiness | class "
                "| rule of 3 |")
        rows = [head, "|" + "---|" * 11]
        for i in display_order(st):
            rows.append(
                f"| {_md_escape(st.tasks[i])} | {int(st.n[i])} | {int(st.passes[i])} | "
                f"{fmt.rate(st.p_hat[i])} | {fmt.interval(st.p_hat_ci.low[i], st.p_hat_ci.high[i])} | "
                f"{fmt.rate(st.pass_at_k[i])} | {fmt.rate(st.pass_hat_k[i])} | "
                f"{fmt.interval(st.pass_hat_k_ci.low[i], st.pass_hat_k_ci.high[i])} | "
                f"{fmt.rate(st.flakiness[i])} | {st.classes[i]} | {rule_of_three_text(st, i)} |"
            )
        parts.append("\n".join(rows) + "\n")
    return f"# flaketui report (k = {k})\n\n" + "\n".join(parts)


def compare_markdown(c: PairedComparison) -> str:
    from flaketui.review import compare_lines

    lines = [f"# {_md_escape(c.run_b)} vs {_md_escape(c.run_a)}", ""]
    lines += [f"- {x}" for x in compare_lines(c)]
    lines += ["", "| task | change | p̂ A | p̂ B | n A | n B |", "|---|---|---|---|---|---|"]
    idx = {t: i for i, t in enumerate(c.tasks)}
    for change, names in (("broken", c.broken), ("fixed", c.fixed)):
        for t in names:
            i = idx[t]
            lines.append(
                f"| {_md_escape(t)} | {change} | {fmt.rate(c.p_a[i])} | {fmt.rate(c.p_b[i])} | "
                f"{int(c.n_a[i])} | {int(c.n_b[i])} |"
            )
    return "\n".join(lines) + "\n"


# --- Rich ---------------------------------------------------------------------


def rule_of_three_text(st: TaskStats, i: int) -> str:
    """``fail < 0.221`` for a task that always passed (its failure rate's 95% bound), ``pass < …``
    for one that always failed, empty for a flaky task."""
    bound = st.rule_of_three[i]
    if fmt.is_missing(bound) or st.n[i] == 0:
        return ""
    return f"{'fail' if st.passes[i] == st.n[i] else 'pass'} < {float(bound):.3g}"


def report_table(st: TaskStats, sm: SuiteSummary) -> Group:
    """The suite summary above a table of tasks, most dangerous first."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    k = st.k
    head = Text("\n".join(summary_lines(sm)), style="bold")
    warnings = [Text(f"warning: {w}", style="yellow") for w in sm.warnings]
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    # In a narrow terminal the task names give way (cut with …); figures never do.
    longest = max((len(t) for t in st.tasks), default=4)
    table.add_column("task", no_wrap=True, min_width=min(12, longest), max_width=40,
                     overflow="ellipsis")
    count = len(str(int(st.n.max()))) if len(st) else 1
    for name, width in (("n", count), ("pass", count), ("p̂", 5), ("95% CI", 12), (f"pass@{k}", 5),
                        (f"pass^{k}", 5), (f"pass^{k} CI", 12), ("flakiness", 5)):
        table.add_column(name, justify="right", no_wrap=True, min_width=max(width, len(name)))
    table.add_column("class", no_wrap=True, min_width=11)
    table.add_column("rule of 3", no_wrap=True)
    styles = {"flaky": "bold red", "stable-fail": "dim", "stable-pass": "green"}
    for i in display_order(st):
        cls = st.classes[i]
        table.add_row(
            Text(st.tasks[i]),  # τ²'s "[mobile_data_issue]…" ids are text, not Rich markup
            str(int(st.n[i])),
            str(int(st.passes[i])),
            fmt.rate(st.p_hat[i]),
            fmt.interval(st.p_hat_ci.low[i], st.p_hat_ci.high[i]),
            fmt.rate(st.pass_at_k[i]),
            fmt.rate(st.pass_hat_k[i]),
            fmt.interval(st.pass_hat_k_ci.low[i], st.pass_hat_k_ci.high[i]),
            fmt.rate(st.flakiness[i]),
            Text(cls, style=styles.get(cls, "")),
            rule_of_three_text(st, i),
        )
    return Group(head, *warnings, table, Text(""))


def compare_table(c: PairedComparison) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from flaketui.review import compare_lines

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name, justify in (("task", "left"), ("change", "left"), (f"p̂ {c.run_a}", "right"),
                          (f"p̂ {c.run_b}", "right"), ("n A", "right"), ("n B", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    idx = {t: i for i, t in enumerate(c.tasks)}
    for change, names, style in (("broken", c.broken, "red"), ("fixed", c.fixed, "green")):
        for t in names:
            i = idx[t]
            table.add_row(Text(t), Text(change, style=style), fmt.rate(c.p_a[i]), fmt.rate(c.p_b[i]),
                          str(int(c.n_a[i])), str(int(c.n_b[i])))
    head = Text(f"{c.run_b} vs {c.run_a}\n" + "\n".join(compare_lines(c)), style="bold")
    return Group(head, table)


def console() -> Console:
    """A Rich console for stdout: the terminal's width, or unbounded when output goes to a
    file or pipe (so tables keep every column instead of being cut to 80)."""
    from rich.console import Console

    con = Console()
    return con if con.is_terminal else Console(width=1000)


def print_renderable(renderable: Any) -> None:
    console().print(renderable)
