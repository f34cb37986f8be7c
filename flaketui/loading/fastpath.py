"""Reading a trial line without building its trace: the per-line parser's first decode.

A 20-step trace is most of a line's bytes, and a full :func:`orjson.loads`
spends most of its time building Python objects for it. msgspec decodes a line
into a struct of only the fields a trial needs and *skips* every other value:
it still checks the syntax of what it skips, but builds nothing. A trace field
is kept as raw bytes, only to tell a list from anything else and an empty list
from a full one.

:meth:`FastDecoder.loose` decodes those fields as any JSON value and hands a dict
to :meth:`RecordSink.add <flaketui.loading.records.RecordSink.add>`, the one
statement of the rule. Anything it declines (invalid JSON, a top level that is
not an object, a trace that is not a list or null, integers beyond 64 bits,
nesting deeper than msgspec's recursion limit) is parsed in full with orjson by
the caller, which names the problem exactly; either way the rule judges the same
values. Skipped strings are not checked for UTF-8 here: the caller checks lines
that are not ASCII.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import msgspec

from flaketui.loading.records import MARKS
from flaketui.model import FieldMap

EMPTY_TRACE: list[Any] = []
SOME_TRACE: list[Any] = [None]
"""Stand-ins for a skipped trace: the sink only asks whether it is a list and
whether it is empty."""

_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1
"""orjson reads integers in this range exactly and larger ones as floats."""

_JSON_SPACE = frozenset(b" \t\r\n")
_EMPTY_LIST = re.compile(rb"\[[ \t\r\n]*\]")
"""A list without items (msgspec has checked the value is JSON: JSON's whitespace only)."""
_MALFORMED = ("JSON is malformed", "Input data was truncated")
"""How msgspec starts the message of a syntax error (the line is not JSON at all)."""


def _trace_stand_in(raw: msgspec.Raw) -> list[Any] | None | bool:
    """``None`` for null, a stand-in list for a list, ``False`` for anything else."""
    view = memoryview(raw)
    head = view[0]  # a JSON value is never empty
    if head == 0x6E:  # null
        return None
    if head != 0x5B:  # not a list
        return False
    second = view[1]  # a list has two bytes at least
    if second == 0x5D:
        return EMPTY_TRACE
    if second not in _JSON_SPACE:
        return SOME_TRACE
    # "[ ]" of any length: no steps, as the full parse says
    return EMPTY_TRACE if _EMPTY_LIST.match(view) else SOME_TRACE


class FastDecoder:
    """Decoders for the fields of a :class:`~flaketui.model.FieldMap`."""

    def __init__(self, fields: FieldMap) -> None:
        loose: list[str] = []
        for names in (fields.run, fields.task, fields.trial, fields.passed, fields.score,
                      fields.group, ("error", "metrics", *MARKS)):
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
        self._names = self.loose_names + self.raw_names
        # fields named as the JSON names where they can be (msgspec then makes the dict in C,
        # asdict); else f0, f1, ... renamed
        self._plain = all(n.isidentifier() and not n.startswith("_") and not keyword.iskeyword(n)
                          for n in self._names)
        attrs = self._names if self._plain else [f"f{i}" for i in range(len(self._names))]
        spec: list[tuple[str, Any, Any]] = [
            (a, Any, msgspec.UNSET if n in self._unset else None) for a, n in zip(attrs, self.loose_names, strict=False)
        ]
        spec += [(a, msgspec.Raw, None) for a in attrs[len(self.loose_names):]]
        rename = None if self._plain else dict(zip(attrs, self._names, strict=True))
        self._loose = msgspec.json.Decoder(msgspec.defstruct("LooseTrial", spec, rename=rename))
        self.malformed = False
        """Whether the last :meth:`loose` found a syntax error (not a value it declines)."""

    def loose(self, line: bytes | memoryview) -> dict[str, Any] | None:
        """The trial fields of ``line`` as a dict (traces as stand-ins) for
        :meth:`RecordSink.add`, or ``None``: parse it in full instead."""
        self.malformed = False
        try:
            rec = self._loose.decode(line)
        except msgspec.DecodeError as exc:
            self.malformed = str(exc).startswith(_MALFORMED)
            return None
        except RecursionError:  # nested deeper than msgspec goes
            return None
        # one entry a field; absent: None, as obj.get gives
        obj = msgspec.structs.asdict(rec) if self._plain else dict(
            zip(self._names, msgspec.structs.astuple(rec), strict=True))
        values = obj.values()
        unset = msgspec.UNSET
        for name in self._unset:
            if obj[name] is unset:
                del obj[name]
        for v in values:
            if type(v) is int and (v > _INT_MAX or v < _INT_MIN):
                return None
        metrics = obj.get("metrics")
        if type(metrics) is dict:
            for v in metrics.values():
                if type(v) is int and (v > _INT_MAX or v < _INT_MIN):
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
