"""Normalise trace steps so that two trials' steps can be compared.

A step is whatever the log holds in its trace list: usually an object with
``role``, ``type``, ``name``, ``args``, ``content`` (flaketui's own logs), an
OpenAI-style chat message (``role``, ``content``, ``tool_calls``; τ-bench,
τ²-bench, Inspect), or a plain string.

Keys that change on every run (ids, timestamps, durations) say nothing about the
outcome, so they are dropped before comparing — but only where they are
metadata: a step's own top-level keys, and the keys of a tool call in its
``tool_calls`` list (``tool_calls[].id``, which ties a tool result to its call;
the result's ``tool_call_id`` is a top-level key). They are never dropped inside
arguments, inputs, outputs or content: ``get_reservation_details(reservation_id=
"NM1VX1")`` and ``(reservation_id="KC18K6")`` stay different.

Tool calls are put in one shape, ``{"name", "arguments", …}``: OpenAI's
``{"function": {"name", "arguments"}}`` is lifted, Inspect's ``{"function":
name}`` renamed, and arguments held as a JSON string are parsed, so that key
order never counts and a change is named by its path
(``tool_calls.0.arguments.reservation_id``). Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from flaketui.sanitize import visible

DEFAULT_IGNORED_KEYS = ("id", "timestamp", "time")
"""Keys ignored by name, among a step's (or a tool call's) own keys."""
IGNORED_SUFFIXES = ("_id", "_at")
"""Keys ending with these are ignored (``call_id``, ``created_at``)."""
IGNORED_PREFIXES = ("duration", "latency")
"""Keys starting with these are ignored (``duration_s``, ``latency_ms``)."""

NOISE_KEYS: dict[str, tuple[str, ...]] = {
    "τ²-bench": ("cost", "usage", "raw_data", "turn_idx", "generation_time_seconds"),
    "ATIF": ("metrics",),
    "Harbor episodes": ("episode",),
}
"""Per-format step keys that duplicate or decorate the content, ignored by default.

τ²-bench's messages (``tau2/data_model/message.py``) carry, as "metadata", the
call's ``cost``, the token ``usage``, the provider's ``raw_data`` (the same
message again), ``turn_idx`` (its position, which shifts by one for every extra
user turn) and ``generation_time_seconds``; τ²'s own message equality leaves
them out too (it compares role, content and tool calls). ATIF's step ``metrics`` (Harbor's
``MetricsSchema``: prompt/completion tokens, cost, token ids, logprobs) likewise. A Harbor
agent's list of episodes numbers each step by its ``episode`` (shown as the step's name, never
compared)."""

DEFAULT_NOISE_KEYS = frozenset(k for keys in NOISE_KEYS.values() for k in keys)

ARGUMENT_KEYS = ("arguments", "args", "input")
"""Keys that hold a tool call's arguments (parsed when they are a JSON string)."""

SUMMARY_KEYS = ("role", "type", "name")
"""Fields that make up the head of a one-line step description, in this order."""

QUOTED_IDS = re.compile(r"\b(?:toolu|srvtoolu|call|msg)_[A-Za-z0-9]{16,}\b")
"""Tool-call and message ids in the shapes providers generate (Anthropic ``toolu_01…`` and
``msg_…``, OpenAI ``call_…``: a prefix and 16 or more random letters and digits),
masked where a step's text quotes them (``"Executed Read toolu_01…"``)."""
QUOTED_ID_PREFIXES = ("toolu_", "call_", "msg_")
"""Substrings every match of :data:`QUOTED_IDS` holds (``srvtoolu_`` holds ``toolu_``): a text
without any of them is left as it is without running the regex, a long tool output's common case."""
MASK = "<id>"
"""What a volatile id quoted in a step's text is replaced with before comparing."""


