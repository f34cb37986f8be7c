"""One task's trials across every loaded run, each run's first divergence from a reference trial.

Expected steps are read off the traces written here or off the bundled fixtures' lines
(a trial's steps counted by hand), never from the alignment code.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import pytest

from flaketui.loading import load_logs, read_trial
from flaketui.traces.task_view import task_across_runs
from tests.conftest import BASELINE, CANDIDATE
from tests.helpers.logs import write_log


def across(paths: list[Path], task: str, **kw):  # type: ignore[no-untyped-def]
    log = load_logs([str(p) for p in paths])
    return task_across_runs(log, task, partial(read_trial, log), **kw)


def test_broken_task_diverges_at_the_summary_step() -> None:
    """summarizeIncident passes every baseline trial and fails every candidate one: the
    reference is baseline trial 0, and the candidate's trials part from it at step 4 (the
    summary after the same search), both sides counted with the user turn."""
    m = across([BASELINE, CANDIDATE], "summarizeIncident")
    assert m.mode == "actions"
    assert m.reference == (0, 0)
    ref = m.reference_trial
    assert ref is not None and (ref.run, ref.trial, ref.passed) == ("oncall-baseline", 0, True)
    base, cand = m.runs
    assert (base.run, base.passes, base.n, base.errored) == ("oncall-baseline", 12, 12, 0)
    assert (cand.run, cand.passes, cand.n, cand.errored) == ("oncall-candidate", 0, 12, 0)
    assert base.has_reference and not cand.has_reference
    assert base.p_hat == 1.0 and cand.p_hat == 0.0
    # the baseline has no failing trial: its representative is another passing trial, the same actions
    assert base.representative_trial is not None and base.representative_trial.trial != 0
    assert base.divergence is None
    rep = cand.representative_trial
    assert rep is not None and not rep.passed
    assert (cand.divergence, cand.divergence_b) == (4, 4)


def test_errored_trials_are_counted_apart_and_never_shown() -> None:
    """listAlerts has one errored baseline trial (trial 12, no trace): counted apart, not in n."""
    m = across([BASELINE, CANDIDATE], "listAlerts")
    base = m.runs[0]
    assert (base.passes, base.n, base.errored, len(base.trials)) == (12, 12, 1, 13)
    assert base.representative_trial is not None and base.representative_trial.trial != 12


def test_no_passing_trial_anywhere_falls_back_to_the_first_traced_one() -> None:
    """With no passing trial anywhere the reference is the first traced one."""
    m = across([BASELINE, CANDIDATE], "failoverDatabase")
    ref = m.reference_trial
    assert ref is not None and (ref.run, ref.trial, ref.passed) == ("oncall-baseline", 0, False)


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """Three runs of task t (r1: passes and fails, r2: fails only, r3 without t but with u)."""
    records = [
        {"run": "r1", "task": "t", "trial": 0, "passed": False, "trace": ["a", "x"]},
        {"run": "r1", "task": "t", "trial": 1, "passed": True, "trace": ["a", "b", "c"]},
        {"run": "r1", "task": "t", "trial": 2, "passed": True, "trace": ["a", "b", "c"]},
        {"run": "r2", "task": "t", "trial": 0, "passed": False, "trace": ["a", "b", "z"]},
        {"run": "r2", "task": "t", "trial": 1, "passed": False, "trace": ["q"]},
        {"run": "r2", "task": "t", "trial": 2, "error": "sandbox down"},
        {"run": "r3", "task": "u", "trial": 0, "passed": True, "trace": ["a"]},
    ]
    return write_log(tmp_path / "three.jsonl", records)


def test_default_reference_and_the_closest_differing_trial(three: Path) -> None:
    """The reference is r1's first passing trial (trial 1); r1's representative is its failing
    trial (it parts at step 2), r2's the failing trial sharing most with the reference (trial 0,
    step 3), r3 has no trial of t."""
    m = across([three], "t")
    assert m.mode == "all"
    ref = m.reference_trial
    assert ref is not None and (ref.run, ref.trial) == ("r1", 1)
    r1, r2, r3 = m.runs
    assert r1.representative_trial is not None and r1.representative_trial.trial == 0
    assert r1.divergence == 2
    assert r2.representative_trial is not None and r2.representative_trial.trial == 0
    assert (r2.divergence, r2.divergence_b) == (3, 3)
    assert (r2.passes, r2.n, r2.errored) == (0, 2, 1)
    assert r3.trials == [] and r3.representative is None and r3.divergence is None and math.isnan(r3.p_hat)


def test_a_chosen_reference(three: Path) -> None:
    """With r2's trial 1 as the reference (failing), each run shows a passing trial if it has one."""
    m = across([three], "t", reference=("r2", 1))
    ref = m.reference_trial
    assert ref is not None and (ref.run, ref.trial, ref.passed) == ("r2", 1, False)
    r1, r2, _ = m.runs
    assert r2.has_reference and not r1.has_reference
    assert r1.representative_trial is not None and r1.representative_trial.passed
    assert r1.divergence == 1
    # r2 has no passing trial: its other failing trial, parting at the first step
    assert r2.representative_trial is not None and r2.representative_trial.trial == 0
    assert r2.divergence == 1


def test_a_reference_that_cannot_be_one_falls_back(three: Path) -> None:
    """An errored trial, or a run that is not loaded, is no reference: the default one is."""
    for wanted in (("r2", 2), ("nope", 0), ("r1", 99)):
        ref = across([three], "t", reference=wanted).reference_trial
        assert ref is not None and (ref.run, ref.trial) == ("r1", 1)


def test_an_unknown_task_has_empty_rows(three: Path) -> None:
    """An unknown task has empty rows."""
    m = across([three], "missing")
    assert m.reference is None and all(r.trials == [] for r in m.runs) and len(m.runs) == 3
