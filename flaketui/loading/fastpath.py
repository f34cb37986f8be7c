"""Reading a trial line without building its trace: the loader's fast path.

A 20-step trace is most of a line's bytes, and a full :func:`orjson.loads`
spends most of its time building Python objects for it. msgspec decodes a line
into a struct of only the fields a trial needs and *skips* every other value:
it still checks the syntax of what it skips, but builds nothing. A trace field
is kept as raw bytes, only to tell a list from anything else and an empty list
from a full one.

Two tiers, then the full parse:

1. :meth:`FastDecoder.typed` decodes into a struct whose fields have the
   common types (task a string or integer, passed a bool or integer, score a
   number, ...); the adder made by :func:`typed_adder` appends it to a
   :class:`~flaketui.loading.records.RecordSink` with a few checks.
2. :meth:`FastDecoder.loose` decodes the same fields as any JSON value and
   hands a dict to :meth:`RecordSink.add`, the one home of the rules.
3. Anything either declines (invalid JSON, a top level that is not an object,
   a trace that is not a list or null, integers beyond 64 bits, nesting deeper
   than msgspec's recursion limit) is parsed in
   full with orjson by the caller, which names the problem exactly.

Every tier keeps the same trials with the same values and names the same
problems; ``tests/unit/test_formats.py`` checks this on generated lines of
every shape. Skipped strings are not checked for UTF-8 here: the caller checks
lines that are not ASCII.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import msgspec

from flaketui.loading.records import MAX_TRIAL, RecordSink, is_error
from flaketui.model import ERRORED, FAIL, PASS, FieldMap

EMPTY_TRACE: list[Any] = []
SOME_TRACE: list[Any] = [None]
"""Stand-ins for a skipped trace: the sink only asks whether it is a list and
whether it is empty."""

_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1
"""orjson reads integers in this range exactly and larger ones as floats."""

_ROLES = ("run", "task", "trial", "passed", "score", "group")
_MALFORMED = ("JSON is malformed", "Input data was truncated")
"""How msgspec starts the message of a syntax error (the line is not JSON at all)."""


def _trace_stand_in(raw: msgspec.Raw) -> list[Any] | None | bool:
    """``None`` for null, a stand-in list for a list, ``False`` for anything else."""
    view = memoryview(raw)
    head = view[:1]
    if head == b"n":
        return None
    if head != b"[":
        return False
    if len(view) < 64 and not bytes(view[1:-1]).strip():
        return EMPTY_TRACE
    return SOME_TRACE


class FastDecoder:
    """Decoders for the fields of a :class:`~flaketui.model.FieldMap`."""

    def __init__(self, fields: FieldMap) -> None:
        loose: list[str] = []
        for names in (fields.run, fields.task, fields.trial, fields.passed, fields.score,
                      fields.group, ("error", "metrics")):
            for name in names:
                loose.append(name)
                if "." in name:
                    loose.append(name.split(".", 1)[0])
        raw: list[str] = []
        for name in fields.trace:
            if "." in name:
                loose += [name, name.split(".", 1)[0]]
            else:
                raw.append(name)
        self.loose_names = list(dict.fromkeys(loose))
        self.raw_names = [n for n in dict.fromkeys(raw) if n not in self.loose_names]
        # Absent (UNSET, deleted below) must differ from null: a dotted name ("score.value")
        # is looked up as a key first, then walked, and a null outcome makes an errored trial
        # where an absent one makes no trial.
        self._unset = [n for n in self.loose_names
                       if "." in n or n in fields.passed or n in fields.score]
        spec: list[tuple[str, Any, Any]] = [
            (f"f{i}", Any, msgspec.UNSET if n in self._unset else None)
            for i, n in enumerate(self.loose_names)
        ]
        spec += [(f"r{i}", msgspec.Raw, None) for i in range(len(self.raw_names))]
        rename = {f"f{i}": n for i, n in enumerate(self.loose_names)}
        rename.update({f"r{i}": n for i, n in enumerate(self.raw_names)})
        self._loose = msgspec.json.Decoder(msgspec.defstruct("LooseTrial", spec, rename=rename))
        self._names = self.loose_names + self.raw_names
        self.malformed = False
        """Whether the last :meth:`typed` found a syntax error (not a field of another type)."""
        self._typed, self.typed_roles = self._typed_decoder(fields)

    def _typed_decoder(
        self, fields: FieldMap
    ) -> tuple[msgspec.json.Decoder | None, dict[str, tuple[int, ...]]]:
        """The typed struct, when every field name is plain and has one role."""
        types: dict[str, Any] = {
            "run": str | None, "task": str | int | None, "trial": int | None,
            "passed": bool | int | None, "score": float | None, "group": str | None,
        }
        roles = {role: list(dict.fromkeys(getattr(fields, role))) for role in _ROLES}
        names = [n for role in _ROLES for n in roles[role]] + ["error", "metrics"]
        names += list(dict.fromkeys(fields.trace))
        if len(names) != len(set(names)) or any("." in n for n in names):
            return None, {}
        spec: list[tuple[str, Any, Any]] = []
        rename: dict[str, str] = {}
        attrs: dict[str, list[str]] = {}
        for role in _ROLES:
            attrs[role] = []
            for name in roles[role]:
                attr = f"{role}{len(attrs[role])}"
                spec.append((attr, types[role], None))
                rename[attr] = name
                attrs[role].append(attr)
        # metrics of numbers only (ints read as floats, as the column stores them);
        # a string or bool among them sends the line to the loose tier, which skips it
        spec += [("error", Any, None), ("metrics", dict[str, float] | None, None)]
        rename.update({"error": "error", "metrics": "metrics"})
        attrs["trace"] = []
        for i, name in enumerate(dict.fromkeys(fields.trace)):
            spec.append((f"trace{i}", msgspec.Raw, None))
            rename[f"trace{i}"] = name
            attrs["trace"].append(f"trace{i}")
        struct = msgspec.defstruct("TypedTrial", spec, rename=rename)
        order = [a for a, _, _ in spec]
        where = {role: tuple(order.index(a) for a in names) for role, names in attrs.items()}
        return msgspec.json.Decoder(struct), where

    def typed(self, line: bytes | memoryview) -> Any:
        """The typed struct of ``line``, or ``None`` when a field has another type, or the
        line is not JSON: then :attr:`malformed` is true."""
        self.malformed = False
        if self._typed is None:
            return None
        try:
            return self._typed.decode(line)
        except msgspec.DecodeError as exc:
            self.malformed = str(exc).startswith(_MALFORMED)
            return None
        except RecursionError:  # nested deeper than msgspec goes
            return None

    def loose(self, line: bytes | memoryview) -> dict[str, Any] | None:
        """The trial fields of ``line`` as a dict (traces as stand-ins) for
        :meth:`RecordSink.add`, or ``None``: parse it in full instead."""
        try:
            values = msgspec.structs.astuple(self._loose.decode(line))
        except (msgspec.DecodeError, RecursionError):
            return None
        obj = dict(zip(self._names, values, strict=True))  # absent fields are None, as obj.get gives
        for name in self._unset:
            if obj[name] is msgspec.UNSET:
                del obj[name]
        metrics = obj.get("metrics")
        for v in (*values, *(metrics.values() if type(metrics) is dict else ())):
            if type(v) is int and not _INT_MIN <= v <= _INT_MAX:
                return None
        for name in self.raw_names:
            v = obj[name]
            if v is None:
                continue
            stand_in = _trace_stand_in(v)
            if stand_in is False:
                return None
            obj[name] = stand_in
        return obj


def _first(values: tuple[Any, ...], where: tuple[int, ...]) -> Any:
    for i in where:
        value = values[i]
        if value is not None:
            return value
    return None


def _picker(where: tuple[int, ...]) -> Callable[[tuple[Any, ...]], Any]:
    """The first non-null value among positions ``where`` of a struct's values."""
    if len(where) == 1:
        return operator.itemgetter(where[0])
    return lambda values: _first(values, where)


