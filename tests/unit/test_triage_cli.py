"""`flaketui triage export` and the paired review rows it shares with the app.

Expected figures: the fixtures (README "The bundled fixtures": searchRunbook 10/12 → 12/12,
summarizeIncident 12/12 → 0/12), the issue's sign-test figure (7 fixed vs 4 broken,
p = 0.549) and scipy's binomtest computed here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

from flaketui.cli import main
from flaketui.loading import load_logs
from flaketui.output import review
from flaketui.stats import compare_runs, task_stats
from flaketui.triage import TriageKey, TriageStore, default_triage_path
from tests.conftest import BASELINE, CANDIDATE

A, B = "oncall-baseline", "oncall-candidate"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def fixture_comparison():  # type: ignore[no-untyped-def]
    log = load_logs([BASELINE, CANDIDATE])
    return compare_runs(task_stats(log.run_outcomes(A), 1), task_stats(log.run_outcomes(B), 1))


def write_log(path: Path, runs: dict[str, dict[str, tuple[int, int]]]) -> Path:
    """A log where each run's task has (passes, trials)."""
    lines = []
    for run_name, tasks in runs.items():
        for task, (c, n) in tasks.items():
            lines += [json.dumps({"run": run_name, "task": task, "passed": i < c}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


class TestPairedRows:
    def test_fixture_flips_broken_first(self) -> None:
        """The fixture's flips list broken tasks first."""
        rows = review.paired_rows(fixture_comparison())
        assert [(r.task, r.change) for r in rows] == [("summarizeIncident", "broken"),
                                                      ("searchRunbook", "fixed")]
        broken, fixed = rows
        assert (broken.p_a, broken.p_b, broken.n_a, broken.n_b) == (1.0, 0.0, 12, 12)
        assert fixed.p_a == pytest.approx(10 / 12) and fixed.abs_delta == pytest.approx(2 / 12)
        assert review.change_text(fixed) == "0.833 → 1.000"

    def test_all_common_tasks(self) -> None:
        """With flips_only off every common task is listed, changes first."""
        rows = review.paired_rows(fixture_comparison(), flips_only=False)
        assert len(rows) == 25 and [r.change for r in rows[:3]] == ["broken", "fixed", "unchanged"]
        assert [r.task for r in rows[2:]] == sorted(r.task for r in rows[2:])

    def test_flakiness_delta_on_fixtures(self) -> None:
        """The fixtures' flakiness change is -(5/9)/25, from searchRunbook alone."""
        d = review.flakiness_delta(fixture_comparison())
        # Only searchRunbook is flaky in A: 4·(10/12)·(2/12) = 5/9; none in B.
        assert (d.more_flaky, d.less_flaky, d.flaky_a, d.flaky_b) == (0, 1, 1, 0)
        assert d.mean_a == pytest.approx(5 / 9 / 25) and d.mean_b == 0.0
        assert review.flakiness_line(d) == (
            "flakiness: 1 task less flaky, 0 more; mean 0.022 → 0.000 (mixed tasks 1 → 0)")

    def test_seven_fixed_four_broken(self, tmp_path: Path) -> None:
        """Seven fixed and four broken tasks are counted and ordered."""
        tasks_a = {f"f{i}": (0, 4) for i in range(7)} | {f"b{i}": (4, 4) for i in range(4)}
        tasks_a |= {"same": (2, 4)}
        tasks_b = {f"f{i}": (2 + i % 3, 4) for i in range(7)} | {f"b{i}": (i % 3, 4) for i in range(4)}
        tasks_b |= {"same": (2, 4), "new": (1, 4)}
        log = load_logs([write_log(tmp_path / "x.jsonl", {"a": tasks_a, "b": tasks_b})])
        cmp = compare_runs(task_stats(log.run_outcomes("a"), 1), task_stats(log.run_outcomes("b"), 1))
        lines = review.compare_lines(cmp)
        assert lines[0] == "12 tasks in both runs (0 only in a, 1 only in b)"
        assert lines[1] == "fixed 7, broken 4, unchanged 1"
        p = binomtest(7, 11, 0.5).pvalue
        assert f"{p:.3f}" == "0.549" and lines[3].endswith("secondary: sign test p = 0.549, sign-flip "
                                                            "permutation p = " + lines[3].rsplit(" = ", 1)[1])
        assert lines[2] == f"primary test: within-task permutation test p = {cmp.primary.pvalue:.3f}"
        assert lines[4].startswith("not shown to differ at 5%: within-task permutation test p = ")
        rows = review.paired_rows(cmp)
        assert [r.change for r in rows] == ["broken"] * 4 + ["fixed"] * 7
        # Within a change, the largest |Δ| first: b0 goes 4/4 → 0/4.
        assert rows[0].task == "b0" and rows[0].abs_delta == 1.0
        d = review.flakiness_delta(cmp)
        # 4·p·(1 − p) by hand: p = 2/4 → 1, 3/4 → 0.75, 0/4 and 4/4 → 0. Five fixed tasks and
        # b1, b2 went from stable to flaky; only "same" (2/4) was flaky in A.
        assert (d.more_flaky, d.less_flaky, d.flaky_a, d.flaky_b) == (7, 0, 1, 8)
        assert d.mean_a == pytest.approx(1 / 12) and d.mean_b == pytest.approx(7.25 / 12)
        assert review.progress_line(9, 11) == "9 of 11 flips reviewed"

    def test_comparison_pairs(self) -> None:
        """comparison_pairs gives the first two runs and every pair with notes."""
        keys = [TriageKey.flip("c", "a", "t"), TriageKey("a", "t"), TriageKey.flip("x", "a", "t")]
        assert review.comparison_pairs(["a", "b", "c"], keys) == [("a", "b"), ("c", "a")]
        assert review.comparison_pairs(["a", "b", "c"], [], ("b", "c")) == [("b", "c")]
        assert review.comparison_pairs(["a"], []) == []


class TestExport:
    def test_without_notes(self, tmp_path: Path) -> None:
        """triage export without notes writes the report with empty labels."""
        notes = tmp_path / "notes.json"
        code, out, err = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes)
        assert code == 0, err
        assert f"no triage notes at {notes} yet" in err
        assert "## oncall-candidate vs oncall-baseline" in out
        assert "- primary test: within-task permutation test p = " in out and "- 0 of 2 flips reviewed" in out
        assert out.index("| summarizeIncident | broken | 1.000 → 0.000 | 12 | 12 | 1.000 |") < \
            out.index("| searchRunbook | fixed | 0.833 → 1.000 | 12 | 12 | 0.167 |")
        assert "| oncall-baseline | searchRunbook | 12 | 10 | 0.833 | [0.55, 0.95] |" in out
        assert not notes.exists()

    def test_labels_and_notes_in_both_formats(self, tmp_path: Path) -> None:
        """Labels and notes appear in the Markdown and JSON exports."""
        notes = tmp_path / "notes.json"
        store = TriageStore.open(notes)
        store.update(TriageKey.flip(A, B, "summarizeIncident"), label="real-regression",
                     note="reads the outdated post-mortem | first\nthen stops", reviewed=True)
        store.update(TriageKey.flip(A, B, "searchRunbook"), label="real-fix")
        store.update(TriageKey(A, "searchRunbook"), label="ordering-concurrency", note="tied chunks")
        store.update(TriageKey("gone-run", "oldTask"), note="from an older log")
        before = notes.read_bytes()

        code, out, _ = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes)
        assert code == 0
        assert ("| summarizeIncident | broken | 1.000 → 0.000 | 12 | 12 | 1.000 | real-regression "
                "| reads the outdated post-mortem \\| first<br>then stops | yes |") in out
        assert "| searchRunbook | fixed | 0.833 → 1.000 | 12 | 12 | 0.167 | real-fix |  |  |" in out
        assert "- 1 of 2 flips reviewed" in out
        assert "| ordering-concurrency | tied chunks |" in out
        assert "## Other notes" in out and "| gone-run |  | oldTask |  |  | from an older log |" in out

        code, out, _ = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes,
                           "--format", "json")
        doc = orjson.loads(out)
        assert doc["triage_file"] == str(notes)
        (c,) = doc["comparisons"]
        assert (c["run_a"], c["run_b"], c["fixed"], c["broken"], c["unchanged"]) == (A, B, 1, 1, 23)
        assert c["sign_test_p"] == pytest.approx(binomtest(1, 2, 0.5).pvalue)
        assert c["mean_diff"] == pytest.approx((-1 + 2 / 12) / 25)
        assert c["reviewed"] == 1
        assert c["flakiness"]["less_flaky"] == 1 and c["flakiness"]["more_flaky"] == 0
        flips = {f["task"]: f for f in c["flips"]}
        assert flips["summarizeIncident"]["label"] == "real-regression"
        assert flips["summarizeIncident"]["reviewed"] is True
        assert flips["searchRunbook"]["abs_delta"] == pytest.approx(2 / 12)
        (flaky,) = doc["flaky_tasks"]
        assert (flaky["run"], flaky["task"], flaky["label"], flaky["note"]) == (
            A, "searchRunbook", "ordering-concurrency", "tied chunks")
        assert flaky["flakiness"] == pytest.approx(5 / 9)
        assert [(o["run"], o["task"]) for o in doc["other_notes"]] == [("gone-run", "oldTask")]
        assert notes.read_bytes() == before, "export must not change the triage file"

    def test_reversed_runs(self, tmp_path: Path) -> None:
        """--runs B A reverses the comparison."""
        notes = tmp_path / "n.json"
        code, out, _ = run("triage", "export", BASELINE, CANDIDATE, "--triage", notes,
                           "--runs", B, A, "--format", "json")
        (c,) = orjson.loads(out)["comparisons"]
        assert (c["run_a"], c["fixed"], c["broken"]) == (B, 1, 1)
        assert [f["task"] for f in c["flips"]] == ["searchRunbook", "summarizeIncident"]

    def test_default_sidecar_in_a_directory(self, tmp_path: Path) -> None:
        """For a folder the default triage file inside it is read."""
        for p in (BASELINE, CANDIDATE):
            shutil.copy(p, tmp_path / p.name)
        TriageStore.open(default_triage_path([tmp_path])).update(
            TriageKey.flip(A, B, "searchRunbook"), label="real-fix")
        code, out, err = run("triage", "export", tmp_path)
        assert code == 0 and err == ""
        assert "flaketui.triage.json" in out and "| real-fix |" in out

    def test_corrupt_triage_file_is_an_input_error(self, tmp_path: Path) -> None:
        """A corrupt triage file is an input error, exit 2."""
        notes = tmp_path / "n.json"
        notes.write_bytes(b"{not json")
        code, out, err = run("triage", "export", BASELINE, "--triage", notes)
        assert code == 2 and out == ""
        assert err.startswith(f"flaketui: error: triage file {notes}: not valid JSON")
        assert len(err.strip().splitlines()) == 1
        assert notes.read_bytes() == b"{not json"

    def test_unknown_run(self, tmp_path: Path) -> None:
        """An unknown run is a usage error."""
        code, _, err = run("triage", "export", BASELINE, CANDIDATE, "--triage", tmp_path / "n",
                           "--runs", A, "nope")
        assert code == 2 and "no run named 'nope'" in err

    def test_one_run_has_no_comparison(self, tmp_path: Path) -> None:
        """With one run the export has no comparison."""
        code, out, _ = run("triage", "export", BASELINE, "--triage", tmp_path / "n",
                           "--format", "json")
        doc = orjson.loads(out)
        assert code == 0 and doc["comparisons"] == [] and len(doc["flaky_tasks"]) == 1

    def test_missing_log(self, tmp_path: Path) -> None:
        """A missing log is one line, exit 2."""
        code, _, err = run("triage", "export", tmp_path / "none.jsonl")
        assert code == 2 and "no such file or directory" in err


