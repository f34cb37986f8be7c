"""One way to show a command, a URL or a connection string: every output of every command (the
page, JSON, CSV, Markdown, tables, stderr, the history's run records) masks the secrets planted in
the command line as typed, in the log's run metadata and in a history URL."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from flaketui.sanitize import mask_command, mask_text
from tests.conftest import ROOT
from tests.helpers.cli import run
from tests.helpers.hostile import EVERY_COMMAND, command_line

SECRETS = ["PASSWORD1", "SIG1", "TOK1", "KEY1", "PASS2", "PASSWORD3", "SIG3", "PASSWORD4", "TOK5"]
TB_RUN = ROOT / "tests" / "data" / "terminal_bench" / "20250906_orchestrator_claude-4.1-opus"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A Terminal-Bench run whose run_metadata.json (the fields flaketui keeps as run metadata)
    holds a URL with a password, a presigned signature and a token, an API key and a command
    with a password."""
    folder = tmp_path / "run"
    shutil.copytree(TB_RUN, folder)
    meta_path = folder / "run_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta.update({"model_name": "https://ci:PASSWORD1@data.example/ds?X-Amz-Signature=SIG1&token=TOK1",
                 "dataset_name": "api_key=KEY1", "agent_name": "agent --password=PASS2"})
    meta_path.write_text(json.dumps(meta))
    return folder


@pytest.fixture
def typed(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The command line as typed (what the page's "command" line shows): with a URL holding a
    password and a signature, and a secret option's value."""
    def set_argv(*args: str) -> list[str]:
        argv = [*args, "--sources-root", "https://u:PASSWORD3@h.example/x?X-Amz-Signature=SIG3"]
        monkeypatch.setattr(sys, "argv", ["flaketui", *argv])
        return argv
    return set_argv


def leaked(*texts: str) -> list[str]:
    """The planted secrets found in ``texts``."""
    return [s for s in SECRETS if any(s in t for t in texts)]


def test_masking_functions():
    """mask_command and mask_text hide passwords, signatures, tokens and secret options' values."""
    argv = ["flaketui", "report", "https://u:PASSWORD3@h/x?X-Amz-Signature=SIG3&a=1", "--history",
            "postgresql://ci:PASSWORD4@db/h", "--token", "TOK5", "key=KEY1", "--api-key=TOK1"]
    shown = mask_command(argv)
    assert leaked(shown) == [] and "h/x?X-Amz-Signature=***&a=1" in shown and "db/h" in shown
    assert leaked(mask_text("host=db password=PASS2 user=u")) == []


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown", "html"])
def test_report_masks_every_secret(log, typed, fmt):
    """report in each format: no planted secret in its output (the page's command and metadata)."""
    argv = typed("report", str(log), "--format", fmt)
    code, out, err = run(*argv)
    assert code == 0, err
    assert leaked(out, err) == []
    if fmt == "html":
        assert "--sources-root https://***@h.example/x?X-Amz-Signature=***" in out


@pytest.mark.parametrize("command", [["compare", "--format", "html"], ["diff", "--format", "html"]])
def test_pages_of_compare_and_diff_mask_the_command(log, typed, command, tmp_path):
    """compare's and diff's pages mask the command too (each written with --out)."""
    page = tmp_path / "page.html"
    extra = ["--task", "simple-web-scraper"] if command[0] == "diff" else []
    argv = typed(command[0], str(log), str(log), *command[1:], *extra, "--out", str(page))
    code, out, err = run(*argv)
    assert code in (0, 2), err
    assert leaked(out, err, page.read_text() if page.exists() else "") == []


def test_history_records_and_errors_mask_secrets(log, typed, tmp_path):
    """The history's run records keep the run metadata masked; a history URL's password never
    reaches stderr."""
    db = tmp_path / "h.sqlite"
    code, out, err = run(*typed("history", "record", str(log), "--history", f"sqlite:///{db}"))
    assert code == 0, err
    stored = "".join(str(row) for row in sqlite3.connect(db).execute("SELECT name, meta FROM runs"))
    assert "ds?X-Amz-Signature=***" in stored and leaked(stored, out, err) == []
    code, out, err = run("history", "status", "--format", "json", "--history", f"sqlite:///{db}")
    assert code == 0 and leaked(out, err) == []
    code, out, err = run("history", "status", "--history", "postgresql://ci:PASSWORD4@127.0.0.1:1/h", "--wait", "1")
    assert code == 2 and leaked(out, err) == []
    code, out, err = run("report", str(log), "--record", "--history", "postgresql://ci:PASSWORD4@127.0.0.1:1/h")
    assert code == 2 and leaked(out, err) == []


@pytest.mark.parametrize("command", sorted(EVERY_COMMAND))
def test_every_command_masks_every_secret(log, typed, command, tmp_path):
    """Every command and output format (gate, plan and its emitters, export, triage export,
    quarantine, history …): no planted secret on stdout, stderr or in any file it wrote."""
    out = tmp_path / "out"
    out.mkdir()
    args = command_line(command, log, "simple-web-scraper", out)
    if args[0] == "history" and args[1] == "status":
        run("history", "record", str(log), "--history", f"sqlite:///{out / 'h.sqlite'}")
    status = args[:2] == ["history", "status"]  # reads no log: takes no --sources-root
    code, stdout, stderr = run(*(args if status else typed(*args)))
    assert code in (0, 1, 2) and "No such option" not in stderr, stderr
    written = [p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*") if p.is_file()]
    assert leaked(stdout, stderr, *written) == []


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "html"])
def test_compare_confounds_mask_secrets(tmp_path, fmt):
    """compare's confound line and JSON name each differing field's values with their secrets masked."""
    for name, model in (("a", "https://ci:PASSWORD1@m.example/v1?token=TOK1"), ("b", "m2")):
        rows = [{"task_id": f"t{t}", "trial": j, "passed": (t + j) % 2 == 0, "model": model,
                 "seed": "api_key=KEY1" if name == "a" else "1"} for t in range(3) for j in range(2)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_args = ["--out", str(tmp_path / "page.html")] if fmt == "html" else []
    code, out, err = run("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--format", fmt, *out_args)
    assert code == 0, err
    shown = (tmp_path / "page.html").read_text() if fmt == "html" else out
    assert "m.example" in shown and leaked(shown, err) == []
