"""Output of ``report``: Rich tables, and the JSON / CSV / Markdown contracts (the comparison's
are in :mod:`flaketui.output.compare`, the gate's in :mod:`flaketui.output.gate`).

The JSON field names are a contract for scripts (README, "JSON output").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from flaketui.output import formatting as fmt
from flaketui.output import stream
from flaketui.output.cells import cut_names
from flaketui.output.columns import (
    SCORE_KEYS,
    TASK_COLUMNS,
    TaskColumn,
    cause_column,
    class_style,
    consistency_column,
)
from flaketui.model import ERRORED_AS_MEANING, who_ran_line
from flaketui.sanitize import csv_cell, markdown_text, mask_secrets, mask_text, visible
from flaketui.stats.noise import NoiseFloor, floor_line
from flaketui.stats.suite import MeanEstimate, SuiteSummary, TaskStats

if TYPE_CHECKING:  # Rich and the comparison helpers load when a table or comparison is printed
    from rich.console import Console, Group
    from rich.text import Text

    from flaketui.model import Problem, TrialLog
    from flaketui.stats.published import Published
    from flaketui.traces.burst import Exclusion
    from flaketui.traces.causes import CauseSuggestion, Rescoring

Causes = Mapping[str, Mapping[str, "CauseSuggestion"]]
"""``report --causes``: run name → flaky task name → its suggested source of flakiness."""


@dataclass(frozen=True)
class ReportNotes:
    """What the report says beside its figures: the trials ``--exclude-window`` left out (a line in
    the summary, an ``excl.`` column, ``excluded`` per task in JSON) and the ``--rescored`` pairing."""

    exclusion: Exclusion | None = None
    rescoring: Mapping[str, Rescoring] | None = None
    errored: Mapping[str, Mapping[str, int]] | None = field(default_factory=dict)
    """Each run's errored trials by kind (:func:`~flaketui.loading.error_types.errored_by_type`;
    None: too many to read back, not counted)."""
    rules: Mapping[str, str] = field(default_factory=dict)
    """Each run's errored-trial rule as the summary names it (:meth:`~flaketui.model.TrialLog.errored_rule`)."""
    meta: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each run's metadata (:attr:`~flaketui.model.TrialLog.run_meta`): who ran it, JSON ``meta``."""
    published: Mapping[str, Published] = field(default_factory=dict)
    """Each run's published figures beside flaketui's (:func:`~flaketui.stats.published.check`)."""

    retries: Mapping[str, Any] | None = None
    """Each run's :class:`~flaketui.stats.retries.RetryAudit` (runs whose log marks no retried
    trial are absent)."""

    @classmethod
    def of(cls, log: TrialLog, runs: Sequence[str], **kw: Any) -> ReportNotes:
        """The notes a log gives its ``runs``: rules, metadata and published figures (``kw``: the rest)."""
        from flaketui.stats.published import check

        checked = {r: c for r in runs if (c := check(log, r)) is not None}
        return cls(rules={r: log.errored_rule(r) for r in runs}, meta={r: log.run_meta.get(r, {}) for r in runs},
                   published=checked, **kw)

    def retry_json(self, run: str) -> dict[str, Any] | None:
        """``retry_audit`` of ``run`` in JSON (null: no trial marked as retried)."""
        audit = (self.retries or {}).get(run)
        return None if audit is None else audit.to_json()

    def errored_json(self, run: str) -> dict[str, int] | None:
        """``errored_by_type`` of ``run`` in JSON: kind → count (null: not counted)."""
        return None if self.errored is None else dict(self.errored.get(run, {}))

    def errored_kinds(self, run: str) -> str | None:
        """``AgentTimeoutError 1, RuntimeError 1`` for ``run`` (None: none errored)."""
        from flaketui.loading.error_types import errored_by_type_text

        return errored_by_type_text(None if self.errored is None else dict(self.errored.get(run, {})))

    def head(self, run: str) -> list[str]:
        """The lines above a run's summary: who ran it (log content made visible)."""
        line = who_ran_line(dict(self.meta.get(run, {})))
        return [] if line is None else [visible(mask_text(line))]  # a model "name" may be a URL with a password

    def lines(self, run: str) -> list[str]:
        """The summary's lines about ``run`` after the figures (log content made visible)."""
        out = []
        if run in self.published:
            checked = self.published[run]
            out.append(checked.line())
            out += [f"warning: {w}" for w in checked.warnings()]
        if self.exclusion is not None:
            out.append(self.exclusion.line(run))
        if self.rescoring is not None and run in self.rescoring:
            out.append(self.rescoring[run].line())
        if self.retries and run in self.retries:
            out.append(self.retries[run].line())
        return [visible(x) for x in out]


