"""Trace normalisation, alignment, first divergence and the fork map.

Expected values come from the fixture generator (scripts/make_fixtures.py): in
oncall-baseline, searchRunbook's passing and failing trials share the user
message and the searchRunbook call, then the retriever returns its chunks in
another order (step 3); the two 'restart first' trials fail.
"""

from __future__ import annotations

import pytest

from flaketui.model import FAIL, PASS
from flaketui.traces import (
    Normaliser,
    align,
    align_traces,
    best_pair,
    build_fork_map,
    chain,
    describe,
    split_points,
    step_changes,
    task_divergence,
    word_diff,
)
from flaketui.traces.align import DELETE, EQUAL, INSERT, MISSING, REPLACE
from tests.helpers.traces import openai_call, task_trials


class TestNormaliser:
    def test_drops_volatile_keys_of_the_step_only(self) -> None:
        """The normaliser drops volatile keys (ids, times, durations) of the step itself, not inside its arguments."""
        # Ids inside arguments name the record the agent acted on: they are kept.
        step = {
            "id": "x", "timestamp": "t", "time": 3, "call_id": "c", "created_at": "d",
            "duration_s": 1.0, "latency_ms": 5, "role": "tool",
            "args": {"request_id": "r", "query": "q", "nested": [{"time": 1, "k": 2}]},
        }
        assert Normaliser().step(step) == {
            "role": "tool", "args": {"request_id": "r", "query": "q", "nested": [{"time": 1, "k": 2}]},
        }

    def test_extra_keys(self) -> None:
        """Extra keys to ignore are dropped only by a normaliser given them."""
        norm = Normaliser.with_keys(["seed"])
        assert norm.step({"seed": 1, "a": 2}) == {"a": 2}
        assert Normaliser().step({"seed": 1, "a": 2}) == {"seed": 1, "a": 2}

    def test_signature_ignores_key_order_and_volatile_keys(self) -> None:
        """A step's signature ignores key order and volatile keys, and differs when a kept value does."""
        norm = Normaliser()
        assert norm.signature({"a": 1, "b": 2, "id": 1}) == norm.signature({"b": 2, "a": 1, "id": 9})
        assert norm.signature({"a": 1}) != norm.signature({"a": 2})

    def test_strings_compare_as_strings(self) -> None:
        """String steps compare as strings, never equal to a number."""
        norm = Normaliser()
        assert norm.signature("hello") == norm.signature("hello")
        assert norm.signature("1") != norm.signature(1)

    def test_masking_with_the_prefix_check_masks_as_the_regex_alone(self) -> None:
        """mask_ids (the id regex only where a prefix is) masks what the regex alone masks."""
        import random

        from flaketui.traces.normalise import MASK, QUOTED_IDS, mask_ids

        parts = ("toolu_", "srvtoolu_", "call_", "msg_", "Toolu_", "CALL_", "recall_", "toolu", "_",
                 "01ABCDEFGHIJKLMNOP", "abcdefghijklmnopq", "x", " ", "-", ".", "é", "\n")
        rng = random.Random(11)
        for _ in range(3000):
            text = "".join(rng.choice(parts) for _ in range(rng.randint(1, 8)))
            assert mask_ids(text) == QUOTED_IDS.sub(MASK, text), text

    def test_ignored_keys_remembered_per_normaliser(self) -> None:
        """What a normaliser remembers of its ignored keys is its own: another one's extra keys do not leak into it."""
        extra = Normaliser.with_keys(["seed"])
        plain = Normaliser()
        assert extra.ignores("seed") and not plain.ignores("seed")
        assert extra.ignores("seed") and not plain.ignores("seed")  # asked again: from what each remembers
        assert plain.ignores("call_id") and not plain.ignores("content")

    def test_describe(self) -> None:
        """describe gives a one-line summary of a step, cut with an ellipsis."""
        step = {"role": "tool", "type": "tool_result", "name": "x", "content": "a\nb"}
        assert describe(step) == "tool tool_result x: a b"
        assert describe("z" * 100, width=10) == "z" * 9 + "…"


