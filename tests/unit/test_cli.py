"""The command line as a user or a CI script runs it: output, JSON contract, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE, FIXTURES
from tests.helpers.cli import run


class TestReport:
    def test_json_contract_on_fixture(self) -> None:
        """report's JSON on the fixture holds the documented fields and figures."""
        code, out, _ = run("report", BASELINE, "-k", "5", "--format", "json")
        assert code == 0
        doc = orjson.loads(out)
        assert doc["k"] == 5
        (r,) = doc["runs"]
        assert r["run"] == "oncall-baseline"
        s = r["summary"]
        for key in ("tasks", "trials", "errored", "pass_at_1", "pass_at_1_ci", "pass_at_k",
                    "pass_hat_k", "pass_hat_k_ci", "flaky_tasks", "warnings"):
            assert key in s
        assert (s["tasks"], s["trials"], s["errored"], s["flaky_tasks"]) == (25, 300, 1, 0)
        assert (s["mixed_tasks"], s["undetermined_tasks"], s["stable_tasks"], s["flaky_cap"]) == (1, 25, 0, 0.36)
        by_task = {t["task"]: t for t in r["tasks"]}
        assert by_task["searchRunbook"]["mixed"] is True and by_task["searchRunbook"]["class"] == "undetermined"
        assert round(s["pass_hat_k"], 3) == 0.773
        assert len(s["pass_hat_k_ci"]) == 2 and s["pass_hat_k_ci"][0] < 0.773 < s["pass_hat_k_ci"][1]
        task = next(t for t in r["tasks"] if t["task"] == "searchRunbook")
        assert set(task) >= {"task", "n", "passes", "errored", "p_hat", "p_hat_ci", "pass_at_k",
                             "pass_hat_k", "pass_hat_k_ci", "flakiness", "class"}
        assert (task["n"], task["passes"], task["class"], task["mixed"]) == (12, 10, "undetermined", True)
        assert round(task["pass_hat_k"], 3) == 0.318 and round(task["flakiness"], 3) == 0.556

    def test_default_k_is_stated(self) -> None:
        """report states the default k, the trials most tasks have."""
        code, out, _ = run("report", BASELINE)
        assert code == 0 and "k = 12" in out
        assert orjson.loads(run("report", BASELINE, "--format", "json")[1])["k"] == 12

    def test_k_above_n_is_null(self, tmp_path: Path) -> None:
        """A figure whose k exceeds a task's trials is null in JSON."""
        p = tmp_path / "few.jsonl"
        p.write_text('{"task": "a", "passed": true}\n{"task": "b", "passed": true}\n{"task": "b", "passed": false}\n')
        doc = orjson.loads(run("report", p, "-k", "2", "--format", "json")[1])
        a = next(t for t in doc["runs"][0]["tasks"] if t["task"] == "a")
        assert a["pass_hat_k"] is None and a["pass_hat_k_ci"] is None and a["pass_at_k"] is None
        assert doc["runs"][0]["summary"]["tasks_below_k"] == 1

    def test_table_csv_markdown(self) -> None:
        """report's table, CSV and Markdown show the fixture's figures, flakiest first."""
        code, out, _ = run("report", FIXTURES, "-k", "5", "--run", "oncall-baseline")
        assert code == 0 and "pass^5 = 0.773" in out and "searchRunbook" in out
        assert out.index("searchRunbook") < out.index("getAlertStatus")  # flakiest first
        code, out, _ = run("report", BASELINE, "-k", "5", "--format", "csv")
        lines = out.splitlines()
        assert lines[0].startswith("run,k,task,n,passes") and len(lines) == 26
        row = next(line for line in lines if ",searchRunbook," in line)
        assert row.startswith("oncall-baseline,5,searchRunbook,12,10,0,0.833333")
        code, out, _ = run("report", BASELINE, "-k", "5", "--format", "markdown")
        assert "| searchRunbook | 12 | 10 | 0.833 |" in out
        # Rule of three for stable tasks: 1 - 0.05^(1/12) = 0.221.
        assert "| getAlertStatus | 12 | 12 | 1.000 |" in out and "| undetermined | +57 |  | 0.001 | fail < 0.221 |" in out
        assert "| undetermined | +57 |  | 0.005 | pass < 0.221 |" in out

    def test_unknown_run(self) -> None:
        """An unknown --run is a usage error naming it, exit 2."""
        code, _, err = run("report", BASELINE, "--run", "nope")
        assert code == 2 and "no run named 'nope'" in err

    def test_bad_k(self) -> None:
        """k = 0 is a usage error, exit 2."""
        code, _, err = run("report", BASELINE, "-k", "0")
        assert code == 2 and "k (0) must be >= 1" in err