NO_NOTES = ReportNotes()


def excluded_column(excluded: Mapping[str, int]) -> TaskColumn:
    """The ``excl.`` column: each task's trials left out by ``--exclude-window`` (task name → count)."""
    from flaketui.output.columns import count_column

    return count_column("excluded", "excl.", lambda st: np.array([excluded.get(t, 0) for t in st.tasks],
                                                                  dtype=np.int64),
                        "trials left out: they started in an --exclude-window")

FORMATS = ("table", "json", "csv", "markdown")
CURVE_IN_TEXT = 12
"""The pass^k row (k = 1..K) is printed above a table when K is at most this."""


def display_order(stats: TaskStats) -> np.ndarray:
    """Most dangerous first: flakiness descending, then p̂ ascending, then natural name order
    (:func:`~flaketui.output.stream.flakiest_order`, vectorised)."""
    return stream.flakiest_order(stats)


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
        "pass_hat_k_curve_left_out": s.curve_left_out,
        "errored_as": s.errored_as,
        "pass_at_1_errored_range": fmt.json_interval(*s.pass_at_1_errored_range),
        # null for a run that is not graded (pass/fail outcomes, or 0/1 rewards whose mean is pass@1)
        "mean_score": None if s.mean_score is None else fmt.json_float(s.mean_score.value),
        "mean_score_ci": None if s.mean_score is None else fmt.json_interval(*s.mean_score.ci),
        "within_task_share": fmt.json_float(s.within_task_share),
        "score_moved_tasks": None if s.mean_score is None else s.score_moved[0],
        "score_moved_same_outcome_tasks": None if s.mean_score is None else s.score_moved[1],
        "flaky_cap": s.flaky_cap,
        "undetermined_tasks": s.undetermined_tasks,
        "stable_tasks": s.stable_tasks,
        "mixed_tasks": s.mixed_tasks,
        "expected_flaky": fmt.json_float(s.expected_flaky),
        "expected_flaky_ci": list(s.expected_flaky_ci),
        "prior": {"a": fmt.json_float(s.prior[0]), "b": fmt.json_float(s.prior[1]), "fitted": s.prior[2]},
        "noise_floor": noise_floor_json(s.noise_floor),
        "planned_trials": s.planned_trials,
        "estimator": estimator_text(s),
    }


def estimator_text(s: SuiteSummary) -> str:
    """Which trials the suite's p̂ and pass^k were estimated from."""
    if s.planned_trials is None:
        return "all trials of each task"
    return (f"the first {s.planned_trials} trials of each task (--planned-trials): unbiased when trials were "
            f"added to some tasks after seeing their outcomes")


def noise_floor_json(f: NoiseFloor | None) -> dict[str, Any] | None:
    """The suite's noise floor (:func:`flaketui.stats.noise.suite_noise_floor`): ``mde`` the smallest
    change against another run of this design told from noise at 80% power; ``tasks_for`` and
    ``trials_for`` what ``target`` needs; the variance split and its ``icc``."""
    if f is None:
        return None
    return {"mde": fmt.json_float(f.mde), "tasks": f.tasks, "trials": f.trials, "target": f.target,
            "tasks_for": f.tasks_for, "trials_for": f.trials_for, "between": fmt.json_float(f.between),
            "within": fmt.json_float(f.within), "icc": fmt.json_float(f.icc)}


