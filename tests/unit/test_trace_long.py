"""A 5,000-step trace: the fork map, alignment and diff walk it without recursion.

``build_fork_map`` used to recurse once per step and hit RecursionError at about 1,000.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from flaketui.model import FAIL, PASS
from flaketui.traces import (
    ACTIONS,
    ALL,
    align_traces,
    build_fork_map,
    chain,
    diff_traces,
    split_points,
    task_divergence,
)

STEPS = 5000
FORK = 4000  # 1-based step where the failing trial's call differs (calls are the even steps)


def long_trace(fail: bool) -> list[dict]:
    steps: list[dict] = [{"id": "u", "role": "user", "type": "message", "content": "drain the queue"}]
    for i in range((STEPS - 1) // 2):
        item = f"job-{i}" if not (fail and len(steps) + 1 == FORK) else "job-wrong"
        steps.append({"id": f"c{i}", "role": "assistant", "type": "tool_call", "name": "ack",
                      "args": {"job_id": item}})
        steps.append({"id": f"r{i}", "role": "tool", "type": "tool_result", "name": "ack", "content": "ok"})
    steps.append({"role": "assistant", "type": "message", "content": "done"})
    assert len(steps) == STEPS
    return steps


@contextmanager
def shallow_stack(limit: int = 400) -> Iterator[None]:
    """Fail on any walk that recurses once per step (the trace is 5,000 steps deep)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture(scope="module")
def trials() -> list[tuple[int, int, list[dict]]]:
    return [(0, PASS, long_trace(False)), (1, FAIL, long_trace(True)), (2, PASS, long_trace(False))]


@pytest.mark.parametrize("mode", [ALL, ACTIONS])
def test_fork_map(trials: list[tuple[int, int, list[dict]]], mode: str) -> None:
    """A long trace builds its fork map on a shallow stack."""
    with shallow_stack():
        root = build_fork_map(trials, mode=mode)
        nodes = list(root.walk())
        (split,) = split_points(root)
        repr(root)
    per_step = 1 if mode == ALL else 2  # actions mode leaves the tool results out
    assert split.number == FORK - per_step  # the last shared step (or call): the failing trial's call is next
    assert sorted((c.passes, c.fails, c.number) for c in split.children) == [(0, 1, FORK), (2, 0, FORK)]
    assert len(nodes) == 1 + (FORK - 1) // per_step + 2 * len(range(FORK, STEPS + 1, per_step))
    assert len(chain(root.children[0])) == split.depth  # one unbroken chain down to the fork


@pytest.mark.slow
@pytest.mark.parametrize("mode", [ALL, ACTIONS])
def test_alignment_and_diff(trials: list[tuple[int, int, list[dict]]], mode: str) -> None:
    """Long traces align and diff on a shallow stack."""
    (_, _, a), (_, _, b) = trials[0], trials[1]
    with shallow_stack():
        al = align_traces(a, b, mode=mode)
        d = diff_traces(a, b, mode)
        div = task_divergence([(o == PASS, t) for _, o, t in trials], mode=mode)
    assert al.first_divergence == div == FORK
    assert (d.step_a, d.step_b) == (FORK, FORK)
    assert [c.text() for c in d.changes] == ['args.job_id: "job-1999" → "job-wrong"']
    assert len(al.rows) == STEPS


def test_the_real_atif_pair_reads_at_once_with_rows_of_a_screenful() -> None:
    """The real Harbor ATIF pair (../shared, skipped when absent): every row's changed words found in well under a
    second of work each, and no row's changed values (cut) longer than a screenful."""
    import time

    from flaketui.app.widgets.trace_view import changes_text
    from flaketui.loading import load_logs, read_trial
    from flaketui.traces.trace_diff import pair_diff
    from tests.conftest import SHARED

    harbor = SHARED / "realdata" / "harbor-datagen"
    jobs = [harbor / "auth_token_race_condition" / "example_runs" / "successful_run_2025-11-19",
            harbor / "etl_checkpoint_resume_bug" / "example_runs" / "run_2025-11-19__14-39-23"]
    if not all(j.is_dir() for j in jobs):
        pytest.skip("../shared/realdata/harbor-datagen is not here")
    log = load_logs([str(j) for j in jobs], use_cache=False)
    a, b = (read_trial(log, r) for r in range(2))
    diff = pair_diff(a, b)
    start = time.process_time()
    for n in range(len(diff.rows)):
        diff.row_highlights(n)
    assert time.process_time() - start < 5.0  # was over 20 s: difflib through every run of spaces
    longest = max(str(changes_text(diff.row_changes(n), *diff.steps(n), expanded=False)).count("\n")
                  for n in range(len(diff.rows)))
    assert longest < 60  # was 984 lines under one row: whole files in the metadata
