"""Inspect logs scored by several scorers: ``--scorer NAME`` chooses which one decides pass
(default: the log's first), every scorer's value is kept as the trial's grades, and each
log's task and model are its run's metadata. The logs are Inspect's own real
``log_streaming.eval`` (../shared/realdata/inspect-ai) with a second scorer added through
``inspect_ai.log``, as an eval set's logs with two scorers are written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.model import FAIL, PASS, FieldMap, InputError
from flaketui.traces.causes import trial_grades
from tests.conftest import SHARED

STREAMING = SHARED / "realdata" / "inspect-ai" / "log_streaming.eval"
JUDGE = {(1, 1): "C", (2, 1): "C", (1, 2): "C", (2, 2): "I"}
"""The added scorer's values by (sample, epoch); ``match`` has I, C, C, C (Inspect's README)."""

pytestmark = pytest.mark.skipif(not STREAMING.is_file(), reason="../shared/realdata is not here")


@pytest.fixture
def two_scorers(tmp_path: Path) -> Path:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import EvalScore, read_eval_log, write_eval_log
    from inspect_ai.scorer import Score

    log = read_eval_log(str(STREAMING))
    assert log.samples and log.results
    for sample in log.samples:
        assert sample.scores is not None
        sample.scores["judge"] = Score(value=JUDGE[(int(sample.id), sample.epoch)])
    log.results.scores.append(EvalScore(name="judge", scorer="judge"))
    out = tmp_path / "popularity_two_scorers.eval"
    write_eval_log(log, str(out))
    return out


def outcomes(log) -> dict[tuple[str, int], int]:  # type: ignore[no-untyped-def]
    return {(log.tasks[int(log.task[r])], int(log.trial[r])): int(log.outcome[r]) for r in range(len(log))}


def test_the_first_scorer_decides_by_default(two_scorers: Path) -> None:
    """The log's first scorer decides a trial's pass by default."""
    log = load_logs([two_scorers])
    assert outcomes(log) == {("1", 1): FAIL, ("2", 1): PASS, ("1", 2): PASS, ("2", 2): PASS}  # match


def test_scorer_chooses_another(two_scorers: Path) -> None:
    """--scorer chooses another scorer."""
    log = load_logs([two_scorers], FieldMap(reward="judge"))
    assert outcomes(log) == {("1", 1): PASS, ("2", 1): PASS, ("1", 2): PASS, ("2", 2): FAIL}


def test_every_scorer_is_a_grade(two_scorers: Path) -> None:
    """Every scorer's value is one of the trial's grades."""
    log = load_logs([two_scorers])
    grades = {(read_trial(log, r).task, read_trial(log, r).trial): read_trial(log, r).extra["grades"]
              for r in range(len(log))}
    assert grades[("1", 1)] == {"match": 0.0, "judge": 1.0}  # the scorers disagree
    assert grades[("2", 2)] == {"match": 1.0, "judge": 0.0}
    assert trial_grades(read_trial(log, 0).extra) == [0.0, 1.0]


def test_one_scorer_gives_no_grades() -> None:
    """A log with one scorer gives no grades."""
    pytest.importorskip("inspect_ai")
    log = load_logs([STREAMING])
    assert "grades" not in read_trial(log, 0).extra


def test_an_unknown_scorer_is_one_line_naming_those_there(two_scorers: Path) -> None:
    """An unknown scorer is one line naming the scorers there."""
    with pytest.raises(InputError, match=r"no scorer 'nope' in this log \(it has match, judge"):
        load_logs([two_scorers], FieldMap(reward="nope"))
    result = CliRunner().invoke(main, ["report", str(two_scorers), "--scorer", "nope"])
    assert result.exit_code == 2
    assert "no scorer 'nope'" in result.stderr and "Traceback" not in result.output


def test_the_task_and_model_are_the_runs_metadata(two_scorers: Path) -> None:
    """The task and model are the run's metadata."""
    log = load_logs([two_scorers])
    meta = log.run_meta["popularity_two_scorers"]
    assert meta["task"] == "popularity"
    assert meta["model"] == "azureai/Meta-Llama-3-1-405B-Instruct-jqf"
    assert meta["scorers"] == "match, judge" and meta["epochs"] == 2


def test_a_folder_of_logs_is_one_run_per_log_each_with_its_task_and_model(two_scorers: Path) -> None:
    """A folder of logs is one run per log, each with its task and model."""
    shutil.copy(STREAMING, two_scorers.parent / "popularity_one_scorer.eval")
    log = load_logs([two_scorers.parent])
    assert sorted(log.runs) == ["popularity_one_scorer", "popularity_two_scorers"]
    assert len(log) == 8  # 2 samples × 2 epochs in each
    assert {r: (m["task"], m["scorers"]) for r, m in log.run_meta.items()} == {
        "popularity_one_scorer": ("popularity", "match"), "popularity_two_scorers": ("popularity", "match, judge")}


def retried(tmp_path: Path, eval_set_id: str | None) -> tuple[Path, Path]:
    """Two logs of one task: an older attempt (its second epoch missing, as an interrupted
    attempt leaves it) and the newest, seeded from it."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(STREAMING))
    log.eval.eval_set_id = eval_set_id
    assert log.samples
    full = list(log.samples)
    log.samples = [s for s in full if s.epoch == 1]
    older = tmp_path / "2024-11-05T20-04-20_popularity_old.eval"
    write_eval_log(log, str(older))
    log.samples = full
    newer = tmp_path / "2024-11-05T21-00-00_popularity_new.eval"
    write_eval_log(log, str(newer))
    os.utime(older, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    return older, newer


def test_an_eval_sets_older_attempt_is_left_out(tmp_path: Path) -> None:
    """An eval set's older attempt is left out."""
    pytest.importorskip("inspect_ai")
    older, newer = retried(tmp_path, "set-1")
    log = load_logs([tmp_path])
    assert log.runs == ["2024-11-05T21-00-00_popularity_new"] and len(log) == 4  # every sample once
    notice = next(p for p in log.problems if p.path == str(older))
    assert notice.notice and "older attempt at this task of eval set 'set-1'" in notice.reason
    assert repr(newer.name) in notice.reason


def test_logs_outside_an_eval_set_are_each_a_run(tmp_path: Path) -> None:
    """Logs outside an eval set are each a run."""
    pytest.importorskip("inspect_ai")
    retried(tmp_path, None)
    log = load_logs([tmp_path])
    assert len(log.runs) == 2 and len(log) == 6