REPORT_KEYS = ("task", "n", "passes", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k",
               "pass_hat_k_ci", "flakiness", "class", "to_decide", "mixed", "p_flaky", "rule_of_three")
"""Columns of the table and Markdown reports (from :data:`~flaketui.columns.TASK_COLUMNS`)."""

CSV_KEYS = ("task", "n", "passes", "errored", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k",
            "pass_hat_k_ci", "flakiness", "class", "mixed", "p_flaky", "to_decide")
"""Per-task columns of the CSV report, after ``run`` and ``k``."""

CSV_COLUMNS = ("run", "k", *(name for key in CSV_KEYS for name in TASK_COLUMNS[key].csv_names))

TABLE_LABELS = {"passes": "pass"}
"""Shorter headers in the terminal table (where width is dear)."""


def tasks_json(st: TaskStats) -> list[dict[str, Any]]:
    """One object per task, built column by column (10k tasks in a few ms)."""
    keys = list(TASK_COLUMNS)
    columns = zip(*(TASK_COLUMNS[key].json(st) for key in keys), strict=True)
    return [dict(zip(keys, row, strict=True)) for row in columns]


def report_json(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]],
                causes: Causes | None = None, tasks: Callable[[TaskStats], Any] | None = None,
                notes: ReportNotes = NO_NOTES) -> dict[str, Any]:
    """The ``report --format json`` document; with ``causes`` (``--causes``) each flaky task also
    gets its suggestion's keys (:meth:`~flaketui.traces.causes.CauseSuggestion.to_json`) and each
    run a ``cause_breakdown`` (mixed tasks per suspected cause, most first), its outage windows
    (``bursts``) and its ``failure_modes`` (the flaky tasks' failing and errored trials grouped
    by signature: ``[{signature, kind, trials, tasks, example: {task, trial}}]``), its failing
    trials by ``first_critical_source`` (agent / user / environment / grader / unknown) and, when
    the trials carry τ²'s reviews, the harness's own ``harness_first_critical_source`` (else null).
    ``tasks`` gives what stands for a run's ``tasks`` (default :func:`tasks_json`;
    :mod:`flaketui.output.json_stream` puts a marker there and writes the tasks itself).
    ``notes``: with ``--exclude-window`` each task gets ``excluded`` (its trials left out) and the
    run ``excluded`` (:meth:`~flaketui.traces.burst.Exclusion.to_json`); with ``--rescored`` the run
    gets ``rescored`` (:meth:`~flaketui.traces.causes.Rescoring.to_json`)."""
    out = []
    for st, sm in runs:
        checked = notes.published.get(st.run)
        entry: dict[str, Any] = {"run": st.run, "meta": mask_secrets(dict(notes.meta.get(st.run, {}))),
                                 "summary": summary_json(sm), "errored_by_type": notes.errored_json(st.run),
                                 "published": None if checked is None else checked.to_json(),
                                 "retry_audit": notes.retry_json(st.run), "tasks": (tasks or tasks_json)(st)}
        if notes.exclusion is not None:
            excluded = notes.exclusion.by_task.get(st.run, {})
            for task in entry["tasks"]:
                task["excluded"] = excluded.get(task["task"], 0)
            entry["excluded"] = notes.exclusion.to_json(st.run)
        if notes.rescoring is not None and st.run in notes.rescoring:
            entry["rescored"] = notes.rescoring[st.run].to_json()
        if causes is not None:
            from flaketui.traces.causes import (
                breakdown,
                first_critical_sources,
                harness_first_critical_sources,
                suite_bursts,
                suite_failure_modes,
            )

            found = causes.get(st.run, {})
            for task in entry["tasks"]:
                if task["task"] in found:
                    task.update(found[task["task"]].to_json())
            entry["cause_breakdown"] = dict(breakdown(found.values()))
            entry["first_critical_source"] = first_critical_sources(found.values())
            entry["harness_first_critical_source"] = harness_first_critical_sources(found.values())
            entry["bursts"] = [w.to_json() for w in suite_bursts(found.values())]
            entry["failure_modes"] = [m.to_json() for m in suite_failure_modes(found.values())]
        out.append(entry)
    modes = list(dict.fromkeys(sm.errored_as for _, sm in runs))
    return {"k": k, "errored_as": modes[0] if len(modes) == 1 else "mixed" if modes else "apart", "runs": out}


