"""``report --causes`` with the grades elsewhere (``--grades-field``), a re-scored copy of the log
(``--rescored``), outage windows left out (``--exclude-window``), and failures counted by first
critical source, end to end on generated suites against their truth."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.model import FAIL, PASS
from flaketui.traces.burst import Exclusion, parse_time, parse_window
from flaketui.traces.causes import (
    CAUSES,
    SOURCE_OF,
    SOURCES,
    first_critical_sources,
    harness_first_critical_sources,
    suggest_task,
)
from flaketui.triage import LABELS
from tests.conftest import ROOT
from tests.helpers.causes import GENERATOR, STYLES, booking, needs_shared, trial_with

pytestmark = needs_shared
TAU2 = ROOT / "tests" / "data" / "tau2"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def report_json(*args: object) -> dict:
    code, out, err = run("report", *args, "--format", "json")
    assert code == 0, err
    return orjson.loads(out)


@pytest.fixture(scope="module", params=["steps", "openai"])
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A v2 suite of 300 tasks x 8 trials (seed 2: ten burst tasks, one outage) and its truth."""
    tmp = tmp_path_factory.mktemp(f"v2{request.param}")
    log, truth = tmp / "c.jsonl", tmp / "t.json"
    subprocess.run([sys.executable, str(GENERATOR), "--tasks", "300", "--trials", "8", "--causes", "--cause-set",
                    "v2", "--style", request.param, "--seed", "2", "--truth", str(truth), "--out", str(log)],
                   check=True)
    return log, json.loads(truth.read_text())


_PLAIN: dict[Path, dict] = {}


def plain_causes(log: Path) -> dict:
    """``report LOG --causes --format json``, made once per suite."""
    if log not in _PLAIN:
        _PLAIN[log] = report_json(log, "--causes")
    return _PLAIN[log]


def rewrite(log: Path, out: Path, change) -> Path:
    lines = [change(json.loads(line)) for line in log.read_text().splitlines()]
    out.write_text("".join(json.dumps(d) + "\n" for d in lines if d is not None))
    return out


def suggested(doc: dict) -> dict[str, str]:
    return {t["task"]: t["suspected_cause"] for t in doc["runs"][0]["tasks"] if "suspected_cause" in t}


def right_within(got: dict[str, str], truth: dict, cause: str) -> tuple[int, int]:
    flaky = [t for t, v in truth.items() if v["cause"] == cause and t in got]
    return sum(got[t] == cause for t in flaky), len(flaky)


def outage_of(log: Path, truth: dict) -> tuple[float, float]:
    """The generator's outage window: from the first to the last failing burst trial's start."""
    times = [parse_time(d["started_at"]) for d in map(json.loads, log.read_text().splitlines())
             if truth[d["task"]]["cause"] == "burst" and not d["passed"]]
    return min(times), max(times)


class TestGradesField:
    @pytest.mark.slow
    def test_grades_moved_elsewhere_are_found_with_the_option(self, suite, tmp_path: Path) -> None:
        """Grades kept under another field are found with --grades-field and name the grader."""
        log, truth = suite

        def move(d: dict) -> dict:
            d["judge"] = {"verdicts": d.pop("grades")}
            return d

        moved = rewrite(log, tmp_path / "moved.jsonl", move)
        without = suggested(report_json(moved, "--causes"))
        right, total = right_within(without, truth, "grader")
        assert total >= 10 and right == 0  # the judges' split is not seen: the same trace is harness-bug
        got = suggested(report_json(moved, "--causes", "--grades-field", "judge.verdicts"))
        right, total = right_within(got, truth, "grader")
        assert right >= 0.85 * total
        assert sum(got.get(t) == v["cause"] for t, v in truth.items() if v["cause"]) >= 0.9 * len(got)

    @pytest.mark.slow
    def test_grades_field_wants_causes(self, suite) -> None:
        """--grades-field without --causes is a usage error."""
        code, _, err = run("report", suite[0], "--grades-field", "grades")
        assert code == 2 and "--grades-field and --rescored go with --causes" in err


