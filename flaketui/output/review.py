"""The paired review of two runs as plain rows and lines, and the triage export.

Shared by the comparison pane of the app, ``flaketui compare`` and
``flaketui triage export``. Pure Python on the core's statistics: no Textual,
no Rich.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flaketui.model import natural_key
from flaketui.output import formatting as fmt
from flaketui.output.columns import EPS
from flaketui.sanitize import markdown_text, visible
from flaketui.stats.noise import comparison_noise, noise_text
from flaketui.stats.paired import PairedComparison
from flaketui.stats.pertask import ALPHA, PerTaskTests
from flaketui.stats.suite import TaskStats
from flaketui.stats.verdict import PRIMARY, evidence, secondary_clause, verdict
from flaketui.triage import TriageEntry, TriageKey

if TYPE_CHECKING:
    from flaketui.model import Trial, TrialLog
    from flaketui.traces.normalise import Normaliser
    from flaketui.traces.task_view import FlipDivergence

BROKEN, FIXED, UNCHANGED = "broken", "fixed", "unchanged"
"""The change of a common task from run A to run B."""


@dataclass(frozen=True)
class FlipRow:
    """One common task of a paired comparison, as the flip list shows it."""

    task: str
    change: str
    """:data:`BROKEN`, :data:`FIXED` or :data:`UNCHANGED`."""
    p_a: float
    p_b: float
    n_a: int
    n_b: int
    flakiness_a: float
    flakiness_b: float
    flipped: bool = False
    """The change is significant after Holm's adjustment (over Tarone's family); never with one
    trial per task in both runs (nothing can be tested per task)."""
    p_value: float = math.nan
    """Fisher's exact two-sided p-value of the task (NaN: not tested)."""
    p_adjusted: float = math.nan
    """The Holm-adjusted p-value (NaN: not tested)."""
    tested: bool = True
    """The comparison could test tasks (False: one trial per task in both runs)."""

    @property
    def delta(self) -> float:
        """p̂_B − p̂_A (NaN when either run has no outcome)."""
        return self.p_b - self.p_a

    @property
    def abs_delta(self) -> float:
        return abs(self.delta)

    @property
    def is_flip(self) -> bool:
        """p̂ changed (the task is flipped or moved)."""
        return self.change != UNCHANGED

    @property
    def moved(self) -> bool:
        """p̂ changed without the change being significant."""
        return self.is_flip and not self.flipped

    @property
    def kind(self) -> str:
        """``flipped``, ``moved``, ``changed`` (nothing could be tested) or ``unchanged``."""
        if self.flipped:
            return FLIPPED
        if not self.is_flip:
            return UNCHANGED
        return MOVED if self.tested else CHANGED

    @property
    def to_review(self) -> bool:
        """The row is one of the changes a review goes through: flipped, or changed where nothing could
        be tested (with one trial per task every change is worth a look, none is significant)."""
        return self.flipped or (not self.tested and self.is_flip)


def flip_key(entries: Container[TriageKey], run_a: str, run_b: str, task: str) -> TriageKey:
    """The key of ``task``'s flip between runs A and B, whichever direction its review is under.

    A review is written under the direction the pane showed (A → B); after a swap
    (B → A) the same pair of runs is reviewed, so an entry under the other direction
    is found too. With entries under neither (or both), the key A → B.
    """
    key = TriageKey.flip(run_a, run_b, task)
    if key in entries:
        return key
    other = TriageKey.flip(run_b, run_a, task)
    return other if other in entries else key


FLIPPED, MOVED, CHANGED = "flipped", "moved", "changed"
"""A changed task whose change is significant after correction, one whose is not, and one that
could not be tested (one trial per task in both runs)."""

_CHANGE_ORDER = {BROKEN: 0, FIXED: 1, UNCHANGED: 2}


