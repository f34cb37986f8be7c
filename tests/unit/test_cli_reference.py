"""The CLI reference page (docs/cli.md) is the commands' own --help, written by scripts/cli_reference.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_page_is_the_generated_one() -> None:
    """docs/cli.md equals what scripts/cli_reference.py writes from --help (rerun it after a CLI change)."""
    script = _script()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == script.page(), (
        "docs/cli.md is stale: run .venv/bin/python scripts/cli_reference.py")


def test_every_option_of_every_command_is_listed() -> None:
    """Each option a command takes (its longest spelling) appears on the page, so none is missing by construction."""
    script = _script()
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for path, cmd, ctx in script.commands():
        assert f"## `flaketui {path}`" in text
        for param in cmd.get_params(ctx):
            if getattr(param, "opts", None) and param.param_type_name == "option":
                assert max(param.opts, key=len) in text, (path, param.opts)