# --- CSV and Markdown ---------------------------------------------------------


def csv_chunks(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]]) -> Iterator[str]:
    """The CSV report in pieces (a header, then a few thousand rows at a time): one row per
    (run, task) in task order; empty cells for missing values."""
    keys = CSV_KEYS + (SCORE_KEYS if any(st.scores is not None for st, _ in runs) else ())
    columns = [TASK_COLUMNS[key] for key in keys]
    yield ",".join(["run", "k", *(name for c in columns for name in c.csv_names)]) + "\n"
    for st, _ in runs:
        yield from stream.csv_chunks(st, k, csv_cell(st.run), columns)


def report_csv(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]]) -> str:
    """The whole CSV report as one string (:func:`csv_chunks` joined)."""
    return "".join(csv_chunks(k, runs))


def md_escape(text: str) -> str:
    """A log string in a Markdown cell or heading: :func:`~flaketui.sanitize.markdown_text`."""
    return markdown_text(text)


def class_line(s: SuiteSummary) -> str:
    """The headline of the classes: flaky, undetermined and stable tasks against the cap, the mixed ones,
    and the empirical-Bayes expected number of truly flaky tasks."""
    low, high = s.expected_flaky_ci
    # Too few tasks with repeated trials: the posterior rests on Jeffreys' prior, not on a fit to the suite.
    prior = ("a Beta prior fitted to the tasks" if s.prior[2] else
             "Jeffreys' Beta(½, ½) prior (too few repeated tasks to fit one)")
    eb = ("" if s.expected_flaky != s.expected_flaky else
          f"; Σ P(flaky) {s.expected_flaky:.1f} [{low}, {high}] under {prior} (a model)")
    return (f"{s.flaky_tasks} flaky, {s.undetermined_tasks} undetermined, {s.stable_tasks} stable "
            f"(flakiness cap {s.flaky_cap:g}); {s.mixed_tasks} mixed (passed and failed){eb}")


def summary_lines(s: SuiteSummary, notes: ReportNotes = NO_NOTES, name: Callable[[str], str] = visible) -> list[str]:
    """The suite summary as plain lines (shared by table, Markdown and page): who ran the run, its
    figures, and how its errored trials counted (by kind, and the rule that counted them); ``name``
    shows the run's name."""
    k = s.k
    lines = [*notes.head(s.run),
        f"run {name(s.run)}: {s.tasks} tasks, {s.trials} trials, {s.errored} errored, k = {k}"
        + (" (clustered SE)" if s.pass_at_1.clustered else ""),
        class_line(s),
        # At k = 1 pass@k and pass^k are pass@1: one figure, said once.
        "   ".join(f"{label} = {fmt.rate(est.value)} {fmt.suite_interval(est)}" for label, est in
                   ([("pass@1", s.pass_at_1)] if k == 1 else
                    [("pass@1", s.pass_at_1), (f"pass@{k}", s.pass_at_k), (f"pass^{k}", s.pass_hat_k)])),
    ]
    if 1 < k <= CURVE_IN_TEXT:
        lines.append(f"pass^k for k=1..{len(s.pass_hat_k_curve)}: " + " ".join(fmt.rate(v) for v in s.pass_hat_k_curve)
                     + (f" (over the {s.tasks - s.curve_left_out} tasks with {len(s.pass_hat_k_curve)} trials; "
                        f"{s.curve_left_out} left out)" if s.curve_left_out else ""))
    lines.extend(score_lines(s))
    rule = notes.rules.get(s.run, f"--errored-as {s.errored_as}")
    if s.errored or (s.errored_as != "apart" and rule.startswith("--errored-as")):
        low, high = s.pass_at_1_errored_range
        how = ERRORED_AS_MEANING.get(s.errored_as, s.errored_as)
        kinds = notes.errored_kinds(s.run)
        lines.append(f"errored trials{f' ({visible(kinds)})' if kinds else ''} {how} ({rule}); had they all "
                     f"failed / all passed, pass@1 = {fmt.rate(low)} / {fmt.rate(high)}")
    if s.planned_trials is not None:
        lines.append(f"estimated from {estimator_text(s)}")
    if s.noise_floor is not None:
        lines.append(floor_line(s.noise_floor))
    return lines