def paired_rows(cmp: PairedComparison, flips_only: bool = True,
                tests: PerTaskTests | None = None) -> list[FlipRow]:
    """The common tasks: flipped first, then moved, then (unless ``flips_only``) unchanged.

    Within each, broken before fixed, the largest |Δ| first, then by name.
    Without ``tests`` (:func:`flaketui.stats.pertask.per_task_tests`) no task
    is marked flipped.
    """
    fixed, broken = set(cmp.fixed), set(cmp.broken)
    flipped = tests.flipped.tolist() if tests is not None else [False] * len(cmp.tasks)
    p = tests.p_value.tolist() if tests is not None else [math.nan] * len(cmp.tasks)
    p_adj = tests.p_adjusted.tolist() if tests is not None else [math.nan] * len(cmp.tasks)
    tested = tests.tested if tests is not None else True
    rows = []
    for i, task in enumerate(cmp.tasks):
        change = BROKEN if task in broken else FIXED if task in fixed else UNCHANGED
        if flips_only and change == UNCHANGED:
            continue
        rows.append(FlipRow(task, change, float(cmp.a.p_hat[i]), float(cmp.b.p_hat[i]), int(cmp.a.n[i]),
                            int(cmp.b.n[i]), float(cmp.a.flakiness[i]),
                            float(cmp.b.flakiness[i]), bool(flipped[i]) and change != UNCHANGED,
                            float(p[i]), float(p_adj[i]), tested))
    return sorted(rows, key=flip_order)


def flip_order(row: FlipRow) -> tuple[int, int, float, tuple[tuple[int, int | str], ...]]:
    """The default order of the flip list: flipped, moved, unchanged; within each broken,
    then fixed, the largest |Δ| first, then the task ids in natural order (``task-2`` before
    ``task-10``, as every other list)."""
    d = row.abs_delta
    return (0 if row.flipped else 1, _CHANGE_ORDER[row.change], -(0.0 if math.isnan(d) else d),
            natural_key(row.task))


@dataclass(frozen=True)
class FlakinessDelta:
    """How flakiness (4·p̂·(1 − p̂)) moved from run A to run B over the common tasks.

    A controlled comparison attributes flakiness to the one variable that
    changed between the runs (e.g. temperature, or a deterministic order of
    retrieved chunks): if it falls, that variable was a cause.
    """

    more_flaky: int
    """Tasks whose flakiness rose."""
    less_flaky: int
    """Tasks whose flakiness fell."""
    mean_a: float
    mean_b: float
    flaky_a: int
    """Tasks mixed (0 < p̂ < 1: passed and failed) in run A."""
    flaky_b: int


def flakiness_delta(cmp: PairedComparison) -> FlakinessDelta:
    """Count the common tasks that became more or less flaky, and the mean flakiness A → B.

    Tasks without an outcome in either run are left out (as in the mean difference).
    """
    fa, fb = np.asarray(cmp.a.flakiness, float), np.asarray(cmp.b.flakiness, float)
    both = ~np.isnan(fa) & ~np.isnan(fb)
    fa, fb = fa[both], fb[both]
    mean_a = float(fa.mean()) if fa.size else float("nan")
    mean_b = float(fb.mean()) if fb.size else float("nan")
    return FlakinessDelta(
        more_flaky=int(np.sum(fb > fa + EPS)),
        less_flaky=int(np.sum(fb < fa - EPS)),
        mean_a=mean_a,
        mean_b=mean_b,
        flaky_a=int(np.sum(fa > EPS)),
        flaky_b=int(np.sum(fb > EPS)),
    )


