"""Hostile OpenTelemetry exports: items that are not objects, ``events``/``arrayValue`` not
lists, unhashable ids or keys, ``startTimeUnixNano: 1e999``, 400-digit token counts, a
3,000-part OpenInference key, deep JSON inside argument strings, a 5,000-digit index. Each is
at most a one-line problem naming the file (and the trace), never a traceback, and the honest
trace beside it still loads."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs


def attr(key: Any, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def honest_span(trace: str = "t-good") -> dict[str, Any]:
    return {"traceId": trace, "spanId": "s1", "name": "agent", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "attributes": [attr("task", {"stringValue": "good"}), attr("passed", {"boolValue": True})]}


def export(*spans: Any, resource: Any = None, scope: Any = None) -> dict[str, Any]:
    scopes = [{"scope": {}, "spans": [honest_span(), *spans]}] if scope is None else scope
    resources = [{"resource": {}, "scopeSpans": scopes}] if resource is None else resource
    return {"resourceSpans": resources}


def bad_span(**changes: Any) -> dict[str, Any]:
    span = {"traceId": "t-bad", "spanId": "b1", "name": "agent", "startTimeUnixNano": "5",
            "attributes": [attr("task", {"stringValue": "bad"}), attr("passed", {"boolValue": False})]}
    span.update(changes)
    return span


def with_attrs(*extra: Any) -> dict[str, Any]:
    span = bad_span()
    span["attributes"] = [*span["attributes"], *extra]
    return span


DEEP = "[" * 5000 + "]" * 5000
LLM = attr("gen_ai.operation.name", {"stringValue": "chat"})
SHAPES: dict[str, Any] = {
    "resourceSpans item a string": {"resourceSpans": ["x", *export()["resourceSpans"]]},
    "resourceSpans item a list": {"resourceSpans": [[1], *export()["resourceSpans"]]},
    "resourceSpans an object": {"resourceSpans": {"a": 1}},
    "scopeSpans item a number": export(resource=[{"scopeSpans": [7, {"spans": [honest_span()]}]}]),
    "scopeSpans a string": export(resource=[{"scopeSpans": "x"}, *export()["resourceSpans"]]),
    "spans an object": export(scope=[{"spans": {"a": 1}}, {"spans": [honest_span()]}]),
    "span a list": export([1, 2]),
    "events a string": export(bad_span(events="oops")),
    "events a number": export(bad_span(events=3)),
    "events item a list": export(bad_span(events=[[1]])),
    "event attributes a string": export(bad_span(events=[{"name": "e", "attributes": "x"}])),
    "arrayValue a list": export(with_attrs(attr("x", {"arrayValue": [1, 2]}))),
    "arrayValue values a string": export(with_attrs(attr("x", {"arrayValue": {"values": "abc"}}))),
    "kvlistValue values a number": export(with_attrs(attr("x", {"kvlistValue": {"values": 5}}))),
    "kvlistValue key a list": export(with_attrs(attr("x", {"kvlistValue": {"values": [{"key": [1]}]}}))),
    "attribute key a list": export(with_attrs(attr([1], {"stringValue": "v"}))),
    "attribute key an object": export(with_attrs(attr({"a": 1}, {"stringValue": "v"}))),
    "traceId a list": export(bad_span(traceId=[1, 2])),
    "traceId an object": export(bad_span(traceId={"a": 1})),
    "spanId a list": export(bad_span(spanId=[1])),
    "parentSpanId an object": export(bad_span(parentSpanId={"a": 1})),
    "startTimeUnixNano 1e999": export(bad_span(startTimeUnixNano="POS_INF")),
    "startTimeUnixNano -1e999": export(bad_span(startTimeUnixNano="NEG_INF")),
    "startTimeUnixNano a list": export(bad_span(startTimeUnixNano=[1])),
    "startTimeUnixNano 5000 digits": export(bad_span(startTimeUnixNano="9" * 5000)),
    "intValue 5000 digits": export(with_attrs(attr("n", {"intValue": "9" * 5000}))),
    "400-digit token count": export(with_attrs(LLM, attr("gen_ai.usage.input_tokens", {"intValue": "9" * 400}))),
    "400-digit token count as a number": export(with_attrs(LLM, attr("gen_ai.usage.input_tokens",
                                                                      {"doubleValue": "NUMBER400"}))),
    "task a list": export(bad_span(attributes=[attr("task", {"arrayValue": {"values": [{"intValue": "1"}]}}),
                                               attr("passed", {"boolValue": True})])),
    "task 5000 digits": export(bad_span(attributes=[attr("task", {"intValue": "7" * 5000}),
                                                    attr("passed", {"boolValue": True})])),
    "score an object": export(bad_span(attributes=[attr("task", {"stringValue": "bad"}),
                                                   attr("score", {"kvlistValue": {"values": []}})])),
    "3000-part OpenInference key": export(with_attrs(
        attr("llm.output_messages." + ".".join(["0"] * 3000), {"stringValue": "x"}))),
    "5000-digit OpenInference index": export(with_attrs(
        attr("llm.output_messages." + "9" * 5000 + ".message.role", {"stringValue": "x"}))),
    "tool_calls a string": export(with_attrs(
        attr("llm.output_messages.0.message.tool_calls", {"stringValue": "x"}))),
    "tool_call a list": export(with_attrs(
        attr("llm.output_messages.0.message.tool_calls.0.tool_call", {"arrayValue": {"values": []}}))),
    "deep JSON in tool arguments": export(with_attrs(attr("gen_ai.tool.name", {"stringValue": "t"}),
                                                     attr("gen_ai.tool.call.arguments", {"stringValue": DEEP}))),
    "deep JSON in output messages": export(with_attrs(attr("gen_ai.output.messages", {"stringValue": DEEP}))),
    "output message parts a number": export(with_attrs(attr("gen_ai.output.messages", {"stringValue":
                                                            json.dumps([{"parts": 5}])}))),
    "lone surrogate after 1e999": export(bad_span(name="NAME_SURROGATE")),
}
"""37-odd hostile shapes, each beside one honest trace (task ``good``)."""


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    text = json.dumps(doc)
    text = text.replace('"NUMBER400"', "9" * 400).replace('"POS_INF"', "1e999").replace('"NEG_INF"', "-1e999")
    text = text.replace('"NAME_SURROGATE"', '"\\ud800", "x": 1e999')
    p = tmp_path / f"{abs(hash(name))}.json"
    p.write_text(text)
    return p


@pytest.mark.parametrize("name", list(SHAPES))
def test_hostile_otel_export_is_a_problem_not_a_traceback(tmp_path: Path, name: str) -> None:
    """Each hostile OpenTelemetry export is a problem line, never a traceback."""
    p = write(tmp_path, name, copy.deepcopy(SHAPES[name]))
    result = CliRunner().invoke(main, ["report", str(p), "--format", "json", "--no-cache"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if name in NOTHING_LEFT:  # the file holds no trial: one line, exit 2
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        return
    assert result.exit_code == 0, result.output
    log = load_logs([p], use_cache=False)
    for problem in log.problems:
        assert "\n" not in str(problem) and len(str(problem)) < 400, str(problem)[:400]
    assert "good" in log.tasks, (log.tasks, [str(q) for q in log.problems])
    json.dumps(log.tasks)  # every name can be written
    for task in log.tasks:
        task.encode("utf-8")


NOTHING_LEFT = {"resourceSpans an object", "lone surrogate after 1e999"}


def test_the_corpus_is_big() -> None:
    """The hostile OpenTelemetry corpus has at least 37 shapes."""
    assert len(SHAPES) >= 37