class TestTriageOptions:
    """``--triage`` on open / compare --tui / demo and ``compare --tui`` fail early, in one line."""

    def test_triage_in_a_missing_folder(self, tmp_path: Path) -> None:
        """--triage in a missing folder is one line, exit 2."""
        code, _, err = run("open", BASELINE, "--triage", tmp_path / "nope" / "n.json")
        assert code == 2 and err.strip() == (
            f"flaketui: error: --triage {tmp_path / 'nope' / 'n.json'}: folder "
            f"{tmp_path / 'nope'} does not exist")

    def test_triage_is_a_folder(self, tmp_path: Path) -> None:
        """--triage naming a folder is one line asking for a file name."""
        code, _, err = run("demo", "--triage", tmp_path)
        assert code == 2 and "is a folder; give a file name" in err

    def test_compare_tui_needs_two_logs_or_runs(self) -> None:
        """compare --tui on one log asks for two logs."""
        code, _, err = run("compare", BASELINE, "--tui")
        assert code == 2 and "give two logs A and B" in err

    def test_compare_tui_missing_log(self, tmp_path: Path) -> None:
        """compare --tui on a missing log is one line, exit 2."""
        code, _, err = run("compare", BASELINE, tmp_path / "none.jsonl", "--tui")
        assert code == 2 and "no such file or directory" in err
