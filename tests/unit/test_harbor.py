"""Harbor job folders and ATIF trajectories: the job sample in tests/data/harbor
(README there) against Harbor's own published figures, bad variants named by file, and an
ATIF pair that diverges at the one argument that differs, never at its renamed ids."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.loading.formats import format_for
from flaketui.loading.formats.atif import AtifError, head_problem, to_steps
from flaketui.model import ERRORED, FAIL, PASS, FieldMap
from flaketui.traces import Normaliser
from tests.conftest import ROOT

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"
EVAL = "terminus-2__gpt-4o__adhoc"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def published() -> dict:  # type: ignore[type-arg]
    return json.loads((JOB / "result.json").read_text())


def outcomes_by_trial(log) -> dict[str, tuple[str, int]]:  # type: ignore[no-untyped-def]
    out = {}
    for row in range(len(log)):
        t = read_trial(log, row)
        out[t.extra["trial_name"]] = (t.task, t.outcome)
    return out


class TestJobFolder:
    def test_one_run_named_by_the_job_folder_grouped_by_task_name(self) -> None:
        """A Harbor job folder is one run named by the folder, trials grouped by task name."""
        log = load_logs([JOB])
        assert log.runs == ["hello-world-job"]  # never "result", never a trial folder
        assert sorted(log.tasks) == ["fix-permissions", "hello-world"]
        assert [p for p in log.problems if not p.notice] == []
        assert outcomes_by_trial(log) == {
            "hello-world__Tm2xQ7a": ("hello-world", PASS),
            "hello-world__pQ8vK3n": ("hello-world", PASS),
            "hello-world__Zr5bW1c": ("hello-world", ERRORED),  # AgentTimeoutError, verified with reward 0
            "fix-permissions__Hc4nD9e": ("fix-permissions", FAIL),  # reward 0.55 < 1
            "fix-permissions__Lw7sJ2f": ("fix-permissions", ERRORED),  # verifier_result null
        }

    def test_harbors_published_mean_reward_and_error_counts(self) -> None:
        """The job's mean reward and error counts equal Harbor's own result.json."""
        doc = published()
        ev = doc["stats"]["evals"][EVAL]
        log = load_logs([JOB], FieldMap(errored_as="fail"))
        assert len(log) == doc["n_total_trials"] == doc["stats"]["n_trials"] == 5
        # Harbor's Mean: a missing reward counts 0, divided by every trial
        assert math.fsum(log.metrics["reward"].tolist()) / len(log) == ev["metrics"][0]["mean"] == 0.51
        assert int((log.outcome == ERRORED).sum()) == doc["stats"]["n_errors"] == ev["n_errors"] == 2
        errors = sorted(read_trial(log, r).error.split(":")[0] for r in range(len(log)) if log.outcome[r] == ERRORED)
        assert errors == sorted(ev["exception_stats"])  # AgentTimeoutError, RuntimeError
        passed = {name for value, names in ev["reward_stats"]["reward"].items() if float(value) >= 1 for name in names}
        assert {n for n, (_, o) in outcomes_by_trial(log).items() if o == PASS} == passed

    def test_reasons_tokens_and_the_trace(self) -> None:
        """Each trial's error reason, token counts and trace are read."""
        log = load_logs([JOB])
        trials = {read_trial(log, r).extra["trial_name"]: read_trial(log, r) for r in range(len(log))}
        assert trials["hello-world__Zr5bW1c"].error == "AgentTimeoutError: Agent execution timed out after 60.0 seconds"
        assert trials["hello-world__Zr5bW1c"].score == 0.0
        assert trials["fix-permissions__Lw7sJ2f"].error.startswith("RuntimeError: Docker compose command failed")
        assert trials["fix-permissions__Hc4nD9e"].score == pytest.approx(0.55)
        assert "input_tokens" not in trials["fix-permissions__Hc4nD9e"].metrics  # null: not reported, not 0
        assert trials["hello-world__Zr5bW1c"].metrics["input_tokens"] == 982
        trace = trials["hello-world__Zr5bW1c"].trace
        assert trace is not None and trace[0]["role"] == "user"
        assert trace[1]["tool_calls"][0]["name"] == "bash_command"
        assert trace[2] == {"role": "tool", "content": "New Terminal Output:\n\nroot@CONTAINER_ID:/app# echo "
                            "'Hello, world!'\nHello, world!\n\n\n"}
        assert trials["fix-permissions__Hc4nD9e"].trace is None
        assert log.run_meta["hello-world-job"]["agent"] == "terminus-2"

    def test_pass_threshold_and_reward_name(self, tmp_path: Path) -> None:
        """--pass-threshold and --reward decide the pass from Harbor's rewards."""
        code, out, _ = run("report", JOB, "--pass-threshold", "0.5", "--format", "json")
        rows = {t["task"]: t for t in orjson.loads(out)["runs"][0]["tasks"]}
        assert code == 0 and rows["fix-permissions"]["passes"] == 1  # 0.55 >= 0.5
        job = tmp_path / "job"
        shutil.copytree(JOB, job)
        trial = job / "fix-permissions__Hc4nD9e" / "result.json"
        doc = json.loads(trial.read_text())
        doc["verifier_result"]["rewards"] = {"reward": 0.0, "tests_passed": 1.0}
        trial.write_text(json.dumps(doc))
        log = load_logs([job], FieldMap(reward="tests_passed"))
        assert read_trial(log, [r for r in range(len(log)) if log.tasks[log.task[r]] == "fix-permissions"
                                and read_trial(log, r).score is not None][0]).score == 1.0
        assert f"{job / 'hello-world__Tm2xQ7a' / 'result.json'}:1: verifier_result.rewards has no 'tests_passed' " \
               "(has reward; --reward NAME to choose)" in [str(p) for p in log.problems]

    def test_report_and_diff_as_a_user_runs_them(self) -> None:
        """report and diff on the job run as a user runs them, without a traceback."""
        code, out, err = run("report", JOB)
        assert code == 0 and "hello-world-job" in out and "Traceback" not in err
        code, out, _ = run("diff", JOB, "--task", "hello-world", "--trials", "0", "2", "--format", "json")
        # named by the trajectories' own step_id (A's step 4 is flaketui's row 6: two tool results before it)
        assert code == 0 and orjson.loads(out)["first_divergence"] == {"step_a": 4, "step_b": 2, "row_a": 6, "row_b": 2}

    def test_a_parent_of_two_jobs_gives_one_run_per_job(self, tmp_path: Path) -> None:
        """A folder of two jobs gives one run per job."""
        shutil.copytree(JOB, tmp_path / "job-a")
        shutil.copytree(JOB, tmp_path / "job-b")
        log = load_logs([tmp_path])
        assert sorted(log.runs) == ["job-a", "job-b"] and len(log) == 10

    def test_a_lone_trial_folder_and_trials_missing_on_disk(self, tmp_path: Path) -> None:
        """A lone trial folder is read, and trials missing on disk are said."""
        log = load_logs([JOB / "hello-world__Tm2xQ7a"])
        assert len(log) == 1 and log.runs == ["hello-world-job"]
        job = tmp_path / "job"
        shutil.copytree(JOB, job)
        shutil.rmtree(job / "fix-permissions__Lw7sJ2f")
        log = load_logs([job])
        assert f"{job / 'result.json'}: the job lists 1 trials not on disk: fix-permissions__Lw7sJ2f" in \
            [str(p) for p in log.problems]

    @pytest.mark.parametrize(("edit", "reason"), [
        (lambda d: d.pop("task_name"), "task_name must be a non-empty string, got null"),
        (lambda d: d.update(verifier_result=[1]), "verifier_result must be an object or null, got a list"),
        (lambda d: d["verifier_result"].update(rewards={"reward": "1"}),
         "verifier_result.rewards.reward must be a finite number, got a string"),
    ])
    def test_bad_trials_are_named_by_file(self, tmp_path: Path, edit, reason) -> None:  # type: ignore[no-untyped-def]
        """Bad trials are named by their file."""
        job = tmp_path / "job"
        shutil.copytree(JOB, job)
        trial = job / "hello-world__pQ8vK3n" / "result.json"
        doc = json.loads(trial.read_text())
        edit(doc)
        text = json.dumps(doc, indent=4)
        if "task_name" not in doc:  # still a Harbor trial by its layout: keep the key, spoil the value
            text = text.replace('"trial_name"', '"task_name": null, "trial_name"', 1)
        trial.write_text(text)
        log = load_logs([job])
        assert f"{trial}:1: {reason}" in [str(p) for p in log.problems] and len(log) == 4

    def test_truncated_result_is_one_line_exit_2_never_a_traceback(self, tmp_path: Path) -> None:
        """A truncated result.json is one line, exit 2, never a traceback."""
        trial = tmp_path / "job" / "t__abc"
        trial.mkdir(parents=True)
        (trial / "result.json").write_text('{"id": "x", "task_name": "t", "trial_name": "t__abc", "verif')
        code, _, err = run("report", tmp_path / "job")
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert "not valid JSON" in err