def score_lines(s: SuiteSummary) -> list[str]:
    """The graded run's mean score, its interval and the share of score variance within tasks
    (nothing for a run that is not graded)."""
    if s.mean_score is None:
        return []
    est = s.mean_score
    share = ("" if s.within_task_share is None
             else f"; {s.within_task_share:.0%} of the score variance is within tasks (1 - ICC)")
    moved, steady = s.score_moved
    return [f"mean score = {fmt.rate(est.value)} {fmt.suite_interval(est)} over {est.tasks} tasks{share}",
            f"{moved} task(s) scored differently across trials, {steady} of them with the same pass/fail every trial"]


def report_columns(run: str, causes: Causes | None = None, notes: ReportNotes = NO_NOTES,
                   graded: bool = False) -> list[TaskColumn]:
    """The columns of the table and Markdown reports; with ``causes``, ``cause?`` and ``consist.`` after ``class``;
    with an exclusion, ``excl.`` after ``passes``; for a ``graded`` run the score columns after ``p̂``'s interval."""
    keys = list(REPORT_KEYS)
    if graded:
        at = keys.index("p_hat_ci") + 1
        keys[at:at] = SCORE_KEYS
    columns = [TASK_COLUMNS[key] for key in keys]
    if notes.exclusion is not None:
        columns.insert(keys.index("passes") + 1, excluded_column(notes.exclusion.by_task.get(run, {})))
    if causes is not None:
        found = causes.get(run, {})
        at = next(i for i, c in enumerate(columns) if c.key == "class") + 1
        columns.insert(at, cause_column({t: s.cause for t, s in found.items()}))
        columns.insert(at + 1, consistency_column({t: s.consistency.trajectory for t, s in found.items()}))
    return columns


def cause_lines(st: TaskStats, causes: Causes | None, order: Sequence[int] | np.ndarray | None = None) -> list[str]:
    """With ``--causes``: the breakdown line, then each flaky task's suggestion, evidence and
    decisive fork, one line each, in display order (``order``, when already known; log content
    made visible)."""
    if causes is None:
        return []
    from flaketui.traces.causes import breakdown_line, sources_line, suite_bursts, suite_failure_modes

    found = causes.get(st.run, {})
    lines = [breakdown_line(found.values())]
    by_source = sources_line(list(found.values()))
    if by_source is not None:
        lines.append(visible(by_source))
    lines += [f"outage: {w.text()}; --exclude-window {w.exclude_window()} leaves it out of the rates"
              for w in suite_bursts(found.values())]
    modes = suite_failure_modes(found.values())
    lines += [visible(f"failure mode: {m.text()}") for m in modes[:FAILURE_MODE_LINES]]
    if len(modes) > FAILURE_MODE_LINES:
        lines.append(f"… {len(modes) - FAILURE_MODE_LINES} more failure modes (--format json lists them all)")
    for i in (display_order(st) if order is None else order):
        s = found.get(st.tasks[i])
        if s is None:
            continue
        text = f"{st.tasks[i]}: {s.text()}"
        if s.evidence is not None:
            text += f"; {s.evidence.text()}"
        if s.grader is not None and s.grader.split_trials:
            text += (f"; graders split on {s.grader.split_trials} of {s.grader.trials} trials "
                     f"({s.grader.share:.0%} of the outcome variance)")
        for att in s.attribution[:2]:
            sources = ", ".join(f"{e['source']}" + (f" ({e['severity']})" if e.get("severity") else "")
                                for e in att["errors"]) or att.get("summary") or "no error named"
            text += f"; harness's {att['review']} of trial {att['trial']}: {sources}"
        if s.decisive_fork is not None:
            text += f"; decisive fork: {s.decisive_fork.text()}"
        lines.append(visible(text))
    return lines