def compare_lines(c: PairedComparison, alpha: float = ALPHA, tests: PerTaskTests | None = None,
                  confound: str | None = None) -> list[str]:
    """The comparison summary as plain lines (the command line, Markdown and the app).

    In order: the tasks in both runs; the counts of p̂ moved (fixed, broken,
    unchanged); the primary test; the mean difference with its CI and the
    secondary tests (where valid); the verdict (:func:`flaketui.stats.verdict.verdict`,
    which rests on the primary test alone); then, with ``tests``, the flipped
    and moved tasks; ``confound`` (a warning); the tasks only one run has; last the
    noise (the SE of the difference, the smallest difference this comparison could
    detect, the signal-to-noise ratio: :func:`flaketui.stats.noise.noise_text`).
    Names from the logs pass through :func:`flaketui.sanitize.visible`.
    """
    run_a, run_b = visible(c.run_a), visible(c.run_b)
    only = ""
    if c.only_a or c.only_b:
        only = f" ({len(c.only_a)} only in {run_a}, {len(c.only_b)} only in {run_b})"
    lines = [
        f"{len(c.tasks)} tasks in both runs{only}",
        f"fixed {len(c.fixed)}, broken {len(c.broken)}, unchanged {c.unchanged}{uncompared_text(c)}",
        f"primary test: {PRIMARY} p = {fmt.pvalue(c.primary.pvalue)}",
        f"mean difference of p̂ (B - A) = {signed(c.mean_diff.value)} "
        f"{fmt.interval(*c.mean_diff.ci, digits=3)}; " + secondary_line(c),
        visible(verdict(c, alpha)),
    ]
    if tests is not None:
        lines.append(flips_line(tests))
    if confound:
        lines.append(visible(confound))
    if c.only_a:
        lines.append(f"only in {run_a}: " + _names(c.only_a))
    if c.only_b:
        lines.append(f"only in {run_b}: " + _names(c.only_b))
    lines.append(noise_text(comparison_noise(c, alpha)))  # last: the app reads the lines above by position
    return lines


def uncompared(c: PairedComparison) -> int:
    """Common tasks neither fixed, broken nor unchanged: a run has only errored trials of them (no p̂)."""
    return len(c.tasks) - len(c.fixed) - len(c.broken) - c.unchanged


def uncompared_text(c: PairedComparison) -> str:
    """``; 1 not compared (only errored trials in a run)``, so that the counts add up to the
    tasks in both runs; empty when they do."""
    n = uncompared(c)
    return f"; {n} not compared (only errored trials in a run)" if n else ""


def secondary_line(c: PairedComparison) -> str:
    """The sign test and the sign-flip permutation test (secondary), or why they are not shown."""
    return secondary_clause(c.equal_trials, fmt.pvalue(c.test.pvalue), fmt.pvalue(c.permutation.pvalue))


def flips_line(tests: PerTaskTests) -> str:
    """How many tasks flipped (significant after Holm over Tarone's family) and how many only moved.

    ``flipped 35 (fixed 3, broken 32): significant after Holm at 5% (Fisher's exact test per task,
    Holm over Tarone's family of 120); moved 121 more (p̂ changed, not significant)``
    """
    fixed, broken = len(tests.flipped_fixed), len(tests.flipped_broken)
    head = f"flipped {fixed + broken} (fixed {fixed}, broken {broken})"
    if not tests.tested:
        if tests.single_trial:
            changed = int(tests.changed.sum())
            return (f"changed {changed}, flipped none: one trial per task in both runs, so nothing can be "
                    "tested per task (the suite test above still can)")
        return f"{head}: no task has trials in both runs"
    moved = int(tests.moved.sum())
    return (f"{head}: significant after Holm at {tests.alpha:.0%} (Fisher's exact test per task, Holm over "
            f"Tarone's family of {tests.family}); moved {moved} more (p̂ changed, not significant)")


def _names(names: Sequence[str], most: int = 20) -> str:
    return ", ".join(visible(n) for n in names[:most]) + (" …" if len(names) > most else "")


def signed(x: float) -> str:
    """A difference with its sign, ``+0.167`` (a dash when missing)."""
    return fmt.DASH if fmt.is_missing(x) else fmt.fixed(x, 3, "+")


def flakiness_line(d: FlakinessDelta) -> str:
    """``flakiness: 1 task less flaky, 0 more; mean 0.022 → 0.000 (mixed tasks 1 → 0)``."""
    less = f"{d.less_flaky} task{'s' if d.less_flaky != 1 else ''} less flaky"
    return (f"flakiness: {less}, {d.more_flaky} more; mean {fmt.rate(d.mean_a)} → "
            f"{fmt.rate(d.mean_b)} (mixed tasks {d.flaky_a} → {d.flaky_b})")


def progress_line(reviewed: int, total: int, what: str = "flips") -> str:
    """``9 of 11 flips reviewed`` (the pane counts flipped tasks)."""
    return f"{reviewed} of {total} {what} reviewed"


def change_text(row: FlipRow) -> str:
    """``1.000 → 0.000``."""
    return f"{fmt.rate(row.p_a)} → {fmt.rate(row.p_b)}"


