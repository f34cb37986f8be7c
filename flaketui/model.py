"""The data model: trials as loaded (columnar), and per-run task outcomes.

Nothing here imports Textual or Rich. A loaded log is a :class:`TrialLog`:
one numpy array per field, one entry per trial, with the byte offset of each
trial's line so that a trace is read from disk only when it is looked at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:  # a type only: the model imports nothing above it
    from flaketui.loading.options import LoadOptions

PASS = 1
"""Outcome code of a passing trial."""
FAIL = 0
"""Outcome code of a failing trial."""
ERRORED = -1
"""Outcome code of a trial that errored in the harness (counted apart, neither pass nor fail)."""

ERRORED_AS = ("harness", "apart", "fail", "score")
"""The ``--errored-as`` choices; ``harness`` resolves, per run, to one of the other three."""
ERRORED_AS_MEANING = {
    "apart": "left out of n",
    "fail": "counted as failures",
    "score": "counted by their score (a timeout keeps its own; none: a failure)",
}
"""What each resolved ``--errored-as`` does to an errored trial, in the report's words."""


WHO_RAN = {
    "agent": ("agent", "agent_name"),
    "model": ("model", "model_name", "agent_model"),
    "harness": ("harness",),
    "harness_version": ("harness_version", "version"),
    "dataset": ("dataset", "dataset_name", "domain"),
    "dataset_version": ("dataset_version",),
    "job": ("job_name", "jobs", "run_id", "run_uuid", "job_id"),
}
"""Who ran a run, as the report, JSON, page, app header and history name it: each part and the
run-metadata keys it is read from (first present wins; Harbor's ``config.json``, Terminal-Bench's
``run_metadata.json``, τ²'s ``info``)."""


def who_ran(meta: dict[str, Any]) -> dict[str, str]:
    """The :data:`WHO_RAN` parts a run's metadata gives, as text (absent parts left out)."""
    out: dict[str, str] = {}
    for part, keys in WHO_RAN.items():
        value = next((meta[k] for k in keys if meta.get(k) not in (None, "")), None)
        if value is not None and not isinstance(value, (dict, list)):
            out[part] = str(value)
    return out


def who_ran_line(meta: dict[str, Any]) -> str | None:
    """``ran by: agent terminus-2, model openai/gpt-4o, harness Harbor, job hello-world-job``, or
    None when the metadata names none of it (the caller makes log text visible)."""
    who = who_ran(meta)
    if not who:
        return None
    return "ran by: " + ", ".join(f"{part.replace('_', ' ')} {value}" for part, value in who.items())


def counts_errored(mode: str) -> bool:
    """Whether ``n`` counts errored trials under the resolved ``--errored-as`` ``mode``."""
    return mode != "apart"


class InputError(Exception):
    """Bad input that stops a command: a missing path, nothing usable, a bad option.

    The command line prints its message on one line and exits with code 2.
    """


@dataclass(frozen=True)
class Problem:
    """A skipped or suspicious piece of input, named by file and line."""

    path: str
    line: int | None
    reason: str
    notice: bool = False
    """Not a fault: something the reader did that the user should know (runs named apart,
    runs read as trials, outcomes not found); the trials were kept."""

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class FieldMap:
    """Which JSON fields hold what. The defaults read flaketui's own format and τ-bench's."""

    run: tuple[str, ...] = ("run",)
    task: tuple[str, ...] = ("task", "task_id")
    trial: tuple[str, ...] = ("trial",)
    passed: tuple[str, ...] = ("passed",)
    score: tuple[str, ...] = ("score", "reward")
    trace: tuple[str, ...] = ("trace", "traj", "messages")
    group: tuple[str, ...] = ("group",)
    threshold: float = 1 - 1e-6
    """A score or reward passes when it is >= this (τ-bench counts a reward of 1 as success)."""
    records_field: str | None = None
    """``--records-field``: the (dotted) field of a JSON object whose array holds the trials."""
    errored_as: Literal["harness", "apart", "fail", "score"] = "harness"
    """``--errored-as``: errored trials are left out of n (``apart``), count as failures
    (``fail``), or count by their score (``score``: one with a score passing at the threshold
    keeps it, one without fails); ``harness`` (the default) takes each run's format's own
    convention (:meth:`TrialLog.errored_as`)."""
    run_name_from: Literal["file", "folder", "field"] = "file"
    """``--run-name-from``: a run without a run field is named by its file, its folder, or
    the harness's own run id (where the file has one; else by its file)."""
    runs_as_trials: bool = False
    """``--runs-as-trials``: the runs of one folder are read as trials of one run."""
    reward: str = "reward"
    """``--reward``: which of a trial's named rewards is its score (Harbor's
    ``verifier_result.rewards``; a lone reward of another name is taken by default)."""
    planned_trials: int | None = field(default=None, repr=False)
    """``--planned-trials N``: the statistics read the first N trials of each task (in trial
    order), the design fixed before any outcome was seen, so trials a plan added after looking
    (``plan --budget``) do not bias them. Applied when trials are grouped by task, not when
    parsed: it stays out of the index cache's key (the ``repr``)."""

    def known_names(self) -> set[str]:
        """The fields a trial's roles are read from, with ``metrics`` and ``error``: every
        other field of a trial is an extra one (:attr:`Trial.extra`)."""
        return {"metrics", "error", *self.run, *self.task, *self.trial, *self.passed, *self.score,
                *self.trace, *self.group}


