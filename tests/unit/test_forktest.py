"""Fork tests: Fisher's exact test per branch of every split point, Holm-adjusted."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from flaketui.model import ERRORED, FAIL, PASS
from flaketui.stats.exact import fisher_pvalue as fisher_p
from flaketui.stats.pertask import holm
from flaketui.traces import ACTIONS, ALL, decisive_fork, fork_tests
from tests.helpers.traces import task_trials


def hypergeometric_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Fisher's two-sided p of [[a, b], [c, d]] from first principles: the probabilities of the
    tables with the same margins that are no more likely than the observed one (with scipy's
    relative tolerance of 1e-7 for ties)."""
    row, col, n = a + b, a + c, a + b + c + d
    probs = {x: comb(col, x) * comb(n - col, row - x) / comb(n, row)
             for x in range(max(0, row + col - n), min(row, col) + 1)}
    return min(1.0, sum(p for p in probs.values() if p <= probs[a] * (1 + 1e-7)))


class TestFisher:
    @pytest.mark.parametrize("table", [
        (0, 2, 10, 0), (1, 0, 0, 3), (2, 2, 2, 2), (3, 1, 5, 9), (0, 5, 7, 1), (4, 0, 0, 4), (1, 2, 30, 1),
    ])
    def test_matches_scipy_and_the_hypergeometric_sum(self, table: tuple[int, int, int, int]) -> None:
        """fisher_p equals scipy's Fisher test and the hypergeometric sum."""
        a, b, c, d = table
        p = fisher_p(a, a + b, c, c + d)
        assert p == pytest.approx(fisher_exact([[a, b], [c, d]]).pvalue, rel=1e-12)
        assert p == pytest.approx(hypergeometric_two_sided(a, b, c, d), rel=1e-9)


class TestHolm:
    @pytest.mark.parametrize("seed", range(5))
    def test_matches_statsmodels(self, seed: int) -> None:
        """holm equals statsmodels' Holm adjustment, ties included."""
        rng = np.random.default_rng(seed)
        p = rng.uniform(0, 0.4, 1 + seed * 3)
        p[-1] = p[0]  # a tie
        expected = multipletests(p, method="holm")[1].tolist()
        assert holm(np.array(p, dtype=float)).tolist() == pytest.approx(expected, rel=1e-12)

    def test_edges(self) -> None:
        """holm handles no, one and two p-values."""
        assert holm(np.array([], dtype=float)).tolist() == []
        assert holm(np.array([0.3])).tolist() == [0.3]
        assert holm(np.array([0.6, 0.7])).tolist() == [1.0, 1.0]