class TestGate:
    def test_fails_on_flaky_task(self) -> None:
        """The README's gate fails the baseline on its flaky task, exit 1."""
        code, out, _ = run("gate", BASELINE, "-k", "5", "--min-pass-hat-k", "0.7", "--max-flakiness", "0.2")
        assert code == 1
        assert out.startswith("FAIL oncall-baseline: pass^5 = 0.773")
        assert "searchRunbook (0.556)" in out

    def test_passes_after_fix(self) -> None:
        """The README's gate passes the candidate, exit 0."""
        code, out, _ = run("gate", CANDIDATE, "-k", "5", "--min-pass-hat-k", "0.7", "--max-flakiness", "0.2")
        assert code == 0 and out.startswith("PASS oncall-candidate: pass^5 = 0.760")

    def test_fixed_baseline_passes(self, tmp_path: Path) -> None:
        """The baseline with its flaky task fixed passes the gate."""
        # The baseline with searchRunbook fixed to 12/12 and nothing else changed.
        fixed = tmp_path / "fixed.jsonl"
        with fixed.open("w") as out:
            for line in BASELINE.read_text().splitlines():
                rec = json.loads(line)
                if rec["task"] == "searchRunbook":
                    rec["passed"] = True
                out.write(json.dumps(rec) + "\n")
        code, out, _ = run("gate", fixed, "-k", "5", "--min-pass-hat-k", "0.7", "--max-flakiness", "0.2")
        assert code == 0 and "pass^5 = 0.800" in out

    def test_floor_fails(self) -> None:
        """A suite pass^k below the floor fails the gate."""
        code, out, _ = run("gate", CANDIDATE, "-k", "5", "--min-pass-hat-k", "0.9")
        assert code == 1 and "below the floor 0.9" in out

    def test_json(self) -> None:
        """gate's JSON gives the verdict of each run."""
        code, out, _ = run("gate", FIXTURES, "-k", "5", "--max-flakiness", "0.2", "--format", "json")
        doc = orjson.loads(out)
        assert code == 1 and doc["passed"] is False
        assert [r["passed"] for r in doc["runs"]] == [False, True]

    def test_needs_a_threshold(self) -> None:
        """gate without a floor or a cap is a usage error."""
        code, _, err = run("gate", BASELINE)
        assert code == 2 and "--min-pass-hat-k" in err


class TestCompare:
    def test_two_files(self) -> None:
        """compare on two files gives the JSON comparison of their runs."""
        code, out, _ = run("compare", BASELINE, CANDIDATE, "--format", "json")
        assert code == 0
        doc = orjson.loads(out)
        assert (doc["run_a"], doc["run_b"]) == ("oncall-baseline", "oncall-candidate")
        assert doc["fixed"] == ["searchRunbook"] and doc["broken"] == ["summarizeIncident"]
        assert doc["tasks"] == 25 and doc["unchanged"] == 23 and doc["sign_test_p"] == 1.0
        assert doc["mean_diff"] == pytest.approx((2 / 12 - 1) / 25)
        assert doc["only_a"] == [] and doc["only_b"] == []
        assert len(doc["mean_diff_ci"]) == 2

    def test_runs_inside_logs(self) -> None:
        """compare --runs compares two runs inside the logs."""
        code, out, _ = run("compare", FIXTURES, "--runs", "oncall-baseline", "oncall-candidate")
        assert code == 0 and "sign test p = 1.00" in out and "summarizeIncident" in out

    def test_directory_of_two_runs_needs_runs(self) -> None:
        """A folder of two runs plus a file needs --runs."""
        code, _, err = run("compare", FIXTURES, BASELINE)
        assert code == 2 and "holds 2 runs" in err

    def test_one_log_is_usage_error(self) -> None:
        """compare on one log of one run is a usage error."""
        code, _, err = run("compare", BASELINE)
        assert code == 2 and "give two logs" in err

    def test_only_in_one_named(self, tmp_path: Path) -> None:
        """Tasks found in one run only are named."""
        a = tmp_path / "a.jsonl"
        b = tmp_path / "b.jsonl"
        a.write_text('{"task": "x", "passed": true}\n{"task": "gone", "passed": true}\n')
        b.write_text('{"task": "x", "passed": false}\n{"task": "new", "passed": true}\n')
        doc = orjson.loads(run("compare", a, b, "--format", "json")[1])
        assert doc["only_a"] == ["gone"] and doc["only_b"] == ["new"] and doc["broken"] == ["x"]


