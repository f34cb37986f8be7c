"""``compare`` (flipped vs moved, --alpha, --config-field, --baseline), ``report --baseline``
and ``quarantine`` as a CI script runs them.

Expected figures: the fixtures' summarizeIncident goes 12/12 → 0/12 (Fisher's exact
p = 2/C(24, 12), scipy.stats.fisher_exact) and searchRunbook 10/12 → 12/12 (p = 0.478,
and its margins can never reach 0.05, so Tarone's family is summarizeIncident alone).
"""

from __future__ import annotations

import json
import subprocess
import sys
from math import comb
from pathlib import Path

import orjson
import pytest
from scipy.stats import binomtest, fisher_exact
from statsmodels.stats.multitest import multipletests

from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SHARED
from tests.helpers.cli import run
from tests.helpers.logs import write_runs

A, B = "oncall-baseline", "oncall-candidate"


class TestCompareJson:
    def test_per_task_fields_and_flips(self) -> None:
        """compare's JSON gives each task's fields and the flips."""
        code, out, _ = run("compare", BASELINE, CANDIDATE, "--format", "json")
        assert code == 0
        doc = orjson.loads(out)
        # The p̂-moved lists stay as they were; the flipped ones are new beside them.
        assert doc["fixed"] == ["searchRunbook"] and doc["broken"] == ["summarizeIncident"]
        assert doc["flipped_broken"] == ["summarizeIncident"] and doc["flipped_fixed"] == []
        assert doc["alpha"] == 0.05 and doc["per_task_tested"] is True and doc["per_task_family"] == 1
        rows = {r["task"]: r for r in doc["per_task"]}
        assert len(rows) == 25
        broken = rows["summarizeIncident"]
        assert (broken["passes_a"], broken["n_a"], broken["passes_b"], broken["n_b"]) == (12, 12, 0, 12)
        p = fisher_exact([[12, 0], [0, 12]]).pvalue
        assert p == pytest.approx(2 / comb(24, 12))
        assert broken["p_value"] == pytest.approx(p) and broken["p_adjusted"] == pytest.approx(p)
        assert broken["flipped"] is True
        moved = rows["searchRunbook"]
        assert moved["p_value"] == pytest.approx(fisher_exact([[10, 2], [12, 0]]).pvalue)
        assert moved["flipped"] is False and moved["p_adjusted"] == 1.0
        assert 0 <= doc["permutation_p"] <= 1 and doc["secondary_tests_valid"] is True
        # One task broke outright (12/12 -> 0/12): the within-task test rejects on these tasks,
        # while the interval of the mean difference over tasks holds 0, and the verdict says both.
        primary = doc["primary_test"]
        assert primary["name"] == "within-task permutation test" and primary["p_value"] < 0.001
        assert "ci" not in primary  # the interval is the mean difference's, not the test's
        diff = doc["mean_difference"]
        assert diff["ci"] == doc["mean_diff_ci"] and diff["ci"][0] < 0 < diff["ci"][1]
        assert diff["estimate"] == doc["mean_diff"] and diff["method"].startswith("CR2")
        assert doc["se"] == diff["se"] and doc["mde"] > 0 and doc["snr"] == pytest.approx(doc["mean_diff"] / doc["se"])
        assert doc["winner"] == "oncall-baseline"
        assert doc["verdict"].startswith("oncall-baseline is better at 5%: within-task permutation test p = ")
        assert "shown on these tasks, not beyond them" in doc["verdict"]
        assert doc["confounds"] == [] and doc["confound_warning"] is None

    def test_alpha_below_the_smallest_p_flips_nothing(self) -> None:
        """An alpha below the smallest p flips no task."""
        doc = orjson.loads(run("compare", BASELINE, CANDIDATE, "--format", "json", "--alpha", "1e-7")[1])
        assert doc["alpha"] == 1e-7 and doc["flipped_broken"] == [] and doc["flipped_fixed"] == []
        assert doc["broken"] == ["summarizeIncident"]

    def test_alpha_out_of_range_is_a_usage_error(self) -> None:
        """An --alpha outside (0, 1) is a usage error."""
        code, _, err = run("compare", BASELINE, CANDIDATE, "--alpha", "2")
        assert code == 2 and "--alpha" in err

    def test_holm_and_bh_match_statsmodels(self, tmp_path: Path) -> None:
        """10 vs 10 trials, B losing 0, 2, 4, 6, 8, 10 passes: Holm over Tarone's family, BH over all."""
        a = {f"t{i}": (10, 10) for i in range(6)}
        b = {f"t{i}": (10 - 2 * i, 10) for i in range(6)}
        log = write_runs(tmp_path / "x.jsonl", {"a": a, "b": b})
        doc = orjson.loads(run("compare", log, "--runs", "a", "b", "--format", "json")[1])
        p = [fisher_exact([[10, 0], [10 - 2 * i, 2 * i]]).pvalue for i in range(6)]
        got = {r["task"]: r for r in doc["per_task"]}
        assert [got[f"t{i}"]["p_value"] for i in range(6)] == pytest.approx(p)
        # t1 and t2 (18 or 16 passes of 20) are at their most extreme table already: p = 0.474 and
        # 0.087 cannot fall below 0.05/3, so Tarone's family is t3, t4, t5; t0 has one table only.
        assert p[1] > 0.05 / 3 and p[2] > 0.05 / 3 and doc["per_task_family"] == 3
        holm = multipletests(p[3:], method="holm")[1]
        assert [got[f"t{i}"]["p_adjusted"] for i in (3, 4, 5)] == pytest.approx(holm)
        assert got["t1"]["p_adjusted"] == got["t2"]["p_adjusted"] == 1.0
        bh = multipletests(p[1:], method="fdr_bh")[1]
        assert [got[f"t{i}"]["q_value"] for i in range(1, 6)] == pytest.approx(bh)
        assert sorted(doc["flipped_broken"]) == sorted(f"t{i}" for i in (3, 4, 5) if holm[i - 3] < 0.05)
        assert doc["flipped_broken"]  # t5 (10/10 vs 0/10) flips

    def test_one_trial_per_task_says_nothing_is_tested(self, tmp_path: Path) -> None:
        """With one trial per task the JSON says nothing is tested."""
        log = write_runs(tmp_path / "x.jsonl", {"a": {"x": (1, 1), "y": (0, 1)}, "b": {"x": (0, 1), "y": (0, 1)}})
        doc = orjson.loads(run("compare", log, "--runs", "a", "b", "--format", "json")[1])
        assert doc["per_task_tested"] is False and doc["flipped_broken"] == [] and doc["broken"] == ["x"]
        row = {r["task"]: r for r in doc["per_task"]}["x"]
        assert row["changed"] is True and row["flipped"] is False
        assert "nothing can be tested per task" in doc["per_task_note"]
        out = run("compare", log, "--runs", "a", "b")[1]
        assert "changed 1, flipped none: one trial per task in both runs, so nothing can be tested per task" in out
        assert "x                 │ broken │ changed" in out or " changed " in out


