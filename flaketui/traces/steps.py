"""What a step is: the agent's tool calls, its final answer, everything else; one line per step.

Divergence modes: in ``all`` every step counts; in ``actions`` only the
agent's actions count — its tool calls (name and arguments) and its final
answer (its last message that is not a tool call). The wording of its other
chat, user and system turns and tool results are shown but not counted, so a
simulated user's paraphrase is not taken for the agent acting differently.
Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flaketui.traces.normalise import (
    ARGUMENT_KEYS,
    Normaliser,
    canonical_json,
    compact,
    describe,
    json_text,
    one_line,
)

ALL = "all"
"""Divergence mode: every step counts."""
ACTIONS = "actions"
"""Divergence mode: only the agent's tool calls and final answer count."""
MODES = (ACTIONS, ALL)

AGENT_ROLES = frozenset({"assistant", "agent", "ai", "model"})
"""Roles of the agent's own steps."""
USER_ROLES = frozenset({"user", "human"})
"""Roles of the (possibly simulated) user's steps."""
CALL_TYPES = frozenset({"tool_call", "function_call", "tool_use"})
"""Step types that are one tool call (flaketui's own logs: ``type``, ``name``, ``args``)."""


def check_mode(mode: str) -> str:
    """``mode`` if it is a divergence mode, else ValueError naming the modes."""
    if mode not in MODES:
        raise ValueError(f"divergence mode must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


def role(step: Any) -> str | None:
    """The step's role in lower case, or None."""
    r = step.get("role") if isinstance(step, dict) else None
    return r.lower() if isinstance(r, str) else None


def is_agent(step: Any) -> bool:
    """The step is the agent's: an agent role, or a tool call without a role."""
    r = role(step)
    if r is not None:
        return r in AGENT_ROLES
    return isinstance(step, dict) and step.get("type") in CALL_TYPES


def tool_calls(step: Any) -> list[dict[str, Any]]:
    """The tool calls of a *normalised* step, each ``{"name", "arguments", …}`` (empty: none)."""
    if not isinstance(step, dict):
        return []
    calls = step.get("tool_calls")
    if isinstance(calls, list) and calls:
        return [c if isinstance(c, dict) else {"name": None, "arguments": c} for c in calls]
    if step.get("type") in CALL_TYPES and "name" in step:
        args = next((step[k] for k in ARGUMENT_KEYS if k in step), None)
        return [{"name": step["name"], "arguments": args}]
    return []


def action_keys(trace: Sequence[Any] | None, normaliser: Normaliser | None = None) -> list[str | None]:
    """Per step of ``trace``: the string that identifies it as an agent action, or None.

    A tool-call step is keyed by its calls' names and arguments (canonical JSON,
    so key order never counts); the agent's last message that is not a tool
    call (its final answer) by its normalised content; every other step is None.
    """
    norm = normaliser or Normaliser()
    keys: list[str | None] = []
    last_message: int | None = None
    for i, raw in enumerate(trace or ()):
        if not is_agent(raw):
            keys.append(None)
            continue
        step = norm.step(raw)
        calls = tool_calls(step)
        if calls:
            keys.append("call" + canonical_json([{k: c.get(k) for k in ("name", "arguments")} for c in calls], i))
        else:
            keys.append(None)
            last_message = i
    if last_message is not None:
        step = norm.step(trace[last_message])  # type: ignore[index]
        content = step.get("content") if isinstance(step, dict) else step
        keys[last_message] = "answer" + canonical_json(content, last_message)
    return keys


def default_mode(*traces: Sequence[Any] | None) -> str:
    """``actions`` when the traces have a user role that is not the agent, else ``all``.

    That is: some step has a user role (``user``, ``human``) and some step is
    the agent's; a trace of plain strings or of one role is compared step by step.
    """
    user = agent = False
    for trace in traces:
        for step in trace or ():
            user = user or role(step) in USER_ROLES
            agent = agent or is_agent(step)
            if user and agent:
                return ACTIONS
    return ALL


def call_text(call: dict[str, Any]) -> str:
    """``name(arg=value, …)`` for one normalised tool call."""
    args = call.get("arguments")
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={json_text(v)}" for k, v in args.items())
    elif args is None:
        inner = ""
    else:
        inner = json_text(args)
    return f"{call.get('name')}({inner})"


def step_line(step: Any, width: int | None = None, normaliser: Normaliser | None = None) -> str:
    """One readable line for a (raw or normalised) step.

    A tool call reads ``get_reservation_details(reservation_id="NM1VX1")`` (several
    joined by ``; ``, after the message text if any); any other step as
    :func:`~flaketui.traces.normalise.describe` puts it. White space is collapsed
    and control characters dropped.

    Args:
        step: The step.
        width: Longest result (``…`` marks a cut); None: the whole line.
        normaliser: Which keys to leave out (default: the volatile ones).
    """
    norm = normaliser or Normaliser()
    s = norm.step(step)
    calls = tool_calls(s)
    if not calls:
        return describe(s, width)
    text = "; ".join(call_text(c) for c in calls)
    content = s.get("content") if isinstance(s, dict) else None
    if content and "tool_calls" in s:
        text = f"{compact(content)} → {text}"
    return one_line(text, width)


HARNESS_STEP_KEYS = ("step_id", "turn_idx", "episode")
"""A step's own number as its harness writes it: ATIF's ``step_id`` (Harbor), τ²'s ``turn_idx``,
an episode list's ``episode`` (a Harbor agent's non-ATIF ``trajectory.json``)."""


def harness_step_ids(trace: Sequence[Any] | None) -> tuple[Any, ...]:
    """Each row of ``trace`` named as its harness numbers it: the row's own id
    (:data:`HARNESS_STEP_KEYS`), else the id of the row it belongs to (an ATIF step's tool results
    are rows of their own after it); empty when no row has one (the rows are then named by their
    1-based position). The ids are shown, never compared: the normaliser masks them."""
    if not trace:
        return ()
    out: list[Any] = []
    last: Any = None
    found = False
    for step in trace:
        own = next((step[k] for k in HARNESS_STEP_KEYS if isinstance(step, dict)
                    and isinstance(step.get(k), (int, str)) and not isinstance(step.get(k), bool)), None)
        if own is not None:
            last, found = own, True
        elif isinstance(step, dict) and step.get("role") not in ("tool",):
            last = None
        out.append(own if own is not None else last)
    return tuple(out) if found else ()


def harness_step_count(trace: Sequence[Any] | None, rows: int | None = None) -> str:
    """``72 steps`` as the harness counts them (its distinct step ids: an ATIF step's tool results
    are rows of their own, not steps), else ``N steps`` of rows; ``rows``: the trace's full
    length when it was read cut (then rows are counted)."""
    ids = harness_step_ids(trace)
    if ids and (rows is None or rows == len(trace or ())):
        return f"{len(dict.fromkeys(i for i in ids if i is not None)):,} steps ({len(ids):,} rows)"
    return f"{rows or len(trace or ()):,} steps"
