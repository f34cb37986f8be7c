"""OpenTelemetry GenAI traces: an OTLP/JSON export (``ExportTraceServiceRequest``:
``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans": [...]}]}]}``, ``.json``),
and the Python SDK's console exporter output (``ReadableSpan.to_json()`` objects one after
another, ``.jsonl``/``.json``).

One trial = one trace (``traceId``): its root span (the span whose parent is not in the
trace) is the agent invocation. Task, trial, run and outcome are attributes, looked up on
the root span first, then on the other spans in start order:

- task: ``--task-field`` (default ``task``, ``task_id``), then ``gen_ai.evaluation.task``,
  ``eval.task``; else the root span's name;
- trial: ``--trial-field`` (default ``trial``); else numbered in order of appearance;
- run: ``--run-field`` (default ``run``); else the file's name;
- outcome: ``--pass-field`` (default ``passed``: bool or 0/1) or ``--score-field`` (default
  ``score``, ``reward``; passes at ≥ ``--threshold``), else the ``gen_ai.evaluation.score.value``
  of a ``gen_ai.evaluation.result`` event (GenAI semantic conventions).

A trace with no outcome attribute is kept as *errored*, and the file says once which flag
to give. The steps (the trace flaketui shows) are the root's descendants ordered by start
time (the root alone when it has none), each LLM call followed by the tool calls it asked
for: ``gen_ai.output.messages`` parts of type ``tool_call`` (GenAI semantic conventions),
or OpenInference's flattened ``llm.output_messages.N.message.tool_calls.M.tool_call.…``
(Phoenix). Token counts (``gen_ai.usage.*``, ``llm.token_count.*``) of the LLM calls are
summed as metrics. A trial's offset is its trace's position in the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import orjson

from flaketui.loading.formats.base import LogFormat, Record, Tick, finish
from flaketui.loading.formats.wrapped import flat_head
from flaketui.loading.jsonl import BOM, _has_surrogate, _int_exact, _refuse_constant, loads
from flaketui.loading.location import as_path
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink, _is_number
from flaketui.model import FieldMap, Problem, Source

TASK_ATTRIBUTES = ("gen_ai.evaluation.task", "eval.task")
"""Task attributes tried after ``--task-field``."""
EVAL_EVENT = "gen_ai.evaluation.result"
EVAL_SCORE = "gen_ai.evaluation.score.value"
USAGE = {"gen_ai.usage.input_tokens": "input_tokens", "gen_ai.usage.output_tokens": "output_tokens",
         "llm.token_count.prompt": "input_tokens", "llm.token_count.completion": "output_tokens"}
_INDEX = re.compile(r"^\d{1,9}$")
"""A list index in OpenInference's flattened keys (longer runs of digits are keys)."""
MAX_KEY_PARTS = 64
"""Dotted parts an OpenInference key may have to be unflattened (deeper keys are left out)."""


MAX_SKIPPED = 100
"""Items of an export left out that are named one by one (the rest are counted)."""


