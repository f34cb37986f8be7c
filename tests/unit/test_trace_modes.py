"""Divergence modes ``actions`` / ``all``: the default, the alignment, the fork map."""

from __future__ import annotations

import pytest

from flaketui.model import FAIL, PASS
from flaketui.traces import (
    ACTIONS,
    ALL,
    action_keys,
    align_traces,
    build_fork_map,
    default_mode,
    split_points,
    task_divergence,
)
from flaketui.traces.align import EQUAL, INSERT, REPLACE
from tests.helpers.traces import openai_call, task_trials


def booking(greeting: str, reservation: str, answer: str = "Done.") -> list[dict]:
    return [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": greeting},
        {"role": "assistant", "content": "Sure, which one?"},
        {"role": "user", "content": "The Seattle one."},
        openai_call("get_reservation_details", f'{{"reservation_id": "{reservation}"}}'),
        {"role": "tool", "tool_call_id": "call_1", "content": reservation},
        {"role": "assistant", "content": answer},
    ]


class TestDefaultMode:
    def test_a_user_besides_the_agent_means_actions(self) -> None:
        """A trace with a user besides the agent defaults to actions mode."""
        assert default_mode(booking("hi", "X")) == ACTIONS
        assert default_mode([{"role": "user", "content": "q"}], [{"role": "assistant", "content": "a"}]) == ACTIONS

    def test_otherwise_all(self) -> None:
        """Otherwise the default mode is all."""
        assert default_mode(["step one", "step two"]) == ALL
        assert default_mode([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "r"}]) == ALL
        assert default_mode([{"role": "user", "content": "q"}]) == ALL
        assert default_mode(None, []) == ALL


class TestActionKeys:
    def test_tool_calls_and_the_final_answer(self) -> None:
        """The action keys are the tool calls and the final answer."""
        keys = action_keys(booking("hi", "X"))
        assert [k is not None for k in keys] == [False, False, False, False, True, False, True]
        assert keys[4] == action_keys(booking("hello", "X"))[4]
        assert keys[4] != action_keys(booking("hi", "Y"))[4]
        assert keys[6] != action_keys(booking("hi", "X", "Cancelled."))[6]

    def test_flaketui_steps(self) -> None:
        """flaketui's own steps give their action keys."""
        trials = task_trials("searchRunbook")
        keys = action_keys(trials[0].trace)
        roles = [s.get("role") for s in trials[0].trace]
        assert all((k is not None) <= (r == "assistant") for k, r in zip(keys, roles, strict=True))
        assert keys[1] is not None and keys[-1] is not None


class TestAlignModes:
    def test_paraphrase_counts_only_in_all(self) -> None:
        """A paraphrase counts only in all mode."""
        a, b = booking("Hi, I need help.", "NM1VX1"), booking("Hello, can you help me?", "KC18K6")
        assert align_traces(a, b).first_divergence == 2
        al = align_traces(a, b, mode=ACTIONS)
        assert (al.divergence_a, al.divergence_b) == (5, 5)
        assert al.rows[1].tag == REPLACE and not al.rows[1].counts  # the user's rewording: shown, not counted
        assert al.rows[al.divergence_row].tag == REPLACE and al.rows[al.divergence_row].counts

    def test_chat_wording_and_tool_results_do_not_count(self) -> None:
        """In actions mode chat wording and tool results do not count."""
        a = booking("hi", "X")
        b = booking("hi", "X")
        b[2] = {"role": "assistant", "content": "Of course! Which reservation?"}
        b[5] = {"role": "tool", "tool_call_id": "call_9", "content": "other output"}
        assert align_traces(a, b, mode=ACTIONS).first_divergence is None
        assert align_traces(a, b).first_divergence == 3

    def test_an_extra_action_counts(self) -> None:
        """An extra action counts in actions mode."""
        a = booking("hi", "X")
        b = booking("hi", "X")
        b.insert(4, openai_call("get_user_details", '{"user_id": "u1"}'))
        al = align_traces(a, b, mode=ACTIONS)
        assert (al.divergence_a, al.divergence_b) == (5, 5)
        assert [r.tag for r in al.rows].count(INSERT) == 1
        assert all(r.tag == EQUAL for r in al.rows if r.tag != INSERT)

    def test_unknown_mode(self) -> None:
        """An unknown mode is refused."""
        with pytest.raises(ValueError):
            align_traces([], [], mode="agent")


class TestTaskAndForkMap:
    def trials(self) -> list[tuple[int, int, list[dict]]]:
        return [
            (0, PASS, booking("Hi, I need help.", "NM1VX1")),
            (1, PASS, booking("Hello there, help me please.", "NM1VX1")),
            (2, FAIL, booking("Hey. Help?", "KC18K6")),
        ]

    def test_task_divergence_by_mode(self) -> None:
        """A task's divergence depends on the mode."""
        traces = [(o == PASS, t) for _, o, t in self.trials()]
        assert task_divergence(traces) == 2
        assert task_divergence(traces, mode=ACTIONS) == 5

    def test_fork_map_forks_at_the_agent_call(self) -> None:
        """In actions mode the fork map forks at the agent's call."""
        root = build_fork_map(self.trials(), mode=ACTIONS)
        (split,) = split_points(root)
        assert split is root  # the first action already separates the outcomes
        assert sorted((c.passes, c.fails, c.number) for c in root.children) == [(0, 1, 5), (2, 0, 5)]
        every_step = build_fork_map(self.trials())
        assert len(every_step.children) == 1 and len(every_step.children[0].children) == 3  # step 2 splits

    def test_fixture_actions_mode_still_finds_the_restart_branch(self) -> None:
        """In actions mode the fixture's fork map still finds the restart branch."""
        trials = task_trials("searchRunbook")
        root = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials], mode=ACTIONS)
        splits = split_points(root)
        assert splits and all(not n.mixed or n.children for n in splits)
        failing = [c for n in splits for c in n.children if c.fails and not c.passes]
        assert sorted(failing[0].trials) == sorted(t.trial for t in trials if not t.passed)
        assert failing[0].step["role"] == "assistant"