class TestUnequalTrials:
    """One trial of A against ten of B at the same pass rate: the sign test would name A (54 broken vs
    6 fixed only because p̂_A can only be 0 or 1); the primary test does not."""

    def log(self, tmp_path: Path) -> Path:
        a = {f"t{i}": (1 if i >= 6 else 0, 1) for i in range(60)}
        b = {f"t{i}": (9, 10) for i in range(60)}
        return write_runs(tmp_path / "x.jsonl", {"a": a, "b": b})

    def test_no_winner_and_no_sign_test(self, tmp_path: Path) -> None:
        """With unequal trials there are no flips by the sign test and no winner from noise."""
        doc = orjson.loads(run("compare", self.log(tmp_path), "--runs", "a", "b", "--format", "json")[1])
        assert (len(doc["fixed"]), len(doc["broken"])) == (6, 54)
        assert binomtest(6, 60).pvalue < 1e-9  # what the sign test alone would have said
        assert doc["winner"] is None and doc["primary_test"]["p_value"] == pytest.approx(1.0)
        assert doc["sign_test_p"] is None and doc["permutation_p"] is None and doc["secondary_tests_valid"] is False
        assert doc["verdict"].startswith("not shown to differ at 5%: within-task permutation test p = 1 (primary)")
        assert "the sign test is not shown: trial counts differ between the runs" in doc["verdict"]

    def test_a_real_gain_is_found(self, tmp_path: Path) -> None:
        """A real gain is found despite unequal trials."""
        a = {f"t{i}": (1 if i % 2 else 0, 1) for i in range(60)}  # p = 0.5 run once
        b = {f"t{i}": (7, 10) for i in range(60)}  # p = 0.7 run ten times
        log = write_runs(tmp_path / "gain.jsonl", {"a": a, "b": b})
        doc = orjson.loads(run("compare", log, "--runs", "a", "b", "--format", "json")[1])
        assert doc["winner"] == "b" and doc["primary_test"]["p_value"] < 0.05


