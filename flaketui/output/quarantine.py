"""Quarantine lists for CI: a run's flaky tasks as JUnit XML, a JSON list, or ids one per line.

The JUnit XML follows Maven Surefire's report schema (``surefire-test-report-3.0.xsd``),
which the Jenkins JUnit plugin, GitLab and most CI test-report readers ingest:
one ``<testsuite>`` per run, one ``<testcase>`` per task. A quarantined flaky task
passes with a ``<flakyFailure>`` (Surefire's mark for a test that failed some runs
and passed others, which Jenkins counts as flaky), its figures in the message;
a task that failed every trial has a ``<failure>``; a task with only errored trials
is ``<skipped>``. Every string read from a log (run and task names) is data: the
XML is built with ElementTree (which escapes markup) and characters XML 1.0 cannot
hold, or that a terminal would act on, are written as ``\\xNN``.

No Textual, no Rich: CI runs this headless.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from flaketui.sanitize import visible
from flaketui.stats.estimators import FLAKY
from flaketui.stats.suite import TaskStats

_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class QuarantineEntry:
    """One task of a run, with the figures that put it in quarantine (or not)."""

    run: str
    task: str
    n: int
    passes: int
    errored: int
    p_hat: float
    p_hat_ci: tuple[float, float]
    flakiness: float
    status: str
    """The task's class (:func:`flaketui.stats.classes.evidence_classes`): ``flaky``, ``undetermined``,
    ``stable-pass``, ``stable-fail``, ``unrepeated`` (one trial) or ``no-trials``."""

    @property
    def never_passed(self) -> bool:
        """It has non-errored trials and passed none (stable-fail, or a single trial that failed)."""
        return self.n > 0 and self.passes == 0
    quarantined: bool


@dataclass(frozen=True)
class QuarantineList:
    """Every task of one run; ``quarantined`` marks the flaky ones to keep out of the gate.

    Kept as the run's statistics and a mask: the entries are made when asked for, only the
    quarantined ones for ``json`` and ``ids`` (a million-task run made a million entries
    to list its flaky tenth, 1.7 s)."""

    run: str
    max_flakiness: float | None
    stats: TaskStats
    mask: np.ndarray
    """Which tasks are quarantined."""

    @property
    def entries(self) -> list[QuarantineEntry]:
        return self._entries(np.arange(len(self.stats)))

    @property
    def quarantined(self) -> list[QuarantineEntry]:
        return self._entries(np.flatnonzero(self.mask))

    @property
    def failures(self) -> int:
        """Tasks that never passed (stable-fail, or unrepeated with its one trial failed)."""
        return int(np.count_nonzero((self.stats.n > 0) & (self.stats.passes == 0)))

    @property
    def without_trials(self) -> int:
        return int(np.count_nonzero(self.stats.n == 0))

    def _entries(self, rows: np.ndarray) -> list[QuarantineEntry]:
        st = self.stats
        pick = rows.tolist()
        return list(map(
            QuarantineEntry, repeat(st.run), map(st.tasks.__getitem__, pick), st.n[rows].tolist(),
            st.passes[rows].tolist(), st.errored[rows].tolist(), st.p_hat[rows].tolist(),
            zip(st.p_hat_ci.low[rows].tolist(), st.p_hat_ci.high[rows].tolist(), strict=True),
            st.flakiness[rows].tolist(), map(st.classes.__getitem__, pick), self.mask[rows].tolist()))


def quarantine_list(stats: TaskStats, max_flakiness: float | None = None) -> QuarantineList:
    """The run's tasks; those that both passed and failed (flakiness above ``max_flakiness`` when
    given) quarantined.

    Without a cap every task that both passed and failed (``mixed``) is quarantined, whatever its
    class: a task that fails now and then breaks CI runs now and then, shown flaky or not; with
    one, only those whose flakiness 4·p̂·(1 − p̂) exceeds it (the gate's rule).
    """
    flaky = stats.mixed.copy()
    if max_flakiness is not None:
        flaky &= np.asarray(stats.flakiness, dtype=np.float64) > max_flakiness
    return QuarantineList(stats.run, max_flakiness, stats, flaky)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def quarantine_json(lists: Sequence[QuarantineList]) -> list[dict[str, Any]]:
    """The quarantined tasks of every run, one object each (for ``--format json``)."""
    return [
        {"run": e.run, "task": e.task, "n": e.n, "passes": e.passes, "errored": e.errored,
         "p_hat": _num(e.p_hat), "p_hat_ci": [_num(e.p_hat_ci[0]), _num(e.p_hat_ci[1])],
         "flakiness": _num(e.flakiness)}
        for ql in lists for e in ql.quarantined
    ]


def quarantine_ids(lists: Sequence[QuarantineList]) -> str:
    """Quarantined task ids, one per line, each once (for a harness's task filter).

    A line break, control, bidi or invisible character inside an id is spelled out by
    :func:`flaketui.sanitize.visible` (``\\xNN``, ``\\uNNNN``), so that one line stays one
    id and nothing reaches a terminal raw.
    """
    seen: dict[str, None] = {}
    for ql in lists:
        for e in ql.quarantined:
            seen.setdefault(visible(e.task), None)
    return "".join(f"{t}\n" for t in seen)


def _escape(text: str) -> str:
    """``text`` as XML 1.0 can hold it: characters XML forbids (controls, surrogates,
    U+FFFE/U+FFFF) spelled out; tab and line breaks, which XML keeps, stay."""
    def one(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(one, text)


def _figures(e: QuarantineEntry) -> str:
    low, high = e.p_hat_ci
    text = (f"{e.passes} of {e.n} trials passed: p̂ = {e.p_hat:.3f} [{low:.2f}, {high:.2f}], "
            f"flakiness = {e.flakiness:.3f}")
    return text + (f" ({e.errored} errored)" if e.errored else "")


def _attrs(pairs: Sequence[tuple[str, str]]) -> str:
    """`` name="value"`` for each pair, escaped as :mod:`xml.etree.ElementTree` escapes attributes."""
    return "".join(f' {name}="{_xml_attr(value)}"' for name, value in pairs)


def _xml_attr(text: str) -> str:
    for raw, entity in _ATTR_ENTITIES:
        if raw in text:
            text = text.replace(raw, entity)
    return text


def _xml_text(text: str) -> str:
    for raw, entity in _ATTR_ENTITIES[:3]:
        if raw in text:
            text = text.replace(raw, entity)
    return text


_ATTR_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("\r", "&#13;"),
                  ("\n", "&#10;"), ("\t", "&#09;"))
"""What ElementTree replaces in an attribute, in its order (the first three in text too)."""


def junit_suite(ql: QuarantineList, depth: int) -> Iterator[str]:
    """One run as a Surefire-schema ``<testsuite>`` at ``depth`` (two spaces a level), as
    ``ElementTree.indent`` then ``tostring`` lay it out, a few thousand test cases a piece
    (ElementTree built 3 million elements for a million tasks: 13 s and 1.9 GB)."""
    pad = "  " * depth
    yield (f"{pad}<testsuite" + _attrs([
        ("name", _escape(ql.run)), ("tests", str(len(ql.stats))), ("failures", str(ql.failures)),
        ("errors", "0"), ("skipped", str(ql.without_trials)), ("time", "0")]) + ">\n")
    cap = "" if ql.max_flakiness is None else f"{ql.max_flakiness:g}"
    yield (f"{pad}  <properties>\n"
           f"{pad}    <property" + _attrs([("name", "flaketui.quarantined"), ("value", str(int(ql.mask.sum())))])
           + " />\n"
           f"{pad}    <property" + _attrs([("name", "flaketui.max_flakiness"), ("value", cap)]) + " />\n"
           f"{pad}  </properties>\n")
    classname = _xml_attr(_escape(ql.run))
    rows = np.arange(len(ql.stats))
    for start in range(0, rows.size, JUNIT_ROWS):
        out = []
        for e in ql._entries(rows[start:start + JUNIT_ROWS]):
            figures = _figures(e)
            out.append(f'{pad}  <testcase name="{_xml_attr(_escape(e.task))}" classname="{classname}" time="0">\n')
            if e.never_passed:
                out.append(f"{pad}    <failure" + _attrs([("message", figures), ("type", e.status)]) + " />\n")
            elif e.quarantined:
                out.append(f"{pad}    <flakyFailure" + _attrs([("message", f"flaky: {figures}"), ("type", FLAKY)])
                           + f">\n{pad}      <stackTrace>{_xml_text(f'flaky: {figures}')}</stackTrace>\n"
                           f"{pad}    </flakyFailure>\n")
            elif e.n == 0:
                out.append(f"{pad}    <skipped"
                           + _attrs([("message", f"no non-errored trial ({e.errored} errored)")]) + " />\n")
            out.append(f"{pad}    <system-out>{_xml_text(figures)}</system-out>\n{pad}  </testcase>\n")
        yield "".join(out)
    yield f"{pad}</testsuite>"


JUNIT_ROWS = 4096
"""Test cases written a piece."""


def junit_chunks(lists: Sequence[QuarantineList]) -> Iterator[str]:
    """UTF-8 JUnit XML text: a ``<testsuite>`` for one run, ``<testsuites>`` around several."""
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    if len(lists) == 1:
        yield from junit_suite(lists[0], 0)
    elif not lists:
        yield "<testsuites />"
    else:
        yield "<testsuites>\n"
        for i, ql in enumerate(lists):
            yield from junit_suite(ql, 1)
            yield "\n" if i < len(lists) - 1 else "\n</testsuites>"
    yield "\n"


def junit_xml(lists: Sequence[QuarantineList]) -> bytes:
    """:func:`junit_chunks` as one UTF-8 document."""
    return "".join(junit_chunks(lists)).encode("utf-8")


def history_ids(entries: Sequence[dict[str, Any]]) -> str:
    """``quarantine --from-history --format ids``: each quarantined task id on a line (spelled
    out by :func:`~flaketui.sanitize.visible`, as :func:`quarantine_ids`)."""
    return "".join(f"{visible(e['task'])}\n" for e in entries)


def history_junit_chunks(entries: Sequence[dict[str, Any]]) -> Iterator[str]:
    """``quarantine --from-history --format junit``: one ``<testsuite name="flaketui.history">``,
    a ``<testcase>`` per quarantined task, ``<skipped>`` with who, when, why and the ticket."""
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    yield ("<testsuite" + _attrs([("name", "flaketui.history"), ("tests", str(len(entries))),
                                  ("failures", "0"), ("errors", "0"), ("skipped", str(len(entries))),
                                  ("time", "0")]) + (">\n" if entries else " />\n"))
    if not entries:
        return
    for e in entries:
        why = f"quarantined by {e['who']} at {e['at']}: {e['why']}" + (f" {e['ticket']}" if e["ticket"] else "")
        yield (f'  <testcase name="{_xml_attr(_escape(e["task"]))}" classname="flaketui.history" time="0">\n'
               "    <skipped" + _attrs([("message", _escape(why))]) + " />\n  </testcase>\n")
    yield "</testsuite>\n"
