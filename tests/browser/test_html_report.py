"""``--format html`` in a real headless browser: the pages load with no console error, sort,
filter and expand, request nothing, and a hostile log's payloads run none of their script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE, CANDIDATE
from tests.helpers.hostile import MARK, PAYLOADS, write_html_hostile_log

pytestmark = pytest.mark.slow


def page(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(main, [*args, "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output + str(result.exception)
    return out


def open_page(browser: Any, path: Path) -> None:
    browser.get_log("browser")  # drop what an earlier page logged
    browser.get(path.as_uri())


def console_errors(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


def no_requests(browser: Any) -> None:
    """Nothing was fetched: no resource entry, and no element that could fetch."""
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.execute_script(
        "return document.querySelectorAll('img,iframe,link,object,embed,video,audio,source,base,form').length") == 0
    scripts = browser.execute_script(
        "return Array.from(document.scripts).map(s => [s.type, s.src])")
    assert scripts == [["application/json", ""], ["", ""]]


def unmarked(browser: Any) -> None:
    """No payload ran: the title is the page's own, no mark in the DOM, no link off the page."""
    assert browser.title != MARK and browser.title.startswith("flaketui")  # a name in it is text
    assert browser.execute_script("return document.body.dataset.pwned === undefined")
    hrefs = browser.execute_script(
        "return Array.from(document.querySelectorAll('[href]')).map(a => a.getAttribute('href'))")
    assert all(h.startswith("#") for h in hrefs), hrefs
    handlers = browser.execute_script(
        "return Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes))"
        ".filter(a => a.name.startsWith('on')).map(a => a.name)")
    assert handlers == []


def column(browser: Any, table: str, index: int) -> list[str]:
    return browser.execute_script(
        f"return Array.from(document.getElementById('{table}').tBodies[0].rows)"
        f".filter(r => !r.hidden).map(r => r.cells[{index}].textContent)")


class TestReport:
    def test_loads_sorts_filters_and_expands(self, browser: Any, tmp_path: Path) -> None:
        """In Chromium the report page loads without console errors, sorts, filters and expands a task."""
        path = page(tmp_path, "report.html", "report", str(BASELINE), str(CANDIDATE), "--causes")
        open_page(browser, path)
        assert console_errors(browser) == []
        no_requests(browser)
        from selenium.webdriver.common.by import By

        assert column(browser, "tasks-0", 0)[0] == "searchRunbook"  # flakiest first
        header = browser.find_element(By.CSS_SELECTOR, "#tasks-0 th[data-key='p_hat']")
        header.click()  # p̂ sorts largest first
        values = [float(x) for x in column(browser, "tasks-0", 4)]
        assert values == sorted(values, reverse=True)
        assert header.get_attribute("aria-sort") == "descending"
        header.click()
        values = [float(x) for x in column(browser, "tasks-0", 4)]
        assert values == sorted(values) and values[0] == 0.0
        browser.find_element(By.CSS_SELECTOR, "#tasks-0 th[data-key='task']").click()
        names = column(browser, "tasks-0", 0)
        assert names == sorted(names, key=str.lower)
        box = browser.find_element(By.CSS_SELECTOR, "input.filter[data-table='tasks-0']")
        box.send_keys("alert")
        browser.implicitly_wait(0)
        import time

        time.sleep(0.3)
        assert column(browser, "tasks-0", 0) == ["explainAlertRule", "getAlertStatus", "listAlerts", "silenceAlert"]
        details = browser.find_element(By.CSS_SELECTOR, "details#f-0-0")
        assert details.get_attribute("open") is None
        browser.find_element(By.CSS_SELECTOR, "details#f-0-0 > summary").click()
        assert details.get_attribute("open") is not None
        assert "suspected source" in details.text
        assert browser.find_elements(By.CSS_SELECTOR, "details#f-0-0 table.trace tr.dv")  # the divergence
        assert console_errors(browser) == []

    def test_a_link_to_a_flaky_task_opens_its_section(self, browser: Any, tmp_path: Path) -> None:
        """A link to a flaky task opens its section."""
        path = page(tmp_path, "report.html", "report", str(BASELINE))
        open_page(browser, path)
        from selenium.webdriver.common.by import By

        browser.find_element(By.CSS_SELECTOR, "#tasks-0 a[href='#f-0-0']").click()
        assert browser.find_element(By.ID, "f-0-0").get_attribute("open") is not None


class TestCompareAndDiff:
    def test_compare_page(self, browser: Any, tmp_path: Path) -> None:
        """The comparison page loads without console errors."""
        path = page(tmp_path, "compare.html", "compare", str(BASELINE), str(CANDIDATE))
        open_page(browser, path)
        assert console_errors(browser) == []
        no_requests(browser)
        from selenium.webdriver.common.by import By

        assert "is better at 5%" in browser.find_element(By.CSS_SELECTOR, ".verdict").text
        assert column(browser, "flips", 0) == ["summarizeIncident", "searchRunbook"]
        browser.find_element(By.CSS_SELECTOR, "#flips th[data-key='delta']").click()
        assert column(browser, "flips", 0) == ["searchRunbook", "summarizeIncident"]
        browser.find_element(By.CSS_SELECTOR, "details#d-0 > summary").click()
        assert browser.find_element(By.CSS_SELECTOR, "details#d-0 table.trace").is_displayed()

    def test_diff_page(self, browser: Any, tmp_path: Path) -> None:
        """The diff page loads without console errors."""
        path = page(tmp_path, "diff.html", "diff", str(BASELINE), "--task", "searchRunbook")
        open_page(browser, path)
        assert console_errors(browser) == []
        no_requests(browser)
        from selenium.webdriver.common.by import By

        row = browser.find_element(By.CSS_SELECTOR, "table.trace tr.dv")
        assert "queryMetrics" in row.text and "restartService" in row.text


class TestHostileLog:
    @pytest.fixture
    def log(self, tmp_path: Path) -> Path:
        return write_html_hostile_log(tmp_path / "hostile.jsonl")

    @pytest.mark.parametrize("command", ["report", "compare", "diff"])
    def test_no_payload_runs(self, browser: Any, tmp_path: Path, log: Path, command: str) -> None:
        """No payload of a hostile log runs script in any page."""
        runs = [f"run-{PAYLOADS[0]}", f"base-{PAYLOADS[1]}"]
        args = {"report": ["report", str(log), "--causes"],
                "compare": ["compare", str(log), "--runs", *runs],
                "diff": ["diff", str(log), "--task", PAYLOADS[1], "--runs", runs[0], runs[0]]}[command]
        if command == "diff":
            args = ["diff", str(log), "--task", PAYLOADS[1], "--run-field", "run"]
        path = page(tmp_path, f"{command}.html", *args)
        open_page(browser, path)
        from selenium.webdriver.common.by import By

        for summary in browser.find_elements(By.CSS_SELECTOR, "details > summary"):
            browser.execute_script("arguments[0].scrollIntoView()", summary)
            summary.click()  # every section open: its traces rendered
        unmarked(browser)
        no_requests(browser)
        assert console_errors(browser) == []
        text = browser.find_element(By.TAG_NAME, "body").text
        assert "<script>document.title='pwned'</script>" in text  # shown as text
        if command != "diff":
            names = column(browser, "tasks-0" if command == "report" else "flips", 0)
            assert "javascript:document.title='pwned'" in names
