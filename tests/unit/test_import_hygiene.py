"""The core is reachable without the TUI: loading, stats, traces and model never import Textual or Rich."""

from __future__ import annotations

import subprocess
import sys

CORE = ["flaketui.model", "flaketui.loading", "flaketui.stats", "flaketui.formatting"]


def test_core_imports_no_textual_or_rich() -> None:
    code = (
        "import sys, importlib, pkgutil, flaketui\n"
        f"mods = {CORE!r}\n"
        "for name in ('flaketui.traces', 'flaketui.triage', 'flaketui.review',\n"
        "             'flaketui.stats.planning'):\n"
        "    if importlib.util.find_spec(name) is not None: mods.append(name)\n"
        "for m in mods:\n"
        "    pkg = importlib.import_module(m)\n"
        "    for info in pkgutil.walk_packages(getattr(pkg, '__path__', []), m + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich'))\n"
        "assert not bad, bad\n"
        "print(len(mods))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