class TestRescored:
    @pytest.mark.slow
    def test_a_rescoring_that_disagrees_is_the_grader(self, suite, tmp_path: Path) -> None:
        """A re-scored log that disagrees with the first points to the grader."""
        log, truth = suite

        def bare(d: dict) -> dict:
            d.pop("grades")
            return d

        def rescore(d: dict) -> dict | None:
            grades = d.pop("grades")
            if d["task"] == "task-000001" and d["trial"] == 0:
                return None  # one trial was not re-scored
            majority = sum(grades) * 2 > len(grades)
            minority = [g for g in grades if bool(g) != majority]
            d.pop("messages", None), d.pop("trace", None)
            return {**d, "run": "rejudged", "passed": bool(minority[0]) if minority else majority}

        original = rewrite(log, tmp_path / "bare.jsonl", bare)
        again = rewrite(log, tmp_path / "rescored.jsonl", rescore)
        assert right_within(suggested(report_json(original, "--causes")), truth, "grader")[0] == 0
        doc = report_json(original, "--causes", "--rescored", again)
        got = suggested(doc)
        right, total = right_within(got, truth, "grader")
        assert total >= 10 and right >= 0.85 * total
        assert doc["runs"][0]["rescored"] == {"run": "rejudged", "paired": 2399, "unpaired": 1, "rescored_only": 0}
        task = next(t for t in doc["runs"][0]["tasks"] if got.get(t["task"]) == "grader")
        assert task["grader_agreement"]["graders"] == 2
        code, out, _ = run("report", original, "--causes", "--rescored", again, "--top", "3")
        assert code == 0 and "re-scored (rejudged): 2399 trials paired by task and trial; 1 trials not paired" in out

    def test_no_run_to_pair_is_an_input_error(self, tmp_path: Path) -> None:
        """A re-scored log with no run to pair with is an input error."""
        rows = [{"run": r, "task": "t", "trial": i, "passed": i % 2 == 0, "trace": []} for r in "ab" for i in range(2)]
        a = tmp_path / "a.jsonl"
        a.write_text("".join(json.dumps(x) + "\n" for x in rows if x["run"] == "a"))
        b = tmp_path / "b.jsonl"
        b.write_text("".join(json.dumps({**x, "run": x["run"] + "x"}) + "\n" for x in rows))
        code, _, err = run("report", a, "--causes", "--rescored", b)
        assert code == 2 and "no run of the re-scored log pairs with run 'a'" in err
        assert "Traceback" not in err


