"""Messages about the history's transitions (a task turned flaky, regressed, was fixed, its
quarantine ended) posted to a webhook: a generic JSON body or one Slack's incoming webhooks take.

Each transition is posted once per history (:meth:`~flaketui.history.store.Store.deliver` claims
it for a lease, posts it holding no lock, then marks it sent: two notifiers never both post it, a
post that failed leaves it for the next time, and one whose notifier died is posted again once
its lease lapses). A post has a connect and a read timeout and a bounded
number of tries, backing off between them. The webhook URL is never stored, and said only as
its masked origin (:func:`shown_webhook`). No Textual, no Rich.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flaketui.sanitize import visible, webhook_origin

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
TRIES = 3
BACKOFF = 0.5
"""Seconds before the second try, doubling each time after."""
FORMATS = ("json", "slack")
TEXT_MAX = 3000
"""The longest a Slack message's fallback ``text`` is made (a section's limit; Slack truncates
the top-level text past 40,000 characters, a name can be longer)."""

TITLES = {"flaky": "turned flaky", "regressed": "regressed", "fixed": "was fixed",
          "quarantine_ended": "left quarantine"}


def shown_webhook(url: str) -> str:
    """The webhook as it may be printed: its masked origin only (a Slack or Teams webhook's
    path is its secret), ``https://hooks.slack.com/…`` (:func:`~flaketui.sanitize.webhook_origin`)."""
    return webhook_origin(url)


def webhook_problem(url: str) -> str | None:
    """Why ``url`` cannot be posted to (one line, the URL masked), or None: an http(s) URL with
    a host and, if any, a port in 1-65535 (urllib raises on a bad port only when it is read)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return f"webhook {shown_webhook(url)}: not a URL (its host or port cannot be read)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"webhook {shown_webhook(url)}: not an http(s) URL"
    if port == 0:
        return f"webhook {shown_webhook(url)}: port 0"
    return None


def message(tr: dict[str, Any], owners: Sequence[str] = ()) -> dict[str, Any]:
    """The generic JSON body of one transition: ``source``, ``kind``, ``task``, ``owner``,
    ``from``, ``to``, ``evidence``, ``run`` (the run that changed it; null for a quarantine
    that ended by date), ``at``, ``id``."""
    return {"source": "flaketui", "kind": tr["kind"], "task": tr["task"], "owner": list(owners),
            "from": tr["from_state"], "to": tr["to_state"] or None, "evidence": tr["evidence"],
            "run": tr.get("run"), "at": tr["at"], "id": tr["id"]}


def slack_escape(text: object) -> str:
    """Text for a Slack message: ``&``, ``<`` and ``>`` as ``&amp;``, ``&lt;``, ``&gt;`` (the
    three characters Slack's text parsing treats as control sequences: links, mentions).

    References
    ----------
    .. [1] Slack, "Formatting text for app surfaces: Escaping text",
       https://api.slack.com/reference/surfaces/formatting#escaping
    """
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(tr: dict[str, Any], owners: Sequence[str] = ()) -> dict[str, Any]:
    """A Slack incoming-webhook body: ``text`` (the notification's fallback) and ``blocks``; every
    string from the history is escaped (:func:`slack_escape`) and sent as ``plain_text``, so a
    task named ``*bold* <!channel>`` is neither bold nor a mention."""
    title = f"{tr['task']} {TITLES.get(tr['kind'], tr['kind'])}"
    lines = [f"Owner: {', '.join(owners) if owners else 'none'}", f"Evidence: {tr['evidence']}"]
    if tr.get("run"):
        lines.append(f"Run: {tr['run']}")
    if tr["from_state"]:
        lines.append(f"State: {tr['from_state']} → {tr['to_state'] or 'back in the gate'}")
    return {
        "text": _escaped_within(f"flaketui: {title}", TEXT_MAX),
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": _escaped_within(title, 150), "emoji": False}},
            {"type": "section", "text": {"type": "plain_text", "text": _escaped_within("\n".join(lines), 3000),
                                         "emoji": False}},
        ],
    }


def _escaped_within(text: str, limit: int) -> str:
    """``text`` escaped (:func:`slack_escape`) in at most ``limit`` characters (Slack's limit on
    a header's or a section's text), cut before escaping so no ``&amp;`` is cut in two."""
    out = slack_escape(text)
    if len(out) <= limit:
        return out
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix whose escaped form fits, and an ellipsis
        mid = (lo + hi + 1) // 2
        if len(slack_escape(text[:mid])) <= limit - 1:
            lo = mid
        else:
            hi = mid - 1
    return slack_escape(text[:lo]) + "…"


def body(tr: dict[str, Any], owners: Sequence[str], fmt: str) -> bytes:
    """The POST body of one transition in ``fmt`` (``json`` or ``slack``)."""
    doc = slack_message(tr, owners) if fmt == "slack" else message(tr, owners)
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Posted:
    """How a post went: ``ok`` (a 2xx answer), and what was said otherwise (one line)."""

    ok: bool
    why: str = ""


def post(url: str, data: bytes, connect_timeout: float = CONNECT_TIMEOUT, read_timeout: float = READ_TIMEOUT,
         tries: int = TRIES, backoff: float = BACKOFF, sleep: Callable[[float], None] = time.sleep) -> Posted:
    """POST ``data`` (JSON) to ``url``, up to ``tries`` times, waiting ``backoff`` seconds
    before the second try and twice as long before each next. A 2xx answer is done; a 4xx
    other than 408 and 429 is not retried (the body or the URL is wrong); a refused or
    stalled connection, a 5xx, 408 or 429 is. The reason says no more of the URL than
    :func:`shown_webhook`."""
    problem = webhook_problem(url)
    if problem is not None:
        return Posted(False, problem)
    parts = urllib.parse.urlsplit(url)
    why = ""
    for attempt in range(tries):
        if attempt:
            sleep(backoff * 2 ** (attempt - 1))
        status, why = _post_once(parts, data, connect_timeout, read_timeout)
        if status is not None and 200 <= status < 300:
            return Posted(True)
        if status is not None and 400 <= status < 500 and status not in (408, 429):
            break
    return Posted(False, f"webhook {shown_webhook(url)}: {why}")


def _post_once(parts: urllib.parse.SplitResult, data: bytes, connect_timeout: float,
               read_timeout: float) -> tuple[int | None, str]:
    """One POST: the status (None: no answer) and a one-line reason."""
    port = parts.port
    cls: Any = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    kwargs: dict[str, Any] = {"context": ssl.create_default_context()} if parts.scheme == "https" else {}
    conn = cls(parts.hostname, port, timeout=connect_timeout, **kwargs)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "flaketui"}
    if parts.username is not None:
        import base64

        cred = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(cred.encode()).decode()
    # The read timeout bounds each wait for bytes; this bounds the whole answer, so a server that
    # drips a byte a second cannot hold the notifier past the claim's lease.
    cut = threading.Event()

    def cut_off() -> None:
        cut.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(connect_timeout + read_timeout, cut_off)
    timer.daemon = True
    timer.start()
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout)
        conn.request("POST", path, body=data, headers=headers)
        resp = conn.getresponse()
        resp.read(65536)
        if cut.is_set():
            return None, "timed out"
        return resp.status, visible(f"answered {resp.status} {resp.reason}")
    except TimeoutError:
        return None, "timed out"
    except (OSError, http.client.HTTPException) as exc:
        if cut.is_set():
            return None, "timed out"
        return None, visible(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}")
    finally:
        timer.cancel()
        conn.close()
