"""``report --causes``: the suggestion's JSON keys, the cause? column and breakdown, and no trace read without it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from scipy.stats import fisher_exact

from flaketui.cli import main
from flaketui.traces.causes import CAUSES
from tests.conftest import BASELINE


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def task_of(doc: dict, name: str) -> dict:
    return next(t for t in doc["runs"][0]["tasks"] if t["task"] == name)


def test_json_keys_on_fixture() -> None:
    """report --causes's JSON has the documented keys on the fixture."""
    code, out, _ = run("report", BASELINE, "--causes", "--format", "json")
    assert code == 0
    doc = orjson.loads(out)
    task = task_of(doc, "searchRunbook")
    assert task["suspected_cause"] == "tool-nondeterminism"
    assert task["cause_share"] == 1.0
    ev = task["cause_evidence"]
    assert (ev["kind"], ev["step_a"], ev["step_b"]) == ("result", 3, 3)
    assert ev["call"].startswith("searchRunbook(") and ev["a"] != ev["b"]
    fork = task["decisive_fork"]
    assert fork["step"] == 3
    # "Restart… first": 0 of 2 pass, otherwise 10 of 10: Fisher's exact test (scipy) on that table.
    tested = [b for b in fork["branches"] if b["n"] == 2 and b["passes"] == 0]
    assert len(tested) == 1 and fork["rest"] == {"passes": 10, "n": 10}
    expected = fisher_exact([[0, 2], [10, 0]]).pvalue
    assert fork["p_value"] == pytest.approx(expected) and fork["p_value"] == pytest.approx(0.015, abs=5e-4)
    assert doc["runs"][0]["cause_breakdown"] == {"tool-nondeterminism": 1}
    # A stable task gets no suggestion.
    stable = task_of(doc, "listAlerts")
    assert "suspected_cause" not in stable


def test_workers_give_the_same_json() -> None:
    """--workers 2 gives the same JSON as one worker."""
    _, one, _ = run("report", BASELINE, "--causes", "--format", "json")
    _, two, _ = run("report", BASELINE, "--causes", "--workers", "2", "--format", "json")
    assert one == two


def test_without_causes_no_trace_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --causes only an errored trial's record is read back (its reason, for the errored
    trials by kind: ``max_steps=0``), never a trace."""
    import flaketui.loading
    import flaketui.loading.loader

    real = flaketui.loading.loader.read_trial

    def refuse(*args: object, max_steps: int | None = None, **kwargs: object) -> object:
        if max_steps == 0:
            return real(*args, max_steps=0, **kwargs)
        raise AssertionError("a trace was read")

    monkeypatch.setattr(flaketui.loading, "read_trial", refuse)
    monkeypatch.setattr(flaketui.loading.loader, "read_trial", refuse)
    for fmt in ("json", "markdown", "table", "csv"):
        code, out, _ = run("report", BASELINE, "--format", fmt)
        assert code == 0 and "suspected_cause" not in out and "cause?" not in out
    with pytest.raises(AssertionError, match="a trace was read"):
        run("report", BASELINE, "--causes", "--format", "json")


def test_markdown_column_and_breakdown() -> None:
    """Markdown has the cause column and the breakdown."""
    code, out, _ = run("report", BASELINE, "--causes", "--format", "markdown")
    assert code == 0
    assert "mixed tasks by suspected source: tool-nondeterminism 1" in out
    header = next(line for line in out.splitlines() if line.startswith("| task |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[cells.index("class") + 1] == "cause?"
    row = next(line for line in out.splitlines() if line.startswith("| searchRunbook |"))
    assert [c.strip() for c in row.strip("|").split("|")][cells.index("cause?")] == "tool-nondeterminism"
    stable = next(line for line in out.splitlines() if line.startswith("| listAlerts |"))
    assert [c.strip() for c in stable.strip("|").split("|")][cells.index("cause?")] == ""
    assert "- searchRunbook: tool-nondeterminism, 20 of 20 pairs; step 3: searchRunbook(" in out
    assert "decisive fork: when step 3 returns" in out


def test_table_column_and_breakdown() -> None:
    """The table has the cause column and the breakdown."""
    code, out, _ = run("report", BASELINE, "--causes")
    assert code == 0
    assert "mixed tasks by suspected source: tool-nondeterminism 1" in out
    header = next(line for line in out.splitlines() if line.startswith("task "))
    assert "cause?" in header
    row = next(line for line in out.splitlines() if line.startswith("searchRunbook "))
    assert "tool-nondeterminism" in row


def test_csv_refuses_causes() -> None:
    """CSV refuses --causes."""
    code, _, err = run("report", BASELINE, "--causes", "--format", "csv")
    assert code == 2 and "--causes" in err


def hostile_log(path: Path) -> Path:
    """A flaky task whose tool returned text with terminal escapes and Markdown pipes."""
    lines = []
    for trial, (passed, result) in enumerate([(True, "fine"), (True, "fine"),
                                              (False, "\x1b[31mred|\x07 [bold]x[/bold]")]):
        trace = [{"role": "user", "content": "go"},
                 {"role": "assistant", "type": "tool_call", "name": "look", "args": {"q": 1}},
                 {"role": "tool", "type": "tool_result", "name": "look", "content": result},
                 {"role": "assistant", "content": "done"}]
        lines.append(json.dumps({"run": "r", "task": "t", "trial": trial, "passed": passed, "trace": trace}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_evidence_is_made_visible(tmp_path: Path, fmt: str) -> None:
    """Hostile evidence is made visible in the table and Markdown."""
    code, out, _ = run("report", hostile_log(tmp_path / "h.jsonl"), "--causes", "--format", fmt)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "red" in out and "tool-nondeterminism" in out
    if fmt == "table":
        assert "[bold]x[/bold]" in out  # log text is never parsed as Rich markup


def test_json_keeps_evidence_as_is(tmp_path: Path) -> None:
    """JSON keeps evidence as it is."""
    _, out, _ = run("report", hostile_log(tmp_path / "h.jsonl"), "--causes", "--format", "json")
    task = task_of(orjson.loads(out), "t")
    assert task["suspected_cause"] in CAUSES
    assert "[bold]x[/bold]" in task["cause_evidence"]["b"]  # the core's one-line value, not markup


def test_progress_bar_counts_tasks_on_stderr(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The cause progress bar, given to the session's find_causes as its progress, counts tasks on stderr."""
    from rich.progress import MofNCompleteColumn

    from flaketui.cli import common
    from flaketui.cli.common import CauseProgress
    from flaketui.session.jobs import find_causes
    from flaketui.loading import load_logs
    from flaketui.model import FieldMap

    monkeypatch.setattr(common, "_stream_is_tty", lambda stream: True)
    monkeypatch.setattr(CauseProgress, "DELAY", 0.0)
    seen: list[tuple[int, int]] = []
    shown = []
    update = CauseProgress.update

    def spy(self: CauseProgress, done: int, total: int) -> None:
        update(self, done, total)
        seen.append((done, total))
        shown.append(any(isinstance(c, MofNCompleteColumn) for c in self._bar.columns))

    monkeypatch.setattr(CauseProgress, "update", spy)
    log = load_logs([str(BASELINE)], FieldMap())
    with CauseProgress() as bar:
        found = find_causes(log, list(log.runs), progress=bar.update)
    assert seen == [(1, 1)] and all(shown)  # one flaky task, counted as tasks (not bytes)
    assert list(found) == ["oncall-baseline"] and list(found["oncall-baseline"]) == ["searchRunbook"]
    assert capsys.readouterr().out == ""
