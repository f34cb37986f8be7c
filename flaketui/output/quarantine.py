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
from itertools import repeat
from typing import Any

import numpy as np

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
        """Tasks that never passed (stable-fail)."""
        return int(np.count_nonzero((self.stats.passes == 0) & (self.stats.n > 0)))

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
    """The run's tasks; flaky ones (flakiness above ``max_flakiness`` when given) quarantined.

    Without a cap every task that both passed and failed is quarantined; with
    one, only those whose flakiness 4·p̂·(1 − p̂) exceeds it (the gate's rule).
    """
    flaky = (stats.passes > 0) & (stats.passes < stats.n)  # estimators.classify's flaky
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


def junit_element(ql: QuarantineList) -> ET.Element:
    """One run as a Surefire-schema ``<testsuite>``."""
    failures, skipped = ql.failures, ql.without_trials
    suite = ET.Element("testsuite", {
        "name": _escape(ql.run), "tests": str(len(ql.entries)), "failures": str(failures),
        "errors": "0", "skipped": str(skipped), "time": "0",
    })
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "flaketui.quarantined", "value": str(int(ql.mask.sum()))})
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
