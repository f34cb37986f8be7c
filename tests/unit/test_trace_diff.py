"""The structural diff of two steps, one-line steps, and the headless diff core."""

from __future__ import annotations

import orjson
import pytest

from flaketui.traces import (
    ACTIONS,
    ALL,
    MISSING,
    FieldChange,
    change_text,
    diff_traces,
    step_changes,
    step_line,
    structural_diff,
)
from tests.helpers.traces import openai_call


class TestStructuralDiff:
    def test_key_order_is_never_a_difference(self) -> None:
        """Key order is never a difference."""
        assert structural_diff({"a": 1, "b": {"x": 1, "y": 2}}, {"b": {"y": 2, "x": 1}, "a": 1}) == []

    def test_json_string_arguments_are_parsed_and_the_changed_argument_named(self) -> None:
        """JSON-string arguments are parsed and the changed argument named."""
        a = openai_call("get_reservation_details", '{"reservation_id": "NM1VX1", "verbose": true}', "c1")
        b = openai_call("get_reservation_details", '{"verbose": true, "reservation_id": "KC18K6"}', "c2")
        assert step_changes(a, b) == [
            FieldChange("tool_calls.0.arguments.reservation_id", "NM1VX1", "KC18K6")]

    def test_argument_order_in_a_json_string_is_not_a_difference(self) -> None:
        """Argument order inside a JSON string is not a difference."""
        a = openai_call("f", '{"x": 1, "y": [1, 2]}')
        b = openai_call("f", '{"y": [1, 2], "x": 1}')
        assert step_changes(a, b) == []

    def test_numbers_within_the_tolerance_are_equal(self) -> None:
        """Numbers within the tolerance are equal."""
        a = {"role": "tool", "content": {"price": 100.0, "n": 3}}
        b = {"role": "tool", "content": {"price": 100.04, "n": 3}}
        assert [c.path for c in step_changes(a, b)] == ["content.price"]
        assert step_changes(a, b, tolerance=1e-3) == []  # relative: 0.04 / 100.04 < 1e-3
        assert step_changes(a, b, tolerance=1e-5) != []
        assert structural_diff(1, 1.0) == []
        assert structural_diff(True, 1) == [FieldChange("", True, 1)]  # a bool is not a number

    def test_lists_by_position_missing_on_the_shorter_side(self) -> None:
        """Lists compare by position, the shorter side's items missing."""
        assert structural_diff({"l": [1, 2]}, {"l": [1, 2, 3]}) == [FieldChange("l.2", MISSING, 3)]
        assert structural_diff({"l": [1]}, {"l": {"0": 1}}) == [FieldChange("l", [1], {"0": 1})]

    def test_a_key_only_one_side_has(self) -> None:
        """A key only one side has is missing on the other."""
        assert structural_diff({"a": 1}, {"b": 2}) == [FieldChange("a", 1, MISSING), FieldChange("b", MISSING, 2)]

    def test_deep_nesting_does_not_recurse(self) -> None:
        """Deeply nested values are compared without a recursion error."""
        def nest(depth: int, leaf: object) -> object:
            d: object = leaf
            for _ in range(depth):
                d = {"x": d}
            return d

        (change,) = structural_diff(nest(5000, 1), nest(5000, 2))
        assert change.path == ".".join(["x"] * 5000) and (change.a, change.b) == (1, 2)


class TestStepLine:
    def test_a_tool_call_reads_as_a_call(self) -> None:
        """A tool call step reads as name(arguments)."""
        step = openai_call("get_reservation_details", '{"reservation_id": "NM1VX1"}')
        assert step_line(step) == 'get_reservation_details(reservation_id="NM1VX1")'

    def test_several_arguments_and_calls(self) -> None:
        """Several calls and arguments read in one line after the content."""
        step = {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "1", "function": {"name": "a", "arguments": '{"x": 1, "y": [true, null]}'}},
            {"id": "2", "function": {"name": "b", "arguments": "{}"}}]}
        assert step_line(step) == "Let me check. → a(x=1, y=[true,null]); b()"

    def test_flaketui_tool_call_step(self) -> None:
        """flaketui's own tool-call step reads as a call."""
        step = {"id": "s1", "role": "assistant", "type": "tool_call", "name": "searchRunbook",
                "args": {"query": "checkout 5xx", "top_k": 3}}
        assert step_line(step) == 'searchRunbook(query="checkout 5xx", top_k=3)'

    def test_other_steps_and_untrusted_text(self) -> None:
        """Other steps read as role: text, control characters removed."""
        step = {"role": "user", "content": "hi\x1b[31m there\n\tyou\x07"}
        assert step_line(step) == "user: hi\\x1b[31m there you\\x07"  # spelled out, as everywhere
        assert step_line({"role": "user", "content": "x" * 50}, width=10) == "user: xxx…"


def chat(*steps: tuple[str, str]) -> list[dict]:
    return [{"role": r, "content": c} for r, c in steps]



def trace(user_first: str, reservation: str, answer: str = "Done.") -> list[dict]:
    return [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": user_first, "timestamp": user_first},
        openai_call("get_reservation_details", orjson.dumps({"reservation_id": reservation}).decode()),
        {"role": "tool", "tool_call_id": "call_1", "name": "get_reservation_details", "content": reservation},
        {"role": "assistant", "content": answer},
    ]


