"""``flaketui diff``: the pair chosen, the JSON document, text/Markdown made safe, exit 2 on bad names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE, SHARED
from tests.helpers.hostile import markdown_read

TAU = SHARED / "realdata" / "tau-bench" / "gpt-4o-airline.json"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["diff", *args])
    return result.exit_code, result.stdout, result.stderr


def diff_json(*args: str) -> dict:
    code, out, err = run(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def write_log(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class TestFixtures:
    def test_all_mode_diverges_at_the_reordered_runbook_result(self) -> None:
        """In all mode the diff diverges at the reordered runbook result."""
        doc = diff_json(str(BASELINE), "--task", "searchRunbook", "--divergence", "all")
        assert {"task", "run_a", "trial_a", "run_b", "trial_b", "mode", "first_divergence",
                "changes"} <= doc.keys()
        assert doc["task"] == "searchRunbook" and doc["mode"] == "all"
        assert doc["first_divergence"] == {"step_a": 3, "step_b": 3}
        assert doc["passed_a"] is True and doc["passed_b"] is False
        first = doc["changes"][0]
        assert (first["step_a"], first["step_b"], first["path"]) == (3, 3, "content")
        assert first["b"].startswith("[1] Restart the checkout service")

    def test_actions_mode_is_the_default_and_skips_the_tool_result(self) -> None:
        """Actions mode is the default and skips the tool result."""
        doc = diff_json(str(BASELINE), "--task", "searchRunbook")
        assert doc["mode"] == "actions"
        # Step 3 is the runbook search's result: shown, not counted; the agent's next call differs.
        assert doc["first_divergence"] == {"step_a": 4, "step_b": 4}
        at4 = {c["path"]: (c["a"], c["b"]) for c in doc["changes"] if c["step_a"] == 4}
        assert at4["name"] == ("queryMetrics", "restartService")
        assert at4["args.metric"] == ("error_rate", None)

    def test_the_pair_is_a_passing_and_a_failing_trial_sharing_the_longest_prefix(self) -> None:
        """The pair is a passing and a failing trial sharing the longest prefix."""
        doc = diff_json(str(BASELINE), "--task", "searchRunbook")
        log = [json.loads(line) for line in BASELINE.read_text().splitlines()]
        outcome = {r["trial"]: r["passed"] for r in log if r["task"] == "searchRunbook"}
        assert outcome[doc["trial_a"]] is True and outcome[doc["trial_b"]] is False

    def test_explicit_trials(self) -> None:
        """--trials picks the two trials."""
        doc = diff_json(str(BASELINE), "--task", "searchRunbook", "--trials", "0", "1")
        assert (doc["trial_a"], doc["trial_b"]) == (0, 1)

    def test_two_logs_compare_run_a_with_run_b(self) -> None:
        """With two logs the diff compares run A with run B."""
        doc = diff_json(str(BASELINE), str(CANDIDATE), "--task", "searchRunbook")
        assert (doc["run_a"], doc["run_b"]) == ("oncall-baseline", "oncall-candidate")

    @pytest.mark.parametrize("args, words", [
        (("--task", "noSuchTask"), "no task 'noSuchTask'"),
        (("--task", "searchRunbook", "--runs", "oncall-baseline", "nope"), "no run named 'nope'"),
        (("--task", "searchRunbook", "--trials", "0", "999"), "no trial 999"),
    ])
    def test_unknown_names_exit_2_with_one_line(self, args: tuple[str, ...], words: str) -> None:
        """Unknown tasks, runs or trials exit 2 with one line."""
        code, out, err = run(str(BASELINE), *args)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and words in err and "Traceback" not in err

    def test_text_and_markdown(self) -> None:
        """The text and Markdown diffs name the first divergence."""
        code, out, _ = run(str(BASELINE), "--task", "searchRunbook")
        assert code == 0
        assert "first divergence: step 4 of A, step 4 of B" in out
        assert "name: queryMetrics → restartService" in out
        code, md, _ = run(str(BASELINE), "--task", "searchRunbook", "--format", "markdown")
        assert code == 0 and md.startswith("## searchRunbook:")
        assert "| 4 | 4 | name | queryMetrics | restartService | yes |" in md


def booking(reservation: str, greeting: str) -> list[dict]:
    call = {"id": f"call_{reservation}", "type": "function",
            "function": {"name": "get_reservation_details",
                         "arguments": json.dumps({"reservation_id": reservation})}}
    return [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": greeting},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "{}"},
        {"role": "assistant", "content": "Done."},
    ]


def test_the_wrong_reservation_not_the_paraphrase(tmp_path: Path) -> None:
    """The diff names the wrong reservation, not the paraphrase."""
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t", "trial": 0, "passed": True, "trace": booking("NM1VX1", "Hi, I need help.")},
        {"task": "t", "trial": 1, "passed": False, "trace": booking("KC18K6", "Hello, can you help?")},
    ])
    doc = diff_json(str(log), "--task", "t")
    assert doc["first_divergence"] == {"step_a": 3, "step_b": 3}
    counted = [c for c in doc["changes"] if c["counts"]]
    assert [(c["path"], c["a"], c["b"]) for c in counted] == [
        ("tool_calls.0.arguments.reservation_id", "NM1VX1", "KC18K6")]
    assert diff_json(str(log), "--task", "t", "--divergence", "all")["first_divergence"] == {
        "step_a": 2, "step_b": 2}


def test_hostile_step_content_is_made_visible_in_text(tmp_path: Path) -> None:
    """Hostile step content is made visible in the text diff."""
    evil = "\x1b]52;c;ZXZpbA==\x07 [/] [link=https://evil.example]click[/link]"
    ok = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "fine"}]
    bad = [{"role": "user", "content": "q"}, {"role": "assistant", "content": evil}]
    log = write_log(tmp_path / "run.jsonl", [
        {"task": "t\x1b[2J", "trial": 0, "passed": True, "trace": ok},
        {"task": "t\x1b[2J", "trial": 1, "passed": False, "trace": bad},
    ])
    for fmt in ("text", "markdown"):
        code, out, err = run(str(log), "--task", "t\x1b[2J", "--format", fmt)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out
        read = markdown_read(out) if fmt == "markdown" else out  # what the rendered Markdown reads
        assert "\\x1b]52;c;ZXZpbA==\\x07" in read and "[link=https://evil.example]" in read
    doc = diff_json(str(log), "--task", "t\x1b[2J")
    assert doc["changes"][-1]["b"] == evil  # JSON keeps the log's own value (its encoder escapes it)


@pytest.mark.skipif(not TAU.exists(), reason="the real τ-bench sample is not beside the checkout")
def test_real_tau_bench_task_5_looks_up_the_wrong_reservation() -> None:
    """In the real τ-bench task 5 the diff finds the wrong reservation looked up."""
    doc = diff_json(str(TAU), "--task", "5")
    assert doc["mode"] == "actions"
    step = doc["first_divergence"]
    first = [c for c in doc["changes"] if c["counts"] and (c["step_a"], c["step_b"]) == (
        step["step_a"], step["step_b"])]
    assert [(c["path"], c["a"], c["b"]) for c in first] == [
        ("tool_calls.0.arguments.reservation_id", "FQ8APE", "5RJ7UH")]