class TestAtif:
    def test_the_real_trajectories_read_as_steps(self) -> None:
        """The job's real ATIF trajectories read as steps."""
        for path in sorted(JOB.glob("*/agent/trajectory.json")):
            steps = to_steps(json.loads(path.read_text()))
            assert steps and {s["role"] for s in steps} <= {"user", "agent", "system", "tool"}

    @pytest.mark.parametrize(("doc", "message"), [
        ([{"episode": 0, "prompt": "p", "response": "r"}], "not an ATIF trajectory (a JSON array"),
        ({"schema_version": "ATIF-v2.0", "steps": []}, "unknown ATIF version 'ATIF-v2.0'"),
        ({"schema_version": "1.4", "steps": []}, "is not an ATIF version"),
        ({"schema_version": "ATIF-v1.7", "steps": [{"source": "robot", "message": ""}]},
         "steps[0].source must be user, agent or system"),
        ({"schema_version": "ATIF-v1.3", "steps": [{"source": "agent", "message": "", "tool_calls": [{}]}]},
         "steps[0].tool_calls[0].function_name must be a string"),
    ])
    def test_non_atif_and_unknown_versions_say_so(self, doc, message: str) -> None:  # type: ignore[no-untyped-def]
        """A document that is not ATIF, or of an unknown version, says so in one line."""
        with pytest.raises(AtifError) as err:
            to_steps(doc)
        assert message in str(err.value) and "\n" not in str(err.value)

    @pytest.mark.parametrize("version", [f"ATIF-v1.{i}" for i in range(8)])
    def test_versions_1_0_to_1_7(self, version: str) -> None:
        """ATIF versions 1.0 to 1.7 are read."""
        assert to_steps({"schema_version": version, "steps": [{"step_id": 1, "source": "user", "message": "hi"}]})

    def test_an_unknown_version_in_a_trial_keeps_the_trial_and_says_why(self, tmp_path: Path) -> None:
        """An unknown ATIF version keeps the trial without a trace and says why."""
        job = tmp_path / "job"
        shutil.copytree(JOB, job)
        path = job / "hello-world__pQ8vK3n" / "agent" / "trajectory.json"
        path.write_text(path.read_text().replace('"ATIF-v1.5"', '"ATIF-v9.1"', 1))
        bare = job / "hello-world__Tm2xQ7a" / "agent" / "trajectory.json"
        bare.write_text(json.dumps([{"episode": 0, "prompt": "p", "response": "r"}]))
        log = load_logs([job])
        notes = [str(p) for p in log.problems if p.notice]
        assert f"{path}: unknown ATIF version 'ATIF-v9.1' (this flaketui reads ATIF-v1.0 … ATIF-v1.7); " \
               "the trial is kept without its trace" in notes
        assert not any(n.startswith(f"{bare}:") for n in notes)  # a list of episodes is read as a trace
        assert len(log) == 5 and int(log.has_trace.sum()) == 2
        assert head_problem(b'{"schema_version": "ATIF-v1.7", "steps": [') is None
        assert format_for(path).kinds == ("harbor",)  # read with its trial, never as trials of its own


