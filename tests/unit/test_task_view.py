"""A task's traces as a model (task_view): the traced sides, the one pair rule, the fork map,
and the divergence of every flaky task as an iterator, pinned to what the trace screen and the
task table's div column showed."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from flaketui.loading import load_logs, read_trial
from flaketui.model import ERRORED, FAIL, PASS, Trial
from flaketui.traces import Normaliser, task_divergence
from flaketui.traces.task_view import (
    divergence_rows,
    divergences,
    pair_across,
    pick_pair,
    task_traces,
    traced_sides,
)
from tests.conftest import BASELINE
from tests.helpers.logs import write_log
from tests.helpers.traces import chat, task_trials


def trial(number: int, outcome: int, trace: list | None) -> Trial:
    return Trial("r", "t", number, outcome, None, None, {}, None, trace, {}, "run.jsonl:1")


class TestPickPair:
    def test_the_longest_shared_prefix_wins(self) -> None:
        """pick_pair chooses the pair with the longest shared prefix."""
        passing = [["a", "b"], ["a", "b", "c", "d"]]
        failing = [["x"], ["a", "b", "c", "z"]]
        assert pick_pair(passing, failing) == (1, 1)

    def test_ties_go_to_the_earliest_of_the_first_side_then_the_second(self) -> None:
        """Ties go to the earliest trial of the first side, then the second."""
        assert pick_pair([["a", "b"], ["a", "c"]], [["a", "z"], ["a", "y"]]) == (0, 0)
        a = [trial(0, FAIL, ["a", "z"]), trial(1, FAIL, ["a", "y"])]
        b = [trial(0, PASS, ["a", "b"]), trial(1, PASS, ["a", "c"])]
        assert pair_across(a, b, False, mode="all") == (0, 0)

    def test_an_empty_side_has_no_pair(self) -> None:
        """An empty side has no pair."""
        assert pick_pair([], [["a"]]) is None and pick_pair([["a"]], []) is None
        assert pair_across([], [trial(0, PASS, ["a"])], True) is None

    def test_in_actions_mode_only_the_agents_actions_are_compared(self) -> None:
        """In actions mode only the agent's actions are compared."""
        passing = [chat(12, user="a")]
        failing = [chat(12, diverge_at=10, user="b"), chat(12, diverge_at=4, user="a")]
        assert pick_pair(passing, failing, Normaliser(), "actions") == (0, 0)
        assert pick_pair(passing, failing, Normaliser(), "all") == (0, 1)  # user "a" shares its turns


class TestTaskTraces:
    def test_the_fixture_task_as_the_trace_screen_showed_it(self) -> None:
        """searchRunbook's traces are what the trace screen shows."""
        trials = task_trials("searchRunbook")
        found = task_traces(trials, Normaliser())
        assert found.mode == "actions" and (len(found.passing), len(found.failing)) == (10, 2)
        assert found.pair == (0, 0) and [t.trial for t in found.pair_trials or ()] == [0, 2]
        assert found.fork_map.total == len(trials) and found.untraced == 0

    def test_errored_and_untraced_trials_are_on_neither_side(self) -> None:
        """Errored and untraced trials are on neither side."""
        trials = [trial(0, PASS, ["a", "b"]), trial(1, ERRORED, ["a", "b"]), trial(2, FAIL, None),
                  trial(3, FAIL, ["a", "c"]), trial(4, PASS, ["a", "b", "c"])]
        passing, failing = traced_sides(trials)
        assert [t.trial for t in passing] == [0, 4] and [t.trial for t in failing] == [3]
        found = task_traces(trials)
        assert found.mode == "all" and found.pair == (0, 0) and found.untraced == 1

    def test_a_task_of_one_outcome_has_no_pair(self) -> None:
        """A task of one outcome has no pair."""
        found = task_traces([trial(0, PASS, ["a"]), trial(1, PASS, ["b"])])
        assert found.pair is None and found.pair_trials is None and len(found.passing) == 2

    def test_the_mode_asked_for_is_kept(self) -> None:
        """The mode asked for is kept."""
        assert task_traces(task_trials("searchRunbook"), mode="all").mode == "all"


def test_divergences_of_the_fixture_are_the_div_columns() -> None:
    """The fixture's divergences are its div column."""
    log = load_logs([BASELINE])
    outcomes = log.run_outcomes(log.runs[0])
    todo = divergence_rows(log, outcomes)
    assert list(todo) == ["searchRunbook"]
    assert dict(divergences(partial(read_trial, log), todo)) == {"searchRunbook": 4}


