"""``history notify``: one message per lifecycle transition, each sent once, to a real HTTP server
on 127.0.0.1; a server that fails, stalls or answers 500 loses no transition; Slack bodies escaped;
the webhook's secret never printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from flaketui.history.notify import post, shown_webhook, slack_escape, slack_message  # noqa: E402
from tests.helpers.cli import run  # noqa: E402
from tests.helpers.history import (  # noqa: E402
    SEQUENCES,
    expected_transitions,
    record_sequences,
    run_of,
    write_log,
)
from tests.helpers.webhook import webhook  # noqa: E402


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


@pytest.mark.slow
def test_each_transition_is_posted_once_across_two_runs_of_the_command(tmp_path: Path) -> None:
    """Every transition reaches the webhook once; running notify again sends nothing new."""
    record_sequences(url(tmp_path)).close()
    with webhook() as hook:
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path))
        assert code == 0, err
        assert len(hook.taken) == expected_transitions() == 15
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path))
        assert code == 0 and len(hook.seen) == 15
    kinds = [(m["task"], m["kind"], m["run"]) for m in hook.taken]
    assert ("flaky-by-evidence", "flaky", "run-0") in kinds
    assert not any(task == "flaky-in-run-6" for task, _, _ in kinds)  # one mixed run: undetermined, no message
    assert ("regressed", "regressed", "run-4") in kinds
    assert ("fixed", "fixed", "run-5") in kinds
    first = next(m for m in hook.taken if m["task"] == "fixed" and m["kind"] == "fixed")
    assert first["evidence"] == "30 clean trials since run run-0: fixed at cap 0.1 (29 needed)"
    assert first["from"] == "undetermined" and first["source"] == "flaketui"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["500", "stall", "drop"])
def test_a_failing_server_loses_no_transition(tmp_path: Path, mode: str) -> None:
    """A server answering 500, stalling past the read timeout or dropping the connection: exit 2,
    nothing marked sent; once it answers, every transition arrives, each once."""
    record_sequences(url(tmp_path)).close()
    with webhook() as hook:
        hook.mode = mode
        hook.stall = 1.5
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path),
                           "--read-timeout", "0.3", "--tries", "2")
        assert code == 2
        assert "kept and sent next time" in err
        assert len(hook.seen) == 2  # two tries of the first message, then it stops
        hook.mode = "ok"
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path))
        assert code == 0, err
        assert len(hook.taken) == expected_transitions()
        assert len({(m["task"], m["kind"], m["run"]) for m in hook.taken}) == expected_transitions()


def test_a_refused_connection_is_retried_with_backoff_then_reported() -> None:
    """Nothing listening: the tries are bounded, the waits double, the reason is one line."""
    waits: list[float] = []
    got = post("http://127.0.0.1:9/hook/SECRET", b"{}", 0.5, 0.5, tries=3, backoff=0.25, sleep=waits.append)
    assert not got.ok and waits == [0.25, 0.5]
    assert "SECRET" not in got.why and "127.0.0.1" in got.why


@pytest.mark.slow
def test_new_transitions_after_a_record_are_sent_by_record_notify(tmp_path: Path) -> None:
    """history record --notify posts what the recorded run changed, and only that."""
    record_sequences(url(tmp_path), runs=5).close()
    with webhook() as hook:
        assert run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path))[0] == 0
        before = len(hook.taken)
        log = write_log(tmp_path / "r.jsonl", "run-6", {t: seq[0][5] for t, seq in SEQUENCES.items()})
        code, _, err = run("history", "record", str(log), "--history", url(tmp_path), "--notify", hook.url)
        assert code == 0, err
        new = hook.taken[before:]
    assert sorted((m["task"], m["kind"]) for m in new) == [("boundary-29", "fixed"), ("fixed", "fixed")]


@pytest.mark.slow
def test_slack_body_escapes_and_sends_log_text_as_plain_text(tmp_path: Path) -> None:
    """A task named with Slack's control characters and mrkdwn is escaped and never markup."""
    from flaketui.history import open_store

    name = "a&b <!channel> *bold* <https://evil.example|click>"
    store = open_store(url(tmp_path))
    store.record([run_of(0, {name: (10, 5)})])
    store.close()
    with webhook() as hook:
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path),
                           "--format", "slack")
        assert code == 0, err
    (msg,) = hook.taken
    text = json.dumps(msg)
    assert "<!channel>" not in text and "<https" not in text
    assert "a&amp;b &lt;!channel&gt;" in msg["text"]
    assert all(b["text"]["type"] == "plain_text" for b in msg["blocks"])
    assert slack_escape("<&>") == "&lt;&amp;&gt;"
    head = slack_message({"task": "t", "kind": "fixed", "from_state": "flaky", "to_state": "fixed",
                          "evidence": "e", "run": "r", "at": "x", "id": 1})["blocks"][0]
    assert head["text"] == {"type": "plain_text", "text": "t was fixed", "emoji": False}