# --- The triage export ------------------------------------------------------------


def _entry_json(e: TriageEntry) -> dict[str, Any]:
    return {"label": e.label, "note": e.note, "reviewed": e.reviewed, "updated": e.updated or None}


def _task_entry_json(e: TriageEntry) -> dict[str, Any]:
    """A task's review with the suggested source of flakiness beside the person's ``label``, apart."""
    return {**_entry_json(e), "suggested_cause": e.suggested}


def flip_divergences(log: TrialLog, cmp: PairedComparison, read: Callable[[int], Trial],
                     normaliser: Normaliser | None = None, mode: str | None = None) -> dict[str, FlipDivergence]:
    """Each flip's (:func:`paired_rows`) first divergence and suggested source, by task: the pair
    the comparison's trace screen shows first (:func:`~flaketui.traces.task_view.flip_divergence`).
    A flip whose trials carry no trace is left out (nothing is read for it). When the two runs'
    configurations differ (:func:`~flaketui.stats.confounds.confounds`: another agent, model,
    timeout), each source reads ``configuration``: the runs were not run alike, so a difference
    is never the model's own sampling."""
    from dataclasses import replace

    from flaketui.loading import read_trial
    from flaketui.model import ERRORED
    from flaketui.stats.confounds import CONFIGURATION, DEFAULT_CONFIG_FIELDS, confounds, run_config
    from flaketui.traces.task_view import flip_divergence

    configured = bool(confounds(run_config(log, cmp.run_a, DEFAULT_CONFIG_FIELDS, read_trial),
                                run_config(log, cmp.run_b, DEFAULT_CONFIG_FIELDS, read_trial)))

    outcomes = log.run_outcomes(cmp.run_a), log.run_outcomes(cmp.run_b)
    out: dict[str, FlipDivergence] = {}
    for row in paired_rows(cmp):
        sides = []
        for o in outcomes:
            rows = o.task_rows(o.index(row.task))
            rows = rows[np.asarray(log.has_trace[rows], dtype=bool) & (np.asarray(log.outcome[rows]) != ERRORED)]
            sides.append([read(int(r)) for r in rows.tolist()])
        if all(sides):
            found = flip_divergence(sides[0], sides[1], row.change == BROKEN, normaliser, mode)
            if found is not None:
                out[row.task] = replace(found, cause=CONFIGURATION) if configured else found
    return out


def comparison_export(cmp: PairedComparison, entries: Mapping[TriageKey, TriageEntry],
                      divergences: Mapping[str, FlipDivergence] | None = None) -> dict[str, Any]:
    """One comparison of the export: the summary and every flip with its review and, where its
    trials have traces, its first divergence and suggested source (``first_divergence``,
    :meth:`~flaketui.traces.task_view.FlipDivergence.to_json`; null: none found)."""
    from flaketui.stats.pertask import per_task_tests

    d = flakiness_delta(cmp)
    tests = per_task_tests(cmp)
    flipped = set(tests.flipped_fixed) | set(tests.flipped_broken)
    flips = []
    for row in paired_rows(cmp):
        e = entries.get(TriageKey.flip(cmp.run_a, cmp.run_b, row.task)) or TriageEntry()
        flips.append({"task": row.task, "change": row.change, "flipped": row.task in flipped, "changed": True,
                      "p_hat_a": fmt.json_float(row.p_a),
                      "p_hat_b": fmt.json_float(row.p_b), "n_a": row.n_a, "n_b": row.n_b,
                      "abs_delta": fmt.json_float(row.abs_delta), **_entry_json(e),
                      "first_divergence": None if (dv := (divergences or {}).get(row.task)) is None
                      else dv.to_json()})
    return {
        "run_a": cmp.run_a,
        "run_b": cmp.run_b,
        "tasks": len(cmp.tasks),
        "only_a": cmp.only_a,
        "only_b": cmp.only_b,
        "fixed": len(cmp.fixed),
        "broken": len(cmp.broken),
        "unchanged": cmp.unchanged,
        "winner": evidence(cmp).winner_run,
        "primary_test": {"name": PRIMARY, "p_value": fmt.json_float(cmp.primary.pvalue)},
        "sign_test_p": cmp.test.pvalue if cmp.equal_trials else None,
        "mean_diff": fmt.json_float(cmp.mean_diff.value),
        "mean_diff_ci": fmt.json_interval(*cmp.mean_diff.ci),
        "verdict": verdict(cmp),
        "flakiness": {"more_flaky": d.more_flaky, "less_flaky": d.less_flaky,
                      "mean_a": fmt.json_float(d.mean_a), "mean_b": fmt.json_float(d.mean_b),
                      "flaky_a": d.flaky_a, "flaky_b": d.flaky_b},
        "reviewed": sum(1 for f in flips if f["reviewed"]),
        "flips": flips,
    }