def _head_lines(why: Sequence[str]) -> int:
    """How many of :func:`cause_lines` after the breakdown line belong in the summary: the line of
    failures by first critical source."""
    if len(why) < 2:  # no --causes: the trace modules stay unloaded
        return 0
    from flaketui.traces.causes import SOURCES_LINE

    return 1 if why[1].startswith(SOURCES_LINE) else 0


FAILURE_MODE_LINES = 5
"""Failure modes the table and Markdown reports list under the breakdown line (JSON lists every one)."""


def markdown_chunks(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]], causes: Causes | None = None,
                    top: int | None = None, notes: ReportNotes = NO_NOTES) -> Iterator[str]:
    """The Markdown report in pieces (a few thousand table rows at a time); with ``top``, each
    run's table keeps its ``top`` flakiest tasks and a line says how many are left out."""
    yield f"# flaketui report (k = {k})\n\n"
    for r, (st, sm) in enumerate(runs):
        # the summary and the notes name what the logs say: escaped
        lines = [*map(md_escape, summary_lines(sm, notes)), *map(md_escape, notes.lines(st.run))]
        order = display_order(st)
        why = cause_lines(st, causes, order)
        head = why[:1]  # the breakdown; the failures by first critical source lead the causes' list
        body = "  \n".join([*lines, *map(md_escape, head)])
        yield ("\n" if r else "") + f"## {md_escape(st.run)}\n\n" + body + "\n"
        for w in sm.warnings:
            yield f"\n> warning: {md_escape(w)}\n"
        columns = report_columns(st.run, causes, notes, st.scores is not None)
        yield "\n| " + " | ".join(c.header(k) for c in columns) + " |\n|" + "---|" * len(columns) + "\n"
        yield from stream.markdown_rows(st, columns, order[:top])
        if top is not None and len(order) > top:
            yield f"\n{left_out_line(len(order) - top, top, first=first_shown(st))}\n"
        yield f"\n{TABLE_LEGEND}\n"
        if len(why) > len(head):
            yield "\n### Suspected causes\n\n" + "\n".join(f"- {md_escape(x)}" for x in why[len(head):]) + "\n"


def report_markdown(k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]], causes: Causes | None = None) -> str:
    """The whole Markdown report as one string (:func:`markdown_chunks` joined)."""
    return "".join(markdown_chunks(k, runs, causes))


def first_shown(st: TaskStats) -> str:
    """What a cut task table's first rows are, as :func:`left_out_line` names them: ``flakiest``,
    or ``least passing`` when no task is flaky at this k (with k = 1 every flakiness is 0, and the
    order, :func:`~flaketui.output.stream.flakiest_order`, falls to p̂ ascending)."""
    flak = np.asarray(st.flakiness, dtype=np.float64)
    return "flakiest" if bool(np.any(flak[~np.isnan(flak)] > 0)) else "least passing"


def problems_line(problems: Sequence[Problem]) -> str:
    """What loading met, counted as it is: ``2 lines skipped while loading, 1 note`` (a note, such
    as a Harbor job's trial count, skips nothing and is never called a skipped line); empty: none."""
    from flaketui.loading.loader import problem_kinds

    skipped = notes = 0
    for group in problem_kinds(problems):
        if group.notice:
            notes += group.count
        else:
            skipped += group.count
    parts = []
    if skipped:
        parts.append(f"{skipped} line{'s' if skipped != 1 else ''} skipped while loading")
    if notes:
        parts.append(f"{notes} note{'s' if notes != 1 else ''} from loading")
    return ", ".join(parts)


