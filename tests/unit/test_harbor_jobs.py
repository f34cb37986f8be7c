"""Harbor folders that merge several jobs, jobs with trials missing on disk, errored trials
counted by exception type against Harbor's own ``exception_stats``, trial start times where
the outage detector reads them, and an ATIF trajectory given alone (the job sample in
tests/data/harbor, edited in a temporary copy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.loading.error_types import errored_by_type, errored_by_type_line
from flaketui.model import ERRORED, FieldMap, InputError
from flaketui.traces.burst import parse_time, trial_time
from tests.conftest import ROOT

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"
EVAL = "terminus-2__gpt-4o__adhoc"
RETRIED = ("hello-world__pQ8vK3n", "fix-permissions__Hc4nD9e")


def merged_folder(tmp_path: Path, multiplier: float = 2.0) -> Path:
    """The job's trials in a folder someone assembled (no job files), two of them from a second
    job run with another timeout multiplier."""
    folder = tmp_path / "merged"
    shutil.copytree(JOB, folder)
    (folder / "result.json").unlink()
    (folder / "config.json").unlink()
    for name in RETRIED:
        path = folder / name / "result.json"
        doc = json.loads(path.read_text())
        doc["config"].update(job_id="11111111-2222-4333-8444-555555555555", trials_dir="jobs/retry-job",
                             timeout_multiplier=multiplier)
        path.write_text(json.dumps(doc, indent=4))
    return folder


class TestSeveralJobsInOneRun:
    def test_one_run_and_a_notice_naming_the_jobs_and_what_differs(self, tmp_path: Path) -> None:
        """Several jobs in one run folder are one run, with a notice naming the jobs and what differs."""
        log = load_logs([merged_folder(tmp_path)])
        assert log.runs == ["merged"] and len(log) == 5
        notices = [p.reason for p in log.problems if "Harbor jobs" in p.reason]
        assert notices == ["trials of 2 Harbor jobs in one run 'merged': retry-job (2 trials), hello-world-job "
                           "(3 trials); their configurations differ in timeout_multiplier 2.0 vs 1.0: a confound "
                           "within the run"]
        assert all(p.notice for p in log.problems)

    def test_the_confound_is_in_the_runs_metadata(self, tmp_path: Path) -> None:
        """The jobs and their differences are kept in the run's metadata."""
        meta = load_logs([merged_folder(tmp_path)]).run_meta["merged"]
        assert meta["jobs"] == "retry-job, hello-world-job"
        assert meta["jobs_differ"] == "timeout_multiplier 2.0 vs 1.0"
        assert (meta["agent"], meta["model"]) == ("terminus-2", "openai/gpt-4o")  # from the trials' config

    def test_jobs_that_agree_are_said_to(self, tmp_path: Path) -> None:
        """Jobs that agree are said to agree."""
        log = load_logs([merged_folder(tmp_path, multiplier=1.0)])
        notice = next(p.reason for p in log.problems if "Harbor jobs" in p.reason)
        assert notice.endswith("their configurations agree")
        assert "jobs_differ" not in log.run_meta["merged"]

    def test_one_job_says_nothing(self) -> None:
        """One job gives no notice."""
        log = load_logs([JOB])
        assert not any("Harbor jobs" in p.reason for p in log.problems)
        assert "jobs" not in log.run_meta["hello-world-job"]


def test_trials_the_job_counts_but_disk_lacks(tmp_path: Path) -> None:
    """Trials the job counts but the disk lacks are said."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    shutil.rmtree(job / "hello-world__Tm2xQ7a")
    log = load_logs([job])
    reasons = [p.reason for p in log.problems if p.notice]
    assert "the job lists 1 trials not on disk: hello-world__Tm2xQ7a" in reasons
    assert "the job counts 5 trials (n_total_trials); 4 are on disk" in reasons


class TestErrorsByType:
    def test_harbors_exception_stats(self) -> None:
        """Errored trials by kind equal Harbor's own exception stats."""
        ev = json.loads((JOB / "result.json").read_text())["stats"]["evals"][EVAL]
        counts = errored_by_type(load_logs([JOB]))
        assert counts == {"hello-world-job": {k: len(v) for k, v in ev["exception_stats"].items()}}
        assert errored_by_type_line(counts["hello-world-job"]) == "errored by type: AgentTimeoutError 1, RuntimeError 1"

    def test_counted_alike_when_errored_count_as_failures(self) -> None:
        """Errored kinds are counted alike with --errored-as fail."""
        log = load_logs([JOB], FieldMap(errored_as="fail"))
        assert int((log.outcome == ERRORED).sum()) == 2
        assert errored_by_type(log)["hello-world-job"] == {"AgentTimeoutError": 1, "RuntimeError": 1}

    def test_terminal_bench_failure_modes(self) -> None:
        """Terminal-Bench's failure modes are counted by kind."""
        log = load_logs([ROOT / "tests" / "data" / "terminal_bench" / "20250902_orchestrator_claude-4-sonnet"])
        kinds = errored_by_type(log)["20250902_orchestrator_claude-4-sonnet"]
        assert sum(kinds.values()) == int((log.outcome == ERRORED).sum())
        assert all(k.startswith("is_resolved is null (") for k in kinds)

    def test_nothing_errored_gives_nothing(self) -> None:
        """With nothing errored there is no count and no line."""
        log = load_logs([JOB])
        assert errored_by_type(log, runs=["no such run"]) == {}
        assert errored_by_type_line({}) is None


