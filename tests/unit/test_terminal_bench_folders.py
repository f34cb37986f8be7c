"""Terminal-Bench leaderboard folders read once: a run folder's run-level
``results.json`` and its per-trial ``TASK/TRIAL/results.json`` are the same trials; each is read
once, n = attempts, with no duplicate problems, with and without ``--runs-as-trials``, and two
agents given together stay two runs. Data: tests/data/terminal_bench (README: provenance)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.model import FieldMap
from flaketui.stats import summarise, task_stats
from tests.conftest import ROOT

TB = ROOT / "tests" / "data" / "terminal_bench"
OPUS = TB / "20250906_orchestrator_claude-4.1-opus"
SONNET = TB / "20250902_orchestrator_claude-4-sonnet"
GOOSE = TB / "20250829_goose_claude-4-sonnet"
OPUS_RUN = OPUS.name


def per_task(log, run_name: str) -> dict[str, tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    o = log.run_outcomes(run_name)
    return {t: (int(n), int(c), int(e)) for t, n, c, e in zip(o.tasks, o.n, o.passes, o.errored, strict=True)}


def duplicates(log) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(p) for p in log.problems if "duplicate" in p.reason]


@pytest.mark.parametrize("runs_as_trials", [False, True])
def test_the_run_folder_gives_each_attempt_once(runs_as_trials: bool) -> None:
    """The run folder gives each attempt once."""
    log = load_logs([OPUS], FieldMap(errored_as="fail", runs_as_trials=runs_as_trials))
    assert log.runs == [OPUS_RUN] and len(log) == 55  # 11 tasks × 5 attempts, not 55 + 13
    assert duplicates(log) == [] and log.problems == []
    o = log.run_outcomes(OPUS_RUN)
    assert set(o.n.tolist()) == {5}  # errored counted as failures: n = attempts
    # the publisher's figures (README): accuracy 16/55 and pass@5
    assert summarise(task_stats(o, 1)).pass_at_1.value == pytest.approx(0.2909090909090909)
    assert summarise(task_stats(o, 5)).pass_at_k.value == pytest.approx(0.5454545454545454)
    assert summarise(task_stats(o, 2)).pass_at_k.value == pytest.approx(0.4)


def test_per_trial_files_are_preferred_and_the_rest_keep_their_item_numbers() -> None:
    """Per-trial files are preferred and the rest keep their item numbers."""
    log = load_logs([OPUS])
    kinds = {p.split("/")[-2] if p.endswith("/results.json") and "-of-" in p else "run-level"
             for p in (log.sources[int(s)].path for s in log.source)}
    assert "run-level" in kinds and len(kinds) > 1
    o = log.run_outcomes(OPUS_RUN)
    for task, from_trial_files in (("create-bucket", 5), ("build-initramfs-qemu", 5), ("simple-web-scraper", 1)):
        rows = o.task_rows(o.index(task))
        paths = [log.sources[int(log.source[r])].path for r in rows]
        assert sum(p != str(OPUS / "results.json") for p in paths) == from_trial_files
    # simple-web-scraper 2..5 have no per-trial file (README): read from the run-level file,
    # each at the file line where its object starts there
    lines = (OPUS / "results.json").read_text().splitlines()
    rows = o.task_rows(o.index("simple-web-scraper"))
    run_level = [r for r in rows if log.sources[int(log.source[r])].path == str(OPUS / "results.json")]
    assert len(run_level) == 4
    for r in run_level:
        start = int(log.line[r])
        assert lines[start - 1].strip() == "{"
        name = next(line for line in lines[start:] if '"trial_name"' in line)
        assert f'"simple-web-scraper.{read_trial(log, r).trial}-of-5"' in name


def test_the_run_level_file_alone_still_gives_every_trial() -> None:
    """The run-level file alone still gives every trial."""
    log = load_logs([OPUS / "results.json"])
    assert len(log) == 55 and log.problems == []


def test_the_run_level_file_is_the_runs_identity_and_published_accuracy() -> None:
    """The run-level file gives the run's identity and published accuracy."""
    log = load_logs([OPUS])
    meta = log.run_meta[OPUS_RUN]
    assert meta["accuracy"] == pytest.approx(0.2909090909090909)  # of the trials read (the slice)
    assert meta["pass_at_5"] == pytest.approx(0.5454545454545454)
    assert meta["run_id"] == "2025-09-06__18-59-06" and meta["agent_name"] == "LeadArchitectAgent"
    goose = load_logs([sorted(GOOSE.glob("*results.json"))[0]])
    assert goose.run_meta[goose.runs[0]]["run_uuid"] == "c3d2f087-68d6-44b4-a13c-5e263fe5d922"