class TestDiffTraces:
    def test_actions_mode_names_the_wrong_record(self) -> None:
        """In actions mode a paraphrase is no divergence and the wrong record is."""
        a = trace("Hi, please check my booking.", "NM1VX1")
        b = trace("Hello! Can you look at my reservation?", "KC18K6")
        d = diff_traces(a, b)
        assert d.mode == ACTIONS  # a user role that is not the agent
        assert (d.step_a, d.step_b) == (3, 3)
        assert [c.text() for c in d.divergent_changes] == [
            'tool_calls.0.arguments.reservation_id: "NM1VX1" → "KC18K6"']
        doc = d.to_json()
        assert doc["mode"] == "actions" and doc["first_divergence"] == {"step_a": 3, "step_b": 3}
        assert {"step_a": 3, "step_b": 3, "path": "tool_calls.0.arguments.reservation_id",
                "a": "NM1VX1", "b": "KC18K6", "counts": True} in doc["changes"]
        # The reworded user turn and the tool result are listed, not counted.
        assert [(c["step_a"], c["path"], c["counts"]) for c in doc["changes"]] == [
            (2, "content", False), (3, "tool_calls.0.arguments.reservation_id", True), (4, "content", False)]
        assert [r["step_a"] for r in doc["around"]] == [1, 2, 3, 4, 5]
        assert doc["around"][2]["a"] == 'get_reservation_details(reservation_id="NM1VX1")'
        orjson.dumps(doc)  # JSON as it stands

    def test_all_mode_counts_the_paraphrase(self) -> None:
        """In all mode a paraphrased user turn is the divergence."""
        a = trace("Hi, please check my booking.", "NM1VX1")
        b = trace("Hello! Can you look at my reservation?", "NM1VX1")
        d = diff_traces(a, b, ALL)
        assert (d.step_a, d.step_b) == (2, 2)
        assert [c.path for c in d.divergent_changes] == ["content"]
        assert diff_traces(a, b, ACTIONS).to_json()["first_divergence"] == {"step_a": None, "step_b": None}

    def test_the_final_answer_counts(self) -> None:
        """The final answer counts as an action."""
        a = trace("Hi", "NM1VX1", "Your flight is cancelled.")
        b = trace("Hi", "NM1VX1", "I cannot cancel it.")
        d = diff_traces(a, b, ACTIONS)
        assert (d.step_a, d.step_b) == (5, 5)
        assert [c.path for c in d.divergent_changes] == ["content"]

    def test_extra_user_turns_shift_the_steps(self) -> None:
        """Extra user turns shift the step numbers on one side."""
        a = trace("Hi", "NM1VX1")
        b = trace("Hi", "KC18K6")
        b[2:2] = chat(("assistant", "Which reservation?"), ("user", "The one to Seattle."))
        d = diff_traces(a, b, ACTIONS)
        assert (d.step_a, d.step_b) == (3, 5)
        assert d.divergent_changes[0].text() == 'tool_calls.0.arguments.reservation_id: "NM1VX1" → "KC18K6"'
        # The two extra turns are rows of B only that do not count.
        assert [(c.step_b, c.counts) for c in d.changes if c.step_a is None] == [(3, False), (4, False)]

    def test_equal_traces(self) -> None:
        """Equal traces have no divergence and JSON says so."""
        a = trace("Hi", "NM1VX1")
        d = diff_traces(a, [dict(s) for s in a], ALL)
        assert d.to_json() == {"mode": "all", "first_divergence": {"step_a": None, "step_b": None},
                               "changes": [], "around": []}

    def test_a_step_only_one_side_has(self) -> None:
        """A step only one side has is the divergence."""
        a = trace("Hi", "NM1VX1")
        d = diff_traces(a, a[:3], ALL)
        assert (d.step_a, d.step_b) == (4, 4)
        assert d.changes[0].step_b is None and d.changes[0].b is MISSING
        assert d.to_json()["changes"][0]["b"] is None
        assert d.changes[-1].text() == "assistant: Done. → (none)"

    def test_tolerance(self) -> None:
        """The tolerance makes close numbers equal in the diff."""
        a = [{"role": "user", "content": "q"}, openai_call("quote", '{"amount": 10.0}')]
        b = [{"role": "user", "content": "q"}, openai_call("quote", '{"amount": 10.000001}')]
        assert diff_traces(a, b, ALL).step_a == 2
        assert diff_traces(a, b, ALL, tolerance=1e-4).step_a is None
        assert diff_traces(a, b, ACTIONS, tolerance=1e-4).step_a is None

    def test_bad_mode(self) -> None:
        """An unknown mode is refused, naming actions and all."""
        with pytest.raises(ValueError, match="actions, all"):
            diff_traces([], [], "agent")


def test_change_text() -> None:
    """change_text shows a field change in one line, cut to the width."""
    assert change_text(FieldChange("args.k", MISSING, [1, "x"])) == 'args.k: (none) → [1,"x"]'
    assert change_text(FieldChange("", "a\nb", "c"), width=8) == '"a\\nb" …'


def test_a_step_nested_deeper_than_python_recurses_still_reads() -> None:
    """A step nested deeper than Python's recursion limit still reads."""
    deep: object = 1
    for _ in range(3000):
        deep = {"x": deep}
    a = [{"role": "user", "content": "q"}, {"role": "tool", "content": deep}]
    b = [{"role": "user", "content": "q"}, {"role": "tool", "content": {"x": 2}}]
    d = diff_traces(a, b, ALL)
    assert d.step_a == 2
    assert d.around[-1].line_a == "tool: <nested too deep to show>"
    assert d.changes[0].path == "content.x"
