"""``history trend``: per recorded run the suite's pass@1 and pass^k with intervals, the tasks by
state, p̂ per task per run, the lifecycle's changes marked; as text, JSON and a page; and
``history issue-body``'s Markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history import open_store  # noqa: E402
from flaketui.history.issue import md_text  # noqa: E402
from flaketui.history.trend import trend, trend_doc  # noqa: E402
from flaketui.output.html import CSP  # noqa: E402
from flaketui.output.trend import text_chart  # noqa: E402
from tests.helpers.cli import run  # noqa: E402
from tests.helpers.history import SEQUENCES, record_sequences, run_of, scipy_class  # noqa: E402
from tests.helpers.hostile import PAYLOADS, raw_controls  # noqa: E402


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_per_run_figures_match_scipy(tmp_path: Path) -> None:
    """pass@1 is the mean p̂ with a t interval, pass^k the mean C(c,k)/C(n,k) over tasks with n ≥ k (scipy)."""
    record_sequences(url(tmp_path)).close()
    with open_store(url(tmp_path)) as store:
        doc = trend_doc(trend(store, k=5))
    tasks = sorted(SEQUENCES)
    for i, r in enumerate(doc["runs"]):
        n = np.array([SEQUENCES[t][0][i][0] for t in tasks])
        c = np.array([SEQUENCES[t][0][i][1] for t in tasks])
        p = c[n > 0] / n[n > 0]
        lo, hi = stats.t.interval(0.95, len(p) - 1, loc=p.mean(), scale=stats.sem(p))
        assert r["pass_at_1"]["value"] == pytest.approx(p.mean(), abs=1e-6)
        assert r["pass_at_1"]["ci"] == pytest.approx([max(lo, 0), min(hi, 1)], abs=1e-6)
        keep = n >= 5
        hat = special.comb(c[keep], 5) / special.comb(n[keep], 5)
        assert r["pass_hat_k"]["value"] == pytest.approx(hat.mean(), abs=1e-6)
        assert r["pass_hat_k"]["tasks"] == int(keep.sum())


def test_states_and_changes_follow_the_lifecycle(tmp_path: Path) -> None:
    """Each run's counts are the scripted states after it; the changes are the transitions recorded."""
    store = record_sequences(url(tmp_path))
    tr = trend(store)
    recorded = [(t["run"], t["task"], t["kind"]) for t in store.transitions()]
    store.close()
    doc = trend_doc(tr)
    for i, r in enumerate(doc["runs"]):
        want: dict[str, int] = {}
        for _, states in SEQUENCES.values():
            want[states[i]] = want.get(states[i], 0) + 1
        assert {s: n for s, n in r["states"].items() if n} == want
        run_classes = [scipy_class(*seq[i]) for seq, _ in SEQUENCES.values()]
        assert r["classes"] == {c: run_classes.count(c) for c in r["classes"]} and sum(r["classes"].values()) == 14
        assert (r["counts"]["flaky"], r["counts"]["undetermined"]) == (
            run_classes.count("flaky"), run_classes.count("undetermined"))
    assert [(r["run"], c["task"], c["kind"]) for r in doc["runs"] for c in r["changes"]] == recorded
    assert doc["runs"][-1]["classes"]["no-trials"] == 2  # fixed-again and flaky-by-evidence: no trial in run 6
    row = next(t for t in doc["tasks"] if t["task"] == "regressed")
    assert row["p_hat"] == [0.5, 1.0, 1.0, 1.0, 0.0, 1.0] and row["state"] == "regressed"
    assert next(t for t in doc["tasks"] if t["task"] == "fixed-again")["p_hat"][-1] is None