def visible_id(value: Any) -> str:
    """A trace id for a message, cut to 80 characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Span(dict):  # type: ignore[type-arg]
    """One span, whatever the encoding: ``trace``, ``id``, ``parent``, ``name``, ``start``
    (sortable), ``end``, ``attributes`` (flat, plain values) and ``events``."""


def _value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain value (``intValue`` is a string in OTLP/JSON; one past
    64 bits, or not an integer, stays that string). Values of the wrong shape are ``None``."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        raw = v["intValue"]
        if isinstance(raw, str) and 0 < len(raw) <= 20:
            try:
                return int(raw)
            except ValueError:
                return raw
        return raw
    if "arrayValue" in v:
        return [_value(x) for x in _values(v["arrayValue"])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value")) for kv in _values(v["kvlistValue"])
                if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    return None


def _values(v: Any) -> list[Any]:
    """The ``values`` list of an ``arrayValue`` or ``kvlistValue`` (empty when not a list)."""
    values = v.get("values") if isinstance(v, dict) else None
    return values if isinstance(values, list) else []


def _attrs(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):  # the console exporter's flat attributes
        return dict(items)
    if not isinstance(items, list):
        return {}
    return {a["key"]: _value(a.get("value")) for a in items if isinstance(a, dict) and isinstance(a.get("key"), str)}


def _events(items: Any) -> list[dict[str, Any]]:
    return [{"name": e.get("name"), "attributes": _attrs(e.get("attributes"))}
            for e in (items if isinstance(items, list) else []) if isinstance(e, dict)]


def _nanos(v: Any) -> int:
    if isinstance(v, str) and len(v) > 20:  # past 64 bits (and int()'s 4,300 digits): no time
        return 0
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, inf
        return 0


def _ident(v: Any) -> Any:
    """A trace or span id as a key: a string or an integer as it is, anything else (a list, an
    object, a float) ``None``: no id."""
    return v if isinstance(v, (str, int)) and not isinstance(v, bool) else None


def _items(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def otlp_spans(doc: dict[str, Any], skipped: list[str] | None = None) -> list[Span]:
    """Every span of an OTLP/JSON export, in file order; an item that is not an object, or a
    span without a usable trace id, is left out and said in ``skipped``."""
    out = []
    skip = skipped.append if skipped is not None else (lambda _: None)
    for i, rs in enumerate(_items(doc.get("resourceSpans"))):
        if not isinstance(rs, dict):
            skip(f"resourceSpans[{i}] is not an object")
            continue
        for j, ss in enumerate(_items(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans"))):
            if not isinstance(ss, dict):
                skip(f"resourceSpans[{i}].scopeSpans[{j}] is not an object")
                continue
            for k, sp in enumerate(_items(ss.get("spans"))):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if not isinstance(sp, dict):
                    skip(f"{where} is not an object")
                    continue
                trace = _ident(sp.get("traceId"))
                if trace is None:
                    skip(f"{where}: traceId must be a string")
                    continue
                out.append(Span(
                    trace=trace, id=_ident(sp.get("spanId")), parent=_ident(sp.get("parentSpanId")) or None,
                    name=sp.get("name"), start=_nanos(sp.get("startTimeUnixNano")),
                    end=_nanos(sp.get("endTimeUnixNano")), attributes=_attrs(sp.get("attributes")),
                    events=_events(sp.get("events"))))
    return out


def console_spans(objs: list[Any]) -> list[Span]:
    """The spans of the console exporter's objects; a span written twice (at its start, with
    ``end_time: null``, and complete) is kept once, complete."""
    by_id: dict[Any, Span] = {}
    for obj in objs:
        if not isinstance(obj, dict) or not isinstance(obj.get("context"), dict):
            continue
        ctx = obj["context"]
        if _ident(ctx.get("trace_id")) is None:
            continue
        span = Span(trace=ctx["trace_id"], id=_ident(ctx.get("span_id")), parent=_ident(obj.get("parent_id")) or None,
                    name=obj.get("name"), start=_time_text(obj.get("start_time")),
                    end=_time_text(obj.get("end_time")), attributes=_attrs(obj.get("attributes")),
                    events=_events(obj.get("events")))
        key = (span["trace"], span["id"])
        if key not in by_id or span["end"]:
            by_id[key] = span
    return list(by_id.values())


def _time_text(v: Any) -> str:
    """A console span's time, as sortable text."""
    return v if isinstance(v, str) else ""


def _concatenated(text: str) -> list[Any]:
    """JSON values one after another (pretty-printed, separated by blanks), read as
    :func:`~flaketui.loading.jsonl.loads` reads one (integers past the double range kept as
    :class:`~flaketui.loading.jsonl.BigInt`, no lone surrogate).

    Raises
    ------
    ValueError
        If the text is not such values, or nests deeper than Python's ``json`` goes.
    """
    decoder = json.JSONDecoder(parse_int=_int_exact, parse_constant=_refuse_constant)
    out, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if _has_surrogate(obj):
            raise ValueError("a lone surrogate in a string (not valid UTF-8)")
        out.append(obj)