def typed_adder(sink: RecordSink, roles: dict[str, tuple[int, ...]],
                default_run: str) -> Callable[[Any, int, int, int], bool]:
    """A function appending a typed struct to ``sink`` as :meth:`RecordSink.add` would,
    or returning ``False`` (nothing appended) when the struct needs the general rules,
    which then decide. ``roles`` gives the positions of each role's fields in the struct;
    everything per line is looked up once, here."""
    astuple = msgspec.structs.astuple
    task_of, run_of, group_of = _picker(roles["task"]), _picker(roles["run"]), _picker(roles["group"])
    passed_of, score_of, trial_of = (_picker(roles["passed"]), _picker(roles["score"]),
                                     _picker(roles["trial"]))
    traces = roles["trace"]
    threshold = sink.fields.threshold
    append = sink.append
    nan = math.nan

    def add(rec: Any, offset: int, length: int, line: int) -> bool:
        values = astuple(rec)
        task = task_of(values)
        if type(task) is str:
            if not task:
                return False
        elif task is None or not _INT_MIN <= task <= _INT_MAX:
            return False
        else:
            task = str(task)
        run = run_of(values)
        if run is None:
            run = default_run
        elif not run:
            return False
        group = group_of(values)
        if group == "":
            return False
        passed = passed_of(values)
        if passed is not None and passed is not True and passed is not False:
            if passed != 0 and passed != 1:
                return False
            passed = passed == 1
        score = score_of(values)
        trial = trial_of(values)
        if trial is None:
            trial = -1
        elif not 0 <= trial <= MAX_TRIAL:
            return False
        trace: Any = None
        for i in traces:
            raw = values[i]
            if raw is not None:
                trace = _trace_stand_in(raw)
                if trace is False:
                    return False
                if trace is not None:
                    break
        metrics = rec.metrics
        error = rec.error
        errored = error is not None and is_error(error)
        if passed is not None:
            ok = passed
        elif score is not None:
            ok = score >= threshold
        elif errored:
            ok = False
        else:
            return False  # no outcome: the general rules name it
        append(run, task, group, trial, ERRORED if errored else (PASS if ok else FAIL),
               nan if score is None else score, offset, length, line, bool(trace), metrics)
        return True

    return add
