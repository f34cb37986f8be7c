"""The core is reachable without the TUI: loading, stats, traces and model never import Textual or Rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CORE = ["flaketui.model", "flaketui.loading", "flaketui.stats", "flaketui.traces", "flaketui.triage",
        "flaketui.history", "flaketui.sanitize", "flaketui.sidecar", "flaketui.output.formatting",
        "flaketui.output.columns", "flaketui.output.quarantine"]


@pytest.mark.slow
def test_core_imports_no_textual_or_rich() -> None:
    """Importing every core module loads neither Textual nor Rich."""
    code = (
        "import sys, importlib, pkgutil, flaketui\n"
        f"mods = {CORE!r}\n"
        "for m in mods:\n"
        "    pkg = importlib.import_module(m)\n"
        "    for info in pkgutil.walk_packages(getattr(pkg, '__path__', []), m + '.'):\n"
        "        if info.name.endswith('.migrations.env'):\n"
        "            continue  # Alembic's script, run by Alembic with its context, not imported\n"
        "        importlib.import_module(info.name)\n"
        "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich'))\n"
        "assert not bad, bad\n"
        "print(len(mods))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_import_contracts_hold() -> None:
    """The layers and the Textual/Rich ban declared under [tool.importlinter] in pyproject.toml."""
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


def test_no_screen_imports_another() -> None:
    """The contract "Screens open each other by name" (id screens-independent in pyproject.toml)
    is one of those lint-imports checks, and it holds: no screen module imports another."""
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache", "--contract", "screens-independent"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 kept, 0 broken" in proc.stdout


def test_no_import_cycles() -> None:
    """No module of flaketui imports, directly or through others, a module that imports it
    (function-level imports count: a cycle is a cycle even when it is deferred)."""
    import grimp

    graph = grimp.build_graph("flaketui", exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    assert not cycles, cycles


@pytest.mark.slow
def test_commands_import_only_what_they_use(tmp_path: Path) -> None:
    """`--help`, `report`, `compare` and `gate` on a small log start without Textual, and
    `--help` and `report` without scipy, and `report` of JSON Lines without pyarrow or SQLAlchemy
    (measured with ``python -X importtime``)."""
    fixtures = ROOT / "fixtures"
    env = {**__import__("os").environ, "XDG_CACHE_HOME": str(tmp_path)}
    cases = {
        ("--help",): {"textual", "scipy", "pyarrow", "distributed", "fsspec"},
        ("report", str(fixtures / "oncall-baseline.jsonl"), "--format", "json"): {"textual", "scipy", "pyarrow",
                                                                                  "sqlalchemy"},
        ("compare", str(fixtures / "oncall-baseline.jsonl"), str(fixtures / "oncall-candidate.jsonl"),
         "--format", "json"): {"textual"},
        ("gate", str(fixtures / "oncall-baseline.jsonl"), "--max-flakiness", "0.9"): {"textual"},
    }
    for args, banned in cases.items():
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "flaketui", *args],
                              capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        assert not imported & banned, (args, sorted(imported & banned))
