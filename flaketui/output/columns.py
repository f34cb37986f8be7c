"""The per-task columns, declared once for every place that shows a run's task table.

Each :class:`TaskColumn` says what a column is (its key, label and tooltip), how
to get its values from :class:`~flaketui.stats.TaskStats` (for JSON, a whole
column at once), how to write one cell as plain text and what to sort it by.
The report renderers (:mod:`flaketui.report`: table, JSON, CSV, Markdown) and
the app's task table (:mod:`flaketui.app.screens.tasks`, which adds widths and
colours) pick columns from :data:`TASK_COLUMNS` by key.

A new per-task statistic is one more entry here (and, to show it in the app,
one line in ``TasksScreen.columns``).

No Textual, no Rich: labels, values and plain strings (styles are named, not applied).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_
from typing import Any

import numpy as np

from flaketui.model import natural_ranks
from flaketui.output import formatting as fmt
from flaketui.output.distinct import coded_each, coded_pairs
from flaketui.sanitize import csv_cell, visible
from flaketui.stats.classes import UNDETERMINED
from flaketui.stats.estimators import FLAKY, STABLE_FAIL, STABLE_PASS, Interval
from flaketui.stats.suite import TaskStats

EPS = 1e-12
"""Two rates closer than this are the same (as in :func:`flaketui.stats.paired.compare_runs`)."""

CLASS_STYLES = {FLAKY: "bold yellow", STABLE_FAIL: "red", STABLE_PASS: "green", UNDETERMINED: "yellow"}
"""Colour of each class (and of a flaky task's name), in the app and in ``report``'s table."""

OTHER_CLASS_STYLE = "dim"
"""Colour of a class not in :data:`CLASS_STYLES` (a task with no trials)."""


def class_style(cls: str) -> str:
    """The colour of class ``cls`` (:data:`CLASS_STYLES`)."""
    return CLASS_STYLES.get(cls, OTHER_CLASS_STYLE)


@dataclass(frozen=True)
class TaskColumn:
    """One per-task column: what it is, its values, its text and its sort order.

    Build one with :func:`text_column`, :func:`count_column`, :func:`rate_column`
    or :func:`interval_column` rather than by hand.
    """

    key: str
    """Field name in JSON output, sort key in the app, e.g. ``pass_hat_k``."""
    label: str
    """Header; ``{k}`` stands for k, e.g. ``pass^{k}``."""
    tooltip: str
    """One line that says what the column is."""
    json: Callable[[TaskStats], list[Any]]
    """The whole column for the JSON contract (NaN as ``None``)."""
    text: Callable[[TaskStats, int], str]
    """One cell (task ``i``) as plain text."""
    sort: Callable[[TaskStats], np.ndarray]
    """Values to sort by, as floats (NaN sort last)."""
    csv_names: tuple[str, ...] = ()
    """CSV header names: one, or two (``_low``, ``_high``) for an interval."""
    descending: bool = True
    """Whether the column first sorts largest first (numbers); text reads best A→Z."""
    arrays: Callable[[TaskStats], tuple[Any, ...]] | None = None
    """The values behind :attr:`json`, one array (or sequence) per part: two tasks whose
    parts are all equal have equal JSON values (:mod:`flaketui.output.json_stream` writes
    such tasks' values once)."""

    def header(self, k: int) -> str:
        """The label at ``k``: ``pass^5``."""
        return self.label.replace("{k}", str(k))

    def csv_cells(self, values: Sequence[Any]) -> list[list[Any]]:
        """CSV cells of the column's JSON ``values``: one per name of :attr:`csv_names`."""
        if len(self.csv_names) == 2:
            pairs = [v or (None, None) for v in values]
            return [[csv_number(p[0]) for p in pairs], [csv_number(p[1]) for p in pairs]]
        return [[csv_number(v) if isinstance(v, float) or v is None
                 else csv_cell(v) if isinstance(v, str) else v for v in values]]


def csv_number(x: Any) -> str:
    """A float for CSV: six significant digits, empty when missing."""
    return "" if fmt.is_missing(x) else f"{float(x):.6g}"


def floats(values: Any) -> list[float | None]:
    """An array as JSON floats, NaN as ``null`` (fmt.json_float over a whole column).

    Equal values share one float object: a per-task column holds few distinct values (they
    follow from the counts), so a million tasks' column costs 8-byte references, not a
    24-byte float each (what the report's peak memory was made of)."""
    return coded_each(values, fmt.json_float).cells()


def intervals(low: Any, high: Any) -> list[list[float | None] | None]:
    """Arrays of bounds as JSON intervals, ``null`` where one is missing (fmt.json_interval).

    Equal intervals share one list (as :func:`floats` shares floats); treat them as read-only."""
    return coded_pairs(low, high, lambda lo, hi: [lo, hi], None).cells()


def label_ranks(labels: Sequence[str | None]) -> np.ndarray:
    """Sort values of a text column: each label's rank among the distinct labels (A→Z by
    code point, as numpy orders strings: trailing NULs ignored; ``None`` as ``""``).

    The distinct labels are ranked through a dict, not by numpy sorting every label (a
    million classes: 0.5 s -> 0.05 s)."""
    distinct = list(dict.fromkeys(labels))
    keys = [(label or "").rstrip("\x00") for label in distinct]
    rank = {key: float(i) for i, key in enumerate(sorted(set(keys)))}
    of = {label: rank[key] for label, key in zip(distinct, keys, strict=True)}
    return np.fromiter(map(of.__getitem__, labels), dtype=np.float64, count=len(labels))


def name_ranks(names: Sequence[str]) -> np.ndarray:
    """Each name's position in natural order (`2` before `10`; names are distinct)."""
    return natural_ranks(list(names)).astype(np.float64)


def text_column(key: str, label: str, get: Callable[[TaskStats], Sequence[str | None]],
                tooltip: str, sort: Callable[[Sequence[str | None]], np.ndarray] = label_ranks) -> TaskColumn:
    """A column of strings (``None`` shown empty, ``null`` in JSON), sorted A→Z (``None`` as ``""``)."""
    return TaskColumn(key, label, tooltip, json=lambda st: list(get(st)),
                      text=lambda st, i: visible(get(st)[i] or ""),
                      sort=lambda st: sort(get(st)),
                      csv_names=(key,), descending=False, arrays=lambda st: (get(st),))


def count_column(key: str, label: str, get: Callable[[TaskStats], np.ndarray],
                 tooltip: str) -> TaskColumn:
    """A column of whole numbers."""
    return TaskColumn(key, label, tooltip, json=lambda st: np.asarray(get(st)).tolist(),
                      text=lambda st, i: str(int(get(st)[i])),
                      sort=lambda st: np.asarray(get(st), dtype=np.float64), csv_names=(key,),
                      arrays=lambda st: (get(st),))


def rate_column(key: str, label: str, get: Callable[[TaskStats], np.ndarray],
                tooltip: str) -> TaskColumn:
    """A column of rates in [0, 1] (``0.318``; NaN shown as a dash)."""
    return TaskColumn(key, label, tooltip, json=lambda st: floats(get(st)),
                      text=lambda st, i: fmt.rate(get(st)[i]),
                      sort=lambda st: np.asarray(get(st), dtype=np.float64), csv_names=(key,),
                      arrays=lambda st: (get(st),))


def interval_column(key: str, label: str, get: Callable[[TaskStats], Interval], tooltip: str,
                    csv_stem: str) -> TaskColumn:
    """A column of intervals (``[0.03, 1.00]``), sorted by the lower bound."""
    return TaskColumn(key, label, tooltip, json=lambda st: intervals(get(st).low, get(st).high),
                      text=lambda st, i: fmt.interval(get(st).low[i], get(st).high[i]),
                      sort=lambda st: np.asarray(get(st).low, dtype=np.float64),
                      csv_names=(f"{csv_stem}_low", f"{csv_stem}_high"),
                      arrays=lambda st: (get(st).low, get(st).high))


def to_decide_text(value: float) -> str:
    """``+34`` further trials; empty when decided, ``never`` for a rate on the cap."""
    return "" if value != value else f"+{int(value)}"


def rule_of_three_text(st: TaskStats, i: int) -> str:
    """``fail < 0.221`` for a task that always passed (its failure rate's 95% bound), ``pass < …``
    for one that always failed, empty for a flaky task and for a single trial (``fail < 0.95``
    says nothing the p̂ interval does not)."""
    bound = st.rule_of_three[i]
    if fmt.is_missing(bound) or st.n[i] < 2:
        return ""
    return f"{'fail' if st.passes[i] == st.n[i] else 'pass'} < {float(bound):.3g}"


def _no_scores(st: TaskStats) -> np.ndarray:
    return np.full(len(st), np.nan)


def mean_scores(st: TaskStats) -> np.ndarray:
    """Each task's mean score (NaN throughout for a run that is not graded)."""
    return _no_scores(st) if st.scores is None else st.scores.mean_score


def mean_score_cis(st: TaskStats) -> Interval:
    """Each task's mean-score interval (NaN throughout for a run that is not graded)."""
    return Interval(_no_scores(st), _no_scores(st)) if st.scores is None else st.scores.mean_score_ci


def score_sds(st: TaskStats) -> np.ndarray:
    """Each task's SD of scores across trials (NaN throughout for a run that is not graded)."""
    return _no_scores(st) if st.scores is None else st.scores.score_sd


def score_flaky(st: TaskStats) -> list[bool | None]:
    """Whether each task's score moved across its trials (``None`` throughout for a run that is
    not graded)."""
    return [None] * len(st) if st.scores is None else st.scores.score_flaky.tolist()


def _score_column(column: TaskColumn) -> TaskColumn:
    """``column`` as a score column: for a run that is not graded its JSON is ``null`` throughout
    and its arrays one constant, without a NaN array built and coded (a million tasks: 0.9 s)."""
    json, arrays = column.json, column.arrays
    return dataclasses.replace(
        column,
        json=lambda st: [None] * len(st) if st.scores is None else json(st),
        arrays=lambda st: (np.zeros(len(st), np.int8),) if st.scores is None or arrays is None else arrays(st))


SCORE_KEYS = ("mean_score", "mean_score_ci", "score_sd")
"""The graded-score columns the table, Markdown and CSV reports show for a graded run (and
only then); JSON has every :data:`TASK_COLUMNS` key, ``null`` for a run that is not graded."""


TASK_COLUMNS: dict[str, TaskColumn] = {c.key: c for c in (
    text_column("task", "task", lambda st: st.tasks, "task name", sort=name_ranks),
    count_column("n", "n", lambda st: st.n, "non-errored trials"),
    count_column("passes", "passes", lambda st: st.passes, "passing trials"),
    count_column("errored", "errored", lambda st: st.errored,
                 "errored trials (neither passes nor failures)"),
    rate_column("p_hat", "p̂", lambda st: st.p_hat, "pass rate c/n"),
    interval_column("p_hat_ci", "95% CI", lambda st: st.p_hat_ci, "Wilson 95% interval of p̂",
                    csv_stem="p_hat"),
    rate_column("pass_at_k", "pass@{k}", lambda st: st.pass_at_k,
                "chance that at least one of k trials passes"),
    rate_column("pass_hat_k", "pass^{k}", lambda st: st.pass_hat_k, "chance that all k trials pass"),
    interval_column("pass_hat_k_ci", "pass^{k} CI", lambda st: st.pass_hat_k_ci,
                    "95% interval of pass^k: the Clopper-Pearson bounds of p to the power k "
                    "(--passk-ci bootstrap: the percentile bootstrap)", csv_stem="pass_hat_k"),
    rate_column("flakiness", "flakiness", lambda st: st.flakiness, "4·p̂·(1−p̂)"),
    dataclasses.replace(
        text_column("class", "class", lambda st: st.classes,
                    "what the trials show against the flakiness cap (report's summary): flaky (its exact 95% "
                    "interval of p lies inside the flaky rates), stable-pass / stable-fail (outside them), "
                    "undetermined (both), unrepeated (a single trial) or no-trials"),
        arrays=lambda st: (st.n, st.passes)),  # a task's class is evidence_classes(n, passes, cap)
    TaskColumn("mixed", "mixed", "the task both passed and failed (a fact about its trials, not its class)",
               json=lambda st: st.mixed.tolist(), text=lambda st, i: "mixed" if st.mixed[i] else "",
               sort=lambda st: st.mixed.astype(np.float64), csv_names=("mixed",),
               arrays=lambda st: (st.mixed,)),
    rate_column("p_flaky", "P(flaky)", lambda st: st.p_flaky,
                "empirical-Bayes chance that the task's flakiness exceeds the cap (a Beta prior fitted "
                "to the suite)"),
    rate_column("eb_flakiness", "EB flak.", lambda st: st.eb_flakiness,
                "empirical-Bayes posterior mean flakiness"),
    TaskColumn("to_decide", "to decide",
               "further trials until an undetermined task is decided, at its pass rate (the plan's figure)",
               json=lambda st: floats(st.to_decide), text=lambda st, i: to_decide_text(st.to_decide[i]),
               sort=lambda st: np.asarray(st.to_decide, dtype=np.float64), csv_names=("to_decide",),
               arrays=lambda st: (st.to_decide,)),
    TaskColumn("rule_of_three", "rule of 3",
               "rule of three: one-sided 95% bound 1 − 0.05^(1/n) on the rate never seen (failures of a task "
               "that always passed, passes of one that always failed; n ≥ 2)",
               json=lambda st: floats(st.rule_of_three), text=rule_of_three_text,
               sort=lambda st: np.asarray(st.rule_of_three, dtype=np.float64),
               arrays=lambda st: (st.rule_of_three,)),
    text_column("group", "group", lambda st: st.groups, "cluster for the standard error"),
    _score_column(rate_column("mean_score", "mean score", mean_scores,
                              "mean of the task's trial scores (rewards, graded values; errored trials by "
                              "--errored-as)")),
    _score_column(interval_column("mean_score_ci", "score CI", mean_score_cis,
                                  "95% interval of the mean score: Clopper-Pearson bounds at the scores' total "
                                  "(holds for bounded scores with few trials)", csv_stem="mean_score")),
    _score_column(rate_column("score_sd", "score SD", score_sds, "SD of the task's scores across its trials")),
    TaskColumn("score_flaky", "score moves", "whether the task's score differed across its trials",
               json=score_flaky, text=lambda st, i: "yes" if score_flaky(st)[i] else "",
               sort=lambda st: np.array([np.nan if v is None else float(v) for v in score_flaky(st)]),
               csv_names=("score_flaky",),
               arrays=lambda st: (np.zeros(len(st), np.int8) if st.scores is None else st.scores.score_flaky,)),
)}
"""Every per-task column, by key, in the order of the JSON objects."""


def cause_column(causes: Mapping[str, str]) -> TaskColumn:
    """The ``cause?`` column: each flaky task's suggested source of flakiness (task name → cause,
    :mod:`flaketui.traces.causes`); empty for a task without one. A suggestion, never a label."""
    def values(st: TaskStats) -> list[str | None]:
        return list(map(causes.get, st.tasks))

    def sort(st: TaskStats) -> np.ndarray:
        """A→Z by cause; tasks without one (NaN) last either way."""
        got = values(st)
        ranks = label_ranks(got)  # None ranks as ""
        ranks[np.fromiter(map(is_, got, repeat(None)), dtype=bool, count=len(got))] = np.nan
        return ranks

    return TaskColumn("suspected_cause", "cause?",
                      "suggested source of flakiness, from the traces (a suggestion, not a label)",
                      json=values, text=lambda st, i: visible(causes.get(st.tasks[i]) or ""),
                      sort=sort,
                      csv_names=("suspected_cause",), descending=False)


def consistency_column(values: Mapping[str, float | None]) -> TaskColumn:
    """The ``consist.`` column: each flaky task's trajectory consistency (task name → the mean of its
    action and sequence consistency, :attr:`flaketui.traces.consistency.Consistency.trajectory`), empty
    for a task without one (fewer than two passing trials with actions, or no traces read); the least
    consistent first."""
    def numbers(st: TaskStats) -> np.ndarray:
        return np.fromiter((np.nan if (v := values.get(t)) is None else v for t in st.tasks),
                           dtype=np.float64, count=len(st.tasks))

    def text(st: TaskStats, i: int) -> str:
        v = values.get(st.tasks[i])
        return "" if v is None else fmt.rate(v, 2)

    return TaskColumn("trajectory_consistency", "consist.",
                      "how alike the passing trials' actions are: 1 − mean pairwise Jensen–Shannon distance of "
                      "the action counts and 1 − normalised Levenshtein distance of the action sequences, averaged "
                      "(HAL's trajectory consistency; 1: every passing trial did the same)",
                      json=lambda st: floats(numbers(st)), text=text, sort=numbers,
                      csv_names=("trajectory_consistency",), descending=False, arrays=lambda st: (numbers(st),))
