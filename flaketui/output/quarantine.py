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
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flaketui.sanitize import visible
from flaketui.stats.estimators import FLAKY, STABLE_FAIL
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
    """``stable-pass``, ``stable-fail``, ``flaky`` or ``no-trials`` (estimators.classify)."""
    quarantined: bool


@dataclass(frozen=True)
class QuarantineList:
    """Every task of one run; ``quarantined`` marks the flaky ones to keep out of the gate."""

    run: str
    max_flakiness: float | None
    entries: list[QuarantineEntry]

    @property
    def quarantined(self) -> list[QuarantineEntry]:
        return [e for e in self.entries if e.quarantined]


def quarantine_list(stats: TaskStats, max_flakiness: float | None = None) -> QuarantineList:
    """The run's tasks; flaky ones (flakiness above ``max_flakiness`` when given) quarantined.

    Without a cap every task that both passed and failed is quarantined; with
    one, only those whose flakiness 4·p̂·(1 − p̂) exceeds it (the gate's rule).
    """
    entries = []
    for i, task in enumerate(stats.tasks):
        flak = float(stats.flakiness[i])
        status = stats.classes[i]
        if max_flakiness is None:
            quarantined = status == FLAKY
        else:
            quarantined = status == FLAKY and flak > max_flakiness
        entries.append(QuarantineEntry(
            run=stats.run, task=task, n=int(stats.n[i]), passes=int(stats.passes[i]),
            errored=int(stats.errored[i]), p_hat=float(stats.p_hat[i]),
            p_hat_ci=(float(stats.p_hat_ci.low[i]), float(stats.p_hat_ci.high[i])),
            flakiness=flak, status=status, quarantined=quarantined,
        ))
    return QuarantineList(stats.run, max_flakiness, entries)


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


def junit_element(ql: QuarantineList) -> ET.Element:
    """One run as a Surefire-schema ``<testsuite>``."""
    failures = sum(1 for e in ql.entries if e.status == STABLE_FAIL)
    skipped = sum(1 for e in ql.entries if e.n == 0)
    suite = ET.Element("testsuite", {
        "name": _escape(ql.run), "tests": str(len(ql.entries)), "failures": str(failures),
        "errors": "0", "skipped": str(skipped), "time": "0",
    })
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "flaketui.quarantined", "value": str(len(ql.quarantined))})
    cap = "" if ql.max_flakiness is None else f"{ql.max_flakiness:g}"
    ET.SubElement(props, "property", {"name": "flaketui.max_flakiness", "value": cap})
    for e in ql.entries:
        case = ET.SubElement(suite, "testcase", {"name": _escape(e.task), "classname": _escape(e.run), "time": "0"})
        figures = _figures(e)
        if e.status == STABLE_FAIL:
            ET.SubElement(case, "failure", {"message": figures, "type": STABLE_FAIL})
        elif e.quarantined:
            flaky = ET.SubElement(case, "flakyFailure", {"message": f"flaky: {figures}", "type": FLAKY})
            ET.SubElement(flaky, "stackTrace").text = f"flaky: {figures}"
        elif e.n == 0:
            ET.SubElement(case, "skipped", {"message": f"no non-errored trial ({e.errored} errored)"})
        ET.SubElement(case, "system-out").text = figures
    return suite


def junit_xml(lists: Sequence[QuarantineList]) -> bytes:
    """UTF-8 JUnit XML: a ``<testsuite>`` for one run, ``<testsuites>`` around several."""
    if len(lists) == 1:
        root = junit_element(lists[0])
    else:
        root = ET.Element("testsuites")
        root.extend(junit_element(ql) for ql in lists)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