class TestAlign:
    def test_identical(self) -> None:
        """Identical traces have no divergence and share their whole prefix."""
        al = align(["a", "b"], ["a", "b"])
        assert al.first_divergence is None
        assert [r.tag for r in al.rows] == [EQUAL, EQUAL]
        assert al.shared_prefix == 2

    def test_replace_is_first_divergence(self) -> None:
        """A replaced step is the first divergence."""
        al = align(["a", "b", "c", "d"], ["a", "b", "X", "d"])
        assert al.first_divergence == 3
        assert al.rows[al.divergence_row].tag == REPLACE
        assert al.shared_prefix == 2

    def test_inserted_step_does_not_shift_the_rest(self) -> None:
        """An inserted step is one insert row and the rest still align."""
        al = align(["a", "b", "c", "d"], ["a", "X", "b", "c", "d"])
        assert al.first_divergence == 2
        assert [r.tag for r in al.rows] == [EQUAL, INSERT, EQUAL, EQUAL, EQUAL]
        assert [(r.a, r.b) for r in al.rows][-1] == (3, 4)

    def test_prefix_trace(self) -> None:
        """A trace that is a prefix of the other diverges where it ends."""
        al = align(["a", "b"], ["a", "b", "c"])
        assert al.first_divergence == 3
        assert al.rows[-1].tag == INSERT
        al = align(["a", "b", "c"], ["a"])
        assert al.first_divergence == 2
        assert [r.tag for r in al.rows] == [EQUAL, DELETE, DELETE]

    def test_unequal_replace_pairs_then_deletes(self) -> None:
        """A replace of unequal lengths pairs steps, then deletes the rest."""
        al = align(["a", "x", "y", "z"], ["a", "q"])
        assert [(r.a, r.b, r.tag) for r in al.rows] == [
            (0, 0, EQUAL), (1, 1, REPLACE), (2, None, DELETE), (3, None, DELETE)]

    def test_volatile_keys_do_not_diverge(self) -> None:
        """Steps differing only in volatile keys do not diverge."""
        a = [{"id": 1, "timestamp": "x", "content": "hi"}]
        b = [{"id": 2, "timestamp": "y", "content": "hi"}]
        assert align_traces(a, b).first_divergence is None
        assert align_traces(a, b, Normaliser.with_keys(["content"])).first_divergence is None
        b[0]["content"] = "ho"
        assert align_traces(a, b).first_divergence == 1


class TestStepChanges:
    def test_fields(self) -> None:
        """step_changes names each changed field by its path, ignoring volatile ones."""
        a = {"id": 1, "name": "q", "args": {"service": "a", "top_k": 3}, "content": "x"}
        b = {"id": 2, "name": "q", "args": {"service": "b", "top_k": 3}, "extra": True}
        changes = step_changes(a, b)
        assert [(c.path, c.a, c.b) for c in changes] == [
            ("args.service", "a", "b"), ("content", "x", MISSING), ("extra", MISSING, True)]

    def test_string_steps(self) -> None:
        """String steps are one change when they differ and none when equal."""
        assert [(c.path, c.a, c.b) for c in step_changes("a", "b")] == [("", "a", "b")]
        assert step_changes("a", "a") == []

    def test_word_diff_marks_changed_words(self) -> None:
        """word_diff marks the changed words on both sides."""
        wd = word_diff("restart the checkout service", "query the checkout metrics")
        assert [t for t, c in wd.a if c and t.strip()] == ["restart", "service"]
        assert [t for t, c in wd.b if c and t.strip()] == ["query", "metrics"]
        assert "".join(t for t, _ in wd.a) == "restart the checkout service"
        assert wd.changed_words == (2, 2)

    def test_word_diff_of_long_texts_marks_the_changed_line_only(self) -> None:
        """Two 6,000-line texts differing in one word: that word alone is marked, in well under a second."""
        import time

        lines = [f"line {n} of the tool output = value {n % 7}" for n in range(6000)]
        other = list(lines)
        other[4321] = other[4321].replace("tool", "TOOL")
        start = time.perf_counter()
        wd = word_diff("\n".join(lines), "\n".join(other))
        assert time.perf_counter() - start < 1.0
        assert [t for t, c in wd.a if c] == ["tool"]
        assert [t for t, c in wd.b if c] == ["TOOL"]
        assert "".join(t for t, _ in wd.b) == "\n".join(other)

    def test_word_diff_keeps_a_common_subsequence(self) -> None:
        """The unmarked words of both sides are one common subsequence, no longer than the longest (brute force)."""
        import random

        rng = random.Random(7)
        vocab = ["a", "b", "c", "dd", "e", "  ", "\n"]
        for _ in range(200):
            x = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30)))
            y = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30)))
            wd = word_diff(x, y)
            kept_a = [t for t, c in wd.a if not c and t.strip()]
            kept_b = [t for t, c in wd.b if not c and t.strip()]
            assert kept_a == kept_b
            wa, wb = x.split(), y.split()
            lcs = [[0] * (len(wb) + 1) for _ in range(len(wa) + 1)]
            for i, u in enumerate(wa):
                for j, v in enumerate(wb):
                    lcs[i + 1][j + 1] = lcs[i][j] + 1 if u == v else max(lcs[i][j + 1], lcs[i + 1][j])
            assert len(kept_a) <= lcs[-1][-1]
            assert len(kept_a) >= lcs[-1][-1] // 2
            assert "".join(t for t, _ in wd.a) == x

    def test_word_diff_of_white_space_only(self) -> None:
        """Texts that differ only in their spacing still mark the spacing that changed."""
        wd = word_diff("a b", "a  b")
        assert [t for t, c in wd.b if c] == ["  "]