def read_spans(data: bytes, skipped: list[str] | None = None) -> list[Span]:
    """The spans of a file of either encoding (the items left out said in ``skipped``).

    Raises
    ------
    ValueError
        If it is not valid JSON of either.
    """
    body = data[3:] if data.startswith(BOM) else data
    if body.lstrip().startswith(b"{") and b'"resourceSpans"' in body[:4096]:
        doc = loads(body)
        if not isinstance(doc, dict):
            raise ValueError("not an OTLP/JSON export")
        return otlp_spans(doc, skipped)
    return console_spans(_concatenated(body.decode("utf-8")))


def traces(spans: list[Span]) -> list[list[Span]]:
    """The spans grouped by trace (in order of first appearance), each root first and the
    rest in start order."""
    groups: dict[Any, list[Span]] = {}  # ids are strings or integers (_ident)
    for sp in spans:
        groups.setdefault(sp["trace"], []).append(sp)
    out = []
    for group in groups.values():
        ids = {sp["id"] for sp in group}
        roots = [sp for sp in group if sp["parent"] not in ids]
        root = min(roots or group, key=lambda s: s["start"])
        rest = sorted((sp for sp in group if sp is not root), key=lambda s: s["start"])
        out.append([root, *rest])
    return out


def unflatten(attrs: dict[str, Any], prefix: str) -> list[Any]:
    """OpenInference's flattened lists (``llm.output_messages.0.message.role``) as nested
    lists and objects."""
    tree: dict[str, Any] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        node = tree
        parts = key[len(prefix) + 1:].split(".", MAX_KEY_PARTS)
        if len(parts) > MAX_KEY_PARTS:
            continue  # deeper than any message: left out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[parts[-1]] = value
    return _lists(tree) if tree else []


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(_INDEX.match(k) for k in node):
        return [_lists(node[k]) for k in sorted(node, key=int)]
    return {k: _lists(v) for k, v in node.items()}


def _json(value: Any) -> Any:
    """A JSON string's value (orjson: nesting past 1,024 levels, a lone surrogate, a number
    past the double range leave it the string it is)."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def tool_calls(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls an LLM span asked for: GenAI ``gen_ai.output.messages`` parts, or
    OpenInference's flattened output messages."""
    calls = []
    messages = _json(attrs.get("gen_ai.output.messages"))
    for msg in messages if isinstance(messages, list) else []:
        for part in _items(msg.get("parts")) if isinstance(msg, dict) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                calls.append({"name": part.get("name"), "args": _json(part.get("arguments"))})
    for msg in unflatten(attrs, "llm.output_messages"):
        message = msg.get("message", {}) if isinstance(msg, dict) else {}
        for call in _items(message.get("tool_calls")) if isinstance(message, dict) else []:
            tool_call = call.get("tool_call") if isinstance(call, dict) else None
            fn = tool_call.get("function") if isinstance(tool_call, dict) else None
            if isinstance(fn, dict):
                calls.append({"name": fn.get("name"), "args": _json(fn.get("arguments"))})
    return calls


def steps(trace: list[Span]) -> list[dict[str, Any]]:
    """The trace as flaketui steps: the root's descendants by start time (or the root)."""
    spans = trace[1:] or trace[:1]
    out = []
    for sp in spans:
        a = sp["attributes"]
        op = a.get("gen_ai.operation.name") or a.get("openinference.span.kind") or a.get("traceloop.span.kind")
        step: dict[str, Any] = {"type": op or "span", "name": a.get("gen_ai.tool.name") or sp["name"]}
        if a.get("gen_ai.tool.name"):
            step["role"] = "tool"
            args = a.get("gen_ai.tool.call.arguments")
            if args is not None:
                step["args"] = _json(args)
        model = a.get("gen_ai.request.model") or a.get("llm.model_name")
        if model:
            step["model"] = model
        out.append(step)
        for call in tool_calls(a):
            out.append({"role": "assistant", "type": "tool_call", "name": call["name"], "args": call["args"]})
    return out