def flaky_export(stats: Iterable[TaskStats],
                 entries: Mapping[TriageKey, TriageEntry]) -> list[dict[str, Any]]:
    """Per run, every task that both passed and failed (its traces can be told apart) and every task
    with a note: its figures, review and suggested cause."""
    out = []
    for st in stats:
        for i, task in enumerate(st.tasks):
            key = TriageKey(st.run, task)
            if not st.mixed[i] and not (key in entries and entries[key].reviewed_or_noted):
                continue
            e = entries.get(key) or TriageEntry()
            out.append({
                "run": st.run, "task": task, "class": st.classes[i], "n": int(st.n[i]),
                "passes": int(st.passes[i]), "p_hat": fmt.json_float(st.p_hat[i]),
                "p_hat_ci": fmt.json_interval(st.p_hat_ci.low[i], st.p_hat_ci.high[i]),
                "flakiness": fmt.json_float(st.flakiness[i]),
                "pass_hat_k": fmt.json_float(st.pass_hat_k[i]), **_task_entry_json(e),
            })
    return out


def triage_export(
    triage_file: str,
    k: int,
    comparisons: Sequence[PairedComparison],
    stats: Sequence[TaskStats],
    entries: Mapping[TriageKey, TriageEntry],
    divergences: Sequence[Mapping[str, FlipDivergence]] | None = None,
    confounds: Sequence[list[dict[str, str]]] | None = None,
) -> dict[str, Any]:
    """The ``triage export --format json`` document (``divergences``: per comparison, its
    flips' :func:`flip_divergences`; ``confounds``: per comparison, the configuration fields
    whose values differ, :func:`~flaketui.stats.confounds.confound_values`, as ``confounds``).

    Every entry of the triage file appears: under its comparison's flips, under
    the flaky tasks, or else under ``other_notes`` (a run or task not in the
    logs, or a task that no longer flips).
    """
    comps = [comparison_export(c, entries, divergences[i] if divergences else None)
             for i, c in enumerate(comparisons)]
    for i, c in enumerate(comps):
        c["confounds"] = list(confounds[i]) if confounds else []
    flaky = flaky_export(stats, entries)
    shown = {TriageKey(f["run"], f["task"]) for f in flaky}
    for c in comps:
        shown.update(TriageKey.flip(c["run_a"], c["run_b"], f["task"]) for f in c["flips"])
    other = [{"run": key.run, "against": key.against or None, "task": key.task, **_task_entry_json(e)}
             for key, e in sorted(entries.items()) if key not in shown and e.reviewed_or_noted]
    return {"triage_file": triage_file, "k": k, "comparisons": comps, "flaky_tasks": flaky,
            "other_notes": other}


def _md(text: Any) -> str:
    """A table cell: pipes escaped, line breaks as <br>, every other control character
    spelled out (:func:`~flaketui.sanitize.visible`: ``ESC ]52;…`` never reaches a terminal
    that shows the report)."""
    if text is None:
        return ""
    return markdown_text(text, multiline=True)


def _mark(reviewed: bool) -> str:
    return "yes" if reviewed else ""


def divergence_cell(dv: Mapping[str, Any] | None) -> str:
    """``step 3 (A trial 0 vs B trial 2)``, ``none`` (the pair does not part), or empty (no pair)."""
    if dv is None:
        return ""
    pair = f"A trial {dv['trial_a']} vs B trial {dv['trial_b']}"
    return f"none ({pair})" if dv["step"] is None else f"step {dv['step']} ({pair})"


