"""Output of ``compare``: run B against run A (the verdict, the changed tasks, the comparison by
score), and ``--baseline``'s every run against one, as Rich tables and the JSON / CSV / Markdown
contracts (README, "JSON output").
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from flaketui.output import formatting as fmt
from flaketui.output import stream
from flaketui.output.columns import csv_number
from flaketui.output.report import left_out_line, left_out_text, md_escape
from flaketui.sanitize import csv_cell, markdown_text, visible
from flaketui.stats.stratified import NAME as PRIMARY_NAME

if TYPE_CHECKING:  # Rich and the comparison helpers load when a comparison is printed
    from rich.console import Group
    from rich.text import Text

    from flaketui.output.review import FlipRow
    from flaketui.stats.baseline import BaselineComparisons
    from flaketui.stats.paired import PairedComparison
    from flaketui.stats.pertask import PerTaskTests
    from flaketui.stats.score_compare import ScoreComparison


@dataclass(frozen=True)
class ScoredView:
    """A comparison by graded score (``compare --by score``) and why it is by score."""

    cmp: ScoreComparison
    why: str
    """``--by score``, or that both runs are graded."""

    def verdict(self) -> str:
        from flaketui.stats.score_compare import score_verdict

        return score_verdict(self.cmp, self.why)

    def short_verdict(self) -> str:
        """The verdict without its figures (a pull-request comment's first line), by mean score."""
        from flaketui.stats.score_compare import score_short_verdict

        return score_short_verdict(self.cmp)

    def lines(self) -> list[str]:
        """The verdict by score, then the tasks whose mean score moved after Holm."""
        sc = self.cmp
        moved = sc.moved
        names = ", ".join(visible(t) for t in moved[:10]) + (f", … {len(moved) - 10} more" if len(moved) > 10 else "")
        return [visible(self.verdict()),
                f"mean score A = {fmt.rate(float(np.nanmean(sc.mean_a)) if len(sc.tasks) else float('nan'))}, "
                f"B = {fmt.rate(float(np.nanmean(sc.mean_b)) if len(sc.tasks) else float('nan'))}; "
                + (f"{len(moved)} task(s) whose mean score moved (Holm at {sc.alpha:g}): {names}" if moved
                   else f"no task's mean score moved after Holm at {sc.alpha:g}"),
                "by pass/fail (secondary):"]

    def to_json(self) -> dict[str, Any]:
        """The keys a comparison by score sets in ``compare --format json``."""
        from flaketui.stats.score_compare import STATISTIC, score_evidence

        sc, t = self.cmp, self.cmp.primary
        return {
            "by": "score",
            "winner": score_evidence(sc).winner_run,
            "primary_test": {"name": PRIMARY_NAME, "statistic": STATISTIC, "p_value": fmt.json_float(t.pvalue),
                             "ci": fmt.json_interval(*sc.mean_diff.ci), "method": t.method,
                             "resamples": t.resamples, "informative_tasks": t.tasks},
            "mean_diff": fmt.json_float(sc.mean_diff.value),
            "mean_diff_ci": fmt.json_interval(*sc.mean_diff.ci),
            "verdict": self.verdict(),
            "per_task_score": [
                {"task": task, "mean_score_a": fmt.json_float(sc.mean_a[i]), "mean_score_b": fmt.json_float(sc.mean_b[i]),
                 "n_a": int(sc.n_a[i]), "n_b": int(sc.n_b[i]), "p_value": fmt.json_float(sc.p_value[i]),
                 "p_adjusted": fmt.json_float(sc.p_adjusted[i])}
                for i, task in enumerate(sc.tasks)],
        }


@dataclass(frozen=True)
class CompareView:
    """Everything ``compare`` prints about run B against run A."""

    cmp: PairedComparison
    tests: PerTaskTests
    """Fisher per task, Holm over Tarone's family, BH q (flipped vs moved)."""
    alpha: float
    config_a: dict[str, str] = field(default_factory=dict)
    config_b: dict[str, str] = field(default_factory=dict)
    """The ``--config-field`` values of each run's first trial."""
    scores: ScoredView | None = None
    """The comparison by score the verdict rests on (``--by score``); None: by pass/fail."""

    @property
    def confounds(self) -> list[str]:
        from flaketui.stats.confounds import confounds

        return confounds(self.config_a, self.config_b)

    @property
    def confound_values(self) -> list[dict[str, str]]:
        """The differing configuration fields with each run's value (JSON ``confounds``)."""
        from flaketui.stats.confounds import confound_values

        return confound_values(self.config_a, self.config_b)

    @property
    def confound(self) -> str | None:
        """The warning when more than one configuration field differs."""
        from flaketui.stats.confounds import confound_warning

        return confound_warning(self.config_a, self.config_b)

    def lines(self) -> list[str]:
        from flaketui.output.review import compare_lines

        lines = compare_lines(self.cmp, self.alpha, self.tests, self.confound)
        if len(self.confounds) == 1:  # one change: a controlled comparison, its values said
            from flaketui.stats.confounds import confound_note

            lines.append(visible(confound_note(self.config_a, self.config_b) or ""))
        return lines if self.scores is None else [*self.scores.lines(), *lines]

    def rows(self) -> list[FlipRow]:
        """The changed tasks: flipped first, then moved."""
        from flaketui.output.review import paired_rows

        return paired_rows(self.cmp, tests=self.tests)


def compare_view(c: PairedComparison, alpha: float = 0.05, config_a: dict[str, str] | None = None,
                 config_b: dict[str, str] | None = None, scores: ScoredView | None = None) -> CompareView:
    from flaketui.stats.pertask import per_task_tests

    return CompareView(c, per_task_tests(c, alpha), alpha, config_a or {}, config_b or {}, scores)


def compare_json(v: CompareView) -> dict[str, Any]:
    """The ``compare --format json`` document.

    ``winner`` is the better run when the primary test (``primary_test``) rejects at
    ``alpha``, else null; ``sign_test_p`` and ``permutation_p`` (the sign-flip test) are
    secondary, and null where they are not valid (trial counts differ between the runs:
    ``secondary_tests_valid``). ``fixed`` / ``broken`` (and ``flips``) list every task whose p̂
    moved; ``flipped_fixed`` / ``flipped_broken`` and ``per_task`` those whose change is
    significant after Holm (over Tarone's family) at ``alpha``.
    """
    from flaketui.stats.verdict import evidence, verdict

    c = v.cmp
    changed = set(c.fixed) | set(c.broken)
    doc = {
        "run_a": c.run_a,
        "run_b": c.run_b,
        "tasks": len(c.tasks),
        "fixed": c.fixed,
        "broken": c.broken,
        "unchanged": c.unchanged,
        "winner": evidence(c, v.alpha).winner_run,
        "primary_test": primary_json(c),
        "mean_difference": mean_difference_json(c),
        "mean_diff": fmt.json_float(c.mean_diff.value),
        "mean_diff_ci": fmt.json_interval(*c.mean_diff.ci),
        **noise_json(c, v.alpha),
        **secondary_json(c),
        "secondary_tests_valid": c.equal_trials,
        "only_a": c.only_a,
        "only_b": c.only_b,
        "verdict": verdict(c, v.alpha),
        "config_a": v.config_a,
        "config_b": v.config_b,
        "confounds": v.confound_values,
        "confound_warning": v.confound,
        **v.tests.to_json(),
        "flips": [
            {
                "task": t,
                "p_hat_a": fmt.json_float(c.a.p_hat[i]),
                "p_hat_b": fmt.json_float(c.b.p_hat[i]),
                "n_a": int(c.a.n[i]),
                "n_b": int(c.b.n[i]),
            }
            for i, t in enumerate(c.tasks)
            if t in changed
        ],
        "by": "pass",
    }
    if v.scores is not None:  # the verdict rests on the score test; the pass test stays beside it
        doc["pass_primary_test"] = doc["primary_test"]
        doc.update(v.scores.to_json())
    return doc


def primary_json(c: PairedComparison) -> dict[str, Any]:
    """The primary test of a comparison: its name, statistic, p-value and how it was computed (the
    interval of the mean difference is not the test's: :func:`mean_difference_json`)."""
    t = c.primary
    return {"name": PRIMARY_NAME, "statistic": "mean over tasks of p_hat_B - p_hat_A",
            "p_value": fmt.json_float(t.pvalue),
            "method": t.method, "resamples": t.resamples, "informative_tasks": t.tasks}


def mean_difference_json(c: PairedComparison) -> dict[str, Any]:
    """The mean difference of per-task p̂ (B − A) with its interval over tasks and how that was made
    (``t``, ``CR2``; with the binomial floor when it applied), its SE and degrees of freedom."""
    m = c.mean_diff
    return {"estimate": fmt.json_float(m.value), "ci": fmt.json_interval(*m.ci), "se": fmt.json_float(m.se),
            "df": fmt.json_float(m.df) if np.isfinite(m.df) else None, "method": m.method}


def noise_json(c: PairedComparison, alpha: float) -> dict[str, Any]:
    """``se``, ``mde`` and ``snr`` of a comparison (:func:`flaketui.stats.noise.comparison_noise`):
    the SE of the mean difference, the smallest difference detected with 80% power at ``alpha``,
    and the observed difference over its SE; ``mde_power`` the power it is stated at."""
    from flaketui.stats.noise import comparison_noise

    n = comparison_noise(c, alpha)
    return {"se": fmt.json_float(n.se), "mde": fmt.json_float(n.mde), "snr": fmt.json_float(n.snr),
            "mde_power": n.power}


def secondary_json(c: PairedComparison) -> dict[str, Any]:
    """The secondary tests' p-values, null where they are not valid (trial counts differ)."""
    valid = c.equal_trials
    return {"sign_test_p": c.test.pvalue if valid else None,
            "permutation_p": fmt.json_float(c.permutation.pvalue) if valid else None}


def baseline_json(b: BaselineComparisons) -> dict[str, Any]:
    """``--baseline RUN``: every other run against the baseline, primary tests Holm-adjusted across them."""
    from flaketui.stats.verdict import evidence, verdict

    return {
        "baseline": b.baseline,
        "alpha": b.alpha,
        "adjustment": f"holm across the comparisons ({PRIMARY_NAME} p-values)",
        "comparisons": [
            {
                "run": c.run_b,
                "tasks": len(c.tasks),
                "fixed": len(c.fixed),
                "broken": len(c.broken),
                "winner": evidence(c, b.alpha, b.p_adjusted[i]).winner_run,
                "primary_test": primary_json(c),
                "p_adjusted": b.p_adjusted[i],
                "significant": b.significant(i),
                "mean_difference": mean_difference_json(c),
                "mean_diff": fmt.json_float(c.mean_diff.value),
                "mean_diff_ci": fmt.json_interval(*c.mean_diff.ci),
                **noise_json(c, b.alpha),
                **secondary_json(c),
                "verdict": verdict(c, b.alpha, b.p_adjusted[i]),
            }
            for i, c in enumerate(b.comparisons)
        ],
    }


BASELINE_HEADERS = ("run", "tasks", "fixed", "broken", "primary p", "Holm p", "mean diff (B - A)", "verdict")


def baseline_cells(b: BaselineComparisons) -> list[list[str]]:
    """One row of text cells per comparison (run names made visible)."""
    from flaketui.output.review import signed
    from flaketui.stats.verdict import verdict

    return [[visible(c.run_b), str(len(c.tasks)), str(len(c.fixed)), str(len(c.broken)),
             fmt.pvalue(c.primary.pvalue), fmt.pvalue(b.p_adjusted[i]) + (" *" if b.significant(i) else ""),
             f"{signed(c.mean_diff.value)} {fmt.interval(*c.mean_diff.ci, digits=3)}",
             visible(verdict(c, b.alpha, b.p_adjusted[i]))]
            for i, c in enumerate(b.comparisons)]


def baseline_title(b: BaselineComparisons) -> str:
    return (f"every run against baseline {visible(b.baseline)}: {PRIMARY_NAME} p-values Holm-adjusted across "
            f"the {len(b.comparisons)} comparisons (* below {b.alpha:g})")


def baseline_markdown(b: BaselineComparisons) -> str:
    rows = ["| " + " | ".join(BASELINE_HEADERS) + " |", "|" + "---|" * len(BASELINE_HEADERS)]
    rows += ["| " + " | ".join(md_escape(x) for x in cells) + " |" for cells in baseline_cells(b)]
    return f"## {md_escape(baseline_title(b))}\n\n" + "\n".join(rows) + "\n"


def baseline_csv(b: BaselineComparisons) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["baseline", "run", "tasks", "fixed", "broken", "primary_p", "p_adjusted", "mean_diff"])
    for i, c in enumerate(b.comparisons):
        w.writerow([csv_cell(b.baseline), csv_cell(c.run_b), len(c.tasks), len(c.fixed), len(c.broken),
                    csv_number(c.primary.pvalue), csv_number(b.p_adjusted[i]), csv_number(c.mean_diff.value)])
    return out.getvalue()


