"""Strings from logs and sidecars made safe to show: no control character reaches a terminal.

A task name, run name, trace step, note or file name comes from whoever wrote the log.
Written to a terminal as it is, ``ESC ]52;…`` writes the clipboard, ``ESC ]0;…`` sets the
window title, ``ESC [2J`` clears the screen, and right-to-left overrides make text read
other than it is. :func:`visible` spells each such character out (``\\x1b``, ``\\u202e``)
instead, so it is seen and never acted on; every human-readable output (the app, tables,
Markdown, CSV, error messages) passes log strings through it. JSON needs no help: its
encoders escape control characters themselves.

:func:`csv_cell` also applies OWASP's CSV-injection rule: a cell that starts with ``=``,
``+``, ``-``, ``@``, tab or carriage return is read as a formula by spreadsheets, so it
gets a leading ``'``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

_BIDI_AND_INVISIBLE = (
    [0x061C, 0x115F, 0x1160, 0x180E, 0x2028, 0x2029, 0x3164, 0xFEFF, 0xFFA0]
    + list(range(0x200B, 0x2010))  # zero-width space/joiners, LRM/RLM
    + list(range(0x202A, 0x202F))  # bidi embeddings and overrides
    + list(range(0x2060, 0x2070))  # word joiner, invisible operators, bidi isolates
    + list(range(0xFFF9, 0xFFFC))  # interlinear annotations
)
"""Format characters that reorder or hide text (Trojan Source, CVE-2021-42574)."""


def _escape(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_TABLE: dict[int, str] = {c: _escape(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_TABLE.update({c: _escape(c) for c in _BIDI_AND_INVISIBLE})
_MULTILINE = {k: v for k, v in _TABLE.items() if chr(k) not in "\n\t"}
_SPELLED = ("Cf", "Cs")
"""Unicode categories spelled out beyond the table: format characters, lone surrogates."""


def visible(text: object, multiline: bool = False) -> str:
    """``text`` (any object: ``str()`` of it) with every control, bidi and invisible
    format character spelled out as ``\\xNN`` / ``\\uNNNN`` / ``\\UNNNNNNNN``.

    ``multiline`` keeps newlines and tabs (trace contents, notes shown in a text pane);
    otherwise they are spelled out too (a name stays on one line). Other Unicode format
    characters (category Cf, e.g. soft hyphens, tag characters) and lone surrogates (Cs,
    which no terminal encoding can write) are spelled out as well.
    """
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() and s.isascii():  # the common case: nothing to do
        return s
    out = s.translate(_MULTILINE if multiline else _TABLE)
    if any(unicodedata.category(ch) in _SPELLED for ch in out):
        out = "".join(_escape(ord(ch)) if unicodedata.category(ch) in _SPELLED else ch for ch in out)
    return out


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: object) -> str:
    """A text cell for CSV: :func:`visible`, and a leading ``'`` when a spreadsheet would read
    it as a formula (OWASP, "CSV Injection"). Only for text from logs: numbers are written as
    numbers (``-0.5`` stays)."""
    s = text if isinstance(text, str) else str(text)
    prefix = "'" if s.startswith(_FORMULA_STARTS) else ""
    return prefix + visible(s)


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_SECRET_QUERY_WORDS = frozenset({"signature", "sig", "token", "key", "credential", "secret", "password",
                                 "passwd", "pwd"})
"""A query parameter is a secret when its name, lower-cased, is one of these words or ends
with one after ``-``, ``_`` or ``.`` (``X-Amz-Signature``, ``X-Amz-Credential``,
``X-Amz-Security-Token``, ``X-Goog-Signature``, Azure SAS ``sig``, ``access_token``,
``api_key``)."""
MASK = "***"
"""What a masked secret reads as."""


def _secret_name(name: str) -> bool:
    words = re.split(r"[-_.]", unquote(name).lower())
    return words[-1] in _SECRET_QUERY_WORDS or unquote(name).lower() in _SECRET_QUERY_WORDS


def _mask_one(url: str) -> str:
    scheme, rest = url.split("://", 1)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:  # user:password@host, or a token as the user name: all of it is a secret
        authority = MASK + "@" + authority.rsplit("@", 1)[1]
    query_at = tail.find("?")
    if query_at >= 0:
        fragment_at = tail.find("#", query_at)
        end = len(tail) if fragment_at < 0 else fragment_at
        pairs = tail[query_at + 1:end].split("&")
        masked = [p.split("=", 1)[0] + "=" + MASK if "=" in p and _secret_name(p.split("=", 1)[0]) else p
                  for p in pairs]
        tail = tail[:query_at + 1] + "&".join(masked) + tail[end:]
    return f"{scheme}://{authority}{tail}"


def mask_url(text: object) -> str:
    """``text`` with every URL in it masked: the ``user:password@`` part (any user info) and
    the value of every secret query parameter (a presigned URL's ``X-Amz-Signature``,
    ``X-Amz-Credential``, ``X-Amz-Security-Token``; ``Signature``, ``sig``, ``token``,
    ``key``, …) become ``***``. The one rule for a URL that becomes text: error messages,
    run names, the export's ``source`` column, sidecar names. A URL with no secret in it is
    returned as it is (so ``s3://bucket/runs/a.jsonl`` can be read again from an export,
    credentials coming from the environment); a masked one cannot be read again."""
    s = text if isinstance(text, str) else str(text)
    if "://" not in s:
        return s
    return _URL_IN_TEXT.sub(lambda m: _mask_one(m.group(0)), s)


_SECRET_PAIR = re.compile(r"(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)=([^\s&'\"<>`;]+)")
_SECRET_FLAG = re.compile(r"--?([A-Za-z0-9_.-]+)")
MAX_DEPTH = 64
"""How deep :func:`mask_secrets` walks nested data; what lies deeper is cut (shown as a mark)."""
CUT = "…(cut: nested too deep)"


def mask_text(text: object) -> str:
    """``text`` with every secret masked: each URL as :func:`mask_url` does, and besides, the
    value of every ``NAME=VALUE`` whose name is a secret's (``token=…``, ``password=…``,
    ``api_key=…``: a libpq connection string, an environment assignment, a query outside a
    URL). The one rule for any text that may hold a credential: a command line, a connection
    string, an error message, run metadata."""
    s = mask_url(text)
    if "=" not in s:
        return s
    return _SECRET_PAIR.sub(lambda m: f"{m.group(1)}={MASK}" if _secret_name(m.group(1)) else m.group(0), s)


def mask_command(argv: Sequence[str]) -> str:
    """A command line (``sys.argv``) as one line of text, every secret masked: each argument by
    :func:`mask_text`, the argument after an option whose name is a secret's (``--token X``,
    ``--api-key X``), and a webhook given to one of :data:`SECRET_PATH_OPTIONS` (``--notify URL``,
    ``--notify=URL``) as its origin only (:func:`webhook_origin`). What a page, a report or a
    record says about how it was made."""
    out: list[str] = []
    hide_next = webhook_next = False
    for arg in argv:
        arg = str(arg)
        name, eq, value = arg.partition("=")
        if hide_next:
            out.append(MASK)
        elif webhook_next:
            out.append(webhook_origin(arg))
        elif eq and name in SECRET_PATH_OPTIONS:
            out.append(f"{name}={webhook_origin(value)}")
        else:
            out.append(mask_text(arg))
        flag = None if hide_next or webhook_next else _SECRET_FLAG.fullmatch(arg)
        hide_next = bool(flag and _secret_name(flag.group(1)))
        webhook_next = bool(flag) and arg in SECRET_PATH_OPTIONS
    return " ".join(out)


def cut_deep(value: Any, limit: int = MAX_DEPTH, depth: int = 0) -> tuple[Any, int]:
    """``value`` (JSON-like data) with every list or dict deeper than ``limit`` levels replaced by
    the text :data:`CUT`, and how many were cut. For data from a log written to JSON: orjson
    refuses more than 254 levels (and Python's recursion would end at about 1,000), so a trace
    argument 260 lists deep is shown cut, and said so, instead of failing the output. Iterative
    over the top levels' items: the recursion is at most ``limit`` deep."""
    if not isinstance(value, (dict, list, tuple)):
        return value, 0
    if depth >= limit:
        return CUT, 1
    cut = 0
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            out[k], n = cut_deep(v, limit, depth + 1)
            cut += n
        return out, cut
    items = []
    for v in value:
        v, n = cut_deep(v, limit, depth + 1)
        items.append(v)
        cut += n
    return items, cut


def mask_secrets(value: Any, depth: int = 0) -> Any:
    """``value`` (JSON-like data: run metadata) with every string in it through :func:`mask_text`
    and every value under a secret's key (``{"token": …}``) masked. Walks at most
    :data:`MAX_DEPTH` levels: a deeper container becomes the text :data:`CUT`."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return CUT
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and _secret_name(k) and v is not None
                else mask_secrets(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_secrets(v, depth + 1) for v in value]
    return value


_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]",
                           "&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;"})


def markdown_text(text: object, multiline: bool = False) -> str:
    """A log string as Markdown text, in a table cell, a heading or a line: :func:`visible`, then
    every character GitHub-flavoured Markdown reads as markup escaped: ``\\`` ``|`` `````
    ``*`` ``[`` ``]`` by a backslash (CommonMark, "Backslash escapes": any ASCII punctuation may
    be escaped), ``&`` ``<`` ``>`` as entities (so no raw HTML, ``</details>`` or ``<img>``, and no
    autolink ``<https://…>``), ``@`` as ``&#64;`` (a task named ``@org/team`` mentions no one in a
    pull-request comment). A log's ``[Approve PR](https://…)`` is text, not a link. The one
    rule of every Markdown writer (report, compare with and without ``--summary``, diff, the
    review, the app's export). ``multiline``: line breaks become ``<br>`` (a cell stays a cell).

    Escaped before :func:`visible` spells characters out, so its ``\\x1b`` reads as it is (a
    backslash before a letter or digit is not an escape in Markdown)."""
    s = text if isinstance(text, str) else str(text)
    if multiline:
        return "<br>".join(visible(line.translate(_MARKDOWN)) for line in s.replace("\r\n", "\n").split("\n"))
    return visible(s.translate(_MARKDOWN))


SECRET_PATH_OPTIONS = ("--notify", "--webhook")
"""The command-line options whose value is a webhook: a URL whose path is its secret."""


def webhook_origin(url: str) -> str:
    """A webhook as it may be printed: its masked origin only (a Slack or Teams webhook's path
    is its secret), ``https://hooks.slack.com/…``; ``(a webhook)`` when no origin can be read."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket: nothing of it is said
        return "(a webhook)"
    origin = mask_url(f"{parts.scheme}://{parts.netloc}") if parts.scheme and parts.netloc else "(a webhook)"
    return visible(origin) + ("/…" if parts.path.strip("/") or parts.query else "")