def _read_only(column: np.ndarray) -> np.ndarray:
    """``column`` as a view that cannot be written: a run's outcomes share the log's own column when
    the run is the whole log in order (a million tasks' scores: 16 MB of peak not copied), and never
    change the log they were taken from."""
    view = column.view()
    view.flags.writeable = False
    return view


def rows_sorted(columns: tuple[np.ndarray, ...], strict: bool = False) -> bool:
    """Whether rows are in the lexicographic order of ``columns`` (equal rows allowed unless
    ``strict``): compared neighbour to neighbour, from the last column up, with no key
    built (a million rows: a few ms, where an int64 key cost tens)."""
    if len(columns[0]) < 2:
        return True
    a, b = columns[-1][1:], columns[-1][:-1]
    ordered = a > b if strict else a >= b
    for column in reversed(columns[:-1]):
        a, b = column[1:], column[:-1]
        ordered = (a > b) | ((a == b) & ordered)
    return bool(ordered.all())


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int | str, ...], ...]:
    """A sort key that orders the numbers inside task ids by value: ``2`` before ``10``,
    ``task-9`` before ``task-10`` (each run of digits compares as a number, the rest as text).

    A run of digits compares as its value without making it an ``int``: by its length once its
    leading zeros are gone, then as text (the same order, for any length: Python refuses to read
    a number of over 4,300 digits, and a task id is log data).

    >>> sorted(["task-10", "task-9", "10", "2"], key=natural_key)
    ['2', '10', 'task-9', 'task-10']
    """
    return tuple(_number_key(part) if i % 2 else (1, part)
                 for i, part in enumerate(_DIGITS.split(name)) if part or i == 0)


def _number_key(digits: str) -> tuple[int, int, str]:
    """A run of digits as a key that orders by value (see :func:`natural_key`)."""
    value = digits.lstrip("0")
    return (0, len(value), value)


def natural_ranks_by_key(names: list[str] | tuple[str, ...]) -> np.ndarray:
    """Each name's position in :func:`natural_key` order, as int64, by sorting on the key
    (the reference :func:`natural_ranks` is tested against, and its way for names it does
    not take). Names without a digit sort as plain text, in one vectorised argsort."""
    if not len(names):
        return np.empty(0, dtype=np.int64)
    if any(_DIGITS.search(n) for n in names):
        order = np.array(sorted(range(len(names)), key=lambda i: natural_key(names[i])), dtype=np.int64)
    else:
        order = np.argsort(np.array(names, dtype=object), kind="stable")
    ranks = np.empty(len(names), dtype=np.int64)
    ranks[order] = np.arange(len(names))
    return ranks


MAX_DIGITS = 18
"""Longest run of digits read as an int64 (longer runs: :func:`natural_ranks_by_key`)."""

SEPARATOR, HOLE = "\n", "\x01"
"""Between two names in the joined text; what each digit becomes in a name's shape."""

_DIGITS_AS_HOLES = bytes.maketrans(b"0123456789", HOLE.encode() * 10)
_HOLES = re.compile(HOLE.encode() + b"+")


