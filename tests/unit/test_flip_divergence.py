"""Each flip's first divergence and suggested source, as ``triage export`` and the comparison pane show them.

On the bundled fixtures, read off their lines: searchRunbook's failing baseline trial 2 and the
candidate's passing trial 0 both call searchRunbook (step 2), get the runbook's chunks in another
order (step 3: ``[1] Restart…`` against ``[1] Open the checkout dashboard…``) and then act on the
first chunk (step 4: restartService against queryMetrics). summarizeIncident's trials get the
post-mortems in another order (step 3) and summarise the first (step 4). Every tool result that
differs under the same call is the tool's nondeterminism.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from flaketui.loading import load_logs, read_trial
from flaketui.traces.task_view import flip_divergence
from tests.conftest import BASELINE, CANDIDATE
from tests.helpers.cli import run


def sides(task: str):  # type: ignore[no-untyped-def]
    log = load_logs([str(BASELINE), str(CANDIDATE)])
    out = []
    for name in log.runs:
        o = log.run_outcomes(name)
        out.append([read_trial(log, int(r)) for r in o.task_rows(o.index(task))])
    return out


def test_a_fixed_task_sets_a_failing_trial_of_a_against_a_passing_one_of_b() -> None:
    """A fixed task sets a failing trial of A against a passing one of B."""
    a, b = sides("searchRunbook")
    d = flip_divergence(a, b, broken=False)
    assert d is not None
    assert (d.trial_a, d.trial_b, d.mode) == (2, 0, "actions")
    assert (d.step, d.step_b) == (4, 4)
    assert (d.cause, d.kind) == ("tool-nondeterminism", "result")
    d_all = flip_divergence(a, b, broken=False, mode="all")
    assert d_all is not None and (d_all.step, d_all.step_b) == (3, 3)


def test_a_broken_task_and_a_side_without_the_outcome() -> None:
    """A broken task pairs the other way, and a side without the outcome gives nothing."""
    a, b = sides("summarizeIncident")
    d = flip_divergence(a, b, broken=True)
    assert d is not None and (d.trial_a, d.trial_b, d.step) == (0, 0, 4)
    assert flip_divergence(a, b, broken=False) is None  # A has no failing trial, B no passing one


def test_triage_export_shows_each_flips_divergence(tmp_path: Path) -> None:
    """triage export shows each flip's divergence."""
    notes = tmp_path / "notes.json"
    code, out, _ = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes, "--format", "json")
    assert code == 0
    (c,) = orjson.loads(out)["comparisons"]
    flips = {f["task"]: f["first_divergence"] for f in c["flips"]}
    assert flips["searchRunbook"] == {"trial_a": 2, "trial_b": 0, "step": 4, "step_b": 4,
                                      "suggested_source": "tool-nondeterminism", "evidence": "result",
                                      "mode": "actions"}
    assert flips["summarizeIncident"]["step"] == 4

    code, out, _ = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes, "--divergence", "all")
    assert code == 0
    assert "| first divergence | suggested source |" in out
    assert "| step 3 (A trial 2 vs B trial 0) | tool-nondeterminism |" in out
    assert "| step 3 (A trial 0 vs B trial 0) | tool-nondeterminism |" in out


def test_a_log_without_traces_has_no_divergence(tmp_path: Path) -> None:
    """A log without traces has no divergence."""
    log = tmp_path / "plain.jsonl"
    log.write_text("".join(orjson.dumps({"run": run_name, "task": "t", "trial": i, "passed": ok}).decode() + "\n"
                           for run_name, ok in (("a", True), ("b", False)) for i in range(8)))
    code, out, _ = run("triage", "export", log, "--triage", tmp_path / "n.json", "--format", "json")
    assert code == 0
    (c,) = orjson.loads(out)["comparisons"]
    assert [f["first_divergence"] for f in c["flips"]] == [None]
