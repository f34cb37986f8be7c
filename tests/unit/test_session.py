"""The headless session: each run's parts computed once, and its jobs run to the end give the core's own results."""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from flaketui.loading import load_logs, read_trial
from flaketui.model import FieldMap, TrialLog
from flaketui.session import jobs
from flaketui.session.state import Session
from flaketui.stats import task_stats
from flaketui.traces.causes import flaky_rows, suggest_causes
from flaketui.traces.task_view import divergence_rows, divergences
from tests.conftest import BASELINE, CANDIDATE, SHARED

TAU = SHARED / "realdata" / "tau-bench" / "gpt-4o-airline.trials.jsonl"


@pytest.fixture
def log() -> TrialLog:
    """Both bundled fixtures: two runs."""
    return load_logs([str(BASELINE), str(CANDIDATE)], FieldMap())


def session_of(log: TrialLog) -> Session:
    """A session holding ``log``."""
    session = Session()
    session.set_log(log)
    return session


def test_each_part_is_computed_once(log: TrialLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's state, outcomes, statistics at k and owners are made once: a second ask returns the same objects."""
    calls: list[str] = []
    group = TrialLog.run_outcomes
    monkeypatch.setattr(TrialLog, "run_outcomes", lambda self, run: calls.append(run) or group(self, run))
    session = session_of(log)
    run = log.runs[0]
    state = session.run(run)
    assert session.run(run) is state
    assert state.outcomes is state.outcomes and calls == [run]
    st = state.stats(3)
    assert state.stats(3) is st
    assert state.owners is state.owners
    session.set_log(log)  # a new log (--watch): run states afresh
    assert session.run(run) is not state


def test_stats_at_another_k_match_task_stats(log: TrialLog) -> None:
    """Moving k keeps what k does not move and recomputes the rest: equal to task_stats at that k."""
    state = session_of(log).run(log.runs[0])
    state.stats(5)
    moved = state.stats(2)
    fresh = task_stats(log.run_outcomes(log.runs[0]), 2)
    assert moved.k == 2
    assert moved.pass_at_k.tolist() == fresh.pass_at_k.tolist()
    assert moved.pass_hat_k.tolist() == fresh.pass_hat_k.tolist()
    assert moved.classes == fresh.classes


def test_divergence_job_to_the_end_matches_the_core(log: TrialLog) -> None:
    """The divergence job run to the end finds what traces.task_view.divergences finds, task by task."""
    session = session_of(log)
    for run in log.runs:
        state = jobs.run_to_end(session.run(run), jobs.divergences(session.run(run), "all"))
        expected = dict(divergences(functools.partial(read_trial, log), divergence_rows(log, state.outcomes),
                                    session.normaliser, "all"))
        assert state.divergences == expected


def test_find_causes_is_the_causes_job_run_to_the_end(log: TrialLog) -> None:
    """find_causes (report --causes) equals suggest_causes over each run's flaky tasks in one call."""
    found = jobs.find_causes(log, log.runs)
    for run in log.runs:
        expected = suggest_causes(functools.partial(read_trial, log), flaky_rows(log.run_outcomes(run)))
        assert list(found[run]) == list(expected)
        assert found[run] == expected
    assert any(found.values())  # the fixture has a flaky task with traces


def test_causes_job_fills_the_state_with_progress(log: TrialLog) -> None:
    """The app's causes job fills causes and consistency; progress counts up to the total; done clears it."""
    state = session_of(log).run(log.runs[0])
    seen = []
    jobs.run_to_end(state, jobs.causes(state), lambda done, total: seen.append((done, total)))
    assert seen[-1][0] == seen[-1][1] and state.causes_progress is None
    assert set(state.causes) == set(state.consistency) == set(state.suggestions)
    assert state.causes == {t: s.cause for t, s in state.suggestions.items()}


def test_a_kept_cause_is_not_read_again(log: TrialLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cause kept in the triage file spares its pairs: only its consistency is found."""
    import flaketui.traces.causes

    state = session_of(log).run(log.runs[0])
    known = set(flaky_rows(state.outcomes))
    monkeypatch.setattr(flaketui.traces.causes, "suggest_causes", lambda *a, **k: pytest.fail("read again"))
    jobs.run_to_end(state, jobs.causes(state, known))
    assert set(state.consistency) == {t for t in known if log.has_trace[flaky_rows(state.outcomes)[t]].any()}


def test_batches_coalesce_to_the_same_result(log: TrialLog) -> None:
    """Batches merged for a worker (every) put the same into the state as one a task."""
    one = session_of(log).run(log.runs[0])
    merged = session_of(log).run(log.runs[0])
    jobs.run_to_end(one, jobs.causes(one))
    jobs.run_to_end(merged, jobs.every(jobs.causes(merged), 3600))
    assert (one.causes, one.consistency) == (merged.causes, merged.consistency)


@pytest.mark.slow
@pytest.mark.skipif(not TAU.exists(), reason="needs ../shared/realdata")
@pytest.mark.parametrize("workers", [1, 2])
def test_find_causes_on_a_real_log(workers: int) -> None:
    """On τ-bench's airline trials find_causes equals one suggest_causes call, in 1 or 2 processes."""
    log = load_logs([str(TAU)], FieldMap())
    found = jobs.find_causes(log, log.runs, workers=workers)
    for run in log.runs:
        expected = suggest_causes(functools.partial(read_trial, log), flaky_rows(log.run_outcomes(run)))
        assert list(found[run]) == list(expected) and found[run] == expected


def test_session_imports_neither_textual_nor_rich() -> None:
    """Importing the session (state and jobs) loads neither Textual nor Rich: it is core."""
    code = ("import sys, flaketui.session, flaketui.session.state, flaketui.session.jobs; "
            "print([m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_k_follows_the_usual_trials_up_only_while_default(log: TrialLog) -> None:
    """The default k rises to the trials most tasks have as logs grow, never falls, and a chosen k stays."""
    session = session_of(log)
    usual = session.usual_k()
    assert session.follow_usual_k() and session.k == usual
    session.k = usual + 3
    assert not session.follow_usual_k() and session.k == usual + 3  # never down
    session.k, session.k_is_default = 1, False
    assert not session.follow_usual_k() and session.k == 1  # chosen: kept
