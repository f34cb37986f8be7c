"""Steps named as the harness numbers them: ``diff`` on two Harbor trials (ATIF trajectories) names
each step by its ``step_id`` (a tool result by the step whose call it answers), flaketui's row only
where the log has no id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from flaketui.history.recording import divergence_step
from flaketui.model import FAIL, PASS, Trial
from flaketui.traces.causes import classify_pair
from flaketui.traces.steps import harness_step_ids
from tests.conftest import ROOT
from tests.helpers.cli import run

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"
REAL = ROOT.parent / "shared" / "realdata" / "harbor-datagen"
REAL_TRIALS = ("auth_token_race_condition/example_runs/successful_run_2025-11-19",
               "fix_async_worker_queue/example_runs/partial_success_2025-11-19")


def row_ids(trajectory: Path) -> list[int]:
    """Each flaketui row's ATIF step_id, counted by hand: a step is one row, each observation result one more."""
    out = []
    for step in json.loads(trajectory.read_text())["steps"]:
        results = (step.get("observation") or {}).get("results") or []
        out += [step["step_id"]] * (1 + len(results))
    return out


def check_named(doc: dict, ids_a: list[int], ids_b: list[int]) -> None:
    first = doc["first_divergence"]
    assert first["step_a"] == ids_a[first["row_a"] - 1] and first["step_b"] == ids_b[first["row_b"] - 1]


def test_diff_names_atif_step_ids(tmp_path: Path) -> None:
    """On the built job's two traced hello-world trials, diff's JSON and text name the trajectories' step_ids."""
    trials = sorted(p.parent for p in JOB.glob("hello-world__*/agent"))
    code, out, err = run("diff", str(JOB), "--task", "hello-world", "--trials", "0", "2", "--format", "json")
    assert code == 0, err
    doc = orjson.loads(out)
    ids = {p.name: row_ids(p / "agent" / "trajectory.json") for p in trials}
    # trial numbers follow the folders' order of reading: find each side's ids by the rows' count
    first = doc["first_divergence"]
    assert first["step_a"] is not None
    assert any(first["step_a"] == v[first["row_a"] - 1] for v in ids.values())
    _, text, _ = run("diff", str(JOB), "--task", "hello-world", "--trials", "0", "2")
    assert (f"first divergence: step {first['step_a']} of A, step {first['step_b']} of B "
            "(as the log numbers its steps)") in text


def test_harness_step_ids_give_a_tool_result_its_steps_id() -> None:
    """A tool row takes the id of the ATIF step whose call it answers; a trace without ids gives none."""
    trace = [{"role": "user", "step_id": 1, "content": "x"}, {"role": "agent", "step_id": 2, "content": "y"},
             {"role": "tool", "content": "z"}, {"role": "agent", "step_id": 3, "content": "w"}]
    assert harness_step_ids(trace) == (1, 2, 2, 3)
    assert harness_step_ids([{"role": "user", "content": "x"}]) == ()


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata/harbor-datagen is absent")
def test_diff_on_a_real_atif_pair_names_step_ids(tmp_path: Path) -> None:
    """Two real Harbor trials (ATIF-v1.2) read as trials of one task: every step diff names is the file's step_id."""
    job = tmp_path / "job"
    job.mkdir()
    ids = []
    for where in REAL_TRIALS:
        trial = next(p.parent for p in (REAL / where).glob("*/result.json"))
        shutil.copytree(trial, job / trial.name)
        doc = json.loads((job / trial.name / "result.json").read_text())
        doc["task_name"] = "same"
        (job / trial.name / "result.json").write_text(json.dumps(doc))
        ids.append(row_ids(job / trial.name / "agent" / "trajectory.json"))
    code, out, err = run("diff", str(job), "--task", "same", "--trials", "0", "1", "--divergence", "all",
                         "--format", "json")
    assert code == 0, err
    doc = orjson.loads(out)
    check_named(doc, *ids)
    for c in doc["changes"]:
        assert c["step_a"] is None or c["step_a"] in ids[0]
    assert any(len(set(v)) < len(v) for v in ids)  # tool results: more rows than steps


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata/harbor-datagen is absent")
def test_a_real_trajectory_counts_its_own_steps() -> None:
    """A real ATIF trajectory reads as the file's number of steps (its tool results are rows, not steps)."""
    from flaketui.loading import load_logs, read_trial
    from flaketui.traces.steps import harness_step_count

    for where in REAL_TRIALS:
        trial_dir = next(p.parent for p in (REAL / where).glob("*/result.json"))
        steps = len(json.loads((trial_dir / "agent" / "trajectory.json").read_text())["steps"])
        trial = read_trial(load_logs([REAL / where]), 0)
        assert harness_step_count(trial.trace).startswith(f"{steps} steps (")
        assert trial.trace is not None and len(trial.trace) > steps