class TestBestPair:
    def test_longest_shared_prefix_wins(self) -> None:
        """The best pair is the passing and failing trace with the longest shared prefix."""
        passing = [["a", "b"], ["a", "b", "c", "d"]]
        failing = [["a", "x"], ["a", "b", "c", "y"]]
        assert best_pair(passing, failing) == (1, 1, 3)

    def test_ties_go_to_earliest(self) -> None:
        """Ties go to the earliest pair."""
        assert best_pair([["a", "b"], ["a", "c"]], [["a", "z"], ["a", "y"]]) == (0, 0, 1)

    def test_one_side_empty(self) -> None:
        """With no passing or no failing trace there is no pair."""
        assert best_pair([], [["a"]]) is None
        assert best_pair([["a"]], []) is None


class TestFixtures:
    def test_search_runbook_diverges_at_step_3(self) -> None:
        """searchRunbook's traces part at step 3 of the fixtures."""
        trials = task_trials("searchRunbook")
        assert len(trials) == 12
        assert sum(t.passed for t in trials) == 10
        assert task_divergence([(t.passed, t.trace) for t in trials]) == 3

    def test_search_runbook_divergent_step_is_the_chunk_order(self) -> None:
        """searchRunbook's divergent step is the retriever's chunk order."""
        trials = task_trials("searchRunbook")
        norm = Normaliser()
        passing = [t for t in trials if t.passed]
        failing = [t for t in trials if not t.passed]
        i, j, prefix = best_pair([norm.signatures(t.trace) for t in passing],
                                 [norm.signatures(t.trace) for t in failing])
        assert prefix == 2
        a, b = passing[i].trace[2], failing[j].trace[2]
        assert a["name"] == b["name"] == "searchRunbook"
        assert [c.path for c in step_changes(a, b)] == ["content"]
        assert b["content"].startswith("[1] Restart")

    def test_fork_map_restart_first_branch_always_fails(self) -> None:
        """In searchRunbook's fork map the restart-first branch always fails."""
        trials = task_trials("searchRunbook")
        root = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials])
        assert (root.passes, root.fails) == (10, 2)
        splits = split_points(root)
        assert [n.depth for n in splits] == [2]
        branches = splits[0].children
        assert sorted((c.passes, c.fails) for c in branches) == [(0, 2), (2, 0), (8, 0)]
        restart = next(c for c in branches if c.fails)
        assert restart.step["content"].startswith("[1] Restart")
        assert [n.depth for n in chain(restart)] == [3, 4, 5, 6]
        assert chain(restart)[-1].ended == 2
        assert sorted(restart.trials) == sorted(t.trial for t in trials if not t.passed)

    def test_stable_task_has_one_side(self) -> None:
        """A stable task has one side only and no divergence."""
        trials = task_trials("listAlerts")
        ok = [(t.passed, t.trace) for t in trials if t.outcome in (PASS, FAIL)]
        assert all(p for p, _ in ok)
        assert task_divergence(ok) is None
        root = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials])
        assert split_points(root) == []
        assert root.errored == 0  # the errored trial has no trace

    def test_ping_healthcheck_has_no_traces(self) -> None:
        """pingHealthcheck's trials have no traces and no divergence."""
        trials = task_trials("pingHealthcheck")
        assert trials and all(t.trace is None for t in trials)
        assert task_divergence([(t.passed, t.trace) for t in trials]) is None
        assert build_fork_map([(t.trial, t.outcome, t.trace) for t in trials]).total == 0


@pytest.mark.parametrize("key", ["id", "timestamp", "time", "msg_id", "sent_at",
                                 "duration", "duration_s", "latency_ms"])
def test_default_ignored_keys(key: str) -> None:
    """Each volatile key is ignored by default."""
    assert Normaliser().ignores(key)


@pytest.mark.parametrize("key", ["identity", "content", "times", "at", "role"])
def test_kept_keys(key: str) -> None:
    """Each meaningful key is kept by default."""
    assert not Normaliser().ignores(key)


def test_deeply_nested_steps_do_not_crash() -> None:
    """Very deeply nested steps align without a recursion error."""
    # The loader keeps lines nested up to orjson's 1024 levels; orjson writes only 255.
    from flaketui.traces.align import align_traces

    def nest(depth: int, leaf: object) -> object:
        d: object = leaf
        for _ in range(depth):
            d = {"x": d}
        return d

    for depth in (300, 1010):
        a = [{"role": "user", "content": "hi"}, nest(depth, 1)]
        b = [{"role": "user", "content": "hi"}, nest(depth, 2)]
        assert align_traces(a, b).first_divergence == 2
    same = nest(300, 1)
    assert align_traces([same], [nest(300, 1)]).first_divergence is None