class TestCompareText:
    def test_table_shows_flipped_then_moved(self) -> None:
        """The comparison table shows flipped tasks, then moved ones."""
        code, out, _ = run("compare", BASELINE, CANDIDATE)
        assert code == 0
        assert "flipped 1 (fixed 0, broken 1): significant after Holm at 5%" in out
        assert "moved 1 more (p̂ changed, not significant)" in out
        assert "primary test: within-task permutation test p = " in out
        assert "secondary: sign test p = 1.00, sign-flip permutation p = " in out
        rows = [line for line in out.splitlines() if "summarizeIncident" in line or "searchRunbook" in line]
        assert "flipped" in rows[0] and "summarizeIncident" in rows[0]
        assert "moved" in rows[1] and "searchRunbook" in rows[1]

    def test_markdown_and_csv(self) -> None:
        """Markdown and CSV show the flipped and moved tasks."""
        md = run("compare", BASELINE, CANDIDATE, "--format", "markdown")[1]
        assert "| summarizeIncident | broken | flipped |" in md and "| searchRunbook | fixed | moved |" in md
        csv = run("compare", BASELINE, CANDIDATE, "--format", "csv")[1].splitlines()
        assert csv[0] == "task,change,flipped,p_hat_a,p_hat_b,n_a,n_b,delta,p_value,p_adjusted,q_value"
        row = next(line for line in csv if line.startswith("summarizeIncident,"))
        assert row.startswith("summarizeIncident,broken,yes,1,0,12,12,-1,")


class TestConfounds:
    def test_two_fields_differ(self, tmp_path: Path) -> None:
        """Runs differing in two configuration fields are flagged as confounded."""
        log = write_runs(tmp_path / "x.jsonl", {"a": {"x": (2, 4)}, "b": {"x": (1, 4)}},
                         {"a": {"model": "m1", "info": {"temperature": 0.0}, "seed": 1},
                          "b": {"model": "m2", "info": {"temperature": 0.7}, "seed": 1}})
        args = ("compare", log, "--runs", "a", "b", "--config-field", "model",
                "--config-field", "info.temperature", "--config-field", "seed")
        doc = orjson.loads(run(*args, "--format", "json")[1])
        assert doc["config_a"] == {"model": "m1", "info.temperature": "0.0", "seed": "1"}
        assert doc["confounds"] == [{"field": "model", "a": "m1", "b": "m2"},
                                    {"field": "info.temperature", "a": "0.0", "b": "0.7"}]
        assert "cannot be read as the effect of one change" in doc["confound_warning"]
        assert ("confounded: the runs differ in 2 configuration fields (model m1 vs m2; info.temperature 0.0 vs "
                "0.7)") in run(*args)[1]

    def test_one_field_is_a_controlled_comparison(self, tmp_path: Path) -> None:
        """Runs differing in one field are a controlled comparison."""
        log = write_runs(tmp_path / "x.jsonl", {"a": {"x": (2, 4)}, "b": {"x": (1, 4)}},
                         {"a": {"model": "m1", "seed": 1}, "b": {"model": "m1", "seed": 2}})
        doc = orjson.loads(run("compare", log, "--runs", "a", "b", "--config-field", "model",
                               "--config-field", "seed", "--format", "json")[1])
        assert doc["confounds"] == [{"field": "seed", "a": "1", "b": "2"}] and doc["confound_warning"] is None
        out = run("compare", log, "--runs", "a", "b", "--config-field", "model", "--config-field", "seed")[1]
        assert "the runs differ in one configuration field: seed 1 vs 2" in out

    def test_usual_fields_read_without_config_field(self, tmp_path: Path) -> None:
        """The usual configuration fields are read without --config-field."""
        log = write_runs(tmp_path / "x.jsonl", {"a": {"x": (2, 4)}, "b": {"x": (1, 4)}},
                         {"a": {"model": "m1", "temperature": 0}, "b": {"model": "m2", "temperature": 1}})
        doc = orjson.loads(run("compare", log, "--runs", "a", "b", "--format", "json")[1])
        assert [d["field"] for d in doc["confounds"]] == ["model", "temperature"]