def baseline_table(b: BaselineComparisons) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in BASELINE_HEADERS:
        table.add_column(name, justify="left" if name in ("run", "verdict") else "right")
    for cells in baseline_cells(b):
        table.add_row(*(Text(x) for x in cells))
    return Group(Text(baseline_title(b), style="bold"), table, Text(""))


def compare_csv(v: CompareView) -> str:
    """One row per common task: its change of p̂, whether it flipped, and its per-task test."""
    c, tests = v.cmp, v.tests
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["task", "change", "flipped", "p_hat_a", "p_hat_b", "n_a", "n_b", "delta",
                "p_value", "p_adjusted", "q_value"])
    fixed, broken = set(c.fixed), set(c.broken)
    for i, t in enumerate(c.tasks):
        change = "fixed" if t in fixed else "broken" if t in broken else "unchanged"
        w.writerow([csv_cell(t), change, "yes" if tests.flipped[i] else "", csv_number(c.a.p_hat[i]),
                    csv_number(c.b.p_hat[i]), int(c.a.n[i]), int(c.b.n[i]), csv_number(c.delta[i]),
                    csv_number(tests.p_value[i]), csv_number(tests.p_adjusted[i]), csv_number(tests.q_value[i])])
    return out.getvalue()


CHANGED = ("changed task", "most changed")
"""What ``compare``'s cut table calls its rows and their order (:func:`left_out_line`)."""


