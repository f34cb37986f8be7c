"""Trajectory consistency: the agent's actions read from a trace, Levenshtein, Jensen–Shannon, which trials count."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from flaketui.model import ERRORED, FAIL, PASS, Trial
from flaketui.traces.causes import suggest_task
from flaketui.traces.consistency import (
    ANSWER,
    Consistency,
    action_consistency,
    action_names,
    levenshtein,
    sequence_consistency,
    task_consistency,
)
from flaketui.traces.steps import action_keys
from tests.helpers.traces import plain_levenshtein


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "tool_call", "name": name, "args": args}


def result(name: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "type": "tool_result", "name": name, "content": content}


def say(text: str, who: str = "assistant") -> dict[str, Any]:
    return {"role": who, "type": "message", "content": text}


def trace_of(*names: str, answer: str = "done") -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [say("please help", "user")]
    for n in names:
        steps += [call(n, x=1), result(n)]
    return [*steps, say(answer)]


def trial(n: int, outcome: int, trace: list[Any] | None) -> Trial:
    return Trial("run", "task", n, outcome, None, None, {}, None, trace, {}, f"log:{n}")


def scipy_action_consistency(seqs: Sequence[Sequence[str]], base: float = 2.0) -> float:
    vocab = sorted({a for s in seqs for a in s})
    vecs = [np.array([s.count(a) for a in vocab], dtype=float) / len(s) for s in seqs]
    return 1.0 - float(np.mean([jensenshannon(p, q, base=base) for p, q in itertools.combinations(vecs, 2)]))


# -- the actions ---------------------------------------------------------------------------------


def test_actions_are_tool_names_and_the_final_answer() -> None:
    """A trace's actions are its tool names and the final answer."""
    trace = [say("book me a flight", "user"), say("let me look"), call("search", to="LIS"), result("search"),
             say("LIS it is", "user"), call("book", seat="2A"), result("book"), say("booked")]
    assert action_names(trace) == ["call:search", "call:book", ANSWER]
    # The same steps action_keys counts as actions, in the same places.
    assert sum(k is not None for k in action_keys(trace)) == 3


def test_arguments_do_not_count_and_user_turns_are_not_actions() -> None:
    """Arguments do not count and user turns are not actions."""
    a = [say("hi", "user"), call("search", q="a"), result("search", "1"), say("done")]
    b = [say("hello there", "user"), call("search", q="b"), result("search", "2"), say("all done")]
    assert action_names(a) == action_names(b) == ["call:search", ANSWER]


def test_openai_messages_and_several_calls_in_one_step() -> None:
    """OpenAI messages with several calls in one step give each call."""
    trace = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_user", "arguments": "{\"id\": 1}"}},
            {"id": "c2", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
        {"role": "tool", "tool_call_id": "c2", "content": "{}"},
        {"role": "assistant", "content": "Here you are."},
    ]
    assert action_names(trace) == ["call:get_user", "call:get_order", ANSWER]


def test_a_tool_named_answer_is_not_the_answer() -> None:
    """A tool named answer is a call, not the final answer."""
    assert action_names([call("answer"), say("ok")]) == ["call:answer", ANSWER]
    assert action_names(None) == [] and action_names([say("only the user", "user")]) == []


# -- Levenshtein ---------------------------------------------------------------------------------


def test_levenshtein_hand_worked() -> None:
    """Levenshtein distances match hand-worked cases."""
    assert levenshtein(list("kitten"), list("sitting")) == 3
    assert levenshtein(["a", "b", "c"], ["a", "c"]) == 1
    assert levenshtein(["a", "b"], ["b", "a"]) == 2
    assert levenshtein([], ["a", "b", "c"]) == 3 and levenshtein(["a"], []) == 1
    assert levenshtein(["x", "y"], ["x", "y"]) == 0


def test_levenshtein_matches_plain_dynamic_programming() -> None:
    """Levenshtein equals plain dynamic programming on random sequences."""
    rng = random.Random(7)
    for _ in range(400):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 15))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 15))]
        assert levenshtein(a, b) == plain_levenshtein(a, b), (a, b)


def test_sequence_consistency_hand_worked() -> None:
    """Sequence consistency matches a hand-worked mean of normalised distances."""
    abc, ac, abcd = ["A", "B", "C"], ["A", "C"], ["A", "B", "C", "D"]
    # d(abc, ac) = 1/3, d(abc, abcd) = 1/4, d(ac, abcd) = 2/4: mean 13/36.
    assert sequence_consistency([abc, ac, abcd]) == pytest.approx(23 / 36)
    assert sequence_consistency([abc, abc]) == 1.0
    assert sequence_consistency([["A", "B"], ["B", "A"]]) == 0.0  # order counts
    assert sequence_consistency([abc]) is None
    assert sequence_consistency([abc, []]) is None  # an empty sequence is left out, as in HAL


def test_sequence_consistency_matches_an_independent_computation() -> None:
    """Sequence consistency equals an independent computation."""
    rng = random.Random(3)
    seqs = [[rng.choice("abcd") for _ in range(rng.randint(1, 20))] for _ in range(9)]
    expected = 1 - np.mean([plain_levenshtein(a, b) / max(len(a), len(b))
                            for a, b in itertools.combinations(seqs, 2)])
    assert sequence_consistency(seqs) == pytest.approx(expected, abs=1e-12)


