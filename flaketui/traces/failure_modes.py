"""Failure modes: failing and errored trials grouped by a deterministic signature.

A trial's signature joins what is known of how it went wrong, each part only when
present: the exception type, the last error message with numbers, ids, paths and
quoted values masked (``<n>``, ``<id>``, ``<path>``, ``<s>``), the termination
reason, and the divergent action (tool name and argument keys, from where it
parts from a passing trial of its task). The same failure on other records, ids or
times gets the same signature. Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flaketui.model import natural_key
from flaketui.traces.normalise import compact, one_line, parse_json_string

TERMINATION_KEYS = ("termination_reason", "stop_reason", "finish_reason", "exit_reason", "termination",
                    "limit", "status")
"""Extra fields a trial's termination reason is read from (first found; also in ``metadata``)."""
WIDTH = 160
"""Longest masked message in a signature."""

_MASKS = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I), "<id>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.\-]+){2,}[/\\]?"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|us|ns|s|m|h|d|kb|mb|gb|k|x)?\b", re.I), "<n>"),  # 30s, 1.5GB
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b", re.I), "<id>"),
    (re.compile(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w*\d\w*\b"), "<id>"),  # R48009, call_1a2b, item-785 parts
    (re.compile(r"\b0x[0-9a-f]+\b|\b\d+(?:\.\d+)?\b", re.I), "<n>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<s>"),
)
_EXCEPTION = re.compile(r"(?-i:\b([A-Z]\w*(?:Error|Exception|Exit|Timeout|Interrupt)))\b")


def mask(text: str, width: int = WIDTH) -> str:
    """``text`` on one line with numbers, ids, paths and quoted values masked."""
    out = one_line(text, None)
    for pattern, repl in _MASKS:
        out = pattern.sub(repl, out)
    return one_line(re.sub(r"(?:<(\w+)>[\s,.:;-]*){2,}", lambda m: f"<{m.group(1)}>… ", out).strip(), width)


def exception_type(error: Any) -> str | None:
    """The exception type an error names (``type``/``exception``/``name`` field or ``KeyError: …``), or None."""
    obj = parse_json_string(error) if isinstance(error, str) else error
    if isinstance(obj, Mapping):
        for key in ("type", "exception", "exc_type", "error_type", "name"):
            v = obj.get(key)
            if isinstance(v, str) and v:
                return v.rsplit(".", 1)[-1]
        obj = obj.get("message", obj.get("error"))
    if isinstance(obj, str):
        m = _EXCEPTION.search(obj)
        return m.group(1) if m else None
    return None


def message_of(error: Any) -> str | None:
    """An error's message text (its ``message``/``error``/``detail`` field, or itself), or None."""
    if error is None or error is False:
        return None
    obj = parse_json_string(error) if isinstance(error, str) else error
    if isinstance(obj, Mapping):
        for key in ("message", "error", "detail", "reason", "traceback"):
            v = obj.get(key)
            if isinstance(v, str) and v:
                return v.strip().splitlines()[-1] if key == "traceback" else v
        return compact(obj)
    return obj if isinstance(obj, str) else compact(obj)


def termination_reason(extra: Mapping[str, Any] | None) -> str | None:
    """A trial's termination reason from its extra fields (:data:`TERMINATION_KEYS`), or None."""
    for where in (extra or {}, (extra or {}).get("metadata")):
        if isinstance(where, Mapping):
            for key in TERMINATION_KEYS:
                v = where.get(key)
                if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                    return mask(str(v), 60)
    return None


def action_shape(call: Mapping[str, Any] | None) -> str | None:
    """``name(key1,key2)``: a tool call's name and its sorted argument keys, or None."""
    if not call:
        return None
    args = call.get("arguments")
    args = parse_json_string(args) if isinstance(args, str) else args
    keys = ",".join(sorted(str(k) for k in args)) if isinstance(args, Mapping) else ""
    return f"{call.get('name')}({keys})"


@dataclass(frozen=True)
class TrialSignature:
    """How one failing trial went wrong, part by part (None: not known)."""

    trial: int
    exception: str | None = None
    error: str | None = None
    termination: str | None = None
    action: str | None = None
    errored: bool = False

    @property
    def kind(self) -> str:
        """``exception``, ``error``, ``termination``, ``action`` (the first part present) or ``unknown``."""
        for name in ("exception", "error", "termination", "action"):
            if getattr(self, name):
                return name
        return "unknown"

    @property
    def signature(self) -> str:
        """The parts present, ``exception=TimeoutError | error=… | termination=… | action=…`` (``-``: none)."""
        parts = [f"{n}={getattr(self, n)}" for n in ("exception", "error", "termination", "action")
                 if getattr(self, n)]
        return " | ".join(parts) if parts else "-"


@dataclass(frozen=True)
class FailureMode:
    """One signature with its trial and task counts and an example (task, trial)."""

    signature: str
    kind: str
    trials: int
    tasks: int
    example: tuple[str, int]
    task_names: tuple[str, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        """``{signature, kind, trials, tasks, example: {task, trial}}``."""
        return {"signature": self.signature, "kind": self.kind, "trials": self.trials, "tasks": self.tasks,
                "example": {"task": self.example[0], "trial": self.example[1]}}

    def text(self) -> str:
        """``12 trials in 9 tasks: exception=TimeoutError | … (e.g. task-7 trial 2)``."""
        return (f"{self.trials} trials in {self.tasks} tasks: {self.signature} "
                f"(e.g. {self.example[0]} trial {self.example[1]})")


def failure_modes(signatures: Iterable[tuple[str, TrialSignature]]) -> list[FailureMode]:
    """Group (task, signature) pairs into modes, most trials first (ties: most tasks, then signature).

    The example is the first trial of the mode in natural (task, trial) order, so the
    same log always gives the same modes and examples.
    """
    groups: dict[str, list[tuple[str, TrialSignature]]] = {}
    for task, sig in signatures:
        groups.setdefault(sig.signature, []).append((task, sig))
    out = []
    for key, members in groups.items():
        members.sort(key=lambda m: (natural_key(m[0]), m[1].trial))
        tasks = tuple(dict.fromkeys(m[0] for m in members))
        out.append(FailureMode(key, members[0][1].kind, len(members), len(tasks),
                               (members[0][0], members[0][1].trial), tasks))
    out.sort(key=lambda m: (-m.trials, -m.tasks, m.signature))
    return out