class TestInputErrors:
    def test_missing_path(self) -> None:
        """A missing log is one line naming it, exit 2, nothing on stdout."""
        code, out, err = run("report", "does-not-exist.jsonl")
        assert code == 2 and out == ""
        assert err.strip() == "flaketui: error: does-not-exist.jsonl: no such file or directory"

    def test_missing_path_opening_app(self) -> None:
        """Opening the app on a missing log is one line, exit 2."""
        code, _, err = run("does-not-exist.jsonl")
        assert code == 2 and "no such file" in err

    def test_bad_lines_named_on_stderr(self, tmp_path: Path) -> None:
        """Bad lines are named on stderr and the JSON on stdout stays valid."""
        p = tmp_path / "mixed.jsonl"
        p.write_text('{"task": "a", "passed": true}\nnot json\n' + '{"task": 1}\n' * 30)
        code, out, err = run("report", p, "--format", "json")
        assert code == 0 and orjson.loads(out)["runs"][0]["summary"]["trials"] == 1
        lines = err.splitlines()
        assert lines[0].startswith(f"flaketui: skipped {p}:2: not valid JSON")
        # one line per kind of problem: the 30 records without an outcome are one line
        assert lines[1] == (f"flaketui: skipped 30 × no outcome (files: {p}; "
                            f"first: {p}:3: no outcome (passed, score, reward))")
        assert len(lines) == 3 and lines[-1] == "flaketui: --problems names each one"
        code, _, err = run("report", p, "--format", "json", "--problems")
        lines = err.splitlines()
        assert len(lines) == 31 and lines[1] == f"flaketui: skipped {p}:3: no outcome (passed, score, reward)"

    def test_nothing_usable(self, tmp_path: Path) -> None:
        """An empty log is "no usable trials", exit 2."""
        p = tmp_path / "empty.jsonl"
        p.write_text("")
        code, _, err = run("report", p)
        assert code == 2 and "no usable trials" in err

    @pytest.mark.slow
    def test_real_process_no_traceback(self, tmp_path: Path) -> None:
        """A real process on undecodable bytes prints no traceback."""
        p = tmp_path / "bad.jsonl"
        p.write_bytes(b'\xff\xfe garbage\n{"task": "a", "passed": true}\n')
        proc = subprocess.run([sys.executable, "-m", "flaketui", "report", str(p), "--format", "json"],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
        assert f"{p}:1: not valid UTF-8" in proc.stderr
        proc = subprocess.run([sys.executable, "-m", "flaketui", "gate", str(BASELINE), "-k", "5",
                               "--max-flakiness", "0.2"], capture_output=True, text=True)
        assert proc.returncode == 1
        proc = subprocess.run([sys.executable, "-m", "flaketui", "report", "--format", "xml", str(BASELINE)],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr


class TestOpeningTheApp:
    """The app's command lines build one AppOptions from their flags (the app is not run)."""

    @pytest.fixture
    def opened(self, monkeypatch: pytest.MonkeyPatch) -> list[object]:
        from flaketui.app.app import FlakeApp

        seen: list[object] = []
        monkeypatch.setattr(FlakeApp, "run", lambda app: seen.append(app.options))
        return seen

    def test_open_passes_every_flag(self, opened: list[object], tmp_path: Path) -> None:
        """open passes every flag on to the app's options."""
        from flaketui.app.app import AppOptions

        notes = tmp_path / "notes.json"
        code, _, _ = run("open", BASELINE, CANDIDATE, "-k", "3", "--min-pass-hat-k", "0.7",
                         "--max-flakiness", "0.2", "--ignore-key", "content", "--ignore-key", "seed",
                         "--watch", "--triage", notes, "--task-field", "name")
        assert code == 0
        (options,) = opened
        assert isinstance(options, AppOptions)
        assert options.paths == (str(BASELINE), str(CANDIDATE))
        assert (options.k, options.min_pass_hat_k, options.max_flakiness) == (3, 0.7, 0.2)
        assert options.ignore_keys == ("content", "seed") and options.watch is True
        assert options.triage == str(notes) and options.compare is None
        assert options.fields.task == ("name",)

    def test_compare_tui_opens_the_pane(self, opened: list[object]) -> None:
        """compare --tui opens the app on the comparison pane."""
        from flaketui.app.app import AppOptions

        assert run("compare", BASELINE, CANDIDATE, "--tui")[0] == 0
        assert run("compare", FIXTURES, "--runs", "oncall-candidate", "oncall-baseline",
                   "--tui")[0] == 0
        first, second = opened
        assert isinstance(first, AppOptions) and isinstance(second, AppOptions)
        assert first.compare == () and first.k is None and not first.watch
        assert second.compare == ("oncall-candidate", "oncall-baseline")


class TestUntrustedNames:
    def test_task_and_run_names_are_printed_as_written_not_as_markup(self, tmp_path: Path) -> None:
        """Task and run names are printed as written, never read as markup."""
        a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        for path, run_name, passed in ((a, "[bold]before[/bold]", True), (b, "[red]after", False)):
            path.write_text("".join(
                json.dumps({"run": run_name, "task": "[i]t[/i]", "trial": i, "passed": passed}) + "\n"
                for i in range(3)))
        code, out, _ = run("report", a)
        assert code == 0 and "[i]t[/i]" in out
        code, out, _ = run("compare", a, b)
        assert code == 0 and "[i]t[/i]" in out
        assert "p̂ [bold]before[/bold]" in out and "p̂ [red]after" in out


def test_problem_summary_counts_the_lines_a_file_only_counted(tmp_path: Path) -> None:
    """Past a file's first 1000 named bad lines the rest are one counted problem: stderr's
    summary line of its kind still counts every line."""
    log = tmp_path / "garbage.jsonl"
    log.write_text('{"task": "a", "passed": true}\n' + "".join(f"garbage {i}\n" for i in range(1500)))
    result = CliRunner().invoke(main, ["report", str(log), "--format", "json", "--no-cache"])
    assert result.exit_code == 0
    assert f"flaketui: skipped 1500 × not valid JSON (files: {log}; first: {log}:2: not valid JSON" \
        in result.stderr
