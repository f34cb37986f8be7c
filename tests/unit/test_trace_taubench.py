"""Divergence modes and the structural diff on real τ-bench transcripts.

Data: /work/shared/realdata/tau-bench/gpt-4o-airline.json (sierra-research/tau-bench's
historical trajectories: gpt-4o, airline, 4 trials per task; see its README). Skipped
when the shared folder is absent. No τ²-bench trial data is stored there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from flaketui.loading import load_logs, read_trial
from flaketui.traces import (
    ACTIONS,
    ALL,
    Normaliser,
    align_traces,
    best_pair,
    build_fork_map,
    default_mode,
    diff_traces,
    pair_keys,
    split_points,
    step_line,
    task_divergence,
)
from tests.conftest import ROOT, SHARED

# The shared folder sits beside the checkout (/work/main) or beside the worktrees' folder (/work/wt/x).
_SAMPLE = ("realdata", "tau-bench", "gpt-4o-airline.json")
TAU = next((p for p in (d.joinpath(*_SAMPLE) for d in (SHARED, ROOT.parent.parent / "shared")) if p.is_file()),
           SHARED.joinpath(*_SAMPLE))

pytestmark = pytest.mark.skipif(not TAU.is_file(), reason="the shared τ-bench sample is not here")


@pytest.fixture(scope="module")
def tasks() -> dict[int, dict[int, dict[str, Any]]]:
    by: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for item in json.loads(TAU.read_bytes()):
        by[item["task_id"]][item["trial"]] = item
    return by


def passed(item: dict[str, Any]) -> bool:
    return abs(item["reward"] - 1) < 1e-6  # tau_bench/run.py's success test


def flaky(tasks: dict[int, dict[int, dict[str, Any]]]) -> dict[int, list[tuple[bool, list[Any]]]]:
    out = {}
    for t, trials in tasks.items():
        traces = [(passed(r), r["traj"]) for _, r in sorted(trials.items())]
        if 0 < sum(p for p, _ in traces) < len(traces):
            out[t] = traces
    return out


def test_default_mode_is_actions(tasks: dict[int, dict[int, dict[str, Any]]]) -> None:
    """τ-bench traces default to actions mode."""
    assert default_mode(tasks[5][0]["traj"]) == ACTIONS


def test_all_mode_diverges_at_the_users_paraphrase_actions_mode_at_the_agent(
        tasks: dict[int, dict[int, dict[str, Any]]]) -> None:
    """In all mode τ-bench traces diverge at the user's paraphrase, in actions mode at the agent."""
    by_task = flaky(tasks)
    assert len(by_task) == 26  # README: 26 flaky tasks
    norm = Normaliser()
    for t, traces in by_task.items():
        passing = [tr for ok, tr in traces if ok]
        failing = [tr for ok, tr in traces if not ok]
        for mode in (ALL, ACTIONS):
            i, j, _ = best_pair([pair_keys(tr, norm, mode) for tr in passing],  # type: ignore[misc]
                                [pair_keys(tr, norm, mode) for tr in failing])
            a, b = passing[i], failing[j]
            al = align_traces(a, b, norm, mode)
            assert al.first_divergence == task_divergence(traces, norm, mode), t
            row = al.rows[al.divergence_row]  # type: ignore[index]
            steps = [s for s in (None if row.a is None else a[row.a], None if row.b is None else b[row.b]) if s]
            if mode == ALL:
                # Every flaky task's transcripts first differ in a simulated user's turn…
                assert [s["role"] for s in steps] == ["user", "user"], t
            else:
                # …and the agent's first different action comes later: a tool call or its last message.
                assert al.first_divergence > 2 and steps, t
                for s, tr in zip(steps, (a, b), strict=False):
                    after = tr[tr.index(s) + 1:]
                    assert s["role"] == "assistant", t
                    assert s.get("tool_calls") or not any(
                        x["role"] == "assistant" and not x.get("tool_calls") for x in after), t


def test_the_wrong_reservation_is_named(tasks: dict[int, dict[int, dict[str, Any]]]) -> None:
    """The wrong reservation is named."""
    # Task 5: trial 1 passes, trial 0 fails. Both agents call get_reservation_details as
    # their step 13, on different reservations (read straight from the file here).
    a, b = tasks[5][1], tasks[5][0]
    assert passed(a) and not passed(b)
    args = [json.loads(x["traj"][12]["tool_calls"][0]["function"]["arguments"]) for x in (a, b)]
    assert args[0]["reservation_id"] != args[1]["reservation_id"]
    assert {k for k in args[0] if args[0][k] != args[1].get(k)} == {"reservation_id"}

    d = diff_traces(a["traj"], b["traj"])
    assert d.mode == ACTIONS and (d.step_a, d.step_b) == (13, 13)
    (change,) = d.divergent_changes
    assert change.path == "tool_calls.0.arguments.reservation_id"
    assert (change.a, change.b) == (args[0]["reservation_id"], args[1]["reservation_id"])
    assert change.text() == f'tool_calls.0.arguments.reservation_id: "{change.a}" → "{change.b}"'
    row = next(r for r in d.around if (r.step_a, r.step_b) == (13, 13))
    assert row.line_a == f'get_reservation_details(reservation_id="{change.a}")'
    doc = d.to_json()
    assert doc["first_divergence"] == {"step_a": 13, "step_b": 13}
    assert {"step_a": 13, "step_b": 13, "path": change.path, "a": change.a, "b": change.b,
            "counts": True} in doc["changes"]

    # The old normaliser dropped every *_id key at every depth: then the two calls were equal.
    assert Normaliser().signature(a["traj"][12]) != Normaliser().signature(b["traj"][12])
    assert diff_traces(a["traj"], b["traj"], ALL).step_a == 2


def test_loaded_trials_and_the_fork_map(tasks: dict[int, dict[int, dict[str, Any]]]) -> None:
    """The loaded trials give the fork map."""
    log = load_logs([TAU])
    rows = [i for i in range(len(log)) if log.tasks[int(log.task[i])] == "5"]
    trials = [read_trial(log, i) for i in rows]
    assert [t.trace == tasks[5][t.trial]["traj"] for t in trials] == [True] * 4
    fork_all = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials])
    assert split_points(fork_all)[0].depth == 1  # after the system prompt, one branch per trial
    assert len(split_points(fork_all)[0].children) == 4
    fork = build_fork_map([(t.trial, t.outcome, t.trace) for t in trials], mode=ACTIONS)
    nodes = list(fork.walk())[1:]
    assert nodes and all(n.step["role"] == "assistant" for n in nodes)
    assert all(n.number > n.depth for n in nodes)  # user turns are not nodes, still counted in steps
    assert any("reservation_id=" in step_line(n.step) for n in nodes)