class TestFixture:
    def test_search_runbook_decisive_fork_is_the_retriever_order(self) -> None:
        """searchRunbook's decisive fork is the retriever's order."""
        # Baseline searchRunbook, 10 of 12: the two trials whose retriever put "Restart…" first fail.
        trials = task_trials("searchRunbook")
        fork = decisive_fork([(t.trial, t.outcome, t.trace) for t in trials])
        assert fork is not None
        assert fork.step == 3 and fork.mode == ALL
        assert fork.branch.result and fork.branch.label.startswith("[1] Restart the checkout service")
        assert (fork.branch.passes, fork.branch.n, fork.rest_passes, fork.rest_n) == (0, 2, 10, 10)
        assert fork.p_value == pytest.approx(1 / comb(12, 2), rel=1e-12)  # = 0.01515…
        assert fork.p_value == pytest.approx(fisher_exact([[0, 2], [10, 0]]).pvalue, rel=1e-12)
        assert sorted((b.passes, b.n) for b in fork.branches) == [(0, 2), (2, 2), (8, 8)]
        assert "step 3 returns `[1] Restart the checkout" in fork.text()
        assert "0 of 2 pass; otherwise 10 of 10 (p = 0.015" in fork.text()

    def test_one_test_per_partition_across_modes(self) -> None:
        """One test per partition, across modes."""
        # The actions-mode fork at step 4 (restartService vs queryMetrics) splits the same trials
        # as the step-3 result fork: it is counted once, at step 3.
        trials = task_trials("searchRunbook")
        tests = fork_tests([(t.trial, t.outcome, t.trace) for t in trials])
        assert len(tests) == 3 and {t.tests for t in tests} == {3}
        assert {t.step for t in tests} == {3}
        raw = [t.p_value for t in tests]
        assert [t.p_adjusted for t in tests] == pytest.approx(multipletests(raw, method="holm")[1].tolist())
        only_actions = fork_tests([(t.trial, t.outcome, t.trace) for t in trials], modes=(ACTIONS,))
        assert [(t.step, t.branch.passes, t.branch.n) for t in only_actions] == [(4, 0, 2)]

    def test_json(self) -> None:
        """The decisive fork's JSON holds its step and test."""
        trials = task_trials("searchRunbook")
        got = decisive_fork([(t.trial, t.outcome, t.trace) for t in trials]).to_json()
        assert got["step"] == 3 and got["p_value"] == pytest.approx(1 / 66)
        tested = got["branches"][got["tested"]]
        assert (tested["passes"], tested["n"]) == (0, 2) and got["rest"] == {"passes": 10, "n": 10}


def flat(*steps: tuple[str, str]) -> list[dict]:
    return [{"role": r, "content": c} if r != "call" else {"role": "assistant", "type": "tool_call", "name": c,
                                                           "args": {}} for r, c in steps]


class TestSplits:
    def test_two_way_split_is_one_test_and_errored_trials_count_in_neither_column(self) -> None:
        """A two-way split is one test, errored trials in neither column."""
        good = flat(("call", "search"), ("tool", "A first"), ("call", "answer"))
        bad = flat(("call", "search"), ("tool", "B first"), ("call", "restart"))
        trials = [(i, PASS, good) for i in range(5)] + [(5, FAIL, bad), (6, FAIL, bad), (7, ERRORED, bad)]
        tests = fork_tests(trials)
        assert len(tests) == 1
        t = tests[0]
        assert t.step == 2 and {(b.passes, b.n) for b in t.branches} == {(5, 5), (0, 2)}
        assert t.p_value == pytest.approx(fisher_exact([[5, 0], [0, 2]]).pvalue)

    def test_a_reworded_user_turn_is_no_fork(self) -> None:
        """A reworded user turn is no fork."""
        def trace(user: str, call: str) -> list[dict]:
            return [{"role": "user", "content": user}, {"role": "assistant", "type": "tool_call", "name": call,
                                                        "args": {}}]
        trials = [(0, PASS, trace("hi", "a")), (1, PASS, trace("hello", "a")), (2, FAIL, trace("hey", "b")),
                  (3, FAIL, trace("yo", "b"))]
        tests = fork_tests(trials)
        assert [(t.step, t.mode) for t in tests] == [(2, ACTIONS)]

    def test_trace_ending_is_a_branch(self) -> None:
        """A trace ending is a branch of its own."""
        long = flat(("call", "search"), ("tool", "r"), ("call", "fix"))
        short = flat(("call", "search"), ("tool", "r"))
        tests = fork_tests([(0, PASS, long), (1, PASS, long), (2, FAIL, short), (3, FAIL, short)])
        assert len(tests) == 1 and tests[0].mode == ACTIONS
        assert (tests[0].branch.label, tests[0].branch.step) == ("(trace ends)", 1)
        assert tests[0].text().startswith("when the agent does nothing more after step 1: 0 of 2 pass")

    def test_nothing_splits(self) -> None:
        """Traces that never split have no decisive fork."""
        same = flat(("call", "search"), ("tool", "r"))
        assert decisive_fork([(0, PASS, same), (1, PASS, same)]) is None
        assert decisive_fork([]) is None
