"""Every command the README and the manual show runs on the README's install.

A clean virtualenv is built exactly as README command 1 does (``python3 -m venv X &&
X/bin/pip install -q -e .``, from this checkout), and every command of every ```sh and
```console block of README.md and docs/*.md is run with that virtualenv's ``flaketui`` first on
PATH, in a folder holding the bundled fixtures as ``fixtures/`` (and as ``runs/``, its runs named
baseline and candidate, as the manual's examples call them), an owners
file and, where it exists, ``../shared``. Each must exit as documented (0, or 1 for a gate that
fails) and never print a traceback. What cannot run here is listed in :data:`SKIPPED` or
:data:`AS_HELP` with the reason; a documented command in neither runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, SHARED

pytestmark = pytest.mark.slow

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(?:sh|console)\n(.*?)^```", re.S | re.M)

SKIPPED = {
    "python3 -m venv": "the install itself: the fixture below runs README command 1's install",
    ".venv/bin/": "a developer's command: needs the test extra (README command 2) or rewrites the repository",
    "pip install": "installs an extra from the package index",
    "s3://": "needs an S3 bucket and the s3 extra (tests/unit/test_remote.py runs it on a moto server)",
    "--scorer model_graded_qa": "needs the inspect extra and Inspect logs graded by model_graded_qa",
    "flaketui history notify": "posts to the webhook in $FLAKETUI_WEBHOOK (tests/unit/test_history_notify.py "
                               "runs it against a local server)",
}
"""Commands not run, by a piece of their text, and why."""

AS_HELP = {
    "flaketui demo": "opens the app: needs a terminal",
    "--tui": "opens the app: needs a terminal",
    "--watch": "follows the logs until Ctrl-C",
    "flaketui runs/": "opens the app: needs a terminal",
}
"""Commands run with ``--help`` added (their options are checked, nothing is opened), and why."""

EXIT = {
    "gate fixtures/oncall-baseline.jsonl -k 5 --min-pass-hat-k 0.7 --max-flakiness 0.2": 1,
    "inspect-ai/log_streaming.eval": 2,
}
"""Commands whose documented exit is not 0: the baseline fails the README's gate; an Inspect
log on the README's install says to install the inspect extra."""

STANDINS = {
    "postgresql://ci@db.example/flaketui": "sqlite:///history.sqlite",
}
"""Services the manual names, replaced by what runs here: the history's PostgreSQL server by a
SQLite file (the README's install has no PostgreSQL driver; tests/unit/test_history_postgres.py
runs a server)."""


@dataclass(frozen=True)
class Documented:
    """One command as a page shows it."""

    page: str
    line: int
    command: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.command}"


def documented() -> list[Documented]:
    """Every command in the pages' ```sh / ```console blocks: continuation lines joined, comments
    dropped; in a block with ``$`` prompts only the prompted lines (the rest is output)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in BLOCK.finditer(text):
            first = text.count("\n", 0, block.start(1)) + 1
            lines = block.group(1).splitlines()
            prompted = any(line.startswith("$ ") for line in lines)
            pending, at = "", first
            for i, line in enumerate(lines):
                if prompted and not pending:
                    if not line.startswith("$ "):
                        continue
                    line = line[2:]
                if not pending:
                    at = first + i
                if line.rstrip().endswith("\\"):
                    pending += line.rstrip()[:-1] + " "
                    continue
                command = _strip_comment(pending + line)
                pending = ""
                if command:
                    found.append(Documented(str(page.relative_to(ROOT)), at, command))
    return found


def _strip_comment(line: str) -> str:
    """``line`` without its trailing ``# comment`` (a ``#`` outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
    return line.strip()


def _first(table: dict[str, object], command: str) -> str | None:
    return next((key for key in table if key in command), None)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README command 1's install, from this checkout, in a clean virtualenv: its bin folder."""
    venv = tmp_path_factory.mktemp("readme") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(ROOT)],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"README command 1's install failed:\n{done.stderr[-3000:]}"
    return venv / "bin"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder like the repository's root for the commands: fixtures/, runs/ (the fixtures as two
    runs named baseline and candidate), an OWNERS file, and ../shared where this machine has it."""
    top = tmp_path_factory.mktemp("docs")
    work = top / "work"
    shutil.copytree(FIXTURES, work / "fixtures")
    (work / "runs").mkdir()
    for name in ("baseline", "candidate"):
        text = (FIXTURES / f"oncall-{name}.jsonl").read_text(encoding="utf-8")
        (work / "runs" / f"{name}.jsonl").write_text(text.replace(f'"run": "oncall-{name}"', f'"run": "{name}"'),
                                                     encoding="utf-8")
    (work / "OWNERS").write_text("* @oncall\nsearch* @retrieval\n", encoding="utf-8")
    if SHARED.is_dir():
        (top / "shared").symlink_to(SHARED)
    return work


COMMANDS = documented()


def test_the_pages_show_commands() -> None:
    """The extraction finds the README's commands (a renamed fence would otherwise run nothing)."""
    shown = [c.command for c in COMMANDS if c.page == "README.md"]
    assert any(c.startswith("flaketui report fixtures/") for c in shown)
    assert any(c.startswith("flaketui gate ") for c in shown)


@pytest.mark.parametrize("doc", COMMANDS, ids=str)
def test_documented_command_runs(doc: Documented, install: Path, workdir: Path) -> None:
    """The command exits as documented (0; 1 for a failing gate) on the README's install, without a traceback."""
    skip = _first(SKIPPED, doc.command)
    if skip:
        pytest.skip(SKIPPED[skip])
    if "../shared" in doc.command and not SHARED.is_dir():
        pytest.skip("../shared is not on this machine")
    command = doc.command
    for service, standin in STANDINS.items():
        command = command.replace(service, standin)
    if _first(AS_HELP, command):
        command = re.sub(r"\s*(>.*)?$", " --help", command, count=1)
    env = {**os.environ, "PATH": f"{install}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(workdir.parent / "home"), "COLUMNS": "120"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("FLAKETUI_HISTORY", None)
    env["XDG_DATA_HOME"] = str(workdir.parent / "home" / "data")
    done = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    want = EXIT.get(_first(EXIT, command) or "", 0)
    assert "Traceback (most recent call last)" not in done.stderr + done.stdout, f"{doc}\n{done.stderr[-3000:]}"
    assert done.returncode == want, f"{doc}: exit {done.returncode}, documented {want}\n{done.stderr[-2000:]}"
