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

import unicodedata

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
