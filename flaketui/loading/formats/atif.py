"""ATIF, the Agent Trajectory Interchange Format (Harbor's ``agent/trajectory.json``), read as
a flaketui trace.

Spec: Harbor's RFC ``docs/rfcs/0001-trajectory-format.md`` and its pydantic models
``src/harbor/models/trajectories/`` (``Trajectory``, ``Step``, ``ToolCall``,
``ObservationResult``). A trajectory is ``{"schema_version": "ATIF-v1.N", "session_id",
"agent", "steps": [...], "final_metrics"}``; a step is ``{"step_id", "timestamp",
"source": "user"|"agent"|"system", "model_name", "message", "reasoning_content",
"tool_calls": [{"tool_call_id", "function_name", "arguments"}], "observation": {"results":
[{"source_call_id", "content", "subagent_trajectory_ref"}]}, "metrics", "extra"}``.

Each ATIF step becomes one flaketui step in the chat shape the trace code already compares
(``role``, ``content``, ``tool_calls[{"tool_call_id", "name", "arguments"}]``), and each of its
observation results one ``{"role": "tool", "source_call_id", "content"}`` step after it (as an
OpenAI tool message follows its call). The ids the harness generates (``step_id``,
``tool_call_id``, ``source_call_id``) keep their names, so the normaliser drops them (``*_id``)
and masks them where a message quotes them (:mod:`flaketui.traces.normalise`); a step's
``metrics`` (tokens, cost, token ids) are ATIF's noise keys there. ``model_name`` and
``extra`` stay per step (subagents, mixed models). Pure Python, no heavy imports.
"""

from __future__ import annotations

import re
from typing import Any

VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7")
"""The ATIF versions read (``schema_version`` ``ATIF-v1.0`` … ``ATIF-v1.7``)."""
SOURCES = ("user", "agent", "system")
_VERSION = re.compile(r"ATIF-v(\d+\.\d+)\Z")
_HEAD_VERSION = re.compile(rb'"schema_version"\s*:\s*"([^"]{0,40})"')


class AtifError(ValueError):
    """The file is not an ATIF trajectory this reader knows: the message says why, in one line."""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def check_version(value: Any) -> str:
    """The version number of a ``schema_version`` value (``"1.5"``).

    Raises
    ------
    AtifError
        If it is not ``ATIF-v1.0`` … ``ATIF-v1.7``.
    """
    if not isinstance(value, str):
        raise AtifError(f"schema_version must be a string such as 'ATIF-v1.5', got {_kind(value)}")
    found = _VERSION.match(value)
    if found is None:
        raise AtifError(f"schema_version {value[:40]!r} is not an ATIF version ('ATIF-v1.0' … 'ATIF-v1.7')")
    if found[1] not in VERSIONS:
        raise AtifError(f"unknown ATIF version {value!r} (this flaketui reads ATIF-v1.0 … ATIF-v1.7)")
    return found[1]


def head_problem(head: bytes) -> str | None:
    """From a trajectory file's first bytes: why it can't be read as ATIF, or None when it may be
    (the whole file is checked when the trace is read)."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body:
        return "empty file, not an ATIF trajectory"
    if body[:1] == b"[":
        return ("not an ATIF trajectory (a JSON array, e.g. a list of {episode, prompt, response}; "
                "ATIF is an object with schema_version and steps)")
    if body[:1] != b"{":
        return "not an ATIF trajectory (not a JSON object)"
    found = _HEAD_VERSION.search(head)
    if found is None:
        return None  # the key may come later: the full read decides
    try:
        check_version(found[1].decode("utf-8", "replace"))
    except AtifError as exc:
        return str(exc)
    return None


def to_steps(doc: Any) -> list[dict[str, Any]]:
    """The trace of an ATIF trajectory (parsed JSON) as flaketui steps (see the module docstring).

    Raises
    ------
    AtifError
        If ``doc`` is not an ATIF trajectory of a known version, or a step is malformed
        (named by its index: ``steps[3]: …``).
    """
    if isinstance(doc, list):
        raise AtifError("not an ATIF trajectory (a JSON array; ATIF is an object with schema_version and steps)")
    if not isinstance(doc, dict):
        raise AtifError(f"not an ATIF trajectory (got {_kind(doc)})")
    if "schema_version" not in doc:
        raise AtifError("not an ATIF trajectory (no schema_version)")
    check_version(doc["schema_version"])
    steps = doc.get("steps")
    if not isinstance(steps, list):
        raise AtifError(f"steps must be an array, got {_kind(steps)}")
    out: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        out.extend(_step(step, i))
    return out


def _step(step: Any, i: int) -> list[dict[str, Any]]:
    where = f"steps[{i}]"
    if not isinstance(step, dict):
        raise AtifError(f"{where} must be an object, got {_kind(step)}")
    source = step.get("source")
    if source not in SOURCES:
        shown = source[:20] if isinstance(source, str) else _kind(source)
        raise AtifError(f"{where}.source must be user, agent or system, got {shown!r}")
    message = step.get("message")
    if message is not None and not isinstance(message, (str, list)):
        raise AtifError(f"{where}.message must be a string or a list of parts, got {_kind(message)}")
    out: dict[str, Any] = {"role": source}
    for key in ("step_id", "timestamp", "model_name", "reasoning_effort"):
        if step.get(key) is not None:
            out[key] = step[key]
    out["content"] = "" if message is None else message
    if step.get("reasoning_content") is not None:
        out["reasoning_content"] = step["reasoning_content"]
    calls = step.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise AtifError(f"{where}.tool_calls must be an array, got {_kind(calls)}")
        out["tool_calls"] = [_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)]
    for key in ("metrics", "is_copied_context", "extra"):
        if step.get(key) is not None:
            out[key] = step[key]
    steps = [out]
    observation = step.get("observation")
    if observation is not None:
        if not isinstance(observation, dict):
            raise AtifError(f"{where}.observation must be an object, got {_kind(observation)}")
        results = observation.get("results") or []
        if not isinstance(results, list):
            raise AtifError(f"{where}.observation.results must be an array, got {_kind(results)}")
        for j, result in enumerate(results):
            if not isinstance(result, dict):
                raise AtifError(f"{where}.observation.results[{j}] must be an object, got {_kind(result)}")
            tool: dict[str, Any] = {"role": "tool"}
            if result.get("source_call_id") is not None:
                tool["source_call_id"] = result["source_call_id"]
            tool["content"] = result.get("content")
            for key, value in result.items():
                if key not in ("source_call_id", "content") and value is not None:
                    tool[key] = value  # subagent_trajectory_ref, extra
            steps.append(tool)
    return steps


def _call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise AtifError(f"{where} must be an object, got {_kind(call)}")
    name = call.get("function_name")
    if not isinstance(name, str):
        raise AtifError(f"{where}.function_name must be a string, got {_kind(name)}")
    out: dict[str, Any] = {}
    if call.get("tool_call_id") is not None:
        out["tool_call_id"] = call["tool_call_id"]
    out["name"] = name
    out["arguments"] = call.get("arguments")
    out.update((k, v) for k, v in call.items() if k not in ("tool_call_id", "function_name", "arguments"))
    return out
