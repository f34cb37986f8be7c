"""Quarantines that end by themselves: after N clean runs or at a date, with the evidence, a
transition to notify, the gate counting the task again, and ``history status`` listing what ends."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history import open_store  # noqa: E402
from flaketui.history.store import quarantine_progress  # noqa: E402
from tests.helpers.cli import run  # noqa: E402
from tests.helpers.history import run_of  # noqa: E402

UTC = dt.timezone.utc


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


def test_progress_counts_clean_runs_since_the_last_bad_one() -> None:
    """Clean runs in a row since quarantine, reset by a bad run; a run without trials counts for nothing."""
    p = quarantine_progress([(5, 5), (5, 3), (4, 4), (0, 0), (5, 5), (5, 5)])
    assert (p.runs, p.trials, p.clean_runs, p.clean_trials, p.bad_runs) == (5, 24, 3, 14, 1)
    assert p.line() == "14 clean trials over 3 runs since quarantined (1 flaky or failing run before them)"


def test_until_clean_ends_with_its_evidence_and_the_gate_counts_it_again(tmp_path: Path) -> None:
    """--until-clean 3: two clean runs leave it quarantined, the third ends it with the evidence line."""
    u = url(tmp_path)
    with open_store(u) as store:
        store.record([run_of(0, {"t": (10, 5), "u": (10, 10)})])
    code, out, err = run("history", "quarantine", "t", "--why", "flaky sandbox", "--until-clean", "3", "--history", u)
    assert code == 0, err
    assert "ends by itself after 3 clean runs" in out
    with open_store(u) as store:
        store.record([run_of(1, {"t": (5, 5), "u": (5, 5)}), run_of(2, {"t": (4, 4), "u": (4, 4)})])
        assert "t" in store.data(recent=0).quarantines
    code, out, _ = run("history", "status", "--history", u, "--format", "json")
    doc = json.loads(out)
    assert doc["ending"] == [{"task": "t", "until": None, "until_clean": 3, "clean_runs": 2,
                              "ends": "after 3 clean runs (2 so far); 9 clean trials over 2 runs since quarantined"}]
    assert run("quarantine", "--from-history", "--history", u)[1] == "t\n"
    with open_store(u) as store:
        store.record([run_of(3, {"t": (5, 5), "u": (5, 5)})])
        assert store.data(recent=0).quarantines == {}
        (ended,) = [t for t in store.transitions() if t["kind"] == "quarantine_ended"]
    assert ended["task"] == "t"
    assert ended["evidence"] == "14 clean trials over 3 runs since quarantined (3 clean runs asked)"
    assert run("quarantine", "--from-history", "--history", u)[1] == ""
    code, out, _ = run("history", "status", "--history", u, "--format", "json")
    assert json.loads(out)["counts"]["quarantined"] == 0


def test_a_bad_run_restarts_the_clean_count(tmp_path: Path) -> None:
    """A flaky run after the quarantine began resets the clean runs asked for."""
    u = url(tmp_path)
    with open_store(u) as store:
        store.quarantine("t", "me", "why", until_clean=2)
        store.record([run_of(0, {"t": (5, 5)}), run_of(1, {"t": (5, 2)}), run_of(2, {"t": (5, 5)})])
        assert "t" in store.data(recent=0).quarantines
        store.record([run_of(3, {"t": (5, 5)})])
        assert "t" not in store.data(recent=0).quarantines


def quarantined_until_past(tmp_path: Path) -> str:
    """A history whose task ``t`` was quarantined on 2026-01-01 until 2026-01-02 (a date that has
    come), nothing written since; its URL."""
    u = url(tmp_path)
    with open_store(u) as store:
        store.record([run_of(0, {"t": (10, 5)})])
        store.quarantine("t", "me", "why", until=dt.datetime(2026, 1, 2, tzinfo=UTC),
                         now=dt.datetime(2026, 1, 1, tzinfo=UTC))
    return u


def test_until_date_ends_at_the_date_without_a_new_run(tmp_path: Path) -> None:
    """A quarantine --until a date in the past is no longer active; the next write records its end."""
    u = quarantined_until_past(tmp_path)
    with open_store(u) as store:
        assert "t" not in store.data(recent=0).quarantines
        assert store.end_due() == ["t"]
        assert store.end_due() == []
        store.quarantine("v", "me", "why", until=dt.datetime(2999, 1, 2, tzinfo=UTC))
        active = store.data(recent=0).quarantines
        assert "t" not in active and active["v"]["until"] == "2999-01-02T00:00:00+00:00"
        (ended,) = [t for t in store.transitions() if t["kind"] == "quarantine_ended"]
    assert ended["evidence"].startswith("its date 2026-01-02T00:00:00+00:00 came; 0 clean trials over 0 runs")


def test_until_is_parsed_and_a_bad_date_is_a_usage_error(tmp_path: Path) -> None:
    """--until takes a date or an ISO time; anything else: exit 2 with one line."""
    u = url(tmp_path)
    code, out, _ = run("history", "quarantine", "t", "--why", "w", "--until", "2999-12-31", "--history", u)
    assert code == 0 and "ends by itself at 2999-12-31T00:00:00+00:00" in out
    code, _, err = run("history", "quarantine", "v", "--why", "w", "--until", "next week", "--history", u)
    assert code == 2 and "is not a date" in err
    code, out, _ = run("history", "status", "--history", u)
    assert "ends by itself: t: at 2999-12-31T00:00:00+00:00" in out


def test_a_quarantine_whose_date_came_does_not_block_a_new_one(tmp_path: Path) -> None:
    """Its date came, no write since: quarantining the task again records the end and succeeds (it said already quarantined)."""
    u = quarantined_until_past(tmp_path)
    code, out, err = run("history", "quarantine", "t", "--why", "again", "--history", u)
    assert code == 0, err
    with open_store(u) as store:
        assert store.data(recent=0).quarantines["t"]["why"] == "again"
        assert [t["task"] for t in store.transitions() if t["kind"] == "quarantine_ended"] == ["t"]


def test_until_that_has_passed_is_a_usage_error(tmp_path: Path) -> None:
    """--until a date already past would make a quarantine that is over as it starts: exit 2, nothing written."""
    u = url(tmp_path)
    code, _, err = run("history", "quarantine", "t", "--why", "w", "--until", "2020-01-01", "--history", u)
    assert code == 2 and "has passed" in err
    code, out, _ = run("history", "status", "--history", u, "--format", "json")
    assert code == 0 and not json.loads(out)["counts"].get("quarantined")
