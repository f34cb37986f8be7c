"""Normalise trace steps so that two trials' steps can be compared.

A step is whatever the log holds in its trace list: usually an object with
``role``, ``type``, ``name``, ``args``, ``content``, or a plain string. Keys that
change on every run (ids, timestamps, durations) say nothing about the outcome,
so they are dropped before comparing, recursively inside the step. Pure Python:
no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

DEFAULT_IGNORED_KEYS = ("id", "timestamp", "time")
"""Keys ignored by name, at any depth of a step."""
IGNORED_SUFFIXES = ("_id", "_at")
"""Keys ending with these are ignored (``call_id``, ``created_at``)."""
IGNORED_PREFIXES = ("duration", "latency")
"""Keys starting with these are ignored (``duration_s``, ``latency_ms``)."""

SUMMARY_KEYS = ("role", "type", "name")
"""Fields that make up the head of a one-line step description, in this order."""


@dataclass(frozen=True)
class Normaliser:
    """Drops the keys that differ between runs from trace steps.

    Args:
        extra_keys: Further key names to ignore (the command line's ``--ignore-key``).
    """

    extra_keys: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def with_keys(cls, keys: Iterable[str] = ()) -> Normaliser:
        """A normaliser that also ignores ``keys``."""
        return cls(frozenset(keys))

    def ignores(self, key: str) -> bool:
        """True if a key of this name is dropped before comparing."""
        return (
            key in DEFAULT_IGNORED_KEYS
            or key in self.extra_keys
            or key.endswith(IGNORED_SUFFIXES)
            or key.startswith(IGNORED_PREFIXES)
        )

    def step(self, step: Any) -> Any:
        """The step without ignored keys, at every depth (lists and nested objects)."""
        if isinstance(step, dict):
            return {
                k: self.step(v) for k, v in step.items() if not (isinstance(k, str) and self.ignores(k))
            }
        if isinstance(step, list):
            return [self.step(v) for v in step]
        return step

    def ignored_keys_of(self, trace: Sequence[Any] | None) -> list[str]:
        """The top-level keys of ``trace``'s steps that are ignored, in first-seen order."""
        seen: dict[str, None] = {}
        for step in trace or ():
            if isinstance(step, dict):
                for k in step:
                    if isinstance(k, str) and self.ignores(k):
                        seen.setdefault(k, None)
        return list(seen)

    def signature(self, step: Any) -> str:
        """A string that is equal for two steps exactly when their normalised forms are.

        Strings compare as strings; anything else by its canonical JSON (sorted keys).
        """
        if isinstance(step, str):
            return "s" + step
        try:
            return "j" + orjson.dumps(
                self.step(step), option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr
            ).decode()
        except (TypeError, RecursionError):
            pass  # nested deeper than orjson writes (255 levels): compare by repr
        try:
            return "r" + repr(self.step(step))
        except RecursionError:
            return f"deep{id(step)}"  # deeper than Python recurses: equal to no other step

    def signatures(self, trace: Sequence[Any] | None) -> list[str]:
        """The signature of each step of ``trace`` (an empty list for no trace)."""
        return [self.signature(s) for s in trace or ()]


def compact(value: Any) -> str:
    """A value on one line: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=repr).decode()
    except TypeError:
        return repr(value)


def describe(step: Any, width: int = 80) -> str:
    """One line about a step, e.g. ``tool_result searchRunbook: [1] Restart the…``.

    Args:
        step: A (normalised or raw) step.
        width: Longest result; longer text ends with ``…``.
    """
    if isinstance(step, dict):
        head = " ".join(str(step[k]) for k in SUMMARY_KEYS if k in step and step[k] is not None)
        rest = [compact(v) for k, v in step.items() if k not in SUMMARY_KEYS and v is not None]
        text = head + (": " if head and rest else "") + " ".join(rest)
    else:
        text = compact(step)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"