class TestExcludeWindow:
    @pytest.mark.slow
    def test_the_outage_is_found_offered_and_left_out(self, suite) -> None:
        """The outage is found, offered as a window, and left out of the rates with --exclude-window."""
        log, truth = suite
        doc = plain_causes(log)
        (window,) = doc["runs"][0]["bursts"]
        start, end = outage_of(log, truth)
        lo, hi = parse_window(window["exclude_window"])
        assert lo <= start + 60 and hi >= end - 60 and hi - lo <= 16 * 60  # the generator's 15 minutes
        right, total = right_within(suggested(doc), truth, "burst")
        assert total >= 5 and right >= 0.85 * total
        code, text, _ = run("report", log, "--causes", "--top", "3")
        assert f"--exclude-window {window['exclude_window']} leaves it out of the rates" in text

        left = report_json(log, "--causes", "--exclude-window", window["exclude_window"])
        r = left["runs"][0]
        excluded = {t["task"]: t["excluded"] for t in r["tasks"] if t["excluded"]}
        starts = Counter(d["task"] for d in map(json.loads, log.read_text().splitlines())
                         if lo <= parse_time(d["started_at"]) <= hi)
        assert excluded == dict(starts) and r["excluded"]["trials"] == sum(starts.values())
        assert r["excluded"]["tasks"] == len(starts) and r["excluded"]["untimed"] == 0
        for t in r["tasks"]:  # n is what is left
            assert t["n"] + t["excluded"] == 8 or t["task"] in r["excluded"]["emptied_tasks"]
        assert r["bursts"] == [] and "burst" not in r["cause_breakdown"]
        got = suggested(left)
        assert not any(truth[t]["cause"] == "burst" for t in got)  # outside the outage they pass
        assert r["summary"]["trials"] == doc["runs"][0]["summary"]["trials"] - sum(starts.values())

    @pytest.mark.slow
    def test_said_in_the_table_markdown_and_csv(self, suite) -> None:
        """The excluded trials are said in the table, Markdown and CSV."""
        log, _ = suite
        window = "2026-11-20T00:00:00Z/2026-11-20T06:00:00Z"
        code, text, _ = run("report", log, "--exclude-window", window, "--top", "3")
        assert code == 0
        assert f"started in --exclude-window {window}: left out of the rates" in text and "excl." in text
        code, md, _ = run("report", log, "--exclude-window", window, "--format", "markdown", "--top", "3")
        assert code == 0 and "left out of the rates" in md and "| excl. |" in md
        code, csv, err = run("report", log, "--exclude-window", window, "--format", "csv")
        assert code == 0 and "left out of the rates" in err and "left out" not in csv

    def test_a_task_every_trial_of_which_is_left_out_is_named(self, tmp_path: Path) -> None:
        """A task whose every trial is left out is named."""
        rows = [{"task": "early", "trial": i, "passed": True, "started_at": f"2026-11-20T10:0{i}:00Z"}
                for i in range(3)]
        rows += [{"task": "late", "trial": i, "passed": i > 0, "started_at": f"2026-11-20T12:0{i}:00Z"}
                 for i in range(3)]
        rows += [{"task": "late", "trial": 3, "passed": False}]  # no start time: kept
        log = tmp_path / "r.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
        r = report_json(log, "--exclude-window", "2026-11-20T09:00:00Z/2026-11-20T11:00:00Z")["runs"][0]
        assert [t["task"] for t in r["tasks"]] == ["late"]
        assert r["excluded"] == {"windows": [["2026-11-20T09:00:00Z", "2026-11-20T11:00:00Z"]], "trials": 3,
                                 "tasks": 1, "emptied_tasks": ["early"], "untimed": 1}
        code, text, _ = run("report", log, "--exclude-window", "2026-11-20T09:00:00Z/2026-11-20T11:00:00Z")
        assert "1 tasks had every trial there and are not in the table" in text
        assert "1 trials without a start time kept" in text

    @pytest.mark.slow
    @pytest.mark.parametrize(("window", "why"), [
        ("2026-11-20T10:00:00Z", "is not START/END"),
        ("yesterday/2026-11-20T10:00:00Z", "'yesterday' is not an ISO 8601 time"),
        ("2026-11-20T11:00:00Z/2026-11-20T10:00:00Z", "ends before it starts"),
    ])
    def test_a_bad_window_is_a_usage_error(self, suite, window: str, why: str) -> None:
        """Each malformed window is a usage error saying why."""
        code, _, err = run("report", suite[0], "--exclude-window", window)
        assert code == 2 and why in err and "Traceback" not in err

    @pytest.mark.slow
    def test_goes_without_record_and_html(self, suite) -> None:
        """--exclude-window with --record or HTML is refused."""
        window = "2026-11-20T10:00:00Z/2026-11-20T11:00:00Z"
        assert run("report", suite[0], "--exclude-window", window, "--record")[0] == 2
        assert run("report", suite[0], "--exclude-window", window, "--format", "html")[0] == 2

    def test_exclusion_line(self) -> None:
        """The exclusion line counts the trials and tasks left out."""
        e = Exclusion(((0.0, 900.0),), {"r": {"a": 2, "b": 1}}, {"r": ("b",)})
        assert e.line("r") == ("3 trials of 2 tasks started in --exclude-window 1970-01-01T00:00:00Z/"
                               "1970-01-01T00:15:00Z: left out of the rates (1 tasks had every trial there "
                               "and are not in the table)")


