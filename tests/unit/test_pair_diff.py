"""The model a trace view renders (PairDiff): alignment, each row's changes and changed words,
folds, hunks, search and repeated system prompts, pinned to what the trace screen showed."""

from __future__ import annotations

import sys
from subprocess import run

from flaketui.model import FAIL, PASS, Trial
from flaketui.traces import Normaliser, align_traces, step_changes
from flaketui.traces.trace_diff import FOLD_KEEP, FOLD_MIN, Item, highlights, pair_diff
from tests.helpers.traces import chat


def trial(number: int, passed: bool, trace: list | None) -> Trial:
    return Trial("r", "t", number, PASS if passed else FAIL, None, None, {}, None, trace, {}, "run.jsonl:1")


SYSTEM = {"role": "system", "content": "You are careful."}


class TestAlignment:
    def test_the_rows_and_divergence_are_align_traces(self) -> None:
        """pair_diff's rows and divergence are align_traces'."""
        a, b = chat(40, user="a"), chat(40, diverge_at=20, user="a")
        d = pair_diff(trial(0, True, a), trial(1, False, b))
        al = align_traces(a, b, Normaliser(), d.mode)
        assert d.mode == "actions" and d.first_divergence == 20 == al.first_divergence
        assert d.rows == [(r.a, r.b, r.tag, r.counts) for r in al.rows]
        assert d.changes == step_changes(a[19], b[19])
        assert [c.path for c in d.changes] == ["tool_calls.0.arguments.record"]
        assert d.divergent_steps == (Normaliser().step(a[19]), Normaliser().step(b[19]))

    def test_the_mode_asked_for_wins_over_the_default(self) -> None:
        """The mode asked for wins over the default."""
        a, b = chat(12, user="a"), chat(12, diverge_at=4, user="b")
        assert pair_diff(trial(0, True, a), trial(1, False, b)).first_divergence == 4
        assert pair_diff(trial(0, True, a), trial(1, False, b), mode="all").first_divergence == 1

    def test_one_side_is_a_steps_unaligned(self) -> None:
        """With one side only the steps are listed unaligned."""
        d = pair_diff(trial(0, True, chat(30)), None)
        assert d.alignment is None and not d.two_sided and d.first_divergence is None
        assert d.rows == [(i, None, "equal", False) for i in range(30)]
        assert d.items() == [Item(i, i) for i in range(30)]  # nothing folds on one side
        assert d.hunks() == [] and d.row_changes(3) == []

    def test_a_trial_without_a_trace_is_an_empty_side(self) -> None:
        """A trial without a trace is an empty side."""
        d = pair_diff(trial(0, True, None), trial(1, False, chat(3)))
        assert d.two_sided and d.first_divergence == 1 and d.hunks() == [0]


class TestRows:
    def test_each_rows_changes_are_step_changes_kept_once_found(self) -> None:
        """Each row's changes are step_changes, computed once and kept."""
        a, b = chat(1500, user="a"), chat(1500, diverge_at=956, user="b")
        d = pair_diff(trial(0, True, a), trial(1, False, b))
        assert d.first_divergence == 956 and d.hunks()[:5] == [0, 2, 4, 6, 8]
        assert len(d.items()) == 1500  # every user turn is reworded: no run of equal rows to fold
        first = d.row_changes(0)
        assert first == step_changes(a[0], b[0]) and d.row_changes(0) is first
        assert d.row_changes(d.divergence_row) is d.changes  # type: ignore[arg-type]
        assert d.row_changes(1) == []  # an equal row

    def test_row_highlights_mark_the_words_the_row_shows(self) -> None:
        """A row's highlights mark the words it shows."""
        a, b = chat(6), chat(6, diverge_at=4)
        d = pair_diff(trial(0, True, a), trial(1, False, b), mode="all")
        n = d.divergence_row
        assert n is not None
        ha, hb = d.row_highlights(n)
        assert (ha, hb) == highlights(d.changes, *d.divergent_steps)
        assert [t for t, changed in ha["tool_calls"] if changed] == ['lookup(record="R4")']
        assert [t for t, changed in hb["tool_calls"] if changed] == ['lookup(record="OTHER")']
        assert d.changed_word_counts() == (1, 1)
        assert d.row_highlights(0) == ({}, {})


class TestFoldsHunksSearch:
    def test_a_long_run_of_equal_rows_folds_keeping_its_ends(self) -> None:
        """A long run of equal rows folds, keeping its ends."""
        a, b = chat(40, user="a"), chat(40, diverge_at=20, user="a")
        d = pair_diff(trial(0, True, a), trial(1, False, b))
        assert FOLD_MIN == 6 and FOLD_KEEP == 1
        assert d.items() == [Item(0, 0), Item(1, 17, fold=True), Item(18, 18), Item(19, 19),
                             Item(20, 20), Item(21, 38, fold=True), Item(39, 39)]
        assert d.items(folded=False) == [Item(i, i) for i in range(40)]
        assert d.items(unfolded={0})[:3] == [Item(0, 0), Item(1, 1), Item(2, 2)]  # that run only
        assert d.items(unfolded={0})[-2:] == [Item(21, 38, fold=True), Item(39, 39)]
        assert d.hunks() == [19]

    def test_search_is_case_blind_over_both_sides_compact_json(self) -> None:
        """Search is case-blind over both sides' compact JSON."""
        d = pair_diff(trial(0, True, chat(6)), trial(1, False, chat(6, diverge_at=4)), mode="all")
        assert d.find("TURN 3") == [2] and d.find("other") == [3] and d.find("zzz") == []
        assert d.find("record")[:3] == [0, 1, 2]

    def test_strings_align_as_steps(self) -> None:
        """String steps align as steps."""
        d = pair_diff(trial(0, True, ["a", "b", "c"]), trial(1, False, ["a", "x", "c", "d"]), mode="all")
        assert [r[2] for r in d.rows] == ["equal", "replace", "equal", "insert"]
        assert d.hunks() == [1, 3] and d.first_divergence == 2


def test_a_repeated_system_prompt_names_its_first_step() -> None:
    """A repeated system prompt names its first step."""
    a = [SYSTEM, *chat(10)]
    b = [SYSTEM, {"role": "user", "content": "x"}, SYSTEM, *chat(12, diverge_at=4)]
    d = pair_diff(trial(0, True, a), trial(1, False, b))
    assert d.same_system(1, 2) == 0 and d.same_system(1, 0) is None and d.same_system(0, 0) is None
    assert d.first_divergence == 5 and d.hunks() == [1, 6, 13]


def test_the_model_imports_no_textual_or_rich() -> None:
    """The trace models import neither Textual nor Rich."""
    code = ("import sys, flaketui.traces.trace_diff, flaketui.traces.task_view\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]")
    assert run([sys.executable, "-c", code]).returncode == 0