def _pair(tmp_path: Path, ids_b: dict[str, str], argument: str) -> Path:
    """A job of two trials of one task, from the real invalid-JSON trajectory: trial B's
    tool-call ids renamed (also where its messages quote them) and one argument changed."""
    job = tmp_path / "pair-job"
    src = JOB / "hello-world__pQ8vK3n"
    for name, reward in (("hello-world__aaaaaaa", 1.0), ("hello-world__bbbbbbb", 0.0)):
        shutil.copytree(src, job / name)
        result = json.loads((src / "result.json").read_text())
        result.update(trial_name=name, verifier_result={"rewards": {"reward": reward}})
        (job / name / "result.json").write_text(json.dumps(result))
    path = job / "hello-world__bbbbbbb" / "agent" / "trajectory.json"
    doc = json.loads(path.read_text())
    text = json.dumps(doc)
    for old, new in ids_b.items():
        text = text.replace(old, new)
    doc = json.loads(text)
    for step in doc["steps"]:
        for call in step.get("tool_calls") or ():
            if call["function_name"] == "bash_command":
                call["arguments"]["keystrokes"] = argument
    path.write_text(json.dumps(doc))
    for name in ("hello-world__aaaaaaa", "hello-world__bbbbbbb"):
        traj = job / name / "agent" / "trajectory.json"
        doc = json.loads(traj.read_text())
        for step in doc["steps"]:  # the harness quotes its ids in messages: "Executed bash_command call_…"
            for call in step.get("tool_calls") or ():
                step["message"] += f"\nExecuted {call['function_name']} {call['tool_call_id']}"
        traj.write_text(json.dumps(doc))
    return job