def compare_markdown(v: CompareView, top: int | None = None) -> str:
    """The comparison as Markdown; ``top``: only the first ``top`` changed tasks, and a line
    saying how many are left out."""
    c = v.cmp
    lines = [f"# {md_escape(c.run_b)} vs {md_escape(c.run_a)}", ""]
    lines += [f"- {md_escape(x)}" for x in v.lines()]
    lines += ["", "| task | change | flip | p̂ A | p̂ B | n A | n B | p adj. |", "|---|---|---|---|---|---|---|---|"]
    rows = v.rows()
    left = max(0, len(rows) - top) if top is not None else 0
    for r in rows[:top]:
        lines.append(
            f"| {md_escape(r.task)} | {r.change} | {r.kind} | {fmt.rate(r.p_a)} | {fmt.rate(r.p_b)} | "
            f"{r.n_a} | {r.n_b} | {fmt.pvalue(r.p_adjusted)} |"
        )
    if left:
        lines += ["", md_escape(left_out_line(left, len(rows) - left, *CHANGED))]
    return "\n".join(lines) + "\n"


COMPARE_JUSTIFY = ("left", "left", "left", "right", "right", "right", "right", "right")
"""How ``compare``'s table sets each column: the names and labels left, the figures right."""


def compare_headers(v: CompareView) -> list[str]:
    c = v.cmp
    return ["task", "change", "flip", f"p̂ {visible(c.run_a)}", f"p̂ {visible(c.run_b)}", "n A", "n B", "p adj."]


