"""Harbor's own words: a trial folder without ``agent/trajectory.json`` is said to lack exactly that, a
``trajectory.json`` that is a list of episodes is read as a trace, and ``plan --emit harbor`` fills the
agent, model and dataset path from the job's ``config.json``."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from flaketui.loading import load_logs, read_trial
from tests.conftest import ROOT
from tests.helpers.cli import run

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"


def test_a_trial_without_a_trajectory_says_so() -> None:
    """diff on a task whose trial folders hold no agent/trajectory.json names that file, not a trace field."""
    code, _, err = run("diff", str(JOB), "--task", "fix-permissions")
    assert code == 2
    assert "no agent/trajectory.json" in err and "trace field" not in err


def test_a_list_of_episodes_is_read_as_a_trace(tmp_path: Path) -> None:
    """A trajectory.json holding [{episode, prompt, response}] gives the trial a trace of user/agent steps."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    episodes = [{"episode": 0, "prompt": "make hello.txt", "response": "printf hi > hello.txt"},
                {"episode": 1, "prompt": "done?", "response": "yes"}]
    (job / "hello-world__Tm2xQ7a" / "agent" / "trajectory.json").write_text(json.dumps(episodes))
    log = load_logs([job])
    assert not [p for p in log.problems if "ATIF" in p.reason]
    rows = [r for r in range(len(log)) if read_trial(log, r).extra.get("trial_name") == "hello-world__Tm2xQ7a"]
    trace = read_trial(log, rows[0]).trace
    assert [(s["role"], s["episode"], s["content"]) for s in trace] == [
        ("user", 0, "make hello.txt"), ("agent", 0, "printf hi > hello.txt"), ("user", 1, "done?"), ("agent", 1, "yes")]


def test_plan_emit_harbor_fills_agent_model_and_path_from_config_json(tmp_path: Path) -> None:
    """plan --emit harbor writes the job's agent, model and task folder, shell-quoted, and no placeholder."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    config = json.loads((job / "config.json").read_text())
    config["agents"][0]["model_name"] = "openai/gpt-4o; rm -rf ~"
    (job / "config.json").write_text(json.dumps(config))
    code, out, err = run("plan", str(job), "--emit", "harbor", "--budget", "6")
    assert code == 0, err
    commands = [line for line in out.splitlines() if line.startswith("harbor run")]
    assert commands and "$" not in out
    for line in commands:
        args = shlex.split(line)
        assert args[args.index("--agent") + 1] == "terminus-2"
        assert args[args.index("--model") + 1] == "openai/gpt-4o; rm -rf ~"
        assert args[args.index("--path") + 1] == "tasks"


def test_plan_emit_harbor_keeps_placeholders_where_the_job_names_nothing(tmp_path: Path) -> None:
    """Without the job's config.json (an assembled folder) the dataset stays $DATASET, named in the header."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    (job / "config.json").unlink()
    (job / "result.json").unlink()
    for trial in job.glob("*/config.json"):
        trial.unlink()
    code, out, _ = run("plan", str(job), "--emit", "harbor", "--budget", "6")
    assert code == 0
    assert "# Set DATASET" in out and '--dataset "$DATASET"' in out


def test_plan_emit_harbor_never_writes_a_control_character_from_config_json(tmp_path: Path) -> None:
    """An agent name holding an escape sequence stays the $AGENT placeholder: the script never carries it."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    config = json.loads((job / "config.json").read_text())
    config["agents"][0]["name"] = "evil\x1b]52;c;AAAA\x07"
    (job / "config.json").write_text(json.dumps(config))
    code, out, _ = run("plan", str(job), "--emit", "harbor", "--budget", "6")
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert '--agent "$AGENT" --model openai/gpt-4o' in out