# -- Jensen–Shannon ------------------------------------------------------------------------------


def test_action_consistency_hand_worked() -> None:
    """Action consistency matches hand-worked cases; order does not count."""
    assert action_consistency([["A", "B"], ["B", "A"]]) == pytest.approx(1.0)  # order does not count
    assert action_consistency([["A"], ["B"]]) == pytest.approx(0.0)  # nothing in common, base 2
    # p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4): KL(p‖m) = log2(4/3), KL(q‖m) = (log2(2/3) + 1) / 2.
    js = (math.log2(4 / 3) + (math.log2(2 / 3) + 1) / 2) / 2
    assert action_consistency([["A", "A"], ["A", "B"]]) == pytest.approx(1 - math.sqrt(js))
    assert action_consistency([["A", "A"], ["A", "B"]]) == pytest.approx(0.442, abs=5e-4)
    assert action_consistency([["A"]]) is None and action_consistency([["A"], []]) is None


def test_hal_natural_log_is_one_factor_away() -> None:
    """With the natural log, action consistency is HAL's figure."""
    # HAL calls jensenshannon with scipy's default base (e): disjoint actions give 1 − √ln 2, not 0.
    assert action_consistency([["A"], ["B"]], base=math.e) == pytest.approx(1 - math.sqrt(math.log(2)))
    seqs = [["A", "B", "B"], ["A", "C"], ["C", "C", "A", "B"]]
    for base in (2.0, math.e):
        assert action_consistency(seqs, base) == pytest.approx(scipy_action_consistency(seqs, base), abs=1e-12)


def test_action_consistency_matches_scipy() -> None:
    """Action consistency equals a computation with scipy's entropy."""
    rng = random.Random(11)
    for _ in range(20):
        seqs = [[rng.choice("abcdef") for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(2, 8))]
        assert action_consistency(seqs) == pytest.approx(scipy_action_consistency(seqs), abs=1e-12)


# -- which trials count --------------------------------------------------------------------------


def test_only_passing_trials_with_actions_count() -> None:
    """Only passing trials with actions count."""
    trials = [
        trial(0, PASS, trace_of("search", "book")),
        trial(1, PASS, trace_of("search", "search", "book")),
        trial(2, FAIL, trace_of("cancel")),  # a failure: left out
        trial(3, ERRORED, trace_of("cancel")),
        trial(4, PASS, None),  # no trace
        trial(5, PASS, [say("nothing to do", "user")]),  # no action
    ]
    got = task_consistency(trials)
    seqs = [["call:search", "call:book", ANSWER], ["call:search", "call:search", "call:book", ANSWER]]
    assert got.trials == 2
    assert got.sequence == pytest.approx(1 - 1 / 4)
    assert got.action == pytest.approx(scipy_action_consistency(seqs))
    assert got.trajectory == pytest.approx((got.action + got.sequence) / 2)
    assert got.to_json() == {"action_consistency": got.action, "sequence_consistency": got.sequence}


def test_fewer_than_two_passing_trials_give_none() -> None:
    """Fewer than two passing trials give no consistency."""
    got = task_consistency([trial(0, PASS, trace_of("a")), trial(1, FAIL, trace_of("b"))])
    assert got == Consistency(None, None, 1) and got.trajectory is None
    assert got.to_json() == {"action_consistency": None, "sequence_consistency": None}


def test_the_suggestion_carries_the_passing_trials_consistency() -> None:
    """A cause suggestion carries the passing trials' consistency."""
    trials = [trial(0, PASS, trace_of("search", "book")), trial(1, PASS, trace_of("book", "search")),
              trial(2, FAIL, trace_of("search", "cancel")), trial(3, FAIL, trace_of("cancel"))]
    suggestion = suggest_task("task", trials)
    assert suggestion is not None
    assert suggestion.consistency == task_consistency(trials)
    assert suggestion.consistency.action == pytest.approx(1.0)  # the same calls, in another order
    assert suggestion.consistency.sequence == pytest.approx(1 - 2 / 3)
    doc = suggestion.to_json()
    assert doc["action_consistency"] == pytest.approx(1.0)
    assert doc["sequence_consistency"] == pytest.approx(1 / 3)


def test_repeated_routes_count_once_per_pair() -> None:
    """Repeated routes count once per pair."""
    # Equal sequences are computed once and weighted by how often they occur: the same mean as every pair.
    rng = random.Random(5)
    routes = [[rng.choice("abc") for _ in range(rng.randint(1, 6))] for _ in range(3)]
    seqs = [routes[0]] * 4 + [routes[1]] * 2 + [routes[2]]
    pairs = list(itertools.combinations(seqs, 2))
    assert sequence_consistency(seqs) == pytest.approx(
        1 - np.mean([plain_levenshtein(a, b) / max(len(a), len(b)) for a, b in pairs]), abs=1e-12)
    assert action_consistency(seqs) == pytest.approx(scipy_action_consistency(seqs), abs=1e-12)
    assert sequence_consistency([["a", "b"]] * 5) == 1.0 and action_consistency([["a"]] * 3) == 1.0
    assert isinstance(sequence_consistency(seqs), float) and isinstance(action_consistency(seqs), float)