@pytest.mark.slow
def test_webhook_secret_never_printed(tmp_path: Path) -> None:
    """The webhook's path (its secret) and user info are not in any output, success or failure."""
    record_sequences(url(tmp_path), runs=1).close()
    with webhook("/services/T0/B0/XXSECRETXX") as hook:
        secret = hook.url.replace("http://", "http://user:pw@")
        code, out, err = run("history", "notify", "--webhook", secret, "--history", url(tmp_path))
        assert code == 0
    assert "XXSECRETXX" not in out + err and "pw" not in out + err
    assert hook.headers[0]["Authorization"].startswith("Basic ")
    assert shown_webhook("https://u:p@hooks.slack.com/services/T/B/X") == "https://***@hooks.slack.com/…"


@pytest.mark.slow
def test_report_record_notify_posts_the_new_transitions(tmp_path: Path) -> None:
    """report --record --notify URL records the log and posts what it changed; --notify alone is a usage error."""
    log = write_log(tmp_path / "r.jsonl", "run-0", {"a": (20, 10), "b": (4, 4), "c": (4, 2)})
    with webhook() as hook:
        code, _, err = run("report", str(log), "--record", "--history", url(tmp_path), "--notify", hook.url,
                           "--notify-format", "slack")
        assert code == 0, err
    assert [m["text"] for m in hook.taken] == ["flaketui: a turned flaky"]  # c (2 of 4) is undetermined
    code, _, err = run("report", str(log), "--notify", "http://127.0.0.1:9/x", "--history", url(tmp_path))
    assert code == 2 and "--notify goes with --record" in err


def test_a_claimed_transition_is_left_to_its_notifier_until_the_claim_lapses(tmp_path: Path) -> None:
    """A transition another notifier is posting is skipped; posted again once its claim lapses; never twice."""
    import datetime as dt

    store = record_sequences(url(tmp_path), runs=1)
    first = store.transitions(pending=True)[0]["id"]
    calls: list[int] = []

    def dies() -> bool:
        calls.append(1)
        assert store.deliver(first, lambda: calls.append(2) or True) is None  # claimed meanwhile: skipped
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.deliver(first, dies)
    assert calls == [1]
    assert first in [t["id"] for t in store.transitions(pending=True)]  # the claim was released, not sent
    from flaketui.history import schema

    soon = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=5)
    with store.writing() as conn:  # a notifier killed mid-post: its claim stays until it lapses
        conn.execute(schema.transitions.update().where(schema.transitions.c.id == first).values(claimed_until=soon))
    assert store.deliver(first, lambda: True) is None
    later = soon + dt.timedelta(seconds=1)
    assert store.deliver(first, lambda: True, now=later) is True
    assert store.deliver(first, lambda: True, now=later) is None
    store.close()


