"""``flaketui plan``: the rerun plan a harness reads, the JSON contract, exit codes, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE, FIXTURES
from tests.helpers.planning import write_log


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


class TestPlanLines:
    @pytest.mark.parametrize("budget", [1, 250, 500])
    def test_jsonl_spends_exactly_the_budget(self, budget: int) -> None:
        """plan --format jsonl spends exactly the budget across its lines."""
        code, out, _ = run("plan", str(FIXTURES), "--budget", str(budget), "--format", "jsonl")
        assert code == 0
        lines = [json.loads(x) for x in out.splitlines()]
        assert sum(x["extra_trials"] for x in lines) == budget
        for x in lines:
            assert set(x) == {"run", "task", "extra_trials", "why"}
            assert x["extra_trials"] > 0 and x["why"]
            assert x["run"] in ("oncall-baseline", "oncall-candidate")

    def test_out_writes_the_file(self, tmp_path: Path) -> None:
        """--out writes the plan to the file and nothing to stdout."""
        target = tmp_path / "plan.jsonl"
        code, out, err = run("plan", str(BASELINE), "--budget", "120", "--format", "jsonl",
                             "--out", str(target))
        assert code == 0 and out == ""
        assert f"wrote {target}" in err
        lines = [json.loads(x) for x in target.read_text().splitlines()]
        assert sum(x["extra_trials"] for x in lines) == 120
        assert [p.name for p in tmp_path.iterdir()] == ["plan.jsonl"]  # no temp file left

    def test_out_replaces_an_existing_file(self, tmp_path: Path) -> None:
        """--out replaces an existing file whole."""
        target = tmp_path / "plan.json"
        target.write_text("old")
        code, _, _ = run("plan", str(BASELINE), "--budget", "10", "--format", "json",
                         "--out", str(target))
        assert code == 0
        assert json.loads(target.read_text())["spent"] == 10


class TestPlanJson:
    def test_contract(self) -> None:
        """plan's JSON holds the documented fields and figures."""
        code, out, _ = run("plan", str(FIXTURES), "--budget", "300", "-k", "5", "--format", "json")
        assert code == 0
        doc = json.loads(out)
        assert doc["k"] == 5 and doc["budget"] == 300 and doc["spent"] == 300
        assert doc["unspent_reason"] is None
        assert [r["run"] for r in doc["runs"]] == ["oncall-baseline", "oncall-candidate"]
        base = {t["task"]: t for t in doc["runs"][0]["tasks"]}
        sr = base["searchRunbook"]
        # Flaky in this run, the first loaded: not "flaky before" (no run came before it), so the low tier.
        assert (sr["n"], sr["passes"], sr["decision"], sr["tier"]) == (12, 10, "undecided", "low")
        later = {t["task"]: t for t in doc["runs"][1]["tasks"]}["searchRunbook"]
        assert (later["tier"], later["tier_reason"]) == ("high", "flaky before in oncall-baseline")
        assert sr["rule_of_three"] is None and sr["more_clean_trials"] is None
        clean = base["lookupOwner"]
        assert clean["more_clean_trials"] == 287 and clean["trials_for_width"] == 35
        assert doc["runs"][0]["pass_hat_k"] == pytest.approx(0.773, abs=5e-4)
        assert doc["one_in_a_million_trials"] == 2_995_731
        size = doc["sample_size"]
        assert size["independent"]["design"] == "independent"
        assert size["comparison"]["discordance"] == pytest.approx((1 / 6 + 1) / 25)
        assert size["comparison"]["paired"]["tasks"] < size["comparison"]["independent"]["tasks"]
        assert sum(x["extra_trials"] for x in doc["plan"]) == 300
        ks = [p["k"] for p in doc["runs"][0]["projection"]]
        assert 100 in ks and 5 in ks
        assert any("must come from design" in n and "not from tests" in n for n in doc["notes"])

    def test_effect_changes_the_sample_size(self) -> None:
        """A larger --effect needs fewer tasks."""
        # pass@1 of the baseline is 0.7933; the 85% vs 90% is pinned in test_planning.
        _, out, _ = run("plan", str(BASELINE), "--effect", "0.1", "--format", "json")
        small = json.loads(out)["sample_size"]["independent"]["tasks"]
        _, out, _ = run("plan", str(BASELINE), "--effect", "0.05", "--format", "json")
        assert json.loads(out)["sample_size"]["independent"]["tasks"] > small

    def test_run_option_plans_one_run(self) -> None:
        """--run plans only that run."""
        code, out, _ = run("plan", str(FIXTURES), "--run", "oncall-candidate", "--budget", "40",
                           "--format", "json")
        doc = json.loads(out)
        assert code == 0 and [r["run"] for r in doc["runs"]] == ["oncall-candidate"]
        assert doc["spent"] == 40 and all(x["run"] == "oncall-candidate" for x in doc["plan"])
        # The other loaded run still counts: searchRunbook was flaky in the baseline, and the
        # paired sample size compares the planned run with it.
        tiers = {t["task"]: t["tier_reason"] for t in doc["runs"][0]["tasks"]}
        assert tiers["searchRunbook"] == "flaky before in oncall-baseline"
        cmp = doc["sample_size"]["comparison"]
        assert (cmp["run_a"], cmp["run_b"]) == ("oncall-candidate", "oncall-baseline")

    def test_single_run_has_no_paired_figure(self) -> None:
        """A single run has no paired sample size."""
        _, out, _ = run("plan", str(BASELINE), "--format", "json")
        assert json.loads(out)["sample_size"]["paired"] is None


