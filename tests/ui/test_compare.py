"""Pilot tests of the comparison pane and the review of flips.

Expected figures come from the fixture generator (scripts/make_fixtures.py):
baseline → candidate, 25 common tasks; searchRunbook is fixed (10/12 → 12/12),
summarizeIncident broken (12/12 → 0/12); the sign test on 1 fixed vs 1 broken
gives p = 1 (scipy binomtest(1, 2)); both tasks' A-vs-B traces part ways at
step 3 (the retrieved chunks / post-mortems come in another order).
Every test keeps its triage notes in a tmp file, never beside the fixtures.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scipy.stats import binomtest

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.screens.triage_dialogs import LabelPicker, NoteEditor, RunPicker
from flaketui.app.widgets.task_table import TaskTable
from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.triage import TriageKey, load_entries
from tests.conftest import BASELINE, CANDIDATE, FIXTURES, SIZE, settle
from tests.helpers.app import press, record_notifications
from tests.helpers.compare import BROKEN_KEY, A, B, flip_table, open_pane, rows, summary

FIXED_KEY = TriageKey.flip(A, B, "searchRunbook")


def cursor_task(app: FlakeApp) -> str:
    t = flip_table(app)
    return t.row_text(t.cursor_row)[[c.key for c in t.columns].index("task")]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return tmp_path / "notes.triage.json"


@pytest.fixture
def app(notes: Path) -> FlakeApp:
    """The `all` divergence mode: the A-vs-B tests below check the step-3 divergence."""
    return make_app([str(BASELINE), str(CANDIDATE)], k=5, triage=str(notes), divergence="all")


class TestSummary:
    @pytest.mark.slow
    async def test_counts_sign_test_verdict_and_flakiness(self, app: FlakeApp) -> None:
        """The comparison pane's summary shows the counts, the primary test, the verdict and the flakiness change."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            text = summary(app)
            lines = text.splitlines()
            assert lines[0] == f"{B} (B) vs {A} (A)"
            assert "25 tasks in both runs · p̂ moved: fixed 1 · broken 1 · unchanged 23" in lines
            p = binomtest(1, 2, 0.5).pvalue
            # Fisher 12/12 vs 0/12 (scipy.stats.fisher_exact: 2/C(24, 12) = 7.4e-7), Holm over Tarone's family of
            # 1 task (searchRunbook's 10/12 vs 12/12 cannot reach 0.05): summarizeIncident flipped.
            assert lines[2].startswith("flipped 1 (fixed 0, broken 1): significant after Holm at 5%")
            assert "moved 1 more (p̂ changed, not significant)" in lines[2]
            assert lines[3].startswith("primary test: within-task permutation test p = 0.000852 · ")
            assert p == 1.0 and "secondary: sign test p = 1.00, sign-flip permutation p = 1.00" in lines[3]
            # mean of p̂_B − p̂_A over 25 tasks: (2/12 − 1)/25 = −0.0333
            assert "mean difference of p̂ (B - A) = -0.033 [" in lines[3]
            # One task broke outright: the runs differ on these tasks, though the interval over tasks holds 0.
            verdict = next(line for line in lines if line.startswith("verdict: "))
            assert verdict == (f"verdict: {A} is better at 5% (within-task permutation test p = 0.00085), on these "
                               "tasks: the interval over tasks holds 0")
            assert ("flakiness: 1 task less flaky, 0 more; mean 0.022 → 0.000 (mixed tasks 1 → 0)"
                    in lines)
            assert lines[-1].startswith("0 of 1 flips reviewed")
            assert app.screen.sub_title == f"{B} vs {A} · 0 of 1 flips reviewed"

    @pytest.mark.slow
    async def test_a_failing_comparison_shows_its_error(self, app: FlakeApp,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
        """A comparison that fails shows its error in the pane."""
        import flaketui.stats

        def broken(*args: object, **kwargs: object) -> None:
            raise ValueError("no common task")

        monkeypatch.setattr(flaketui.stats, "compare_runs", broken)
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            text = summary(app)
            assert text == "Comparing runs failed: ValueError: no common task"
            assert flip_table(app).empty_text == "the runs could not be compared"

    @pytest.mark.slow
    async def test_flipped_first_then_moved(self, app: FlakeApp) -> None:
        """The pane lists the flipped tasks first, then the moved ones, with their figures."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            got = [(r["change"], r["flip"], r["task"], r["p_hat"], r["n_a"], r["n_b"], r["delta"])
                   for r in rows(app)]
            assert got == [("broken", "flipped", "summarizeIncident", "1.000 → 0.000", "12", "12", "1.000"),
                           ("~fixed", "moved", "searchRunbook", "0.833 → 1.000", "12", "12", "0.167")]
            assert rows(app)[1]["flakiness"] == "0.556 → 0.000"

    @pytest.mark.slow
    async def test_all_common_tasks_and_back(self, app: FlakeApp) -> None:
        """f switches between the changed tasks and every common task."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "f")
            all_rows = rows(app)
            assert len(all_rows) == 25
            assert [r["change"] for r in all_rows[:3]] == ["broken", "~fixed", "unchanged"]
            await press(pilot, "f")
            assert len(rows(app)) == 2

    @pytest.mark.slow
    async def test_sorting(self, app: FlakeApp) -> None:
        """The pane's table sorts by its columns."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            screen.action_sort_by("task")
            await settle(pilot)
            assert [r["task"] for r in rows(app)] == ["searchRunbook", "summarizeIncident"]
            screen.action_sort_by("task")
            await settle(pilot)
            assert [r["task"] for r in rows(app)] == ["summarizeIncident", "searchRunbook"]
            screen.action_sort_by("delta")
            await settle(pilot)
            assert rows(app)[0]["task"] == "summarizeIncident"
            await press(pilot, "S")
            assert rows(app)[0]["task"] == "searchRunbook"
            await press(pilot, "s")
            assert flip_table(app).sort_key == "flakiness"


class TestStepping:
    @pytest.mark.slow
    async def test_n_and_N_move_between_flips_in_the_all_tasks_view(self, app: FlakeApp) -> None:
        """n and N move between flips in the all-tasks view."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "f")
            flip_table(app).action_jump(-1)
            await settle(pilot)
            assert rows(app)[flip_table(app).cursor_row]["change"] == "unchanged"
            await press(pilot, "N")
            assert cursor_task(app) == "searchRunbook"
            await press(pilot, "N")
            assert cursor_task(app) == "summarizeIncident"
            await press(pilot, "n")
            assert cursor_task(app) == "searchRunbook"
            await press(pilot, "n")  # no flip below: stays, says so
            assert cursor_task(app) == "searchRunbook"

    @pytest.mark.slow
    async def test_j_k_in_the_flip_list(self, app: FlakeApp) -> None:
        """j and k move the cursor in the flip list."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            assert cursor_task(app) == "summarizeIncident"
            await press(pilot, "j")
            assert cursor_task(app) == "searchRunbook"
            await press(pilot, "k")
            assert cursor_task(app) == "summarizeIncident"


class TestReview:
    @pytest.mark.slow
    async def test_label_note_reviewed_are_saved_at_once(self, app: FlakeApp, notes: Path) -> None:
        """A label, a note and the reviewed mark are saved at once."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "l")
            assert isinstance(app.screen, LabelPicker)
            await press(pilot, "6")  # real-regression
            assert load_entries(notes)[BROKEN_KEY].label == "real-regression"
            assert load_entries(notes)[BROKEN_KEY].reviewed is True
            assert rows(app)[0]["reviewed"] == "✓" and rows(app)[0]["label"] == "real-regression"
            assert "1 of 1 flips reviewed" in summary(app)

            await press(pilot, "n", "w")
            assert isinstance(app.screen, NoteEditor)
            await press(pilot, *"sorted chunks", "enter")
            entry = load_entries(notes)[FIXED_KEY]
            assert entry.note == "sorted chunks" and entry.reviewed is False
            assert rows(app)[1]["note"] == "sorted chunks"

            await press(pilot, "space")
            assert load_entries(notes)[FIXED_KEY].reviewed is True
            assert "1 of 1 flips reviewed" in summary(app)  # searchRunbook only moved: not counted
            await press(pilot, "space")
            assert load_entries(notes)[FIXED_KEY].reviewed is False

    @pytest.mark.slow
    async def test_label_picker_with_arrows_clear_and_cancel(self, app: FlakeApp,
                                                             notes: Path) -> None:
        """The label picker works with arrows, clears and cancels."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "l", "down", "down", "enter")
            assert load_entries(notes)[BROKEN_KEY].label == "ordering-concurrency"
            await press(pilot, "l", "escape")
            assert load_entries(notes)[BROKEN_KEY].label == "ordering-concurrency"
            await press(pilot, "l", "0")
            assert load_entries(notes)[BROKEN_KEY].label is None
            assert load_entries(notes)[BROKEN_KEY].reviewed is True

    @pytest.mark.slow
    async def test_note_escape_cancels(self, app: FlakeApp, notes: Path) -> None:
        """escape in the note editor cancels the note."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "w", *"draft", "escape")
            assert not isinstance(app.screen, NoteEditor)
            assert not notes.exists()

    @pytest.mark.slow
    async def test_labels_are_there_on_reopen(self, notes: Path) -> None:
        """Labels are there when the app opens again."""
        first = make_app([str(BASELINE), str(CANDIDATE)], triage=str(notes))
        async with first.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "l", "6", "n", "l", "7", "w", *"deterministic sort", "enter")
            await press(pilot, "escape", "q")
        again = make_app([str(BASELINE), str(CANDIDATE)], triage=str(notes))
        async with again.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            got = [(r["reviewed"], r["task"], r["label"], r["note"]) for r in rows(again)]
            assert got == [("✓", "summarizeIncident", "real-regression", ""),
                           ("✓", "searchRunbook", "real-fix", "deterministic sort")]
            assert "1 of 1 flips reviewed" in summary(again)

    @pytest.mark.slow
    async def test_default_sidecar_beside_the_first_log(self, tmp_path: Path) -> None:
        """The default triage file is written beside the first log."""
        for p in (BASELINE, CANDIDATE):
            shutil.copy(p, tmp_path / p.name)
        logs = [str(tmp_path / BASELINE.name), str(tmp_path / CANDIDATE.name)]
        app = make_app(logs)
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "space")
        sidecar = tmp_path / "oncall-baseline.jsonl.triage.json"
        assert load_entries(sidecar)[BROKEN_KEY].reviewed is True
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [BASELINE.name, CANDIDATE.name, sidecar.name])

    @pytest.mark.slow
    async def test_read_only_keeps_working_in_memory(self, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """With the triage file unwritable the review keeps working in memory and says so."""
        import flaketui.safefile as safefile

        def denied(*args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(safefile.tempfile, "mkstemp", denied)  # the one writer's temporary file
        notes = tmp_path / "n.json"
        app = make_app([str(BASELINE), str(CANDIDATE)], triage=str(notes))
        shown = record_notifications(app, monkeypatch)
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "l", "6")
            assert rows(app)[0]["label"] == "real-regression"
            assert "notes kept in memory only (not saved)" in summary(app)
            assert any("cannot save triage notes" in m and "Permission denied" in m for m in shown)
            await press(pilot, "n", "l", "7")
            assert rows(app)[1]["label"] == "real-fix"
            assert sum("cannot save" in m for m in shown) == 1
        assert not notes.exists()

    @pytest.mark.slow
    async def test_corrupt_file_is_reported_and_set_aside(self, notes: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
        """A corrupt triage file is reported and set aside."""
        notes.write_bytes(b'{"format": "flaketui-triage", "version": 1, "entries": [')
        app = make_app([str(BASELINE), str(CANDIDATE)], triage=str(notes))
        shown = record_notifications(app, monkeypatch)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert any("was unusable (not valid JSON" in m and "kept it as" in m for m in shown)
            await press(pilot, "c", "space")
        aside = [p for p in notes.parent.iterdir() if ".corrupt-" in p.name]
        assert len(aside) == 1 and aside[0].read_bytes().endswith(b'"entries": [')
        assert load_entries(notes)[BROKEN_KEY].reviewed is True


class TestTraces:
    @pytest.mark.slow
    async def test_broken_shows_a_passing_A_beside_a_failing_B(self, app: FlakeApp) -> None:
        """enter on a broken task shows a passing A trace beside a failing B trace."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "enter")
            screen = app.screen
            assert isinstance(screen, CompareTracesScreen) and screen.loaded
            view = screen.query_one(TraceDiffView)
            assert view.a is not None and view.b is not None
            assert (view.a.run, view.a.passed, view.b.run, view.b.passed) == (A, True, B, False)
            assert view.a.task == view.b.task == "summarizeIncident"
            assert view.first_divergence == 3
            assert str(view.divergence_text()).startswith("first divergence: step 3")
            assert view.label_a.startswith(f"A: {A} trial ") and "(pass)" in view.label_a
            assert view.label_b.startswith(f"B: {B} trial ") and "(fail)" in view.label_b
            # The trace rows have the focus: the arrow and page keys scroll them.
            assert app.focused is view.query_one("#diff-rows")

    @pytest.mark.slow
    async def test_fixed_shows_a_failing_A_beside_a_passing_B_and_n_steps(
            self, app: FlakeApp) -> None:
        """A fixed task shows a failing A beside a passing B, and n steps to the next flip."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "enter", "n")
            screen = app.screen
            assert isinstance(screen, CompareTracesScreen) and screen.row.task == "searchRunbook"
            view = screen.query_one(TraceDiffView)
            assert (view.a.run, view.a.passed, view.b.run, view.b.passed) == (A, False, B, True)
            assert "1 of 2 failing" in view.label_a and "1 of 12 passing" in view.label_b
            assert view.first_divergence == 3
            await press(pilot, "a")
            assert "2 of 2 failing" in view.label_a
            await press(pilot, "b")
            assert "2 of 12 passing" in view.label_b
            # Labelling from the trace screen, then back: the pane shows it, cursor on the task.
            await press(pilot, "l", "7")
            await press(pilot, "escape")
            assert isinstance(app.screen, CompareScreen)
            assert cursor_task(app) == "searchRunbook"
            assert rows(app)[1]["label"] == "real-fix"
            assert "0 of 1 flips reviewed" in summary(app)  # the moved task is not a flip


class TestOpening:
    @pytest.mark.slow
    async def test_three_runs_ask_for_A_and_B(self, tmp_path: Path, notes: Path) -> None:
        """With three runs the app asks which are A and B."""
        third = tmp_path / "oncall-rerun.jsonl"
        third.write_text("".join(
            json.dumps({**json.loads(line), "run": "oncall-rerun"}) + "\n"
            for line in CANDIDATE.read_text().splitlines()))
        app = make_app([str(BASELINE), str(CANDIDATE), str(third)], triage=str(notes))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "c")
            assert isinstance(app.screen, RunPicker)
            assert app.screen.chosen() == (A, B)
            await press(pilot, "tab", "down", "enter")
            assert isinstance(app.screen, CompareScreen)
            assert (app.screen.run_a, app.screen.run_b) == (A, "oncall-rerun")
            assert "fixed 1 · broken 1" in summary(app)

    @pytest.mark.slow
    async def test_compare_on_load_and_swap(self, notes: Path) -> None:
        """A comparison given at start opens on load, and swapping exchanges A and B."""
        app = make_app([str(FIXTURES)], triage=str(notes), compare=(B, A))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
            assert [(r["change"], r["task"]) for r in rows(app)] == [
                ("fixed", "summarizeIncident"), ("~broken", "searchRunbook")]
            await press(pilot, "X")
            assert (app.screen.run_a, app.screen.run_b) == (A, B)
            assert rows(app)[0]["task"] == "summarizeIncident"
            # The swap keeps the view: all common tasks, sorted by task name.
            await press(pilot, "f")
            app.screen.action_sort_by("task")
            await settle(pilot)
            assert len(rows(app)) == 25 and rows(app)[0]["task"] == "checkCertificateExpiry"
            await press(pilot, "X")
            await settle(pilot)
            assert (app.screen.run_a, app.screen.run_b) == (B, A)
            assert app.screen.show_all and app.screen.sort_key == "task"
            assert len(rows(app)) == 25 and rows(app)[0]["task"] == "checkCertificateExpiry"
            await press(pilot, "escape")
            assert not isinstance(app.screen, CompareScreen)

    async def test_one_run_cannot_be_compared(self, notes: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """With one run, c says there is nothing to compare."""
        app = make_app([str(BASELINE)], triage=str(notes))
        shown = record_notifications(app, monkeypatch)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "c")
            assert not isinstance(app.screen, CompareScreen)
            assert any("only one run is loaded" in m for m in shown)


class TestTaskTableNotes:
    @pytest.mark.slow
    async def test_flaky_task_label_and_note_on_the_main_screen(self, app: FlakeApp,
                                                                notes: Path) -> None:
        """A flaky task's label and note show on the task table."""
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            t = app.tasks_screen.query_one(TaskTable)
            assert "triage" not in [c.key for c in t.columns]
            assert t.row_text(0)[0] == "searchRunbook"
            await press(pilot, "l", "3", "w", *"tied chunks", "enter")
            entry = load_entries(notes)[TriageKey(A, "searchRunbook")]
            assert (entry.label, entry.note, entry.reviewed) == (
                "ordering-concurrency", "tied chunks", True)
            keys = [c.key for c in t.columns]
            assert t.row_text(0)[keys.index("triage")] == "✓ ordering-concurrency"
            await press(pilot, "space")
            assert t.row_text(0)[keys.index("triage")] == "  ordering-concurrency"
            # A task's note is not a flip's: the comparison pane's rows stay unreviewed.
            await press(pilot, "c")
            assert all(r["reviewed"] == "·" for r in rows(app))


class TestFilters:
    @pytest.mark.slow
    async def test_slash_filters_by_name_and_label(self, app: FlakeApp) -> None:
        """/ filters the pane by task name and by label."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "l", "6")  # summarizeIncident: real-regression
            await press(pilot, "slash", *"search")
            assert [r["task"] for r in rows(app)] == ["searchRunbook"]
            await press(pilot, "enter")
            assert isinstance(app.screen, CompareScreen) and flip_table(app).has_focus
            await press(pilot, "escape")  # clears the filter, stays on the pane
            assert isinstance(app.screen, CompareScreen) and len(rows(app)) == 2
            await press(pilot, "slash", *"regression", "enter")
            assert [r["task"] for r in rows(app)] == ["summarizeIncident"]

    @pytest.mark.slow
    async def test_u_shows_only_unreviewed(self, app: FlakeApp) -> None:
        """u shows only the unreviewed tasks."""
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            await press(pilot, "space", "u")
            assert [r["task"] for r in rows(app)] == ["searchRunbook"]
            await press(pilot, "space")  # reviewing it hides it too
            assert rows(app) == []
            await press(pilot, "u")
            assert len(rows(app)) == 2


@pytest.mark.slow
async def test_one_trial_per_task_says_nothing_is_tested(tmp_path: Path) -> None:
    """With one trial per task the pane says nothing is tested."""
    from tests.helpers.logs import write_runs

    log = write_runs(tmp_path / "one.jsonl", {"a": {"x": (1, 1), "y": (0, 1)}, "b": {"x": (0, 1), "y": (1, 1)}})
    app = make_app([str(log)], triage=str(tmp_path / "n.json"), compare=("a", "b"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        text = summary(app)
        assert "changed 2, flipped none: one trial per task in both runs, so nothing can be tested" in text
        assert "0 of 2 changed tasks reviewed" in text  # the list holds changed tasks, not flips
        assert [r["flip"] for r in rows(app)] == ["changed", "changed"]