class TestBaseline:
    def three_runs(self, tmp_path: Path) -> Path:
        base = {f"t{i}": (8, 8) for i in range(10)}
        worse = {f"t{i}": (0, 8) for i in range(10)}
        same = {f"t{i}": (8, 8) for i in range(9)} | {"t9": (7, 8)}
        return write_runs(tmp_path / "x.jsonl", {"base": base, "worse": worse, "same": same})

    def test_holm_across_the_comparisons(self, tmp_path: Path) -> None:
        """--baseline Holm-adjusts the primary p across the comparisons."""
        log = self.three_runs(tmp_path)
        doc = orjson.loads(run("compare", log, "--baseline", "base", "--format", "json")[1])
        assert doc["baseline"] == "base"
        comps = {c["run"]: c for c in doc["comparisons"]}
        assert set(comps) == {"worse", "same"}
        assert comps["worse"]["sign_test_p"] == pytest.approx(2 / 2**10)  # 10 broken, 0 fixed
        p = [comps["worse"]["primary_test"]["p_value"], comps["same"]["primary_test"]["p_value"]]
        assert comps["same"]["primary_test"]["p_value"] == 1.0  # one task 8/8 -> 7/8: s = 15 of 16
        assert [comps["worse"]["p_adjusted"], comps["same"]["p_adjusted"]] == pytest.approx(
            multipletests(p, method="holm")[1])
        assert comps["worse"]["significant"] is True and comps["same"]["significant"] is False
        assert comps["worse"]["winner"] == "base" and comps["same"]["winner"] is None
        assert "Holm-adjusted" in comps["worse"]["verdict"]

    def test_report_baseline_is_one_json_document(self, tmp_path: Path) -> None:
        """report --baseline gives one JSON document."""
        log = self.three_runs(tmp_path)
        doc = orjson.loads(run("report", log, "--baseline", "base", "--format", "json")[1])
        assert len(doc["runs"]) == 3 and len(doc["baseline"]["comparisons"]) == 2
        out = run("report", log, "--baseline", "base")[1]
        assert ("every run against baseline base: within-task permutation test p-values Holm-adjusted across "
                "the 2 comparisons") in out

    def test_unknown_baseline(self, tmp_path: Path) -> None:
        """An unknown --baseline is a usage error."""
        code, _, err = run("compare", self.three_runs(tmp_path), "--baseline", "nope")
        assert code == 2 and "no run named 'nope'" in err


