"""The headless session's pairs and report filters: what the CLI and the app share, usable
without a command (what cannot be found is an InputError naming it, never an exit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flaketui.loading import load_logs
from flaketui.model import PASS, InputError
from flaketui.session.filters import baseline_comparisons, report_inputs
from flaketui.session.pairs import choose_pair, cross_pairs, flaky_pairs
from flaketui.traces import Normaliser

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "fixtures" / "oncall-baseline.jsonl"
CANDIDATE = ROOT / "fixtures" / "oncall-candidate.jsonl"


def test_one_run_pairs_a_passing_with_a_failing_trial() -> None:
    """With one run, choose_pair gives a passing and a failing trial of the task."""
    log = load_logs([BASELINE])
    pair = choose_pair(log, "searchRunbook", None, None, Normaliser(), None)
    assert pair.a.task == pair.b.task == "searchRunbook"
    assert pair.a.outcome == PASS and pair.b.outcome != PASS


def test_what_is_missing_is_an_input_error_naming_it() -> None:
    """An unknown task, run or trial number is an InputError (one line), not an exit."""
    log = load_logs([BASELINE])
    with pytest.raises(InputError, match="has no task 'nope'"):
        choose_pair(log, "nope", None, None, Normaliser(), None)
    with pytest.raises(InputError, match="no run named 'nope'"):
        choose_pair(log, "searchRunbook", ("nope", log.runs[0]), None, Normaliser(), None)
    with pytest.raises(InputError, match="has no trial 999"):
        choose_pair(log, "searchRunbook", None, (999, 0), Normaliser(), None)
    with pytest.raises(InputError, match="--baseline needs at least two runs"):
        baseline_comparisons(log, log.runs[0], 0.05)


def test_page_pairs_agree_with_the_pair_diff_shows() -> None:
    """flaky_pairs and cross_pairs compare the trials choose_pair picks (the page and diff agree)."""
    log = load_logs([BASELINE, CANDIDATE])
    a, b = log.runs[0], log.runs[1]
    norm = Normaliser()
    within = flaky_pairs(log, a, ["searchRunbook"])["searchRunbook"]
    one = choose_pair(load_logs([BASELINE]), "searchRunbook", None, None, norm, None)
    assert (within.label_a, within.label_b) == (f"{a} trial {one.a.trial} (pass)", f"{a} trial {one.b.trial} (fail)")
    across = cross_pairs((log, a), (log, b), ["searchRunbook"])["searchRunbook"]
    two = choose_pair(log, "searchRunbook", (a, b), None, norm, None)
    assert across.label_a.startswith(f"{a} trial {two.a.trial} ") and across.label_b.startswith(f"{b} trial {two.b.trial} ")


def test_report_inputs_let_go_of_what_the_report_does_not_read() -> None:
    """report_inputs drops metrics always and byte spans unless traces are still to be read; counts errored."""
    loaded = load_logs([BASELINE])
    runs = list(loaded.runs)
    plain = report_inputs(loaded, runs)
    assert plain.log.metrics == {} and (plain.log.offset == -1).all() and plain.exclusion is None
    assert len(plain.log) == len(loaded) and plain.rescoring is None
    kept = report_inputs(loaded, runs, keep_locations=True)
    assert np.array_equal(kept.log.offset, loaded.offset)
    assert kept.errored == plain.errored