def test_divergence_rows_read_only_flaky_tasks_traced_rows(tmp_path: Path) -> None:
    """Divergences read only flaky tasks' traced rows."""
    path = write_log(tmp_path / "run.jsonl", [
        {"task": "flaky", "trial": 0, "passed": True, "trace": ["a", "b", "c"]},
        {"task": "flaky", "trial": 1, "passed": False, "trace": ["a", "b", "x"]},
        {"task": "flaky", "trial": 2, "passed": False},
        {"task": "stable", "trial": 0, "passed": True, "trace": ["a"]},
        {"task": "stable", "trial": 1, "passed": True, "trace": ["a"]},
        {"task": "untraced", "trial": 0, "passed": True},
        {"task": "untraced", "trial": 1, "passed": False},
    ])
    log = load_logs([path])
    outcomes = log.run_outcomes(log.runs[0])
    todo = divergence_rows(log, outcomes)
    assert list(todo) == ["flaky"] and len(todo["flaky"]) == 2
    found = list(divergences(partial(read_trial, log), todo, Normaliser(), "all"))
    trials = [read_trial(log, r) for r in todo["flaky"]]
    assert found == [("flaky", 3)] == [("flaky", task_divergence([(t.passed, t.trace) for t in trials]))]


def test_divergences_yield_one_task_at_a_time() -> None:
    """divergences yields one task at a time, reading only its rows."""
    reads: list[int] = []

    def read(row: int) -> Trial:
        reads.append(row)
        return [trial(0, PASS, ["a", "b"]), trial(1, FAIL, ["a", "c"]), trial(2, PASS, ["x"])][row]

    found = divergences(read, {"one": [0, 1], "two": [2]})
    assert next(found) == ("one", 2) and reads == [0, 1]
    assert next(found) == ("two", None) and reads == [0, 1, 2]


def test_a_remembering_normaliser_gives_the_same_model_normalising_each_trace_once() -> None:
    """task_traces with a RememberingNormaliser: the pair, mode and fork map of the plain one, each trace's signatures computed once."""
    from flaketui.traces.task_view import RememberingNormaliser

    trials = [trial(0, PASS, chat(30)), trial(1, FAIL, chat(30, diverge_at=12)), trial(2, FAIL, chat(30, diverge_at=20))]
    plain = task_traces(trials, Normaliser.with_keys(["note"]))
    memo = RememberingNormaliser.like(Normaliser.with_keys(["note"]))
    calls: list[int] = []
    compute = Normaliser.signatures

    def counted(self: Normaliser, trace: object) -> list[str]:
        calls.append(id(trace))
        return compute(self, trace)

    Normaliser.signatures = counted  # type: ignore[method-assign]
    try:
        kept = task_traces(trials, memo)
    finally:
        Normaliser.signatures = compute  # type: ignore[method-assign]
    assert memo.extra_keys == frozenset({"note"})
    assert (kept.pair, kept.mode) == (plain.pair, plain.mode)
    assert _tree(kept.fork_map) == _tree(plain.fork_map)
    assert len(calls) == len(set(calls))  # no trace normalised twice


def test_a_remembering_normaliser_keeps_signatures_by_step() -> None:
    """A RememberingNormaliser signs a copied trace's list (the same steps) without normalising again."""
    from flaketui.traces.task_view import RememberingNormaliser

    trace = chat(20, diverge_at=5)
    memo = RememberingNormaliser.like(None)
    first = memo.signatures(trace)
    steps: list[object] = []
    compute = Normaliser.step

    def counted(self: Normaliser, step: object) -> object:
        steps.append(step)
        return compute(self, step)

    Normaliser.step = counted  # type: ignore[method-assign]
    try:
        again = memo.signatures(list(trace))
    finally:
        Normaliser.step = compute  # type: ignore[method-assign]
    assert again == first == Normaliser().signatures(trace)
    assert steps == []


def _tree(node: object) -> tuple:
    """A fork map as nested (signature, trials, passes, fails, children) tuples."""
    return (node.signature, list(node.trials), node.passes, node.fails,  # type: ignore[attr-defined]
            tuple(_tree(c) for c in node.children))  # type: ignore[attr-defined]
