"""Turn one parsed JSON object into the fields of a trial, or say why it can't be.

The rules are the log format's (README, "The trial log"): ``task`` (or
``task_id``) is required; the outcome is ``passed`` (bool or 0/1) or a number in
``score`` / ``reward`` compared with a threshold; a truthy ``error`` marks a
trial that errored in the harness, counted apart; ``attempt`` (or ``retry``) marks a
retried attempt, read as the metric :data:`ATTEMPT` (:func:`attempt_of`).

:meth:`RecordSink.add` is the one statement of these rules: the per-line parser hands it
every line, and the C scanner (:mod:`flaketui.loading.scan`) takes only the lines on which
it is sure to agree with it, deferring the rest to it (the differential tests hold the two
equal).
"""

from __future__ import annotations

import math
import sys
from array import array
from typing import Any

from flaketui.model import ERRORED, FAIL, PASS, PARSED_COLUMNS, FieldMap


def lookup(obj: dict[str, Any], name: str) -> Any:
    """The value of field ``name``; a dotted name such as ``score.value`` walks nested objects
    when the object has no key spelled with the dot."""
    value = obj.get(name)
    if value is not None or "." not in name or name in obj:
        return value
    for part in name.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)  # type: ignore[assignment]
    return obj


def _first(obj: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        value = lookup(obj, name)
        if value is not None:
            return name, value
    return None, None


MAX_TRIAL = (1 << 63) - 1
"""Trial numbers are stored as 64-bit integers."""
_DOUBLE_MAX = sys.float_info.max
"""An int metric beyond this is past the double range: no metric."""


def _first_plain(obj: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        value = obj.get(name)
        if value is not None:
            return name, value
    return None, None


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a bool"}.get(
        type(value), type(value).__name__
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _label(value: Any, what: str) -> str:
    """A task, run or group id as text: strings as they are, integral numbers without '.0'."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{what} is empty")
        return value
    if _is_number(value):
        if isinstance(value, float):
            text = getattr(value, "text", None)  # an integer past the double range (BigInt)
            if text is not None:
                return text
            if not math.isfinite(value):
                raise ValueError(f"{what} must be a string or number, got {value!r}")
            if value.is_integer():
                return str(int(value))
        return str(value)
    raise ValueError(f"{what} must be a string or number, got {_type_name(value)}")


ATTEMPT = "attempt"
"""The per-trial metric that holds a trial's attempt: 1 for a first attempt, more for one a
harness retried (the retry audit, :mod:`flaketui.stats.retries`, reads it). Every reader fills
it the same way: Inspect as 1 + the sample's ``retries``, Harbor from its job log, JSON Lines
from ``"metrics": {"attempt": N}`` or the top-level fields :data:`MARKS`."""
MARKS = (ATTEMPT, "retry")
"""A JSON Lines trial's top-level fields that mark its attempt, in order of precedence:
``attempt`` (1, 2, ...: which attempt this trial is) and ``retry`` (``true``/``false``, or how
many times the trial was retried before this attempt, as Inspect's ``retries``)."""


def _count(value: Any, least: int) -> float | None:
    """``value`` as a whole number from ``least`` up to 2**53 (exact in a double), else None."""
    if (type(value) is int or (type(value) is float and value.is_integer())) and least <= value <= 1 << 53:
        return float(value)
    return None


def _shown(value: Any) -> str:
    return repr(value) if type(value) in (int, float, bool) else _type_name(value)


def marks(fields: FieldMap) -> tuple[str, ...]:
    """The :data:`MARKS` a trial's attempt is read from under ``fields``: those no role names
    (``--trial-field attempt`` reads a log that numbers its trials in ``attempt``)."""
    known = fields.known_names()
    return tuple(m for m in MARKS if m not in known)


def attempt_of(obj: dict[str, Any], names: tuple[str, ...] = MARKS) -> float | str | None:
    """The attempt a trial's marks ``names`` (of :data:`MARKS`) give (``attempt: N`` → N;
    ``retry: R`` → 1 + R, with ``true`` as 1 and ``false`` as 0), None when none is given
    (absent or null), or why the value can't be an attempt."""
    value = obj.get(ATTEMPT) if ATTEMPT in names else None
    if value is not None:
        attempt = _count(value, 1)
        if attempt is not None:
            return attempt
        return f"{ATTEMPT} must be a positive integer (1: a first attempt), got {_shown(value)}"
    value = obj.get(MARKS[1]) if MARKS[1] in names else None
    if value is None:
        return None
    if value is True or value is False:
        return 1.0 + value
    retries = _count(value, 0)
    if retries is not None:
        return 1.0 + retries
    return f"{MARKS[1]} must be a bool or a non-negative integer (the retries before this attempt), got {_shown(value)}"


def is_error(value: Any) -> bool:
    """Whether an ``error`` field says the trial errored: null, false, 0 (an exit code) and
    empty strings, objects or lists say no."""
    return bool(value)


class RecordSink:
    """Columns of trials being read from one piece of input, with local name tables.

    Each :meth:`add` either appends one trial to every column or returns the
    reason the record was rejected (nothing is appended then).
    """

    def __init__(self, fields: FieldMap, default_run: str) -> None:
        self.fields = fields
        self.default_run = default_run
        self.runs: dict[str, int] = {}
        self.tasks: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        for name, col in PARSED_COLUMNS.items():  # self.run, self.task, …: one array a column
            setattr(self, name, array(col.code))
        self.metrics: dict[str, array] = {}
        dotted = any("." in n for names in (fields.run, fields.task, fields.trial, fields.passed,
                                            fields.score, fields.trace, fields.group) for n in names)
        self._first = _first if dotted else _first_plain
        self.marks = marks(fields)

    def __len__(self) -> int:
        return len(self.run)

    def add(self, obj: Any, offset: int, length: int, line: int) -> str | None:
        """Append the trial held by ``obj``; return a reason instead if it is unusable."""
        if not isinstance(obj, dict):
            return f"not a JSON object (got {_type_name(obj)})"
        f = self.fields
        first = self._first
        tkey, task = first(obj, f.task)
        if tkey is None:
            return f"no task field ({' or '.join(f.task)})"
        try:
            task_s = task if type(task) is str and task else _label(task, tkey)
            rkey, run = first(obj, f.run)
            if rkey is None:
                run_s = self.default_run
            else:
                run_s = run if type(run) is str and run else _label(run, rkey)
            gkey, group = first(obj, f.group)
            group_s = None if gkey is None else _label(group, gkey)
        except ValueError as exc:
            return str(exc)

        error = obj.get("error")
        errored = error is not None and is_error(error)
        pkey, passed = first(obj, f.passed)
        skey, score = first(obj, f.score)
        score_v = math.nan
        if skey is not None:
            if type(score) is not float and not _is_number(score):
                return f"{skey} must be a number, got {_type_name(score)}"
            if not math.isfinite(score):
                return f"{skey} must be finite, got {score!r}"
            score_v = float(score)
        if pkey is not None:
            if passed is True or passed is False:
                ok = passed
            elif _is_number(passed) and passed in (0, 1):
                ok = bool(passed)
            else:
                return f"{pkey} must be a bool or 0/1, got {passed!r}"
        elif skey is not None:
            ok = score_v >= f.threshold
        elif errored:
            ok = False
        elif any(name in obj and obj[name] is None for name in f.passed + f.score):
            ok, errored = False, True  # the harness wrote no outcome: errored, never dropped
        else:
            names = f.passed + f.score
            return f"no outcome ({', '.join(names)})"
        outcome = ERRORED if errored else (PASS if ok else FAIL)

        trkey, trial = first(obj, f.trial)
        trial_v = -1
        if trkey is not None:
            if type(trial) is not int:
                if isinstance(trial, float) and trial.is_integer():
                    trial = int(trial)
                if not isinstance(trial, int) or isinstance(trial, bool):
                    return f"{trkey} must be a non-negative integer, got {trial!r}"
            if trial < 0 or trial > MAX_TRIAL:
                return f"{trkey} must be a non-negative integer, got {trial!r}"
            trial_v = trial

        metrics = obj.get("metrics")
        if metrics is not None and not isinstance(metrics, dict):
            return f"metrics must be an object, got {_type_name(metrics)}"
        if self.marks and (ATTEMPT in obj or MARKS[1] in obj):
            attempt = attempt_of(obj, self.marks)
            if isinstance(attempt, str):
                return attempt
            if attempt is not None:  # the top-level mark is the metric, over metrics.attempt
                metrics = {**(metrics or {}), ATTEMPT: attempt}
        xkey, trace = first(obj, f.trace)
        if xkey is not None and not isinstance(trace, list):
            return f"{xkey} must be a list of steps, got {_type_name(trace)}"

        self.append(run_s, task_s, group_s, trial_v, outcome, score_v, offset, length, line,
                    bool(trace), metrics)
        return None

    def append(self, run: str, task: str, group: str | None, trial: int, outcome: int,
               score: float, offset: int, length: int, line: int, has_trace: bool,
               metrics: dict[str, Any] | None) -> None:
        """Append one checked trial; metric values that are not finite numbers are left out."""
        n = len(self.run)
        runs = self.runs
        run_i = runs.get(run)
        if run_i is None:
            run_i = runs[run] = len(runs)
        tasks = self.tasks
        task_i = tasks.get(task)
        if task_i is None:
            task_i = tasks[task] = len(tasks)
        self.run.append(run_i)
        self.task.append(task_i)
        self.group.append(-1 if group is None else self.groups.setdefault(group, len(self.groups)))
        self.trial.append(trial)
        self.outcome.append(outcome)
        self.score.append(score)
        self.offset.append(offset)
        self.length.append(length)
        self.line.append(line)
        self.has_trace.append(has_trace)
        columns = self.metrics
        given = 0
        if metrics:
            isfinite = math.isfinite
            for name, value in metrics.items():
                kind = type(value)
                if kind is float:
                    if not isfinite(value):
                        continue  # NaN and inf are not metrics
                elif kind is not int or not -_DOUBLE_MAX <= value <= _DOUBLE_MAX:
                    continue  # nor are bools, strings, objects, or an int past the double range
                column = columns.get(name)
                if column is None:
                    column = columns[name] = array("d", [math.nan]) * n
                column.append(value)
                given += 1
        if given < len(columns):  # NaN in the columns this trial has no value for
            for column in columns.values():
                if len(column) == n:
                    column.append(math.nan)
