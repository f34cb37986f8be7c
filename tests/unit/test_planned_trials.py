"""``--planned-trials N``: the statistics read the first N trials of each task in trial order, so
trials a plan added after seeing outcomes do not bias p̂ and pass^k."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs
from flaketui.model import FieldMap
from tests.helpers.logs import write_log


def shuffled_log(path: Path) -> tuple[Path, dict[str, list[tuple[int, bool, bool]]]]:
    """Two runs, tasks with 2–9 trials written in a shuffled order, some errored."""
    rng = random.Random(5)
    records, truth = [], {}
    for run in ("a", "b"):
        for t in range(12):
            trials = [(i, rng.random() < 0.6, rng.random() < 0.1) for i in range(rng.randint(2, 9))]
            truth[f"{run}/t{t}"] = trials
            records += [{"run": run, "task": f"t{t}", "trial": i, "passed": ok,
                         **({"error": "boom"} if err else {})} for i, ok, err in trials]
    rng.shuffle(records)
    return write_log(path, records), truth


def test_first_trials_by_trial_number(tmp_path: Path) -> None:
    """Each task keeps its N lowest-numbered trials, whatever the file order (brute force per task)."""
    path, truth = shuffled_log(tmp_path / "x.jsonl")
    log = load_logs([str(path)], FieldMap(planned_trials=3))
    for run in ("a", "b"):
        o = log.run_outcomes(run)
        assert o.planned_trials == 3
        for i, task in enumerate(o.tasks):
            first = sorted(truth[f"{run}/{task}"])[:3]
            assert o.n[i] == sum(1 for _, _, err in first if not err)
            assert o.passes[i] == sum(1 for _, ok, err in first if ok and not err)
            assert o.errored[i] == sum(1 for _, _, err in first if err)
            assert len(o.task_rows(i)) == len(first)


def test_without_the_option_every_trial_is_read(tmp_path: Path) -> None:
    """No --planned-trials: every trial counts, as before."""
    path, truth = shuffled_log(tmp_path / "x.jsonl")
    o = load_logs([str(path)], FieldMap()).run_outcomes("a")
    assert o.planned_trials is None
    assert int(o.n.sum() + o.errored.sum()) == sum(len(v) for k, v in truth.items() if k.startswith("a/"))


def test_report_says_which_estimator(tmp_path: Path) -> None:
    """The report names the trials its estimates read, in the table and in JSON."""
    path, _ = shuffled_log(tmp_path / "x.jsonl")
    runner = CliRunner()
    out = runner.invoke(main, ["report", str(path), "--planned-trials", "2"]).output
    assert "estimated from the first 2 trials of each task (--planned-trials)" in out
    doc = orjson.loads(runner.invoke(main, ["report", str(path), "--planned-trials", "2", "--format", "json"]).output)
    summary = doc["runs"][0]["summary"]
    assert summary["planned_trials"] == 2 and summary["estimator"].startswith("the first 2 trials")
    assert max(t["n"] for t in doc["runs"][0]["tasks"]) <= 2
    plain = orjson.loads(runner.invoke(main, ["report", str(path), "--format", "json"]).output)
    assert plain["runs"][0]["summary"]["estimator"] == "all trials of each task"


def test_planned_trials_must_be_positive(tmp_path: Path) -> None:
    """--planned-trials 0 is a usage error (exit 2), not a traceback."""
    path, _ = shuffled_log(tmp_path / "x.jsonl")
    result = CliRunner().invoke(main, ["report", str(path), "--planned-trials", "0"])
    assert result.exit_code == 2 and "Traceback" not in result.output