def natural_ranks(names: list[str] | tuple[str, ...]) -> np.ndarray:
    """Each name's position in :func:`natural_key` order, as int64 (equal keys, ``a01`` and
    ``a1``, keep their order): what :func:`natural_ranks_by_key` gives, without a Python key
    per name (a million names in about 0.3 s instead of 1.6 to 5 s).

    A name's natural key alternates text and numbers: ``task-10b`` is ("task-", 10, "b").
    Keys compare part by part, a key that is a prefix of another first, so the order is a
    lexsort over part columns: text columns hold each text's rank among the texts in that
    column, number columns the number, and -1 where a name has no such part.

    A name's shape is its text with every digit made :data:`HOLE` (a run keeps its
    length): the names are grouped by shape in a few C calls over all of them joined, a
    suite has few shapes, and each is split into texts and runs of digits in Python. The
    numbers are then read from the joined bytes, a digit position at a time, for every
    name at once. Names that are not ASCII (``\\d`` and ``int`` read other scripts'
    digits), hold a newline or :data:`HOLE`, or a run of over :data:`MAX_DIGITS` digits go
    to :func:`natural_ranks_by_key`.
    """
    names = list(names)
    n = len(names)
    if n < 2:
        return natural_ranks_by_key(names)
    joined = SEPARATOR.join(names)
    if not joined.isascii() or HOLE in joined or joined.count(SEPARATOR) != n - 1:
        return natural_ranks_by_key(names)
    raw = joined.encode("ascii")
    joined_bytes = np.frombuffer(raw, dtype=np.uint8)
    width = len(names[0])
    if len(raw) == n * (width + 1) - 1 and width:  # maybe names of one length: one shape?
        grid = np.frombuffer(raw + SEPARATOR.encode(), dtype=np.uint8).reshape(n, width + 1)
        holes = np.frombuffer(_DIGITS_AS_HOLES, dtype=np.uint8)[grid]
        one_shape = bool((holes == holes[0]).all())  # the separators too: every name is that long
    else:
        one_shape = False
    if one_shape:  # ids written to one pattern (task-000123): no bytes object per name
        # one shape, one length: the texts are the same and each run of digits has the same
        # width in every name, so the natural order is the bytes' order; in it already, no sort
        if rows_sorted(tuple(grid[:, j] for j in range(width))):
            return np.arange(n, dtype=np.int64)
        shape_ids = {holes[0, :width].tobytes(): 0}
        shape_of = np.zeros(n, dtype=np.int64)
    else:
        shapes = raw.translate(_DIGITS_AS_HOLES).split(SEPARATOR.encode())
        shape_ids = {shape: i for i, shape in enumerate(dict.fromkeys(shapes))}
        shape_of = (np.zeros(n, dtype=np.int64) if len(shape_ids) == 1 else
                    np.fromiter(map(shape_ids.__getitem__, shapes), dtype=np.int64, count=n))
    parts = [_shape_parts(shape) for shape in shape_ids]
    if max((size for _, runs in parts for _, size in runs), default=0) > MAX_DIGITS:
        return natural_ranks_by_key(names)
    starts = (np.arange(n, dtype=np.int64) * (width + 1) if one_shape
              else np.r_[0, np.flatnonzero(joined_bytes == ord(SEPARATOR)) + 1])
    most = max(len(runs) for _, runs in parts)
    columns = []
    for j in range(most + 1):
        texts = [t[j] if j < len(t) else None for t, _ in parts]
        rank = {text: r for r, text in enumerate(sorted({t for t in texts if t is not None}))}
        columns.append(np.array([-1 if t is None else rank[t] for t in texts], dtype=np.int64)[shape_of])
        if j < most:
            at = np.array([runs[j][0] if j < len(runs) else 0 for _, runs in parts], dtype=np.int64)
            size = np.array([runs[j][1] if j < len(runs) else 0 for _, runs in parts], dtype=np.int64)
            columns.append(_numbers(joined_bytes, starts + at[shape_of], size[shape_of]))
    # a column where every name is alike orders nothing (one shape: its texts)
    columns = [c for c in columns if c.min() != c.max()] or [np.zeros(n, dtype=np.int64)]
    if rows_sorted(tuple(columns)):  # in natural order already (ids written in order): no sort
        return np.arange(n, dtype=np.int64)
    order = np.lexsort(columns[::-1])
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n)
    return ranks