@pytest.mark.slow
def test_two_notifiers_at_once_send_each_transition_once(tmp_path: Path) -> None:
    """Two history notify processes started together: the webhook gets each of the 15 transitions exactly once."""
    import subprocess
    import sys

    record_sequences(url(tmp_path)).close()
    with webhook() as hook:
        hook.mode = "ok"
        procs = [subprocess.Popen([sys.executable, "-m", "flaketui", "history", "notify", "--webhook", hook.url,
                                   "--history", url(tmp_path), "--wait", "60"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    keys = [(m["task"], m["kind"], m["run"]) for m in hook.taken]
    assert len(keys) == expected_transitions() and len(set(keys)) == len(keys)


def test_slack_texts_are_cut_to_slack_limits_without_splitting_an_entity() -> None:
    """A long task name of ampersands: the header is at most 150 characters and ends on a whole entity."""
    head = slack_message({"task": "&" * 400, "kind": "flaky", "from_state": "stable", "to_state": "flaky",
                          "evidence": "e", "run": "r", "at": "x", "id": 1})["blocks"][0]["text"]["text"]
    assert len(head) <= 150 and head.endswith("&amp;…") and head.count("&amp;") == 29


@pytest.mark.parametrize("bad", ["https://hooks.example:abc/T/SECRETPATH", "https://hooks.example:99999/T/SECRETPATH",
                                 "https://[::1/T/SECRETPATH", "ftp://hooks.example/T/SECRETPATH"])
@pytest.mark.slow
def test_a_webhook_url_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path, bad: str) -> None:
    """A webhook with a bad port, an unclosed IPv6 host or another scheme: one line naming it
    masked, exit 2, no traceback, and its transitions still pending (none claimed)."""
    record_sequences(url(tmp_path), runs=1).close()
    code, out, err = run("history", "notify", "--webhook", bad, "--history", url(tmp_path))
    assert code == 2 and "SECRETPATH" not in out + err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not post(bad, b"{}", tries=1).ok
    with webhook() as hook:
        code, _, err = run("history", "notify", "--webhook", hook.url, "--history", url(tmp_path))
        assert code == 0, err
    assert hook.taken


@pytest.mark.slow
def test_the_page_of_a_report_that_notifies_shows_no_webhook_secret(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """report --record --notify URL --format html: the page's command line names the webhook by its masked origin only."""
    log = write_log(tmp_path / "r.jsonl", "run-0", {"a": (4, 2), "b": (4, 4)})
    page = tmp_path / "page.html"
    with webhook("/services/T0/B0/XXSECRETXX") as hook:
        secret = hook.url.replace("http://", "http://user:pw@")
        for notify in (["--notify", secret], [f"--notify={secret}"]):
            args = ["report", str(log), "--record", "--history", url(tmp_path), *notify, "--format", "html",
                    "--out", str(page)]
            monkeypatch.setattr("sys.argv", ["flaketui", *args])
            code, _, err = run(*args)
            assert code == 0, err
            text = page.read_text(encoding="utf-8")
            assert "XXSECRETXX" not in text and "pw@" not in text and "--notify" in text


@pytest.mark.parametrize("value", ["nan", "inf", "1e9", "0"])
def test_a_timeout_that_is_not_a_bounded_number_is_a_usage_error(tmp_path: Path, value: str) -> None:
    """--connect-timeout / --read-timeout nan, inf or beyond the bound: exit 2 in one usage line, no traceback, nothing claimed."""
    record_sequences(url(tmp_path), runs=1).close()
    for option in ("--connect-timeout", "--read-timeout"):
        code, _, err = run("history", "notify", "--webhook", "http://127.0.0.1:9/x", option, value,
                           "--history", url(tmp_path))
        assert code == 2 and f"Invalid value for '{option}'" in err


@pytest.mark.slow
def test_a_server_dripping_its_answer_is_cut_off_at_the_two_timeouts() -> None:
    """A server that sends a byte every 0.1 s (each wait under the read timeout) for 4 s: the post gives up by connect + read timeout."""
    import time

    with webhook() as hook:
        hook.mode, hook.stall = "drip", 4.0
        start = time.monotonic()
        got = post(hook.url, b"{}", connect_timeout=0.5, read_timeout=0.5, tries=1)
        took = time.monotonic() - start
    assert not got.ok and "timed out" in got.why
    assert took < 2.5


def test_slack_fallback_text_is_cut_too() -> None:
    """A task name of 100,000 characters: the message's fallback text is cut like its blocks (3,000), not sent whole."""
    doc = slack_message({"task": "x" * 100_000, "kind": "flaky", "from_state": "stable", "to_state": "flaky",
                         "evidence": "e", "run": "r", "at": "x", "id": 1})
    assert len(doc["text"]) <= 3000 and doc["text"].startswith("flaketui: xxx") and doc["text"].endswith("…")