def compare_cells(r: FlipRow) -> list[str]:
    """A changed task's cells in ``compare``'s table, as plain text (the task name made visible)."""
    return [visible(r.task), r.change, r.kind, fmt.rate(r.p_a), fmt.rate(r.p_b), str(r.n_a), str(r.n_b),
            fmt.pvalue(r.p_adjusted)]


def compare_head(v: CompareView) -> Text:
    """What ``compare``'s table has above it: B vs A and the comparison's lines, in bold."""
    from rich.text import Text

    c = v.cmp
    return Text(f"{visible(c.run_b)} vs {visible(c.run_a)}\n" + "\n".join(v.lines()), style="bold")


def compare_table(v: CompareView, rows: Sequence[FlipRow] | None = None, left: int = 0) -> Group:
    """The summary, then the changed tasks (``rows``, default all): flipped first (bold), then moved
    (dim, marked); ``left``: how many changed tasks are not shown, said under the table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    # Task and run names come from the logs: Text, never parsed as markup, and made visible.
    for name, justify in zip(compare_headers(v), COMPARE_JUSTIFY, strict=True):
        table.add_column(Text(name), justify=justify)  # type: ignore[arg-type]
    for r in v.rows() if rows is None else rows:
        colour = "red" if r.change == "broken" else "green"
        cells = compare_cells(r)
        table.add_row(Text(cells[0], style="bold" if r.flipped else ""),
                      Text(r.change, style=colour if r.flipped else "dim " + colour),
                      Text(r.kind, style="bold" if r.flipped else "dim"), *cells[3:])
    parts: list[Any] = [compare_head(v), table]
    if left:
        parts.append(left_out_text(left, len(rows or ()), *CHANGED))
    return Group(*parts)


def compare_lines_streamed(v: CompareView, rows: Sequence[FlipRow], width: int = 1000) -> Iterator[str] | None:
    """:func:`compare_table`'s table as Rich writes it to a pipe (``width`` cells), a few thousand
    rows at a time, without a Rich table of every row (45,000 changed tasks took Rich 23 s);
    ``None`` when the table is wider than ``width`` (Rich would wrap its cells: let it)."""
    from flaketui.output.cells import cell_width

    headers = compare_headers(v)
    right = [j == "right" for j in COMPARE_JUSTIFY]
    widths = [cell_width(h) for h in headers]
    for start in range(0, len(rows), stream.CHUNK):
        for j, column in enumerate(zip(*map(compare_cells, rows[start:start + stream.CHUNK]), strict=True)):
            widths[j] = max(widths[j], max(map(cell_width, column)))
    if sum(widths) + 3 * (len(widths) - 1) > width:
        return None
    layout = stream.TableLayout(headers, widths, right, 0)

    def lines() -> Iterator[str]:
        yield layout.header_lines()
        for start in range(0, len(rows), stream.CHUNK):
            yield "".join(" │ ".join(stream.pad(t, w, r) for t, w, r in zip(compare_cells(row), widths, right,
                                                                            strict=True)) + "\n"
                          for row in rows[start:start + stream.CHUNK])
    return lines()


COMMENT_LIMIT = 65_536
"""GitHub's limit on a comment's body, in characters."""


COMMENT_BUDGET = 60_000
"""What ``compare --format markdown --summary`` fills at most (headroom for a wrapper's text)."""


def compare_summary_markdown(v: CompareView, budget: int = COMMENT_BUDGET) -> str:
    """``compare --format markdown --summary``: a pull-request comment of at most ``budget``
    characters (under GitHub's :data:`COMMENT_LIMIT`). The verdict comes first, outside any
    block; then one ``<details>`` block per section (the figures, the confound warning, the
    flipped tasks, the other changed tasks), each table cut to fit with a line saying how many
    rows are left out. Log strings go through :func:`~flaketui.sanitize.markdown_text`, so no
    name closes a block or adds markup."""
    from flaketui.stats.verdict import evidence, short_verdict_text

    c = v.cmp

    def cell(text: str) -> str:
        return markdown_text(text)

    head = [f"### flaketui: {cell(c.run_b)} vs {cell(c.run_a)}", "",
            f"**{cell(short_verdict_text(evidence(c, v.alpha)) if v.scores is None else v.scores.short_verdict())}**",
            ""]
    if v.confound:
        head += [f"> :warning: {cell(v.confound)}", ""]
    figures = ["<details><summary>Figures</summary>", ""] + [f"- {cell(x)}" for x in v.lines()] + ["", "</details>", ""]
    rows = v.rows()
    flipped = [r for r in rows if r.flipped]
    moved = [r for r in rows if not r.flipped]
    header = ["| task | change | p̂ A | p̂ B | n A | n B | p adj. |", "|---|---|---:|---:|---:|---:|---:|"]

    def line(r: FlipRow) -> str:
        return (f"| {cell(r.task)} | {r.change} | {fmt.rate(r.p_a)} | {fmt.rate(r.p_b)} | {r.n_a} | {r.n_b} | "
                f"{fmt.pvalue(r.p_adjusted)} |")

    fixed = "\n".join([*head, *figures])
    sections = [(f"Flipped tasks ({len(flipped):,}: significant after Holm)", flipped),
                (f"Other changed tasks ({len(moved):,}: p̂ moved, not significant)", moved)]
    room = budget - len(fixed) - 200 * len(sections) - 1
    parts = [fixed]
    for i, (title, items) in enumerate(sections):
        share = room // (len(sections) - i)
        lines, used = [], 0
        for r in items:
            text = line(r)
            if used + len(text) + 1 > share:
                break
            lines.append(text)
            used += len(text) + 1
        room -= used
        left = len(items) - len(lines)
        body = [f"<details><summary>{title}</summary>", ""]
        body += [*header, *lines] if items else ["none"]
        if left:
            body += ["", f"… {left:,} more not shown: `flaketui compare --format html` or `--format json` lists "
                         "every task"]
        parts.append("\n".join([*body, "", "</details>", ""]))
    text = "\n".join(parts)
    assert len(text) <= budget, (len(text), budget)
    return text
