"""``--format html`` without a browser: one self-contained page, its CSP naming the page's own
style and script, log strings escaped, the script's data unable to end its block, ``--out``,
and ``compare --format markdown --summary`` within a GitHub comment."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.output import html as page
from tests.conftest import BASELINE, CANDIDATE


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


class TestPage:
    @pytest.fixture(scope="class")
    def report(self) -> str:
        code, out, err = run("report", str(BASELINE), str(CANDIDATE), "--format", "html")
        assert code == 0, err
        return out

    def test_self_contained(self, report: str) -> None:
        """The HTML page loads nothing from outside."""
        assert report.startswith("<!DOCTYPE html>") and report.rstrip().endswith("</html>")
        assert not re.search(r"\b(src|href)\s*=\s*\"(?!#)", report)  # nothing loaded, no link off the page
        assert "http://" not in report.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in report

    def test_csp_allows_only_the_page_own_style_and_script(self, report: str) -> None:
        """The page's content security policy allows only its own style and script."""
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', report).group(1)
        assert csp.startswith("default-src 'none';")
        style = re.search(r"<style>(.*?)</style>", report, re.S).group(1)
        script = re.findall(r"<script>(.*?)</script>", report, re.S)
        assert len(script) == 1
        assert f"style-src '{sha(style)}'" in csp and f"script-src '{sha(script[0])}'" in csp
        assert "unsafe" not in csp

    def test_summary_plots_table_and_metadata(self, report: str) -> None:
        """The page has the summary, the plots, the table and the metadata."""
        assert report.count("<svg") == 4  # curves and histogram, two runs
        assert "pass@1 = 0.793 [0.44, 0.95]" in report  # CR2 over 5 clusters of unequal size, on the logit scale
        assert report.count("<tr><td>") >= 50  # 25 tasks a run
        assert "0.1.0" in report and "How this page was made" in report
        data = json.loads(re.search(r'id="flaketui-data">(.*?)</script>', report, re.S).group(1))
        assert len(data["tables"]["tasks-0"]["sort"]["p_hat"]) == 25


class TestEscaping:
    def test_esc(self) -> None:
        """esc escapes HTML and control characters."""
        assert page.esc("<img src=x onerror='a'>\x1b]0;t\x07") == \
            "&lt;img src=x onerror=&#x27;a&#x27;&gt;\\x1b]0;t\\x07"

    def test_json_block_cannot_end_its_script(self) -> None:
        """A JSON block cannot end its script element."""
        text = page.json_block({"a": "</script><!--\u2028\u2029&", "n": np.array([1.0, np.nan])})
        assert "<" not in text and ">" not in text and "&" not in text
        assert "\u2028" not in text and "\u2029" not in text
        assert json.loads(text) == {"a": "</script><!--\u2028\u2029&", "n": [1.0, None]}

    def test_hostile_log(self, tmp_path: Path) -> None:
        """A hostile log's payloads appear escaped in the page."""
        from tests.helpers.hostile import PAYLOADS, write_html_hostile_log

        log = write_html_hostile_log(tmp_path / "h.jsonl")
        code, out, err = run("report", str(log), "--format", "html", "--causes")
        assert code == 0, err
        body = out.split("<body>", 1)[1]
        body = body[:body.index('<script type="application/json"')]
        for p in PAYLOADS:
            assert page.esc(p) in body  # shown, as escaped text
        assert "<script" not in body and "onerror=\"" not in body and "<img" not in body
        assert not re.search(r"<[a-z]+[^>]*\son\w+=", out)


class TestOut:
    def test_out_writes_the_file(self, tmp_path: Path) -> None:
        """--out writes the page to the file."""
        out = tmp_path / "c.html"
        code, stdout, err = run("compare", str(BASELINE), str(CANDIDATE), "--format", "html", "--out", str(out))
        assert code == 0, err
        assert stdout == "" and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert "is better at 5%" in out.read_text(encoding="utf-8")

    def test_out_dash_is_stdout(self) -> None:
        """--out - writes the page to stdout."""
        code, stdout, err = run("diff", str(BASELINE), "--task", "searchRunbook", "--format", "html", "--out", "-")
        assert code == 0, err
        assert 'class="dv"' in stdout

    @pytest.mark.parametrize("args", [["report", str(BASELINE), "--format", "json", "--out", "x.html"],
                                      ["report", str(BASELINE), "--format", "html", "--watch"]])
    def test_usage_errors(self, args: list[str]) -> None:
        """Each misuse of --format html or --out is a usage error."""
        assert run(*args)[0] == 2

    def test_missing_folder(self, tmp_path: Path) -> None:
        """--out into a missing folder is one line, exit 2."""
        code, _, err = run("report", str(BASELINE), "--format", "html", "--out", str(tmp_path / "no" / "r.html"))
        assert code == 2 and "does not exist" in err


