"""One way to write a file: every output flaketui writes (pages, exports, plans, screenshots,
triage notes, the SQLite history it creates) goes through :mod:`flaketui.safefile`, so a link
planted at its final name or at any temporary name it could take is never written through."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from flaketui import safefile
from tests.conftest import BASELINE, CANDIDATE, ROOT
from tests.helpers.cli import run

PRECIOUS = b"do not overwrite\n"


def victim(tmp_path: Path) -> Path:
    """A file a planted link points at; it must keep its bytes."""
    target = tmp_path / "victim" / "precious.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(PRECIOUS)
    return target


WRITERS = {
    "report page": lambda out: ["report", str(BASELINE), "--format", "html", "--out", str(out)],
    "compare page": lambda out: ["compare", str(BASELINE), str(CANDIDATE), "--format", "html", "--out", str(out)],
    "diff page": lambda out: ["diff", str(BASELINE), "--task", "searchRunbook", "--format", "html",
                              "--out", str(out)],
    "export csv": lambda out: ["export", str(BASELINE), "--format", "csv", "--out", str(out)],
    "plan": lambda out: ["plan", str(BASELINE), "--out", str(out)],
    "plan emit": lambda out: ["plan", str(BASELINE), "--emit", "harbor", "--out", str(out)],
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_links_at_final_and_temporary_names(tmp_path: Path, writer: str, monkeypatch: pytest.MonkeyPatch):
    """A link at the output's name is replaced (its target untouched); links at the old predictable
    temporary names (``.OUT.PID.tmp``, ``.OUT.tmp-PID``) and at every name the temporary file is
    given are never opened."""
    target = victim(tmp_path)
    out = tmp_path / "out.file"
    out.symlink_to(target)
    for name in (f".{out.name}.{os.getpid()}.tmp", f".{out.name}.tmp-{os.getpid()}"):
        (tmp_path / name).symlink_to(target)
    made = []
    real = safefile.tempfile.mkstemp

    def planted_mkstemp(*args, **kwargs):  # type: ignore[no-untyped-def]
        """Plant a link at the name mkstemp is about to pick (O_EXCL then picks another)."""
        fd, name = real(*args, **kwargs)
        os.close(fd)
        os.unlink(name)
        os.symlink(target, name)
        made.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(safefile.tempfile, "mkstemp", planted_mkstemp)
    code, _, err = run(*WRITERS[writer](out))
    assert code == 0, err
    assert made, "the output was not written through flaketui.safefile"
    assert target.read_bytes() == PRECIOUS
    assert out.is_file() and not out.is_symlink() and out.stat().st_size > 0


def test_history_database_is_created_only_at_a_plain_name(tmp_path: Path):
    """The SQLite history flaketui creates: a link at its name is refused, its target untouched."""
    pytest.importorskip("sqlalchemy")
    target = victim(tmp_path)
    db = tmp_path / "h.sqlite"
    db.symlink_to(target)
    code, _, err = run("history", "record", str(BASELINE), "--history", f"sqlite:///{db}")
    assert code == 2 and "symbolic link" in err
    assert target.read_bytes() == PRECIOUS


def test_triage_and_screenshot_use_the_one_writer():
    """The triage store, the app's screenshot and the table export import the one writer."""
    for module in ("flaketui/triage/store.py", "flaketui/app/app.py", "flaketui/app/table_export.py",
                   "flaketui/output/trials.py", "flaketui/cli/plan.py", "flaketui/cli/common.py"):
        assert "flaketui.safefile" in (ROOT / module).read_text(), module


ALLOWED = {"flaketui/safefile.py", "flaketui/loading/cache.py", "flaketui/loading/userkey.py"}
"""Modules that create files themselves: the writer, and the index cache and user key (each a
private file made with ``O_EXCL`` under a random name in flaketui's own folder)."""


@pytest.mark.slow
def test_no_module_writes_a_file_by_itself():
    """No module but the writer opens a file for writing (``open(…, "w")``, ``write_text``,
    ``write_bytes``, ``os.open`` with ``O_CREAT``): every output goes through flaketui.safefile."""
    found = []
    for path in sorted((ROOT / "flaketui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            modes = [a.value for a in [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name in ("write_text", "write_bytes") or (name in ("open", "fdopen") and any(
                    set(m) & set("wax+") for m in modes)) or (name == "open" and "O_CREAT" in ast.dump(node)):
                found.append(f"{rel}:{node.lineno}")
    assert found == []
