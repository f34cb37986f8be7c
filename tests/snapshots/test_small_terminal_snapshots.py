"""Snapshots at 80×24 on real samples (a τ² log and a Harbor job, opened by relative paths): the
task table keeps ten rows and more with its class whole and the warnings folded into one line, the
trace screen opens at the first divergence, the comparison keeps its verdict with the p-value and
the flip list's label column, the plan its table. Review new SVGs in snapshot_report.html before
accepting them with ``pytest --snapshot-update``."""

from __future__ import annotations

import pytest

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import ROOT
from tests.helpers.app import after

SMALL = (80, 24)
TAU = "tests/data/tau2/airline_context_agent_gemini-2.5-flash_2trials.json"
TAU_OTHER = "tests/data/tau2/airline_langchain_agent_gpt-oss-120b_1trial.json"
HARBOR = "tests/data/harbor/hello-world-job"


@pytest.fixture
def tau_app(monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(ROOT)
    return make_app([TAU])


@pytest.fixture
def harbor_app(monkeypatch: pytest.MonkeyPatch) -> FlakeApp:
    monkeypatch.chdir(ROOT)
    return make_app([HARBOR])


@pytest.fixture
def tau_compare_app(monkeypatch: pytest.MonkeyPatch, tmp_path) -> FlakeApp:
    monkeypatch.chdir(ROOT)
    return make_app([TAU_OTHER, TAU], triage=str(tmp_path / "notes.json"),
                    compare=("airline_langchain_agent_gpt-oss-120b_1trial",
                             "airline_context_agent_gemini-2.5-flash_2trials"))


class TestTau:
    def test_table(self, snap_compare, tau_app: FlakeApp) -> None:
        """τ² at 80×24: the summary, its two warnings folded into one line (+1 more; e: show all), the class
        column right after the task (flaky, pass, fail whole), no curves, the four tasks."""
        assert snap_compare(tau_app, run_before=after(), terminal_size=SMALL)

    @pytest.mark.slow
    def test_traces(self, snap_compare, tau_app: FlakeApp) -> None:
        """enter on task 3 at 80×24: the compact header, the view opened at its first divergence (step 5 of A,
        step 7 of B) with one row above it."""
        assert snap_compare(tau_app, run_before=after("enter"), terminal_size=SMALL)

    def test_compare(self, snap_compare, tau_compare_app: FlakeApp) -> None:
        """The two airline runs compared at 80×24: the one-line head with the verdict and its p-value, the flip
        list with its label column."""
        assert snap_compare(tau_compare_app, run_before=after(), terminal_size=SMALL)

    @pytest.mark.slow
    def test_plan(self, snap_compare, tau_app: FlakeApp) -> None:
        """p at 80×24: the plan of the τ² run, its table with the Wilson interval and the decision."""
        assert snap_compare(tau_app, run_before=after("p"), terminal_size=SMALL)


class TestHarbor:
    def test_table(self, snap_compare, harbor_app: FlakeApp) -> None:
        """A Harbor job at 80×24: the errored trials counted, the class column beside the task, the tasks."""
        assert snap_compare(harbor_app, run_before=after(), terminal_size=SMALL)

    @pytest.mark.slow
    def test_traces(self, snap_compare, harbor_app: FlakeApp) -> None:
        """enter on the first task of the Harbor job at 80×24: its trials' traces, or the list of its trials."""
        assert snap_compare(harbor_app, run_before=after("enter"), terminal_size=SMALL)

    @pytest.mark.slow
    def test_plan(self, snap_compare, harbor_app: FlakeApp) -> None:
        """p at 80×24 on the Harbor job: the plan's table of its two tasks."""
        assert snap_compare(harbor_app, run_before=after("p"), terminal_size=SMALL)