class TestQuarantine:
    def test_ids(self) -> None:
        """quarantine prints the flaky task ids, one a line."""
        code, out, _ = run("quarantine", FIXTURES)
        assert code == 0 and out == "searchRunbook\n"  # flaky in the baseline (10/12) only

    def test_max_flakiness(self) -> None:
        """--max-flakiness keeps only tasks above the cap."""
        # searchRunbook: 4·(10/12)·(2/12) = 0.556
        assert run("quarantine", FIXTURES, "--max-flakiness", "0.6")[1] == ""
        assert run("quarantine", FIXTURES, "--max-flakiness", "0.5")[1] == "searchRunbook\n"

    def test_json(self) -> None:
        """quarantine's JSON lists each flaky task with its counts."""
        doc = orjson.loads(run("quarantine", FIXTURES, "--format", "json", "--run", A)[1])
        assert [(d["run"], d["task"], d["n"], d["passes"]) for d in doc] == [(A, "searchRunbook", 12, 10)]

    def test_junit_is_read_by_a_junit_consumer(self, tmp_path: Path) -> None:
        """quarantine's JUnit XML is read by junitparser as skipped tests."""
        junitparser = pytest.importorskip("junitparser")
        code, out, _ = run("quarantine", FIXTURES, "--format", "junit")
        assert code == 0
        path = tmp_path / "quarantine.xml"
        path.write_text(out, encoding="utf-8")
        xml = junitparser.JUnitXml.fromfile(str(path))
        suites = {s.name: s for s in xml}
        assert set(suites) == {A, B}
        base = suites[A]
        cases = {c.name: c for c in base}
        assert base.tests == 25 and len(cases) == 25
        assert cases["checkDiskUsage"].is_passed
        # The flaky task carries Surefire's <flakyFailure> with its figures (junitparser reads the
        # standard elements; the flaky mark is read from the element itself).
        flaky = cases["searchRunbook"]._elem.find("flakyFailure")
        assert flaky is not None and flaky.get("message").startswith("flaky: 10 of 12 trials passed")

    def test_unknown_run(self) -> None:
        """An unknown --run is a usage error."""
        code, _, err = run("quarantine", FIXTURES, "--run", "nope")
        assert code == 2 and "no run named 'nope'" in err


GEN = SHARED / "bench" / "gen_trials.py"


@pytest.mark.slow
@pytest.mark.skipif(not GEN.exists(), reason="the shared generator is not on this machine")
def test_generated_pair_names_true_changes(tmp_path: Path) -> None:
    """2,000 tasks × 8 trials (seed 0): B truly worse on 106 tasks and better on 64.

    The flips named are true changes (no false ones), and the verdict says B is worse.
    """
    log, truth_path = tmp_path / "pair.jsonl", tmp_path / "truth.json"
    subprocess.run([sys.executable, str(GEN), "--tasks", "2000", "--trials", "8", "--steps", "1", "--runs",
                    "baseline,candidate", "--seed", "0", "--truth", str(truth_path), "--out", str(log)],
                   check=True, capture_output=True)
    truth = json.loads(truth_path.read_text())
    changed = {t for t, v in truth.items() if v["p"]["baseline"] != v["p"]["candidate"]}
    code, out, _ = run("compare", log, "--runs", "baseline", "candidate", "--format", "json")
    assert code == 0
    doc = orjson.loads(out)
    flipped = set(doc["flipped_fixed"]) | set(doc["flipped_broken"])
    moved = set(doc["fixed"]) | set(doc["broken"])
    assert len(moved) > 3 * len(changed)  # any change of p̂ is far more than the true changes
    assert len(flipped) >= 20 and len(flipped - changed) <= 2
    assert doc["verdict"].startswith("baseline is better")


def test_one_differing_field_is_a_note_with_its_values_two_a_warning() -> None:
    """One configuration field that differs is said with both values (a controlled comparison, for
    the app's pane as for the text); two or more are the confound warning; none says nothing."""
    from flaketui.stats.confounds import confound_note

    assert confound_note({"model": "m1", "seed": "1"}, {"model": "m2", "seed": "1"}) == \
        "the runs differ in one configuration field: model m1 vs m2"
    two = confound_note({"model": "m1", "seed": "1"}, {"model": "m2", "seed": "2"})
    assert two is not None and two.startswith("confounded:") and "model m1 vs m2; seed 1 vs 2" in two
    assert confound_note({"model": "m1"}, {"model": "m1"}) is None