class TestFirstCriticalSource:
    def test_every_cause_has_a_source(self) -> None:
        """Every cause maps to one of the critical sources."""
        assert set(SOURCE_OF) == set(CAUSES) and set(SOURCE_OF.values()) <= set(SOURCES)

    @pytest.mark.slow
    def test_counts_failures_against_the_truth(self, suite) -> None:
        """The first critical source counts match the generated suite's truth."""
        log, truth = suite
        r = plain_causes(log)["runs"][0]
        counts = r["first_critical_source"]
        failing = Counter()
        for d in map(json.loads, log.read_text().splitlines()):
            cause = truth[d["task"]]["cause"]
            if cause and not d["passed"]:
                failing[SOURCE_OF[cause]] += 1
        assert list(counts) == [s for s in SOURCES if counts.get(s)]
        assert sum(counts.values()) == sum(failing.values())
        for source, n in failing.items():  # each within a tenth of the truth
            assert abs(counts.get(source, 0) - n) <= 0.1 * sum(failing.values())
        assert r["harness_first_critical_source"] is None  # no τ² review in the generated logs
        code, text, _ = run("report", log, "--causes", "--top", "3")
        assert "mixed tasks' failures by first critical source: agent" in text
        code, md, _ = run("report", log, "--causes", "--format", "markdown", "--top", "3")
        causes = md.split("### Suspected causes")[1]
        assert causes.startswith("\n\n- mixed tasks' failures by first critical source: agent")

    def test_tau2_reviews_counted_beside(self, tmp_path: Path) -> None:
        """τ²-bench's reviews are counted beside the suggested sources."""
        shape = STYLES["flat"]
        user_first = {"errors": [{"source": "agent", "severity": "critical", "turn_idx": 5},
                                 {"source": "user", "severity": "critical_hindered", "turn_idx": 3}]}
        agent_only = {"errors": [{"source": "agent", "severity": "critical", "turn_idx": 2},
                                 {"source": "user", "severity": "minor", "turn_idx": 1}]}
        trials = [trial_with(0, PASS, booking(shape, "R1")),
                  trial_with(1, FAIL, booking(shape, "R2"), review=user_first),
                  trial_with(2, FAIL, booking(shape, "R3"), review=agent_only),
                  trial_with(3, FAIL, booking(shape, "R4"), review={"errors": []}),
                  trial_with(4, FAIL, booking(shape, "R5"), user_only_review={"errors": [
                      {"source": "user", "severity": "critical_helped"}]})]
        s = suggest_task("task", trials)
        assert s is not None and s.cause == "user-simulator"
        assert first_critical_sources([s]) == {"user": 4}
        assert harness_first_critical_sources([s]) == {"agent": 1, "user": 2, "none": 1}
        rows = [{"task": "task", "trial": t.trial, "passed": t.outcome == PASS, "trace": t.trace, **t.extra}
                for t in trials]
        log = tmp_path / "tau.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
        r = report_json(log, "--causes")["runs"][0]
        assert r["first_critical_source"] == {"user": 4}
        assert r["harness_first_critical_source"] == {"agent": 1, "user": 2, "none": 1}
        _, text, _ = run("report", log, "--causes")
        assert ("mixed tasks' failures by first critical source: user 4; "
                "the harness's review: agent 1, user 2, none 1") in text

    def test_on_a_real_tau2_log_with_reviews(self, tmp_path: Path) -> None:
        """A τ² results file (two trials a task) whose failing simulations carry τ²'s review: the
        harness's count (user first) stands beside flaketui's (the agent's action differs)."""
        doc = json.loads((TAU2 / "airline_context_agent_gemini-2.5-flash_2trials.json").read_text())
        for sim in doc["simulations"]:
            if sim["reward_info"]["reward"] < 1:
                sim["review"] = {"summary": "the user gave another date", "errors": [
                    {"source": "user", "severity": "critical_hindered", "turn_idx": 2, "error_tags": []},
                    {"source": "agent", "severity": "critical", "turn_idx": 4, "error_tags": []}]}
        log = tmp_path / "reviewed.json"
        log.write_text(json.dumps(doc))
        r = report_json(log, "--causes")["runs"][0]
        assert r["cause_breakdown"] == {"sampling": 2}
        assert r["first_critical_source"] == {"agent": 2}
        assert r["harness_first_critical_source"] == {"user": 2}

    def test_a_hostile_review_source_is_shown_as_text(self, tmp_path: Path) -> None:
        """A hostile review source is shown as plain text."""
        shape = STYLES["flat"]
        hostile = {"errors": [{"source": "agent\x1b[2J\x07", "severity": "critical", "turn_idx": 1}]}
        trials = [trial_with(0, PASS, booking(shape, "R1")), trial_with(1, FAIL, booking(shape, "R2"), review=hostile)]
        rows = [{"run": "r\x1b]0;x\x07", "task": "task", "trial": t.trial, "passed": t.outcome == PASS,
                 "trace": t.trace, **t.extra} for t in trials]
        log = tmp_path / "hostile.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
        for fmt in ("table", "markdown"):
            code, text, _ = run("report", log, "--causes", "--format", fmt)
            assert code == 0 and "\x1b" not in text and "\x07" not in text


def test_the_new_sources_can_be_labelled() -> None:
    """The user simulator, grader and burst sources are triage labels too."""
    assert {"user-simulator", "grader", "burst"} <= set(LABELS)
    assert set(CAUSES) - {"unknown"} <= set(LABELS)
    assert list(LABELS)[:8] == ["sampling", "tool-nondeterminism", "ordering-concurrency", "environment",
                                "harness-bug", "real-regression", "real-fix", "unknown"]