def test_last_and_task_select_runs_and_rows(tmp_path: Path) -> None:
    """--last 2 keeps the two newest runs in recorded order; --task keeps that task's p̂ only."""
    record_sequences(url(tmp_path)).close()
    code, out, _ = run("history", "trend", "--history", url(tmp_path), "--last", "2", "--task", "regressed",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0 and [r["run"] for r in doc["runs"]] == ["run-4", "run-5"]
    assert doc["tasks"] == [{"task": "regressed", "state": "regressed", "p_hat": [0.0, 1.0]}]


def test_text_chart_has_axis_ticks_run_names_dates_and_marks(tmp_path: Path) -> None:
    """The text chart labels 0, 0.5 and 1, numbers every run, names and dates it, and marks changes."""
    record_sequences(url(tmp_path)).close()
    code, out, _ = run("history", "trend", "--history", url(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert any(ln.startswith(" 1.0 ┤") for ln in lines) and any(ln.startswith(" 0.0 ┤") for ln in lines)
    assert any(re.fullmatch(r"\s+1\s+2\s+3\s+4\s+5\s+6", ln) for ln in lines)
    assert "        6  run-5  2026-12-06" in lines
    assert "run 5 (run-4): regressed regressed (was fixed)" in lines


def test_page_is_escaped_under_the_strict_csp(tmp_path: Path) -> None:
    """The page keeps the report's CSP, draws an axis-labelled SVG, and escapes hostile run and task names."""
    with open_store(url(tmp_path)) as store:
        for i, name in enumerate(PAYLOADS):
            store.record([run_of(i, {name: (4, 2), "ok": (4, 4)}, prefix=name)])
    out = tmp_path / "trend.html"
    code, _, err = run("history", "trend", "--history", url(tmp_path), "--format", "html", "--out", str(out))
    assert code == 0, err
    page = out.read_text()
    assert CSP in page and "<svg" in page and ">0.5</text>" in page
    for name in PAYLOADS:
        if "<" in name:  # every tag escaped (in the data block too)
            assert name not in page
    assert page.count("<script") == 2 and "<iframe" not in page and "<img" not in page
    assert not raw_controls(page)


def test_issue_body_is_markdown_escaped(tmp_path: Path) -> None:
    """issue-body names the state, evidence and latest bad run, and no task text becomes markup or a mention."""
    name = "*x* [a](http://e) <b> @team | `c`"
    with open_store(url(tmp_path)) as store:
        store.record([run_of(0, {name: (10, 4)})])
    code, out, _ = run("history", "issue-body", name, "--history", url(tmp_path))
    assert code == 0
    assert out.startswith("# Flaky task: \\*x\\* \\[a\\](http://e) &lt;b&gt; &#64;team \\| \\`c\\`")
    assert "- **State:** flaky" in out and "4 of 10 trials passed" in out
    assert "flaketui diff LOG --task '*x* [a](http://e) <b> @team | `c`'" in out
    assert md_text("a_b\nc") == "a_b c"
    code, _, err = run("history", "issue-body", "nope", "--history", url(tmp_path))
    assert code == 2 and "no recorded run has task" in err


def test_text_chart_zooms_in_on_a_high_suite() -> None:
    """All values at 0.97-0.99: the y axis runs from 0.9 (ticked) to 1.0, so the runs differ on the chart."""
    lines = text_chart([("pass@1", "●", [0.97, 0.99, 0.98])], ["a", "b", "c"], ["2026-12-01"] * 3, height=10)
    assert lines[0].startswith(" 1.0 ┤") and lines[10].startswith(" 0.9 ┤") and lines[5].startswith("0.95 ┤")
    rows = [i for i, ln in enumerate(lines[:11]) if "●" in ln]
    assert rows == [1, 2, 3]


def test_issue_body_reads_the_divergence_from_the_log(tmp_path: Path) -> None:
    """With --log, the latest flaky run's first divergence, what differs and its suggested source come from traces."""
    from tests.conftest import BASELINE, CANDIDATE

    code, _, err = run("history", "record", str(BASELINE), str(CANDIDATE), "--history", url(tmp_path))
    assert code == 0, err
    code, out, _ = run("history", "issue-body", "searchRunbook", "--history", url(tmp_path), "--log", str(BASELINE))
    assert code == 0
    assert "- **First divergence:** step 3" in out
    assert "- **Suggested source:** tool-nondeterminism" in out
    assert f"flaketui diff {BASELINE} --task searchRunbook" in out
    code, out, _ = run("history", "issue-body", "searchRunbook", "--history", url(tmp_path), "--log", str(CANDIDATE))
    assert "- **From the log:** the log has no run 'oncall-baseline'" in out


def test_quarantined_count_follows_when_the_quarantine_was_active(tmp_path: Path) -> None:
    """A run counts the quarantines set before it was recorded and not lifted by then."""
    import datetime as dt

    utc = dt.timezone.utc
    with open_store(url(tmp_path)) as store:
        store.record([run_of(0, {"a": (4, 2)})], now=dt.datetime(2026, 1, 1, tzinfo=utc))
        store.quarantine("a", "me", "why", now=dt.datetime(2026, 1, 2, tzinfo=utc))
        store.record([run_of(1, {"a": (4, 4)})], now=dt.datetime(2026, 1, 3, tzinfo=utc))
        store.unquarantine("a", "me", now=dt.datetime(2026, 1, 4, tzinfo=utc))
        store.record([run_of(2, {"a": (4, 4)})], now=dt.datetime(2026, 1, 5, tzinfo=utc))
        doc = trend_doc(trend(store))
    assert [r["counts"]["quarantined"] for r in doc["runs"]] == [0, 1, 0]


def test_issue_body_log_path_cannot_close_the_code_block(tmp_path: Path) -> None:
    """A log path with a line break and a fence stays on its line inside the ```sh block: no mention or link escapes."""
    from flaketui.history.issue import issue_markdown
    from flaketui.history.status import task_timeline

    with open_store(url(tmp_path)) as store:
        store.record([run_of(0, {"t": (10, 4)})])
        tl = task_timeline(store, "t", 0.1, [])
        latest = store.latest_bad("t")
    assert latest is not None
    evil = "a.json\n```\n@everyone [x](http://e)\n```sh"
    for given in ({**latest, "log": [evil]}, {**latest, "meta": {"log": evil}},
                  {**latest, "first_divergence": "3\n```\n@everyone"}):
        out = issue_markdown(tl, given)
        fences = [ln for ln in out.splitlines() if ln.startswith("```")]
        assert fences == ["```sh", "```"], fences
        assert not any(ln.startswith("@everyone") for ln in out.splitlines())


@pytest.mark.parametrize("command", [["trend"], ["trend", "--format", "json"], ["issue-body", "flaky-in-run-6"]])
def test_a_recorded_time_that_is_not_a_date_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    """A history whose run holds text that is not a time (SQLite keeps it): one line naming the value, exit 2, no traceback."""
    import sqlite3

    record_sequences(url(tmp_path), runs=3).close()
    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        db.execute("UPDATE runs SET recorded_at = 'not a date' WHERE id = 2")
    code, out, err = run("history", *command, "--history", url(tmp_path))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and "not a date" in err and "refused" in err


def test_text_chart_of_rates_all_one_has_an_axis() -> None:
    """Every value 1.0 (a run of one task that passed): the chart draws it on a 0.9-1.0 axis (it divided by zero)."""
    lines = text_chart([("pass^1", "●", [1.0, 1.0])], ["r1", "r2"], ["2026-01-01", "2026-01-02"])
    assert lines[0].startswith(" 1.0 ┤") and "●" in lines[0]
    assert any(line.startswith(" 0.9 ┤") for line in lines)