@dataclass(frozen=True)
class Normaliser:
    """Drops the metadata keys that differ between runs from trace steps.

    Args:
        extra_keys: Further key names to ignore (the command line's ``--ignore-key``);
            like the volatile keys, only a step's own keys and a tool call's.
        noise_keys: Per-format noise keys (:data:`NOISE_KEYS`), ignored the same way.
    """

    extra_keys: frozenset[str] = field(default_factory=frozenset)
    noise_keys: frozenset[str] = DEFAULT_NOISE_KEYS

    @classmethod
    def with_keys(cls, keys: Iterable[str] = ()) -> Normaliser:
        """A normaliser that also ignores ``keys``."""
        return cls(frozenset(keys))

    def __post_init__(self) -> None:
        # ignores() per key name, remembered: a long trace asks about the same few keys for every step
        object.__setattr__(self, "_ignored", {})

    def ignores(self, key: str) -> bool:
        """True if a step's (or tool call's) own key of this name is dropped before comparing."""
        try:
            return self._ignored[key]  # type: ignore[attr-defined,no-any-return]
        except KeyError:
            found = self._ignores(key)
        self._ignored[key] = found  # type: ignore[attr-defined]
        return found

    def _ignores(self, key: str) -> bool:
        return (
            key in DEFAULT_IGNORED_KEYS
            or key in self.extra_keys
            or key in self.noise_keys
            or key.endswith(IGNORED_SUFFIXES)
            or key.startswith(IGNORED_PREFIXES)
        )

    def ignored_key_patterns(self) -> list[str]:
        """Every rule of :meth:`ignores`, for display: ``id``, ``*_id``, ``duration*``, ``cost``…"""
        return [
            *DEFAULT_IGNORED_KEYS,
            *(f"*{s}" for s in IGNORED_SUFFIXES),
            *(f"{p}*" for p in IGNORED_PREFIXES),
            *sorted(self.noise_keys),
            *sorted(self.extra_keys - self.noise_keys),
        ]

    def _keep(self, key: Any) -> bool:
        return not (isinstance(key, str) and self.ignores(key))

    def tool_call(self, call: Any) -> Any:
        """One tool call as ``{"name", "arguments", …}`` without its metadata keys."""
        if not isinstance(call, dict):
            return call
        out: dict[str, Any] = {}
        fn = call.get("function")
        name = fn.get("name") if isinstance(fn, dict) else fn if isinstance(fn, str) else call.get("name")
        if name is not None:
            out["name"] = name
        args: Any = _MISSING
        if isinstance(fn, dict):
            args = next((fn[k] for k in ARGUMENT_KEYS if k in fn), _MISSING)
        if args is _MISSING:
            args = next((call[k] for k in ARGUMENT_KEYS if k in call), _MISSING)
        if args is not _MISSING:
            out["arguments"] = parse_json_string(args)
        for k, v in call.items():
            if k in ("function", "name", *ARGUMENT_KEYS) or not self._keep(k):
                continue
            if k == "type" and v == "function":
                continue  # OpenAI's constant marker says nothing
            out[k] = v
        if isinstance(fn, dict):
            out.update((k, v) for k, v in fn.items()
                       if k not in ("name", *ARGUMENT_KEYS) and self._keep(k) and k not in out)
        return out

    def step(self, step: Any) -> Any:
        """The step without its ignored metadata keys, tool calls in one shape.

        Only the step's own keys and its tool calls' keys are looked at; values
        (arguments, content, outputs) are kept whole, except that arguments held
        as a JSON string are parsed, and that a volatile id quoted in the step's own
        text (a top-level string such as ``content``) reads :data:`MASK`: the value of
        an id key the step itself drops (``tool_call_id``, ``tool_calls[].id``…), or an
        id in a provider's shape (:data:`QUOTED_IDS`). Arguments are never masked.
        """
        if not isinstance(step, dict):
            return step
        out: dict[Any, Any] = {}
        ids: list[str] | None = None
        for k, v in step.items():
            if not self._keep(k):
                continue
            if k == "tool_calls" and isinstance(v, list):
                out[k] = [self.tool_call(c) for c in v]
            elif k in ARGUMENT_KEYS:
                out[k] = parse_json_string(v)
            elif isinstance(v, str) and v:
                if ids is None:
                    ids = self._dropped_ids(step)
                out[k] = mask_ids(v, ids)
            else:
                out[k] = v
        return out

    def _dropped_ids(self, step: dict[Any, Any]) -> list[str]:
        """The string values (4 characters or more) of the id keys dropped from ``step``: its
        own and its tool calls'; longest first, so that no id is masked inside another."""
        found = [v for k, v in step.items()
                 if isinstance(v, str) and len(v) >= 4 and isinstance(k, str) and _is_id_key(k) and self.ignores(k)]
        calls = step.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    found.extend(v for k, v in call.items() if isinstance(v, str) and len(v) >= 4
                                 and isinstance(k, str) and _is_id_key(k) and self.ignores(k))
        return sorted(set(found), key=len, reverse=True) if len(found) > 1 else found

    def ignored_keys_of(self, trace: Sequence[Any] | None) -> list[str]:
        """The keys of ``trace``'s steps that are ignored, in first-seen order.

        A step's own keys by name (``id``); its tool calls' as ``tool_calls[].id``.
        """
        seen: dict[str, None] = {}
        for step in trace or ():
            if not isinstance(step, dict):
                continue
            for k in step:
                if isinstance(k, str) and self.ignores(k):
                    seen.setdefault(k, None)
            calls = step.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                if isinstance(call, dict):
                    for k in call:
                        if isinstance(k, str) and self.ignores(k):
                            seen.setdefault(f"tool_calls[].{k}", None)
        return list(seen)

    def signature(self, step: Any) -> str:
        """A string that is equal for two steps exactly when their normalised forms are.

        Strings compare as strings; anything else by its canonical JSON (sorted keys).
        A key whose value is null counts as absent (in the step and in its tool
        calls): ``"is_audio": null`` on one side and no such key on the other is no
        difference.
        """
        if isinstance(step, str):
            return "s" + step
        return canonical_json(_without_nulls(self.step(step)), id(step))

    def signatures(self, trace: Sequence[Any] | None) -> list[str]:
        """The signature of each step of ``trace`` (an empty list for no trace)."""
        return [self.signature(s) for s in trace or ()]