def test_the_fork_map_names_its_steps_by_the_harness_ids() -> None:
    """A fork map of two ATIF-like traces names each node by its step_id, a tool result by its step's."""
    from flaketui.model import FAIL, PASS
    from flaketui.traces.forkmap import build_fork_map

    def trace(command: str) -> list[dict]:
        return [{"role": "user", "step_id": 1, "content": "go"},
                {"role": "agent", "step_id": 2, "content": "", "tool_calls": [{"name": "bash", "arguments": "ls"}]},
                {"role": "tool", "content": "a b"},
                {"role": "agent", "step_id": 3, "content": "", "tool_calls": [{"name": "bash", "arguments": command}]}]

    root = build_fork_map([(0, PASS, trace("cat a")), (1, FAIL, trace("rm b"))])
    names = [(n.number, n.name) for n in root.walk() if n.depth]
    assert names[:3] == [(1, 1), (2, 2), (3, 2)] and {name for _, name in names[3:]} == {3}
    (fork,) = [n for n in root.walk() if len(n.children) == 2]
    assert (fork.split_step, fork.split_name) == (4, 3)  # row 4 is the trajectory's step 3


def atif_trial(trial: int, outcome: int, answer: str) -> Trial:
    """A trial whose trace numbers its steps as ATIF does (a tool result takes its call's step_id)."""
    trace = [{"role": "user", "step_id": 1, "content": "find the runbook"},
             {"role": "assistant", "step_id": 7, "content": "",
              "tool_calls": [{"name": "search", "arguments": {"q": "runbook"}}]},
             {"role": "tool", "name": "search", "content": answer},
             {"role": "assistant", "step_id": 9, "content": "done"}]
    return Trial(run="r", task="t", trial=trial, outcome=outcome, score=None, group=None, metrics={}, error=None,
                 trace=trace, extra={}, location=f"x.jsonl:{trial + 1}")


def test_cause_evidence_names_the_step_as_the_harness_numbers_it() -> None:
    """A tool result that differs is evidence at the ATIF step_id of the call it answers (7), not its row (3)."""
    ev = classify_pair(atif_trial(0, PASS, "[1] Open the valve"), atif_trial(1, FAIL, "[1] Restart the pump"))
    assert (ev.step_a, ev.step_b) == (3, 3)  # the rows a view moves to
    assert (ev.id_a, ev.id_b) == (7, 7)
    assert ev.text().startswith("step 7:")
    assert ev.to_json()["step_id_a"] == 7


def test_history_keeps_the_divergence_as_the_harness_numbers_it() -> None:
    """The history's first divergence is the step_id a report shows; a trace without ids keeps its row."""
    from flaketui.history.recording import divergence_step
    ev = classify_pair(atif_trial(0, PASS, "[1] Open the valve"), atif_trial(1, FAIL, "[1] Restart the pump"))
    assert divergence_step(ev) == 7
    plain = [atif_trial(i, o, a) for i, o, a in ((0, PASS, "yes"), (1, FAIL, "no"))]
    for t in plain:
        for step in t.trace or []:
            step.pop("step_id", None)
    ev = classify_pair(*plain)
    assert ev.id_a is None and divergence_step(ev) == ev.step_a == 3