class TestTimes:
    def test_harbor_trials_carry_their_start(self) -> None:
        """Harbor trials carry their start time."""
        log = load_logs([JOB])
        for row in range(len(log)):
            trial = read_trial(log, row, max_steps=0)
            assert trial_time(trial.extra) == parse_time(trial.extra["started_at"]) is not None
            assert trial.extra["finished_at"].endswith("Z")  # trial times are UTC

    def test_no_steps_asked_reads_no_trajectory(self) -> None:
        """Asking for no steps reads no trajectory."""
        log = load_logs([JOB])
        traced = next(r for r in range(len(log)) if log.has_trace[r])
        assert read_trial(log, traced, max_steps=0).trace is None
        assert read_trial(log, traced).trace

    def test_terminal_bench_trial_times(self, tmp_path: Path) -> None:
        """Terminal-Bench trials carry their times."""
        src = ROOT / "tests" / "data" / "terminal_bench" / "20250902_orchestrator_claude-4-sonnet"
        run = tmp_path / src.name
        shutil.copytree(src, run)
        trial_file = next(run.glob("*/*/results.json"))
        doc = json.loads(trial_file.read_text())
        doc.update(trial_started_at="2025-09-02T10:00:00.000000+00:00", trial_ended_at="2025-09-02T10:05:00+00:00")
        trial_file.write_text(json.dumps(doc, indent=4))
        log = load_logs([run])
        rows = [r for r in range(len(log)) if log.sources[int(log.source[r])].path == str(trial_file)]
        assert len(rows) == 1
        extra = read_trial(log, rows[0], max_steps=0).extra
        assert extra["started_at"] == "2025-09-02T10:00:00.000000+00:00"
        assert trial_time(extra) == pytest.approx(parse_time("2025-09-02T10:00:00Z"))


class TestLoneTrajectory:
    def test_a_trajectory_outside_a_trial_says_what_it_lacks(self, tmp_path: Path) -> None:
        """A trajectory outside a trial folder says what it lacks."""
        lone = tmp_path / "trajectory.json"
        shutil.copy(JOB / "hello-world__Tm2xQ7a" / "agent" / "trajectory.json", lone)
        with pytest.raises(InputError, match=r"an ATIF-v1\.5 trajectory \(\d+ steps\) holds a trace but no outcome"):
            load_logs([lone])
        result = CliRunner().invoke(main, ["report", str(lone)])
        assert result.exit_code == 2
        assert "holds a trace but no outcome" in result.stderr and "Traceback" not in result.output
        assert "--records-field" not in result.stderr  # never read its steps as trials

    def test_an_unknown_version_is_named(self, tmp_path: Path) -> None:
        """A lone trajectory of an unknown version is named."""
        lone = tmp_path / "run.json"
        lone.write_text(json.dumps({"schema_version": "ATIF-v9.0", "session_id": "s", "steps": []}))
        with pytest.raises(InputError, match=r"unknown ATIF version 'ATIF-v9\.0'"):
            load_logs([lone])

    def test_beside_a_job_it_is_skipped_and_the_job_read(self, tmp_path: Path) -> None:
        """A trajectory beside a job is skipped and the job read."""
        shutil.copytree(JOB, tmp_path / "job")
        shutil.copy(JOB / "hello-world__Tm2xQ7a" / "agent" / "trajectory.json", tmp_path / "exported.json")
        log = load_logs([tmp_path])
        assert log.runs == ["job"] and len(log) == 5
        assert [p.path for p in log.problems if "no outcome" in p.reason] == [str(tmp_path / "exported.json")]
