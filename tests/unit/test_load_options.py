"""The load options (``--sources-root``, ``--timeout``, ``--max-bytes``, ``--no-cache``,
``--scheduler``, ``--problems``) travel with a load, never through a module global a face sets:
a command builds them and hands them to its loads, the loader puts them in effect for the load
(and for the trials the log reads back later), and nothing is left behind for the next load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.loading.options import LoadOptions, current, in_effect

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "fixtures" / "oncall-baseline.jsonl"


def test_a_command_hands_its_options_to_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """report's load options are built from its flags and given to load_logs, the defaults otherwise."""
    import flaketui.loading

    seen: list[Any] = []
    real = flaketui.loading.load_logs

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("options"))
        return real(*args, **kwargs)

    monkeypatch.setattr(flaketui.loading, "load_logs", spy)
    args = ["report", str(BASELINE), "--format", "json"]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert CliRunner().invoke(main, [*args, "--no-cache", "--timeout", "5", "--max-bytes", "1000",
                                     "--sources-root", "/data", "--problems"]).exit_code == 0
    assert seen == [LoadOptions(), LoadOptions(sources_roots=("/data",), timeout=5.0, max_bytes=1000,
                                               use_cache=False, show_all_problems=True)]


def test_a_load_leaves_nothing_behind_for_the_next() -> None:
    """After a command with every load flag, the options in effect are the defaults again."""
    result = CliRunner().invoke(main, ["report", str(BASELINE), "--format", "json", "--no-cache", "--timeout", "5",
                                       "--sources-root", "/data"])
    assert result.exit_code == 0
    assert current() == LoadOptions()
    assert load_logs([BASELINE]).load_options == LoadOptions()


def test_the_options_are_in_effect_during_the_load_and_kept_for_reading_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What sits deep in a load (and a trial read back later) sees the load's own options."""
    from flaketui.loading import loader

    given = LoadOptions(timeout=7.0, sources_roots=("/x",))
    during: list[LoadOptions] = []
    expand = loader.expand_paths
    monkeypatch.setattr(loader, "expand_paths", lambda *a, **kw: during.append(current()) or expand(*a, **kw))
    log = load_logs([BASELINE], options=given, use_cache=False)
    assert during == [given] and log.load_options == given and current() == LoadOptions()
    from flaketui.loading.formats import base

    inside: list[LoadOptions] = []
    read = base.JsonSpans.read_record
    monkeypatch.setattr(base.JsonSpans, "read_record", lambda *a: inside.append(current()) or read(*a))
    with in_effect(LoadOptions(timeout=1.0)):  # another load under way in this thread: not this log's
        read_trial(log, 0)
    assert inside == [given]