def test_report_prints_no_duplicate_noise() -> None:
    """report prints no duplicate noise for a run folder."""
    result = CliRunner().invoke(main, ["report", str(OPUS), "--errored-as", "fail", "-k", "5",
                                       "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    (r,) = orjson.loads(result.stdout)["runs"]
    assert r["summary"]["trials"] == 55
    assert r["summary"]["pass_at_k"] == pytest.approx(0.5454545454545454)


def test_two_agents_together_stay_two_runs_with_runs_as_trials() -> None:
    """Two agents read together stay two runs with --runs-as-trials."""
    log = load_logs([GOOSE, OPUS], FieldMap(runs_as_trials=True))
    assert log.runs == [GOOSE.name, OPUS_RUN]
    assert duplicates(log) == []
    for name in log.runs:
        o = log.run_outcomes(name)
        assert set(o.n.tolist()) == {5}  # Terminal-Bench's rule by default: a null counts, as a failure
    assert per_task(log, GOOSE.name)["build-initramfs-qemu"][2] == 3  # README: null in 3 of 5 runs
    notes = [str(p) for p in log.problems]
    assert len(notes) == 1 and f"5 runs read as trials of one run {GOOSE.name!r}" in notes[0]


def test_the_whole_leaderboard_folder_with_runs_as_trials() -> None:
    """The whole leaderboard folder reads with --runs-as-trials."""
    log = load_logs([TB], FieldMap(runs_as_trials=True))
    assert log.runs == [GOOSE.name, SONNET.name, OPUS_RUN]
    assert duplicates(log) == []
    assert set(per_task(log, OPUS_RUN).values()) == set(per_task(load_logs([OPUS]), OPUS_RUN).values())


def test_the_whole_leaderboard_folder_without_the_flag() -> None:
    """The whole leaderboard folder reads without the flag, without duplicates."""
    log = load_logs([TB])
    assert duplicates(log) == []
    assert len(log) == 5 * 11 + 11 + 55  # goose 5 runs × 11, sonnet's 11 per-trial files, opus 55
    assert len(log.run_outcomes(OPUS_RUN).tasks) == 11


def test_a_copied_layout_merges_the_agents_run_folders(tmp_path: Path) -> None:
    """An agent folder whose runs sit side by side as files (goose) is one run with the flag,
    and a second agent's run folder, copied beside it, stays its own run."""
    shutil.copytree(GOOSE, tmp_path / "goose")
    shutil.copytree(OPUS, tmp_path / "opus")
    log = load_logs([tmp_path / "goose", tmp_path / "opus"], FieldMap(runs_as_trials=True))
    assert log.runs == ["goose", "opus"] and len(log) == 110


def test_a_per_trial_file_that_cannot_be_read_leaves_its_run_level_record(tmp_path: Path) -> None:
    """A per-trial file that cannot be read leaves its run-level record."""
    shutil.copytree(OPUS, tmp_path / "opus")
    bad = tmp_path / "opus" / "create-bucket" / "create-bucket.1-of-5" / "results.json"
    doc = json.loads(bad.read_text())
    doc["is_resolved"] = "yes"
    bad.write_text(json.dumps(doc, indent=4))
    log = load_logs([tmp_path / "opus"])
    assert len(log) == 55 and duplicates(log) == []
    assert [str(p) for p in log.problems] == [
        f"{bad}:1: item 1: is_resolved must be true, false or null, got a string"]
    o = log.run_outcomes("opus")
    rows = o.task_rows(o.index("create-bucket"))
    assert read_trial(log, int(rows[0])).trial == 1