class TestMetadataOnly:
    """Volatile keys are ignored where they are metadata, never inside arguments."""

    def test_tool_call_ids_ignored_argument_ids_kept(self) -> None:
        """A tool call's own id is ignored but ids in its arguments are kept."""
        a = openai_call("get_reservation_details", '{"reservation_id": "NM1VX1"}', "call_a")
        b = openai_call("get_reservation_details", '{"reservation_id": "KC18K6"}', "call_b")
        norm = Normaliser()
        assert norm.step(a)["tool_calls"] == [
            {"name": "get_reservation_details", "arguments": {"reservation_id": "NM1VX1"}}]
        assert norm.signature(a) != norm.signature(b)
        b2 = openai_call("get_reservation_details", '{"reservation_id": "NM1VX1"}', "call_zz")
        assert norm.signature(a) == norm.signature(b2)

    def test_tool_result_tie_id_ignored(self) -> None:
        """A tool result's tool_call_id is ignored."""
        a = {"role": "tool", "tool_call_id": "call_a", "name": "x", "content": "ok"}
        b = {"role": "tool", "tool_call_id": "call_b", "name": "x", "content": "ok"}
        assert Normaliser().signature(a) == Normaliser().signature(b)

    def test_json_string_argument_order_never_counts(self) -> None:
        """The key order inside JSON-string arguments never counts."""
        a = openai_call("book", '{"user_id": "u1", "cabin": "economy"}')
        b = openai_call("book", '{"cabin":"economy","user_id":"u1"}')
        assert Normaliser().signature(a) == Normaliser().signature(b)

    def test_ids_inside_content_and_outputs_kept(self) -> None:
        """Ids inside a step's content and outputs are kept."""
        a = {"role": "tool", "content": {"order_id": "A", "created_at": "t1"}}
        b = {"role": "tool", "content": {"order_id": "B", "created_at": "t1"}}
        assert Normaliser().signature(a) != Normaliser().signature(b)

    def test_ignore_key_is_metadata_only_too(self) -> None:
        """--ignore-key drops the step's own key, not the same key inside its arguments."""
        norm = Normaliser.with_keys(["content"])
        step = {"role": "assistant", "content": "hi", "args": {"content": "kept"}}
        assert norm.step(step) == {"role": "assistant", "args": {"content": "kept"}}

    def test_tau2_noise_keys_ignored_by_default(self) -> None:
        """τ²-bench's noise keys (turn index, cost, usage) are ignored by default."""
        # Shaped as τ²-bench's AssistantMessage / ToolCall (tau2/data_model/message.py): the
        # arguments are a dict, the metadata cost/usage/raw_data/turn_idx sit on the message.
        def msg(turn: int, cost: float) -> dict:
            return {"role": "assistant", "content": None, "turn_idx": turn, "timestamp": f"t{turn}",
                    "cost": cost, "usage": {"prompt_tokens": turn}, "raw_data": {"choices": [turn]},
                    "tool_calls": [{"id": f"c{turn}", "name": "get_user_details",
                                    "arguments": {"user_id": "mia_li_3668", "turn_idx": 1},
                                    "requestor": "assistant"}]}
        norm = Normaliser()
        assert norm.signature(msg(3, 0.01)) == norm.signature(msg(5, 0.02))
        assert norm.step(msg(3, 0.01)) == {"role": "assistant", "content": None, "tool_calls": [
            {"name": "get_user_details", "arguments": {"user_id": "mia_li_3668", "turn_idx": 1},
             "requestor": "assistant"}]}
        assert "cost" in Normaliser(noise_keys=frozenset()).step(msg(3, 0.01))

    def test_inspect_tool_call_shape(self) -> None:
        """An Inspect tool call normalises to its name and arguments."""
        call = {"id": "x", "function": "bash", "arguments": {"cmd": "ls"}, "type": "function"}
        assert Normaliser().tool_call(call) == {"name": "bash", "arguments": {"cmd": "ls"}}

    def test_the_normaliser_lists_what_it_ignores(self) -> None:
        """The normaliser lists every key pattern it ignores, extra keys included."""
        listed = Normaliser.with_keys(["seed"]).ignored_key_patterns()
        for key in ("id", "timestamp", "*_id", "*_at", "duration*", "cost", "usage", "raw_data", "seed"):
            assert key in listed
        trace = [openai_call("f", "{}"), {"role": "tool", "tool_call_id": "c", "content": "", "cost": 1}]
        assert Normaliser().ignored_keys_of(trace) == ["tool_calls[].id", "tool_call_id", "cost"]
