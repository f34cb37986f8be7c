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