class TestPlanTable:
    def test_shows_the_reasoning(self) -> None:
        """The plan's table explains its decisions and figures in words."""
        code, out, _ = run("plan", str(FIXTURES), "--budget", "300", "-k", "5")
        assert code == 0
        for text in ("decided = the 95% confidence sequence",
                     "decisions use a confidence sequence (Robbins' mixture): valid however often "
                     "you look", "rule of three (fixed-n)", "suite pass^5 = 0.773",
                     "searchRunbook", "where the trials go", "tasks needed to detect",
                     "independent samples", "paired (same tasks", "2,995,731",
                     "not from tests", "low temperature", "rerun plan: 300 trials"):
            assert text in out, text

    def test_piped_table_keeps_every_column(self) -> None:
        """A piped plan table keeps every column and the JSON's trial counts."""
        # Output to a pipe or file is not cut to 80 columns: every figure of a task is there.
        _, doc, _ = run("plan", str(FIXTURES), "--budget", "300", "--format", "json")
        extra = {t["task"]: t["extra_trials"] for t in json.loads(doc)["runs"][0]["tasks"]}
        code, out, _ = run("plan", str(FIXTURES), "--budget", "300")
        assert code == 0
        row = next(line for line in out.splitlines() if line.startswith("lookupOwner "))
        assert [c.strip() for c in row.split("│")] == [
            "lookupOwner", "12", "12", "1.000", "[0.76, 1.00]", "undecided",
            str(extra["lookupOwner"]), "low ≥3", "0.221", "287", "35"]

    def test_80_columns_show_the_planned_trials(self) -> None:
        """At 80 columns the plan still shows the planned trials."""
        from flaketui.cli.plan import render
        from flaketui.loading import load_logs
        from flaketui.stats.plan import PlanOptions, make_plan

        log = load_logs([BASELINE])
        plan = make_plan([log.run_outcomes(r) for r in log.runs], PlanOptions(budget=300))
        lines = render(plan, "table", width=80).decode().splitlines()
        header = next(line for line in lines if line.startswith("task"))
        assert "extra" in header and "decision" in header
        given = next(t for t in plan.runs[0].tasks if t.extra)
        row = next(line for line in lines if line.startswith(given.task[:10]) and "│" in line)
        cells = [c.strip() for c in row.split("│")]
        assert cells[1:3] == [str(given.n), str(given.passes)]
        assert cells[6] == str(given.extra)

    @pytest.mark.slow
    @pytest.mark.parametrize("seed", range(4))
    @pytest.mark.parametrize("hostile", [False, True])
    def test_plain_rows_are_what_rich_prints(self, tmp_path: Path, seed: int, hostile: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        """The plain-text rows equal what Rich prints for random tables."""
        # Rows written as plain text must be byte for byte Rich's table, at any width and with
        # names Rich treats specially (wide, combining, markup-like, emoji-like, over-long).
        import random

        from flaketui.cli.plan import render
        from flaketui.loading import load_logs
        from flaketui.output import plan as plan_report
        from flaketui.stats.plan import PlanOptions, make_plan

        rng = random.Random(seed)
        pieces = ["a", "Z", "7", " ", "_", "-", "é", "e\u0301", "表", "🙂", "[1]", "…", "→"]
        if hostile:
            pieces += ["[b]", ":x:", ":", "\\", "\u200b", "\u00a0"]
        names = {"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(150)}
        tasks = {n: (k, rng.randint(0, k), {}) for n in names if n.strip() for k in [rng.randint(0, 12)]}
        log = load_logs([write_log(tmp_path / "r.jsonl", tasks)])
        plan = make_plan([log.run_outcomes("r")], PlanOptions(budget=100))
        laid_out: list[int] = []
        table = plan_report.TaskTable.table
        monkeypatch.setattr(plan_report.TaskTable, "table",
                            lambda self, rows: laid_out.append(len(rows)) or table(self, rows))
        fast = {w: render(plan, "table", width=w) for w in (40, 80, 200)}
        if not hostile:  # at 200 columns no name is cut: the rows were written as plain text
            assert laid_out[-1] < len(plan.runs[0].tasks)
        monkeypatch.setattr(plan_report, "_plain", lambda cells: False)
        for w, got in fast.items():
            assert got == render(plan, "table", width=w), w

    def test_measured_only_where_every_task_has_k_trials(self, tmp_path: Path) -> None:
        """Measured figures are shown only where every task has k trials."""
        # "short" has 3 trials: at k = 5 only "long" (10 of 10) is measured. A suite figure of
        # 1.000 over one task of two, beside a projection over both, would mislead: a dash.
        path = write_log(tmp_path / "r.jsonl", {"long": (10, 10, {}), "short": (3, 1, {})})
        code, out, _ = run("plan", str(path), "--format", "json")
        assert code == 0
        proj = {p["k"]: p for p in json.loads(out)["runs"][0]["projection"]}
        assert proj[5]["measured_tasks"] == 1 and proj[5]["measured_pass_at_k"] == 1.0
        assert proj[2]["measured_tasks"] == 2
        _, out, _ = run("plan", str(path))
        rows = {line.split("│")[0].strip(): [c.strip() for c in line.split("│")]
                for line in out.splitlines() if line.count("│") == 5}
        assert rows["5"][1:3] == ["—", "—"] and rows["5"][3] != "—"
        # pass@2 of 1 pass in 3 trials: 1 - C(2,2)/C(3,2) = 2/3; of 10 in 10: 1.
        assert rows["2"][1] == f"{(1 + 2 / 3) / 2:.3f}"

    def test_without_budget_gives_figures_only(self) -> None:
        """Without a budget the plan gives figures only."""
        code, out, _ = run("plan", str(BASELINE))
        assert code == 0
        assert "no budget given" in out and "where the trials go" not in out


class TestRisk:
    def test_tagged_task_reaches_the_minimum(self, tmp_path: Path) -> None:
        """A risk-tagged task is planned up to the high minimum."""
        path = write_log(tmp_path / "r.jsonl", {
            "deploy": (4, 4, {"tags": ["write"]}),
            "lookup": (4, 4, {"tags": ["read-only"]}),
        })
        code, out, _ = run("plan", str(path), "--budget", "6", "--min-trials", "10",
                           "--format", "jsonl")
        assert code == 0
        lines = {x["task"]: x for x in map(json.loads, out.splitlines())}
        assert lines["deploy"]["extra_trials"] == 6
        assert "tagged write: minimum 10 trials" in lines["deploy"]["why"]

    def test_risk_tag_option(self, tmp_path: Path) -> None:
        """--risk-tag names the tags that mark a high-risk task."""
        path = write_log(tmp_path / "r.jsonl", {"a": (4, 4, {"tags": ["db"]}),
                                                "b": (4, 4, {"tags": ["write"]})})
        _, out, _ = run("plan", str(path), "--risk-tag", "db", "--format", "json")
        tiers = {t["task"]: t["tier"] for t in json.loads(out)["runs"][0]["tasks"]}
        assert tiers == {"a": "high", "b": "low"}

    def test_every_task_decided(self, tmp_path: Path) -> None:
        """With every task decided the plan says the budget is left unspent."""
        path = write_log(tmp_path / "r.jsonl", {"solid": (69, 69, {}), "broken": (69, 0, {})})
        code, out, err = run("plan", str(path), "--budget", "50", "--format", "json")
        assert code == 0
        doc = json.loads(out)
        assert doc["spent"] == 0 and doc["plan"] == []
        assert "50 of 50 trials left unspent" in doc["unspent_reason"]
        assert "left unspent" in err


class TestErrors:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--budget", "-5"], "--budget"),
            (["--budget", "many"], "--budget"),
            (["--budget", str(10**20)], "--budget"),  # beyond 64 bits: was a traceback
            (["--target-width", "0"], "--target-width"),
            (["--target-width", "1.5"], "--target-width"),
            (["-k", "0"], "-k"),
            (["--margin", "0.5"], "--margin"),
            (["--format", "xml"], "--format"),
            (["--run", "nope"], "no run named 'nope'"),
            (["--no-such-option"], "no-such-option"),
        ],
    )
    def test_one_line_exit_2(self, args: list[str], message: str) -> None:
        """Each bad option is one line on stderr, exit 2, nothing on stdout."""
        code, out, err = run("plan", str(BASELINE), *args)
        assert code == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("flaketui: error:") and message in err

    def test_missing_log(self, tmp_path: Path) -> None:
        """A missing log is one line naming it, exit 2."""
        code, _, err = run("plan", str(tmp_path / "none.jsonl"), "--budget", "3")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "none.jsonl" in err

    def test_no_logs(self) -> None:
        """plan without logs is one line, exit 2."""
        code, _, err = run("plan")
        assert code == 2 and len(err.strip().splitlines()) == 1

    def test_out_folder_missing(self, tmp_path: Path) -> None:
        """--out into a missing folder is one line, exit 2."""
        code, _, err = run("plan", str(BASELINE), "--out", str(tmp_path / "no" / "plan.jsonl"))
        assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1