def triage_markdown(doc: Mapping[str, Any], comparisons: Sequence[PairedComparison]) -> str:
    """The ``triage export --format markdown`` report, from :func:`triage_export`'s document."""
    out = ["# flaketui triage", "", f"Notes from `{visible(doc['triage_file'])}`.", ""]
    for c, cmp in zip(doc["comparisons"], comparisons, strict=True):
        out += [f"## {_md(c['run_b'])} vs {_md(c['run_a'])}", ""]
        lines = compare_lines(cmp) + [flakiness_line(flakiness_delta(cmp)),
                                      progress_line(c["reviewed"], len(c["flips"]))]
        if c.get("confounds"):
            from flaketui.stats.confounds import values_text

            lines.append(f"configurations differ: {values_text(c['confounds'])}")
        out += [f"- {_md(x)}" for x in lines] + [""]
        if c["flips"]:
            out += ["| task | change | p̂ A → p̂ B | n A | n B | abs Δ | label | note | reviewed | first divergence "
                    "| suggested source |",
                    "|---|---|---|---:|---:|---:|---|---|---|---|---|"]
            for f in c["flips"]:
                dv = f.get("first_divergence")
                out.append(
                    f"| {_md(f['task'])} | {f['change']} | {fmt.rate(f['p_hat_a'])} → "
                    f"{fmt.rate(f['p_hat_b'])} | {f['n_a']} | {f['n_b']} | "
                    f"{fmt.rate(f['abs_delta'])} | {_md(f['label'])} | {_md(f['note'])} | "
                    f"{_mark(f['reviewed'])} | {_md(divergence_cell(dv))} | "
                    f"{_md(dv['suggested_source'] if dv else None)} |")
            out.append("")
    out += [f"## Mixed tasks: passed and failed (k = {doc['k']})", ""]
    if doc["flaky_tasks"]:
        k = doc["k"]
        out += [f"| run | task | n | passes | p̂ | 95% CI | pass^{k} | flakiness | suggested cause | label "
                "| note | reviewed |", "|---|---|---:|---:|---:|---|---:|---:|---|---|---|---|"]
        for f in doc["flaky_tasks"]:
            ci = f["p_hat_ci"] or (None, None)
            out.append(
                f"| {_md(f['run'])} | {_md(f['task'])} | {f['n']} | {f['passes']} | "
                f"{fmt.rate(f['p_hat'])} | {fmt.interval(*ci)} | {fmt.rate(f['pass_hat_k'])} | "
                f"{fmt.rate(f['flakiness'])} | {_md(f['suggested_cause'])} | {_md(f['label'])} | "
                f"{_md(f['note'])} | {_mark(f['reviewed'])} |")
    else:
        out.append("No mixed task.")
    out.append("")
    if doc["other_notes"]:
        out += ["## Other notes", "", "Notes on runs or tasks that are not flips or mixed tasks "
                "in these logs.", "", "| run | against | task | suggested cause | label | note | reviewed |",
                "|---|---|---|---|---|---|---|"]
        for f in doc["other_notes"]:
            out.append(f"| {_md(f['run'])} | {_md(f['against'])} | {_md(f['task'])} | "
                       f"{_md(f['suggested_cause'])} | {_md(f['label'])} | {_md(f['note'])} | "
                       f"{_mark(f['reviewed'])} |")
        out.append("")
    return "\n".join(out)


def comparison_pairs(runs: Sequence[str], entries: Iterable[TriageKey],
                     chosen: tuple[str, str] | None = None) -> list[tuple[str, str]]:
    """The (A, B) pairs to export: the chosen pair (default: the first two runs), then
    every pair the triage file has flip notes on whose runs are both loaded."""
    pairs: list[tuple[str, str]] = []
    if chosen:
        pairs.append(chosen)
    elif len(runs) >= 2:
        pairs.append((runs[0], runs[1]))
    loaded = set(runs)
    for key in entries:
        pair = (key.against, key.run)
        if key.against and key.against in loaded and key.run in loaded and pair not in pairs:
            pairs.append(pair)
    return pairs