def _shape_parts(shape: bytes) -> tuple[list[str], list[tuple[int, int]]]:
    """A shape's texts (the last one left out when empty, as :func:`~flaketui.model.natural_key`
    leaves it, unless it is the only one) and its runs of digits as (offset, length)."""
    texts = [text.decode("ascii") for text in _HOLES.split(shape)]
    if len(texts) > 1 and not texts[-1]:
        texts.pop()
    return texts, [(m.start(), m.end() - m.start()) for m in _HOLES.finditer(shape)]


def _numbers(joined: np.ndarray, first: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The number of ``size`` digits at ``first`` in ``joined`` for each name (-1 where
    ``size`` is 0), read a digit position at a time."""
    value = np.zeros(first.shape, dtype=np.int64)
    for i in range(int(size.max(initial=0))):
        more = size > i
        digit = joined[np.where(more, first + i, 0)].astype(np.int64) - ord("0")
        value = np.where(more, value * 10 + digit, value)
    return np.where(size > 0, value, -1)


@dataclass(frozen=True)
class Source:
    """One input file and how its trials are stored in it."""

    path: str
    kind: str
    """``jsonl`` (offsets are byte offsets of lines), ``jsonl.gz`` (offsets in the
    decompressed stream), ``json`` / ``json.gz`` (offset and length are the byte span
    of the item in the array, decompressed for ``json.gz``), or a format name such as
    ``inspect`` (offset is the sample's position in the log)."""


@dataclass(frozen=True)
class TrialColumn:
    """What the code that reads, keeps and selects trials needs to know of one per-trial
    column of :class:`TrialLog`."""

    dtype: type
    """Its numpy type in :class:`TrialLog`."""
    code: str | None
    """Its :mod:`array` typecode as parsed (:class:`~flaketui.loading.parsed.Parsed`,
    :class:`~flaketui.loading.records.RecordSink`) and kept in the index cache; None: not
    read from a file but given by the loader (``source``)."""
    names: str | None = None
    """The name table it indexes (``runs``, ``tasks``, ``groups``); None: a value of its own."""


TRIAL_COLUMNS: dict[str, TrialColumn] = {
    "run": TrialColumn(np.int32, "i", "runs"),
    "task": TrialColumn(np.int32, "i", "tasks"),
    "group": TrialColumn(np.int32, "i", "groups"),
    "trial": TrialColumn(np.int64, "q"),
    "outcome": TrialColumn(np.int8, "b"),
    "score": TrialColumn(np.float64, "d"),
    "offset": TrialColumn(np.int64, "q"),
    "length": TrialColumn(np.int64, "q"),
    "line": TrialColumn(np.int64, "q"),
    "has_trace": TrialColumn(np.bool_, "b"),
    "source": TrialColumn(np.int32, None),
}
"""The one list of a trial's columns (besides its metrics): name → :class:`TrialColumn`.
:class:`TrialLog` and :class:`~flaketui.loading.parsed.Parsed` declare a field for each, and
every place that reads, keeps, merges or selects trials iterates this table (the parsed
columns in this order are the index cache's layout: reordering them changes its format)."""

PARSED_COLUMNS: dict[str, TrialColumn] = {k: c for k, c in TRIAL_COLUMNS.items() if c.code is not None}
"""The columns of :data:`TRIAL_COLUMNS` read from a file, in the index cache's order."""


@dataclass
class TrialLog:
    """Every usable trial of the loaded files, one array entry per trial.

    ``run``, ``task`` and ``group`` index into ``runs``, ``tasks`` and ``groups``
    (``group`` is -1 for none); ``outcome`` is :data:`PASS`, :data:`FAIL` or
    :data:`ERRORED`; ``score`` is NaN where the log gave none; ``source``,
    ``offset``, ``length`` and ``line`` locate the trial on disk.
    """

    sources: list[Source]
    runs: list[str]
    tasks: list[str]
    groups: list[str]
    run: np.ndarray
    task: np.ndarray
    trial: np.ndarray
    outcome: np.ndarray
    score: np.ndarray
    group: np.ndarray
    source: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    line: np.ndarray
    has_trace: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    fields: FieldMap = field(default_factory=FieldMap)
    """The field names the log was read with (used again to read traces back)."""
    run_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What the harness wrote about each run (τ²'s ``info``: models, domain, git commit,
    seed; Terminal-Bench's ``run_metadata.json``), by run name; runs without any are absent."""
    conventions: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Each run's harness convention for errored trials and the harness's name (``("score",
    "Harbor")``; the convention ``apart``, ``fail`` or ``score``: what its format declares,
    :attr:`flaketui.loading.formats.LogFormat.errored_as`), by run name; a run absent here
    sets them apart."""
    published: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The figures each run's harness published about it (Harbor's ``n_total_trials``,
    ``n_errors``, ``mean``; Terminal-Bench's ``accuracy``, ``pass_at_k``), by run name, with
    ``harness`` naming it; runs whose harness published none are absent."""
    load_options: LoadOptions | None = None
    """The options the log was loaded with (``--sources-root``, ``--timeout``, …), which reading
    a trial back (:func:`flaketui.loading.read_trial`) keeps; None: the defaults."""

    def errored_as(self, run: str) -> str:
        """How ``run`` counts its errored trials: ``--errored-as`` when given, else (``harness``)
        the run's format's own convention. The one place the default is resolved."""
        mode = self.fields.errored_as
        return self.conventions.get(run, ("apart", ""))[0] if mode == "harness" else mode

    def errored_rule(self, run: str) -> str:
        """Where ``run``'s errored-trial rule comes from, for the summary: ``as Harbor counts
        them`` when the default took the harness's convention, else the flag."""
        mode = self.errored_as(run)
        harness = self.conventions.get(run, ("apart", ""))[1]
        if self.fields.errored_as == "harness" and harness and mode != "apart":
            return f"as {harness} counts them; --errored-as apart sets them apart"
        return f"--errored-as {mode}"

    def __len__(self) -> int:
        return int(self.run.shape[0])

    def take(self, which: np.ndarray) -> TrialLog:
        """The trials ``which`` selects (a boolean mask over the trials or their row indices),
        every column of :data:`TRIAL_COLUMNS` and every metric taken alike; names, sources and
        problems shared. The one way to select trials: a column added to the table is kept."""
        return replace(self, metrics={k: v[which] for k, v in self.metrics.items()},
                       **{name: getattr(self, name)[which] for name in TRIAL_COLUMNS})

    def without_locations(self) -> TrialLog:
        """This log for a command that reads no trace: the same trials, with ``offset``,
        ``length`` and ``line`` read as -1 and holding no memory (a million-task report
        keeps 16 MB less a column). Its arrays are shared, not copied."""
        nowhere = np.broadcast_to(np.int64(-1), self.offset.shape)
        return replace(self, offset=nowhere, length=nowhere, line=nowhere)

    def without_metrics(self) -> TrialLog:
        """This log for a command that shows no metric (``report``): the same trials, with
        no metric columns (a million trials of three metrics: 48 MB)."""
        return replace(self, metrics={})

    def run_outcomes(self, run: str) -> RunOutcomes:
        """Group one run's trials by task.

        Raises
        ------
        KeyError
            If no run has that name.
        """
        r = self.runs.index(run)
        whole = len(self.runs) == 1  # the run is the log: its columns as they are, no gathers
        rows = np.arange(len(self)) if whole else np.flatnonzero(self.run == r)
        task_ids = self.task if whole else self.task[rows]
        trials = self.trial if whole else self.trial[rows]
        top = int(trials.max()) + 1 if rows.size else 1
        in_order = rows_sorted((task_ids, trials))  # a log written task by task: no sort
        if not in_order:
            if len(self.tasks) * top < 1 << 62:  # one int64 key sorts as the lexsort does
                order = np.argsort(task_ids.astype(np.int64) * top + trials, kind="stable")
            else:
                order = np.lexsort((trials, task_ids))
            rows, task_ids = rows[order], task_ids[order]
        planned = self.fields.planned_trials
        if planned is not None and rows.size:  # the first N trials of each task, in trial order
            first = np.r_[True, task_ids[1:] != task_ids[:-1]]
            position = np.arange(rows.size)
            position -= np.maximum.accumulate(np.where(first, position, 0))
            keep = position < planned
            if not keep.all():
                rows, task_ids, in_order, whole = rows[keep], task_ids[keep], False, False
        # task_ids is sorted now: each task starts where the id changes
        starts = np.flatnonzero(np.r_[True, task_ids[1:] != task_ids[:-1]]) if rows.size \
            else np.empty(0, dtype=np.int64)
        uniq = task_ids[starts]
        outcome = self.outcome if whole and in_order else self.outcome[rows]
        bounds = np.append(starts, rows.shape[0])
        counts = np.diff(bounds)
        mode = self.errored_as(run)
        scored = self.scored
        # the run's scores in its rows' order, gathered once (the log's own column when it is the run)
        score = (self.score if whole and in_order else self.score[rows]) if scored or mode == "score" else None
        if rows.size:  # per task, one sum over its contiguous rows
            passed = outcome == PASS
            errored = np.add.reduceat(outcome == ERRORED, starts, dtype=np.int64)
            if score is not None and mode == "score":  # an errored trial with a passing score counts as a pass
                kept = (outcome == ERRORED) & (score >= self.fields.threshold)
                errored_passes = np.add.reduceat(kept, starts, dtype=np.int64)
                passed = passed | kept
            else:
                errored_passes = None
            passes = np.add.reduceat(passed, starts, dtype=np.int64)
        else:
            passes = errored = np.zeros(0, dtype=np.int64)
            errored_passes = None
        # apart: n leaves errored trials out; fail / score: n counts them (passes as their score says)
        n = counts if counts_errored(mode) else counts - errored
        group_idx = (self.group[starts] if whole and in_order else self.group[rows[starts]]) if rows.shape[0] \
            else np.empty(0, np.int32)
        names = (list(self.tasks) if len(uniq) == len(self.tasks) and bool(np.all(uniq == np.arange(len(uniq))))
                 else list(map(self.tasks.__getitem__, uniq.tolist())))
        labels: list[str | None] = [*self.groups, None]  # group -1 (none) is the last entry
        groups = (np.array(labels, dtype=object)[group_idx].tolist() if self.groups
                  else [None] * len(names))
        return RunOutcomes(
            run=run,
            tasks=names,
            n=n.astype(np.int64, copy=False),
            passes=passes.astype(np.int64, copy=False),
            errored=errored.astype(np.int64, copy=False),
            groups=groups,
            rows=rows,
            bounds=bounds,
            errored_as=mode,
            errored_passes=errored_passes,  # int64 from reduceat, or None
            trial_scores=_read_only(score) if scored else None,  # scored: score was gathered above
            trial_errored=outcome == ERRORED if scored else None,
            planned_trials=planned,
        )

    @property
    def scored(self) -> bool:
        """Whether any trial of the log has a score (a reward, a graded value): what
        :attr:`RunOutcomes.trial_scores` is kept for."""
        return bool(np.isfinite(self.score).any())

    def metric_medians(self, outcomes: RunOutcomes) -> dict[str, np.ndarray]:
        """Median of each metric per task of ``outcomes`` (NaN where a task has none), as
        :meth:`metric_medians_sorted` gives it, without sorting every value.

        A task's values are contiguous in the run's rows; the tasks with the same number of
        values form one (tasks × count) block, sorted along its rows (stably, as the lexsort
        of :meth:`metric_medians_sorted`), whose middle one or two columns give the medians.
        A metric every trial has shares the blocks of the trial counts (one block, a
        reshape, when every task has as many trials). With more than :data:`MAX_COUNTS`
        distinct counts (or trials a task), :meth:`metric_medians_sorted` computes them.
        (1M tasks, three metrics: about 0.2 s instead of 0.9 s.)
        """
        tasks = len(outcomes.tasks)
        trials = np.diff(outcomes.bounds)
        every = _blocks(trials)
        out: dict[str, np.ndarray] = {}
        rows = outcomes.rows
        # every trial, in order (row indices rising, as many as the log has): the columns as they are
        whole = len(rows) == len(self) and rows_sorted((rows,), strict=True)
        for name, values in self.metrics.items():
            v = values if whole else values[rows]
            ok = ~np.isnan(v)
            complete = bool(ok.all())
            x = v if complete else v[ok]
            counts = trials if complete else np.bincount(np.repeat(np.arange(tasks), trials)[ok], minlength=tasks)
            blocks = every if complete else _blocks(counts)
            if blocks is None:
                return self.metric_medians_sorted(outcomes)
            starts = np.cumsum(counts) - counts
            med = np.full(tasks, np.nan)
            for size, at in blocks:
                block = x.reshape(tasks, size) if at is None else x[starts[at][:, None] + np.arange(size)]
                if size > 2:  # the middle of one or two values needs no sort: a + b is b + a
                    block = np.sort(block, axis=1, kind="stable")
                med[slice(None) if at is None else at] = (block[:, (size - 1) // 2] + block[:, size // 2]) / 2
            out[name] = med
        return out

    def metric_medians_sorted(self, outcomes: RunOutcomes) -> dict[str, np.ndarray]:
        """Median of each metric per task of ``outcomes`` (NaN where a task has none), by one
        sort (the reference :meth:`metric_medians` is tested against, and its way past
        :data:`MAX_COUNTS`).

        Vectorised: each metric's values are sorted within their task once, and the
        median is the middle value (or the mean of the two middle values).
        """
        tasks = len(outcomes.tasks)
        segment = np.repeat(np.arange(tasks), np.diff(outcomes.bounds))
        out: dict[str, np.ndarray] = {}
        for name, values in self.metrics.items():
            v = values[outcomes.rows]
            ok = ~np.isnan(v)
            x, seg = v[ok], segment[ok]
            order = np.lexsort((x, seg))
            x = x[order]
            counts = np.bincount(seg, minlength=tasks)
            starts = np.cumsum(counts) - counts
            has = counts > 0
            lo = (starts + (counts - 1) // 2)[has]
            hi = (starts + counts // 2)[has]
            med = np.full(tasks, np.nan)
            med[has] = (x[lo] + x[hi]) / 2
            out[name] = med
        return out


@dataclass
class RunOutcomes:
    """One run's trials grouped by task: per task, n non-errored trials and c passes
    (with ``--errored-as fail``, n counts the errored trials too, as failures).

    ``rows[bounds[i]:bounds[i+1]]`` are the :class:`TrialLog` rows of task ``i``,
    in trial order.
    """

    run: str
    tasks: list[str]
    n: np.ndarray
    passes: np.ndarray
    errored: np.ndarray
    groups: list[str | None]
    rows: np.ndarray
    bounds: np.ndarray
    errored_as: str = "apart"
    """How ``n`` treats errored trials (:meth:`TrialLog.errored_as`: ``apart``, ``fail`` or ``score``)."""
    trial_scores: np.ndarray | None = None
    """Each trial's score in ``rows`` order (NaN: none); None when no trial of the log has one."""
    trial_errored: np.ndarray | None = None
    """Each trial's errored flag in ``rows`` order, beside :attr:`trial_scores`."""
    errored_passes: np.ndarray | None = None
    """Per task, the errored trials counted as passes (``score``: their score passed); None: none."""
    planned_trials: int | None = None
    """The first this many trials of each task were kept (:attr:`FieldMap.planned_trials`)."""

    def task_rows(self, i: int) -> np.ndarray:
        """The :class:`TrialLog` rows of task ``i``."""
        return self.rows[self.bounds[i] : self.bounds[i + 1]]

    def index(self, task: str) -> int:
        """Position of ``task`` in :attr:`tasks` (``ValueError`` if absent)."""
        return self.tasks.index(task)


@dataclass(frozen=True)
class Trial:
    """One trial read back from disk, with its trace and every extra field."""

    run: str
    task: str
    trial: int
    outcome: int
    score: float | None
    group: str | None
    metrics: dict[str, float]
    error: Any
    trace: list[Any] | None
    extra: dict[str, Any]
    location: str
    """``path:line`` of the trial in its file."""
    trace_steps: int | None = None
    """Steps of the trace on disk: more than ``len(trace)`` when it was read with
    ``read_trial(..., max_steps=N)`` and is longer (a huge trace, opened truncated)."""

    @property
    def passed(self) -> bool:
        return self.outcome == PASS


MAX_COUNTS = 64
"""Most distinct trial counts (and most trials a task) for :meth:`TrialLog.metric_medians`' blocks."""


def _blocks(counts: np.ndarray) -> list[tuple[int, np.ndarray | None]] | None:
    """The tasks with each non-zero count of values, as (count, tasks); tasks None: every
    task has that count. None when the counts are too many or too large."""
    sizes = np.unique(counts)
    if sizes.size > MAX_COUNTS or (sizes.size and int(sizes[-1]) > MAX_COUNTS):
        return None
    if sizes.size == 1:
        size = int(sizes[0])
        return [(size, None)] if size else []
    by_count = np.argsort(counts, kind="stable")
    edges = np.searchsorted(counts[by_count], sizes, side="left").tolist() + [counts.size]
    return [(size, by_count[lo:hi]) for size, lo, hi in zip(sizes.tolist(), edges[:-1], edges[1:], strict=True)
            if size]