class TestSummaryMarkdown:
    def test_verdict_first_and_blocks(self) -> None:
        """The Markdown summary puts the verdict first and each section in a details block."""
        code, out, err = run("compare", str(BASELINE), str(CANDIDATE), "--format", "markdown", "--summary")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].startswith("### flaketui:") and "is better at 5%" in lines[2]
        assert out.count("<details>") == out.count("</details>") == 3

    @pytest.mark.slow
    def test_a_big_comparison_fits_a_comment(self, tmp_path: Path) -> None:
        """A big comparison's summary fits a GitHub comment."""
        rng = np.random.default_rng(0)
        paths = []
        for name, p in (("a", 0.5), ("b", 0.6)):
            path = tmp_path / f"{name}.jsonl"
            with path.open("w") as fh:
                for t in range(6000):
                    for trial in range(4):
                        fh.write(json.dumps({"run": name, "task": f"task-<b>|{t}" + "x" * 40, "trial": trial,
                                             "passed": bool(rng.random() < p)}) + "\n")
            paths.append(str(path))
        code, out, err = run("compare", *paths, "--format", "markdown", "--summary")
        assert code == 0, err
        assert len(out) < 65_536
        assert "more not shown" in out and "<b>" not in out


def test_top_cuts_the_table_and_says_so() -> None:
    """--top cuts the page's table and says so."""
    code, out, err = run("report", str(BASELINE), "--format", "html", "--top", "3")
    assert code == 0, err
    table = out[out.index('id="tasks-0"'):out.index("</table>", out.index('id="tasks-0"'))]
    assert table.count("<tr><td>") == 3
    assert "22 more tasks not shown (the 3 flakiest are)" in out
    data = json.loads(re.search(r'id="flaketui-data">(.*?)</script>', out, re.S).group(1))
    assert len(data["tables"]["tasks-0"]["sort"]["p_hat"]) == 3


def test_the_page_says_what_it_covers(tmp_path: Path) -> None:
    """A Harbor job's page has the errored-by-type line, and both plots carry ticks on their x axis."""
    harbor = Path(__file__).resolve().parents[1] / "data" / "harbor"
    out = tmp_path / "page.html"
    code, _, err = run("report", str(harbor), "--format", "html", "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "errored trials (AgentTimeoutError 1, RuntimeError 1) counted by their score" in text
    ticks = re.findall(r'text-anchor="middle">([^<]*)<', text)
    assert {"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"} <= set(ticks)  # the p̂ histogram
    assert {"1", "2"} <= set(ticks)  # the k axis


def test_the_page_names_notes_and_skipped_lines_apart() -> None:
    """Loading's notes are quoted on the page as notes, and skipped lines counted apart from them."""
    from types import SimpleNamespace

    from flaketui.cli.common import loading_lines
    from flaketui.model import Problem

    log = SimpleNamespace(problems=[
        Problem("job/result.json", None, "the job lists 425 trials; 30 are on disk", notice=True),
        Problem("x.jsonl", 3, "not valid JSON (x)")])
    assert loading_lines(log) == ["1 line skipped while loading",
                                  "note: job/result.json: the job lists 425 trials; 30 are on disk"]
    html = "".join(_written(info=page.PageInfo(loading=loading_lines(log))))
    assert "note: job/result.json: the job lists 425 trials; 30 are on disk" in html


def _written(info: page.PageInfo) -> list[str]:
    from flaketui.loading import load_logs
    from flaketui.stats import summarise
    from flaketui.stats.suite import task_stats

    log = load_logs([str(BASELINE)])
    st = task_stats(log.run_outcomes(log.runs[0]), 5)
    parts: list[str] = []
    page.write_report_html(parts.append, 5, [(st, summarise(st))], info=info)
    return parts