RENAMED = {"call_1_1": "toolu_01A09q90qw90lq917835lq9X", "call_2_task_complete": "toolu_01Bq7Zr5bW1cHc4nD9eLw7sJ",
           "call_3_task_complete": "toolu_01Cx3Tm2xQ7apQ8vK3nfixPm"}


class TestAtifDiff:
    def test_renamed_tool_call_ids_do_not_diverge(self, tmp_path: Path) -> None:
        """Renamed tool-call ids do not make two trajectories diverge."""
        original = "printf 'Hello, world!\\n' > hello.txt\n"
        job = _pair(tmp_path, RENAMED, original)
        code, out, _ = run("diff", job, "--task", "hello-world", "--format", "json")
        doc = orjson.loads(out)
        none = {"step_a": None, "step_b": None}
        assert code == 0 and doc["first_divergence"] == none and doc["changes"] == [], doc  # the same actions
        code, out, _ = run("diff", job, "--task", "hello-world", "--divergence", "all", "--format", "json")
        assert code == 0 and orjson.loads(out)["first_divergence"] == none

    def test_the_pair_diverges_at_the_changed_argument(self, tmp_path: Path) -> None:
        """The pair diverges at the changed argument."""
        job = _pair(tmp_path, RENAMED, "printf 'Hello, world\\n' > hello.txt\n")
        code, out, _ = run("diff", job, "--task", "hello-world", "--format", "json")
        doc = orjson.loads(out)
        first = doc["first_divergence"]
        assert code == 0 and first["step_a"] == first["step_b"]
        log = load_logs([job])
        trace = read_trial(log, 0).trace
        assert trace is not None and trace[first["row_a"] - 1]["tool_calls"][0]["name"] == "bash_command"
        assert trace[first["row_a"] - 1]["step_id"] == first["step_a"]
        paths = [c["path"] for c in doc["changes"] if c["counts"]]
        assert paths == ["tool_calls.0.arguments.keystrokes"], doc["changes"]
        assert not any("_id" in c["path"] or "<id>" not in str(c) and "toolu_" in str(c) for c in doc["changes"])

    def test_quoted_ids_are_masked_only_in_text(self) -> None:
        """Tool ids quoted in text are masked only there."""
        norm = Normaliser()
        a = {"role": "agent", "content": "Executed Read toolu_01A09q90qw90lq917835lq9X",
             "tool_calls": [{"tool_call_id": "toolu_01A09q90qw90lq917835lq9X", "name": "Read",
                             "arguments": {"path": "toolu_01A09q90qw90lq917835lq9X"}}]}
        b = json.loads(json.dumps(a).replace("toolu_01A09q90qw90lq917835lq9X", "toolu_01ZZZq90qw90lq917835lq9Y"))
        assert norm.step(a)["content"] == "Executed Read <id>"
        assert norm.step(a)["tool_calls"][0]["arguments"] == {"path": "toolu_01A09q90qw90lq917835lq9X"}  # kept
        assert norm.signature(a) != norm.signature(b)  # the argument differs
        b["tool_calls"][0]["arguments"] = a["tool_calls"][0]["arguments"]
        assert norm.signature(a) == norm.signature(b)
        short = {"role": "tool", "tool_call_id": "call_0_1", "content": "ran call_0_1"}
        assert norm.step(short) == {"role": "tool", "content": "ran <id>"}