def left_out_line(left: int, shown: int, what: str = "task", first: str = "flakiest") -> str:
    """What a cut table says under its rows."""
    return (f"… {left:,} more {what}{'s' if left != 1 else ''} not shown (the {shown:,} {first} are): "
            f"--all shows every row, --top N the N {first}, --format json or csv every {what}")


def left_out_text(left: int, shown: int, what: str = "task", first: str = "flakiest") -> Text:
    """:func:`left_out_line` as the terminal shows it, dim."""
    from rich.text import Text

    return Text(left_out_line(left, shown, what, first), style="dim")


# --- Rich ---------------------------------------------------------------------


def report_table(st: TaskStats, sm: SuiteSummary, causes: Causes | None = None, top: int | None = None,
                 notes: ReportNotes = NO_NOTES) -> Group:
    """The suite summary above a table of tasks, most dangerous first; with ``causes``
    (``--causes``) a ``cause?`` column, the breakdown line and each suggestion's evidence.
    ``top``: only the ``top`` flakiest tasks, and a line saying how many are left out. Built
    whole in memory, for a screenful of rows (:func:`print_streamed_table` writes any number)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    order = display_order(st)
    shown = order[:top]
    why = cause_lines(st, causes, order)
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    columns = report_columns(st.run, causes, notes, st.scores is not None)
    keys = [c.key for c in columns]
    for col, name, low in zip(columns, *table_headers(st, columns), strict=True):
        if col.key == "task":
            # In a narrow terminal the task names give way (cut with …); figures never do.
            longest = max((len(st.tasks[i]) for i in shown.tolist()), default=4)
            table.add_column(name, no_wrap=True, min_width=min(12, longest), max_width=stream.TASK_MAX_WIDTH,
                             overflow="ellipsis")
        elif col.key in stream.RIGHT_ALIGNED:
            table.add_column(name, justify="right", no_wrap=True, min_width=low)
        else:
            table.add_column(name, no_wrap=True, min_width=low or None,
                             style="dim" if col.key == "suspected_cause" else None)
    # Cut in the middle, keeping what tells the names apart (``….easy`` / ``….hard``).
    names = cut_names([visible(st.tasks[i]) for i in shown.tolist()], stream.TASK_MAX_WIDTH)
    for i, name in zip(shown.tolist(), names, strict=True):
        cells: list[str | Text] = [c.text(st, i) for c in columns]
        cells[keys.index("task")] = Text(name)  # a name from the log: not markup
        cells[keys.index("class")] = Text(st.classes[i], style=class_style(st.classes[i]))
        table.add_row(*cells)
    left = len(order) - len(shown)
    cut = [left_out_text(left, len(shown), first=first_shown(st))] if left else []
    return Group(*table_head(sm, why, notes), table, *cut, *table_tail(why))


def table_headers(st: TaskStats, columns: Sequence[TaskColumn]) -> tuple[list[str], list[int]]:
    """The terminal table's header of each column and its narrowest width (figures keep theirs)."""
    count = len(str(int(st.n.max()))) if len(st) else 1
    widths = {"n": count, "passes": count, "p_hat": 5, "p_hat_ci": 12, "pass_at_k": 5,
              "pass_hat_k": 5, "pass_hat_k_ci": 12, "flakiness": 5, "class": 12, "mixed": 5, "p_flaky": 8,
              "mean_score": 5, "mean_score_ci": 12, "score_sd": 5}
    names = [TABLE_LABELS.get(col.key, col.header(st.k)) for col in columns]
    return names, [max(widths[c.key], len(name)) if c.key in widths else 0
                   for c, name in zip(columns, names, strict=True)]


def table_head(sm: SuiteSummary, why: Sequence[str], notes: ReportNotes = NO_NOTES) -> list[Any]:
    """What the terminal report prints above a run's table: the summary (what ``notes`` say,
    and with --causes the breakdown line and the failures by first critical source) in bold,
    then each warning."""
    from rich.text import Text

    head = Text("\n".join([*summary_lines(sm, notes), *notes.lines(sm.run), *why[:1 + _head_lines(why)]]),
                style="bold")
    return [head, *(Text(f"warning: {visible(w)}", style="yellow") for w in sm.warnings)]