_MISSING = object()


def _without_nulls(step: Any) -> Any:
    """A normalised step without its null-valued keys (and its tool calls' null-valued keys)."""
    if not isinstance(step, dict) or not any(v is None or k == "tool_calls" for k, v in step.items()):
        return step
    out = {k: v for k, v in step.items() if v is not None}
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [{k: v for k, v in c.items() if v is not None} if isinstance(c, dict) else c
                             for c in calls]
    return out


def _is_id_key(key: str) -> bool:
    return key.endswith("_id") or key == "id"


def mask_ids(text: str, ids: Sequence[str] = ()) -> str:
    """``text`` with each of ``ids`` and every id in a provider's shape (:data:`QUOTED_IDS`)
    replaced by :data:`MASK`."""
    for value in ids:
        if value in text:
            text = text.replace(value, MASK)
    if any(p in text for p in QUOTED_ID_PREFIXES):
        return QUOTED_IDS.sub(MASK, text)
    return text


def parse_json_string(value: Any) -> Any:
    """``value`` parsed when it is a string holding a JSON object or array, else unchanged."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def canonical_json(value: Any, fallback: int = 0) -> str:
    """``j`` + canonical JSON (sorted keys) of ``value``; ``r`` + repr when orjson cannot write it.

    orjson writes 255 levels; deeper values compare by repr, and values deeper
    than Python recurses by ``fallback`` (pass ``id(value)``: equal to no other).
    """
    try:
        return "j" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
                                  default=repr).decode()
    except (TypeError, RecursionError):
        pass
    try:
        return "r" + repr(value)
    except RecursionError:
        return f"deep{fallback}"


def compact(value: Any) -> str:
    """A value on one line: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json_text(value)


def json_text(value: Any) -> str:
    """Compact JSON of ``value``; repr when orjson cannot write it (deeper than 255 levels)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=repr).decode()
    except TypeError:
        pass
    try:
        return repr(value)
    except RecursionError:
        return "<nested too deep to show>"


def one_line(text: str, width: int | None = None) -> str:
    """``text`` on one line: white space runs as one space, every other control, bidi or invisible
    character spelled out (:func:`flaketui.sanitize.visible`: ``\\x1b``), as every other place
    shows them; dropped, an ESC would hide that the log held one.

    Args:
        text: Any text from a log (untrusted).
        width: Longest result; longer text ends with ``…``. None: no limit.
    """
    text = visible(" ".join(text.split()))
    if width is None or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…"


def describe(step: Any, width: int | None = 80) -> str:
    """One line about a step, e.g. ``tool_result searchRunbook: [1] Restart the…``.

    Args:
        step: A (normalised or raw) step.
        width: Longest result; longer text ends with ``…``. None: no limit.
    """
    if isinstance(step, dict):
        head = " ".join(str(step[k]) for k in SUMMARY_KEYS if k in step and step[k] is not None)
        rest = [compact(v) for k, v in step.items() if k not in SUMMARY_KEYS and v is not None]
        text = head + (": " if head and rest else "") + " ".join(rest)
    else:
        text = compact(step)
    return one_line(text, width)