def _find(trace: list[Span], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for sp in trace:
        for name in names:
            if sp["attributes"].get(name) is not None:
                return name, sp["attributes"][name]
    return None, None


def _eval_score(trace: list[Span]) -> Any:
    for sp in trace:
        for ev in sp["events"]:
            if ev["name"] == EVAL_EVENT and _is_number(ev["attributes"].get(EVAL_SCORE)):
                return ev["attributes"][EVAL_SCORE]
    return None


LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


def _is_llm(a: dict[str, Any]) -> bool:
    return a.get("gen_ai.operation.name") in LLM_OPERATIONS or a.get("openinference.span.kind") == "LLM"


def record(trace: list[Span], fields: FieldMap) -> dict[str, Any]:
    """One trace as a trial in flaketui's field names (``error`` when it has no outcome)."""
    root = trace[0]
    _, task = _find(trace, fields.task + TASK_ATTRIBUTES)
    rec: dict[str, Any] = {"task": task if task is not None else root["name"] or "(unnamed)",
                           "trace": steps(trace), "trace_id": root["trace"]}
    for key, names in (("trial", fields.trial), ("run", fields.run)):
        name, value = _find(trace, names)
        if name is not None:
            rec[key] = value
    pname, passed = _find(trace, fields.passed)
    sname, score = _find(trace, fields.score)
    if pname is not None:
        rec["passed"] = passed
    elif sname is not None:
        rec["score"] = score
    elif (ev := _eval_score(trace)) is not None:
        rec["score"] = ev
    else:
        rec["error"] = "no outcome attribute"
    metrics: dict[str, float] = {}
    llm = [sp for sp in trace if _is_llm(sp["attributes"])] or trace[:1]
    for sp in llm:  # agent spans repeat their calls' sums: count each LLM call once
        for attr, name in USAGE.items():
            value = sp["attributes"].get(attr)
            if _is_number(value):
                metrics[name] = metrics.get(name, 0) + value
    if metrics:
        rec["metrics"] = metrics
    return rec


class OtelTraces(LogFormat):
    """OTLP/JSON exports and console-exporter span files of GenAI instrumentation."""

    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    kinds: ClassVar[tuple[str, ...]] = ("otel",)

    def matches(self, path: Path, head: bytes) -> bool:
        flat = flat_head(head)
        return flat.startswith(b'{"resourceSpans":') or (
            flat.startswith(b'{"name":') and b'"context":{"trace_id":' in flat)

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if size == 0:
            return Parsed.empty([Problem(spath, None, "empty file, no trials")])
        data = path.read_bytes()
        tick(size)
        skipped: list[str] = []
        try:
            groups = traces(read_spans(data, skipped))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return Parsed.empty([Problem(spath, None, f"not a readable OpenTelemetry export ({exc})")])
        sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
        problems = [Problem(spath, None, f"{what}; left out") for what in skipped[:MAX_SKIPPED]]
        if len(skipped) > MAX_SKIPPED:
            problems.append(Problem(spath, None, f"{len(skipped) - MAX_SKIPPED} more items left out"))
        missing = 0
        for i, trace in enumerate(groups, start=1):
            try:
                rec = record(trace, fields)
                reason = sink.add(rec, i - 1, 0, i)
            except (TypeError, ValueError, AttributeError, RecursionError, OverflowError) as exc:
                rec, reason = {}, f"can't be read ({type(exc).__name__})"  # a shape not foreseen
            missing += "error" in rec
            if reason is not None:
                problems.append(Problem(spath, i, f"trace {i} ({visible_id(trace[0]['trace'])}): {reason}"))
        if missing:
            looked = ", ".join(fields.passed + fields.score)
            problems.append(Problem(spath, None, (
                f"no outcome attribute in {missing} of {len(groups)} traces (looked for {looked} and "
                f"{EVAL_EVENT} events): kept as errored; name the attribute with --pass-field NAME "
                "(bool or 0/1) or --score-field NAME (a number, with --threshold)"), notice=True))
        return finish(spath, sink, problems)

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        groups = traces(read_spans(as_path(source.path).read_bytes()))
        trace = groups[offset]
        rec = record(trace, FieldMap())
        rec["root_attributes"] = trace[0]["attributes"]
        return Record(rec, None)