TABLE_LEGEND = ("95% CI: Wilson interval of p̂; pass^k CI: Clopper-Pearson bounds of p, to the power k; "
                "rule of 3: one-sided 95% bound on a rate never seen (n ≥ 2)")
"""The one line under a task table saying what its intervals are (each column's tooltip says more)."""


def table_tail(why: Sequence[str]) -> list[Any]:
    """What it prints below: the legend of the intervals, each suggestion's evidence (--causes),
    then a blank line."""
    from rich.text import Text

    evidence = [Text(line, style="dim") for line in why[1 + _head_lines(why):]]  # log content: Text, never markup
    return [Text(TABLE_LEGEND, style="dim"), *([Text("")] + evidence if evidence else []), Text("")]


def print_streamed_table(con: Console, st: TaskStats, sm: SuiteSummary, causes: Causes | None = None,
                         top: int | None = None, notes: ReportNotes = NO_NOTES) -> None:
    """:func:`report_table` written a few thousand rows at a time (constant memory, for any
    number of tasks): the same characters when piped; on a terminal the task column gives way
    to fit the width, and the header and classes keep their colours."""

    order = display_order(st)
    shown = order[:top]
    why = cause_lines(st, causes, order)
    columns = report_columns(st.run, causes, notes, st.scores is not None)
    headers, lows = table_headers(st, columns)
    layout = stream.table_layout(st, columns, headers, lows, rows=shown,
                                 max_total=con.width if con.is_terminal else None)
    if con.is_terminal:
        layout = _coloured(con, layout, columns, st, causes)
    for part in table_head(sm, why, notes):
        con.print(part)
    write = con.file.write
    for text in stream.table_chunks(st, columns, layout, shown):
        write(text)
    con.file.flush()
    if len(order) > len(shown):
        con.print(left_out_text(len(order) - len(shown), len(shown), first=first_shown(st)))
    for part in table_tail(why):
        con.print(part)


def _coloured(con: Console, layout: stream.TableLayout, columns: Sequence[TaskColumn],
              st: TaskStats, causes: Causes | None = None) -> stream.TableLayout:
    """``layout`` with the colours of :func:`report_table`: a bold header, each class in its
    colour, the causes dim (each distinct cell drawn once by the console, then reused)."""
    import dataclasses

    from rich.text import Text

    def draw(text: str, style: str) -> str:
        with con.capture() as cap:
            con.print(Text(text, style=style), end="", soft_wrap=True)
        return cap.get()

    styled: dict[int, dict[str, str]] = {}
    for j, col in enumerate(columns):
        if col.key == "class":
            styled[j] = {p: draw(p, class_style(c)) for c in set(st.classes)
                         for p in [stream.pad(c, layout.widths[j], False)]}
        elif col.key == "suspected_cause" and causes is not None:
            found = {"", *(visible(s.cause) for s in causes.get(st.run, {}).values())}
            styled[j] = {p: draw(p, "dim") for c in found for p in [stream.pad(c, layout.widths[j], False)]}
    before, _, after = draw("x", "bold").partition("x")  # the codes around bold text
    return dataclasses.replace(layout, styled=styled, bold=(before, after))


def console() -> Console:
    """A Rich console for stdout: the terminal's width, or unbounded when output goes to a
    file or pipe (so tables keep every column instead of being cut to 80)."""
    from rich.console import Console

    class StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            """The reader closed the pipe: let the command line end quietly with exit 0
            (:meth:`~flaketui.cli.common.DefaultGroup.invoke`), not Rich's exit 1."""
            self.quiet = True
            raise BrokenPipeError

    con = StdoutConsole()
    return con if con.is_terminal else StdoutConsole(width=1000)


def print_renderable(renderable: Any) -> None:
    console().print(renderable)


