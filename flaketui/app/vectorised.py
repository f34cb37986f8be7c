"""Faster forms of four core computations the task table needs at a million tasks.

Each gives exactly what the core function gives (the tests compare them on tricky inputs)
and falls back to it outside the common case:

- :func:`natural_ranks`: :func:`flaketui.model.natural_ranks` without a Python key per
  name (1M names: about 0.3 s instead of 1.6 to 10 s);
- :func:`metric_medians`: :meth:`flaketui.model.TrialLog.metric_medians` with one small
  row sort per distinct trial count instead of a lexsort of every value (1M tasks, three
  metrics: about 0.1 s instead of 0.9 s);
- :func:`k_figures`: the three per-task figures that move with k (pass@k, pass^k and its
  interval), computed once per distinct (n, c) pair (1M tasks: 0.15 s -> 0.02 s);
- :func:`label_ranks`: :func:`flaketui.output.columns.label_ranks` through a dict of the
  distinct labels, not numpy's sort of a million strings (0.5 s -> 0.05 s).

They belong in the core (``flaketui.model``, ``flaketui.stats``, ``flaketui.output``) once it
takes them; the app uses them meanwhile.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from flaketui import model
from flaketui.model import RunOutcomes, TrialLog
from flaketui.stats.estimators import Interval, pass_at_k, pass_hat_k, pass_hat_k_interval

MAX_DIGITS = 18
"""Longest run of digits read as an int64 (longer runs: the core's natural_ranks)."""

SEPARATOR, HOLE = "\n", "\x01"
"""Between two names in the joined text; what each digit becomes in a name's shape."""

_DIGITS_AS_HOLES = bytes.maketrans(b"0123456789", HOLE.encode() * 10)
_HOLES = re.compile(HOLE.encode() + b"+")


def natural_ranks(names: list[str]) -> np.ndarray:
    """Each name's position in natural order, as :func:`flaketui.model.natural_ranks`.

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
    to the core's function.
    """
    n = len(names)
    if n < 2:
        return model.natural_ranks(names)
    joined = SEPARATOR.join(names)
    if not joined.isascii() or HOLE in joined or joined.count(SEPARATOR) != n - 1:
        return model.natural_ranks(names)
    raw = joined.encode("ascii")
    shapes = raw.translate(_DIGITS_AS_HOLES).split(SEPARATOR.encode())
    shape_ids = {shape: i for i, shape in enumerate(dict.fromkeys(shapes))}
    shape_of = (np.zeros(n, dtype=np.int64) if len(shape_ids) == 1 else
                np.fromiter(map(shape_ids.__getitem__, shapes), dtype=np.int64, count=n))
    parts = [_shape_parts(shape) for shape in shape_ids]
    if max((size for _, runs in parts for _, size in runs), default=0) > MAX_DIGITS:
        return model.natural_ranks(names)
    joined_bytes = np.frombuffer(raw, dtype=np.uint8)
    starts = np.r_[0, np.flatnonzero(joined_bytes == ord(SEPARATOR)) + 1]
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


MAX_COUNTS = 64
"""Most distinct trial counts (and most trials a task) for the row-sort medians."""


def metric_medians(log: TrialLog, outcomes: RunOutcomes) -> dict[str, np.ndarray]:
    """Median of each metric per task, as :meth:`flaketui.model.TrialLog.metric_medians`.

    A task's values are contiguous in the run's rows; the tasks with the same number of
    values form one (tasks × count) block, sorted along its rows (stably, as the core's
    lexsort), whose middle one or two columns give the medians. A metric every trial has
    shares the blocks of the trial counts (one block, a reshape, when every task has as
    many trials). With more than :data:`MAX_COUNTS` distinct counts (or trials a task) the
    core computes them.
    """
    tasks = len(outcomes.tasks)
    trials = np.diff(outcomes.bounds)
    every = _blocks(trials)
    out: dict[str, np.ndarray] = {}
    for name, values in log.metrics.items():
        v = values[outcomes.rows]
        ok = ~np.isnan(v)
        complete = bool(ok.all())
        x = v if complete else v[ok]
        counts = trials if complete else np.bincount(np.repeat(np.arange(tasks), trials)[ok], minlength=tasks)
        blocks = every if complete else _blocks(counts)
        if blocks is None:
            return log.metric_medians(outcomes)
        starts = np.cumsum(counts) - counts
        med = np.full(tasks, np.nan)
        for size, rows in blocks:
            if rows is None:  # every task, each with `size` values: the values are the block
                block = np.sort(x.reshape(tasks, size), axis=1, kind="stable")
            else:
                block = np.sort(x[starts[rows][:, None] + np.arange(size)], axis=1, kind="stable")
            med[slice(None) if rows is None else rows] = (block[:, (size - 1) // 2] + block[:, size // 2]) / 2
        out[name] = med
    return out


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


MAX_PAIR_KEYS = 1 << 24
"""Largest (n + 1)² for which distinct (n, c) pairs are found with a lookup table."""


def count_pairs(n: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The distinct (n, c) pairs of a run's tasks, and each task's pair (an index into
    them); None when the counts are too large (or negative) for a lookup table."""
    n_int, c_int = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    if not n_int.size or int(n_int.min()) < 0 or int(c_int.min()) < 0:
        return None
    width = max(int(n_int.max()), int(c_int.max())) + 1
    if width * width > MAX_PAIR_KEYS:
        return None
    key = n_int * width + c_int
    seen = np.zeros(width * width, dtype=bool)
    seen[key] = True
    keys = np.flatnonzero(seen)
    index = np.empty(width * width, dtype=np.int64)
    index[keys] = np.arange(keys.size)
    return keys // width, keys % width, index[key]


def k_figures(n: np.ndarray, c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, Interval]:
    """Per task, pass@k, pass^k and pass^k's interval, as :func:`~flaketui.stats.task_stats`
    computes them (the estimators work element by element, and their largest n is the same
    over the distinct pairs as over the tasks: the figures are the same bits)."""
    pairs = count_pairs(n, c)
    if pairs is None:
        return pass_at_k(n, c, k), pass_hat_k(n, c, k), pass_hat_k_interval(n, c, k)
    nn, cc, task_pair = pairs
    interval = pass_hat_k_interval(nn, cc, k)
    return (pass_at_k(nn, cc, k)[task_pair], pass_hat_k(nn, cc, k)[task_pair],
            Interval(interval.low[task_pair], interval.high[task_pair]))


def label_ranks(labels: Sequence[str | None]) -> np.ndarray:
    """Sort values of a text column, as :func:`flaketui.output.columns.label_ranks` of the
    labels with None as "": each label's rank among the distinct labels in numpy's string
    order (code points, trailing NULs ignored)."""
    keys = [(label or "").rstrip("\x00") for label in dict.fromkeys(labels)]
    rank = {key: float(i) for i, key in enumerate(sorted(set(keys)))}
    of = {label: rank[key] for label, key in zip(dict.fromkeys(labels), keys, strict=True)}
    return np.fromiter(map(of.__getitem__, labels), dtype=np.float64, count=len(labels))
