"""The manual builds without a warning, the README stays a short front page, and the benchmark
tables land only between their markers.

``mkdocs build --strict`` turns every broken link, missing anchor and page left out of the nav
into an error, so a section renamed in one page cannot silently orphan a link in another. The
README's first block is what CI runs literally (``.ci/run``), so it is pinned byte for byte.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SETUP = """```sh
# 1. Install and open the app on the bundled on-call fixtures
python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/flaketui demo

# 2. Install the test extras and run the tests
python3 -m venv .venv && .venv/bin/pip install -q -e '.[test,inspect]' && .venv/bin/python -m pytest -q
```
"""
"""The two set-up commands, exactly as CI runs them: one runs the demo, two the tests."""


def load_docs_tables():
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "benchmarks" / "docs_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """The manual builds with mkdocs --strict."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (the test extra has them)")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (site / "index.html").is_file() and (site / "calibration" / "index.html").is_file()
    assert (site / "screenshots" / "tasks.svg").is_file()  # the tour's pictures reach the site


def test_readme_is_a_short_front_page() -> None:
    """The README stays a front page of at most 300 lines."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "the README is a front page: move the detail into docs/"
    title, rest = text.split("\n\n", 1)
    assert title.startswith("# flaketui")
    assert rest.startswith(SETUP), "the README must start with the two set-up commands, unchanged"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv"))
    assert command in SETUP  # CI runs the README's command 2 as it is written


def test_readme_links_resolve() -> None:
    """The README is read on the forge, outside the MkDocs build: its relative links and
    pictures are checked here instead."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing


def test_generated_sections_are_replaced_between_markers(tmp_path: Path) -> None:
    """Generated sections are replaced between their markers."""
    tables = load_docs_tables()
    page = tmp_path / "page.md"
    page.write_text("# P\n\nbefore\n\n<!-- generated: demo -->\nold figures\n<!-- end generated: demo -->\n\nafter\n",
                    encoding="utf-8")
    table = tables.markdown_table(("what", "ms"), [("sort", 12), ("a|b", 3)])
    tables.write_section(page, "demo", table, command="bench_demo.py --docs")
    text = page.read_text(encoding="utf-8")
    assert "old figures" not in text and text.startswith("# P\n\nbefore\n") and text.endswith("\n\nafter\n")
    assert "| what | ms |\n|---|---:|\n| sort | 12 |\n| a\\|b | 3 |" in text
    assert "*Written by `bench_demo.py --docs` on " in text
    tables.write_section(page, "demo", "second", command="x")  # a rerun replaces, never appends
    assert page.read_text(encoding="utf-8").count("<!-- generated: demo -->") == 1
    assert "sort" not in page.read_text(encoding="utf-8")
    with pytest.raises(KeyError):
        tables.write_section(page, "shapes", "figures")  # no markers: an error, never an append


def test_every_generated_section_is_closed() -> None:
    """Each page's sections open and close once, so write_section can find every one."""
    for page in (ROOT / "docs").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        opened = re.findall(r"<!-- generated: ([a-z0-9-]+) -->", text)
        closed = re.findall(r"<!-- end generated: ([a-z0-9-]+) -->", text)
        assert opened == closed and len(set(opened)) == len(opened), page.name
