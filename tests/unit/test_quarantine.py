"""Quarantine lists: JUnit XML in Surefire's report structure, JSON and ids, with hostile task names.

The XML is checked against the rules of Maven Surefire's surefire-test-report-3.0.xsd (the
schema Jenkins' JUnit plugin reads): a <testsuite> with name/tests/errors/skipped/failures,
<testcase> with name and a numeric time, and the children in the schema's order, each
<flakyFailure> with a type and a <stackTrace>. (The schema itself is not vendored here.)
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from flaketui.model import RunOutcomes
from flaketui.output.quarantine import junit_xml, quarantine_ids, quarantine_json, quarantine_list
from flaketui.stats import task_stats

HOSTILE = 'bad <task> & "quotes"\x1b[31m\x00\nline2'
ORDER = ["failure", "rerunFailure", "flakyFailure", "skipped", "error", "rerunError", "flakyError",
         "system-out", "system-err"]
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")


def stats(run: str = "r"):
    counts = {"stable": (12, 12, 0), "flaky": (12, 10, 0), "broken": (12, 0, 0), HOSTILE: (8, 4, 1),
              "errored": (0, 0, 3)}
    tasks = list(counts)
    n = np.array([counts[t][0] for t in tasks])
    c = np.array([counts[t][1] for t in tasks])
    err = np.array([counts[t][2] for t in tasks])
    out = RunOutcomes(run, tasks, n, c, err, [None] * len(tasks), np.arange(int(n.sum())), np.r_[0, np.cumsum(n)])
    return task_stats(out, 1)


def check_suite(suite: ET.Element) -> None:
    assert suite.tag == "testsuite"
    for attr in ("name", "tests", "errors", "skipped", "failures"):
        assert attr in suite.attrib
    assert int(suite.get("tests")) == len(suite.findall("testcase"))
    for case in suite.findall("testcase"):
        assert case.get("name") and SUREFIRE_TIME.fullmatch(case.get("time"))
        tags = [child.tag for child in case]
        assert tags == sorted(tags, key=ORDER.index)
        for child in case:
            if child.tag in ("failure", "flakyFailure", "error"):
                assert child.get("type")
            if child.tag == "flakyFailure":
                assert [g.tag for g in child][:1] == ["stackTrace"]


class TestJunit:
    def test_one_run_is_a_surefire_testsuite(self) -> None:
        """One run is a Surefire-style testsuite of skipped tests."""
        data = junit_xml([quarantine_list(stats())])
        root = ET.fromstring(data)
        check_suite(root)
        cases = {c.get("name"): c for c in root.findall("testcase")}
        assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("5", "1", "1")
        flaky = cases["flaky"].find("flakyFailure")
        assert flaky is not None and flaky.get("type") == "flaky"
        assert "10 of 12 trials passed: p̂ = 0.833 [0.55, 0.95], flakiness = 0.556" in flaky.get("message")
        assert cases["broken"].find("failure") is not None and cases["stable"].find("flakyFailure") is None
        assert cases["errored"].find("skipped") is not None

    def test_hostile_names_are_escaped_data(self) -> None:
        """Hostile names are escaped data in the XML."""
        data = junit_xml([quarantine_list(stats(run="run\x07<x>"))])
        assert b"\x1b" not in data and b"\x00" not in data and b"\x07" not in data
        root = ET.fromstring(data)  # well-formed despite markup and control characters
        names = [c.get("name") for c in root.findall("testcase")]
        assert 'bad <task> & "quotes"\\x1b[31m\\x00\nline2' in names
        assert root.get("name") == "run\\x07<x>"
        assert b"&lt;task&gt; &amp; &quot;quotes&quot;" in data

    def test_max_flakiness_caps_the_quarantine(self) -> None:
        """--max-flakiness caps the quarantine."""
        ql = quarantine_list(stats(), max_flakiness=0.9)
        # flakiness 4·p̂·(1 − p̂): 10/12 → 0.556, 4/8 → 1.0
        assert [e.task for e in ql.quarantined] == [HOSTILE]
        root = ET.fromstring(junit_xml([ql]))
        cases = {c.get("name"): c for c in root.findall("testcase")}
        assert cases["flaky"].find("flakyFailure") is None

    def test_several_runs_are_testsuites(self) -> None:
        """Several runs are testsuites of one testsuites element."""
        root = ET.fromstring(junit_xml([quarantine_list(stats("a")), quarantine_list(stats("b"))]))
        assert root.tag == "testsuites" and [s.get("name") for s in root] == ["a", "b"]
        for suite in root:
            check_suite(suite)


class TestListsAndIds:
    def test_json(self) -> None:
        """The quarantine JSON lists each task with its figures."""
        rows = quarantine_json([quarantine_list(stats())])
        assert [r["task"] for r in rows] == ["flaky", HOSTILE]
        assert rows[0]["flakiness"] == pytest.approx(4 * (10 / 12) * (2 / 12)) and rows[1]["errored"] == 1

    def test_ids_one_per_line(self) -> None:
        """The ids are one per line, hostile ones made visible."""
        text = quarantine_ids([quarantine_list(stats("a")), quarantine_list(stats("b"))])
        assert text.splitlines() == ["flaky", 'bad <task> & "quotes"\\x1b[31m\\x00\\x0aline2']


def test_no_textual_or_rich() -> None:
    """The quarantine output imports neither Textual, Rich nor scipy."""
    code = ("import sys, flaketui.output.quarantine\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'scipy')]")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def element_tree_junit(lists) -> bytes:  # type: ignore[no-untyped-def]
    """The JUnit document as ElementTree built it before it was written in pieces (the reference)."""
    from flaketui.output.quarantine import FLAKY, _escape, _figures

    def suite_of(ql):  # type: ignore[no-untyped-def]
        suite = ET.Element("testsuite", {
            "name": _escape(ql.run), "tests": str(len(ql.entries)), "failures": str(ql.failures),
            "errors": "0", "skipped": str(ql.without_trials), "time": "0"})
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", {"name": "flaketui.quarantined", "value": str(len(ql.quarantined))})
        cap = "" if ql.max_flakiness is None else f"{ql.max_flakiness:g}"
        ET.SubElement(props, "property", {"name": "flaketui.max_flakiness", "value": cap})
        for e in ql.entries:
            case = ET.SubElement(suite, "testcase", {"name": _escape(e.task), "classname": _escape(e.run), "time": "0"})
            figures = _figures(e)
            if e.n > 0 and e.passes == 0:  # stable-fail, or one trial that failed (unrepeated)
                ET.SubElement(case, "failure", {"message": figures, "type": e.status})
            elif e.quarantined:
                flaky = ET.SubElement(case, "flakyFailure", {"message": f"flaky: {figures}", "type": FLAKY})
                ET.SubElement(flaky, "stackTrace").text = f"flaky: {figures}"
            elif e.n == 0:
                ET.SubElement(case, "skipped", {"message": f"no non-errored trial ({e.errored} errored)"})
            ET.SubElement(case, "system-out").text = figures
        return suite

    if len(lists) == 1:
        root = suite_of(lists[0])
    else:
        root = ET.Element("testsuites")
        root.extend(suite_of(ql) for ql in lists)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


@pytest.mark.parametrize("runs", [["r"], ["r", 'run "b"\t<2>\r'], ["a", "b", "c"], []])
@pytest.mark.parametrize("cap", [None, 0.5])
def test_junit_written_in_pieces_is_element_trees_document(runs: list[str], cap: float | None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile task and run names (markup, quotes, tabs, controls, NUL), every kind of test case,
    one run or several, pieces of 2 test cases: the bytes ElementTree wrote."""
    from flaketui.output import quarantine

    monkeypatch.setattr(quarantine, "JUNIT_ROWS", 2)
    lists = [quarantine_list(stats(run), cap) for run in runs]
    assert junit_xml(lists) == element_tree_junit(lists)
