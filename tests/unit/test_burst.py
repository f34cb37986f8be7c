"""Outages: Kulldorff's Bernoulli scan over time, its false-alarm rate, start times."""

from __future__ import annotations

import numpy as np
import pytest

from flaketui.traces.burst import Burst, parse_time, scan_bursts, trial_time

DAY = 86400.0


def suite(rng: np.random.Generator, n: int = 1200, rate: float = 0.15, tasks: int = 150,
          outage: tuple[float, float] | None = None, extra: int = 0):
    t = rng.uniform(0, DAY, n)
    y = rng.random(n) < rate
    names = [f"task-{i % tasks}" for i in range(n)]
    if outage is not None:  # ``extra`` more trials of other tasks, all failing inside the window
        t = np.concatenate([t, rng.uniform(outage[0], outage[1], extra)])
        y = np.concatenate([y, np.ones(extra, bool)])
        names += [f"hit-{i}" for i in range(extra)]
    return t, y, names


class TestScan:
    def test_finds_a_planted_outage(self) -> None:
        """The scan finds a planted outage."""
        rng = np.random.default_rng(3)
        t, y, names = suite(rng, outage=(36000, 36900), extra=30)
        found = scan_bursts(t, y, names)
        assert len(found) == 1
        w = found[0]
        assert 35500 <= w.start <= 36100 and 36700 <= w.end <= 37400
        assert w.failures >= 27 and w.tasks >= 25 and w.pvalue <= 0.05 and w.expected < w.failures / 3
        assert "failures of" in w.text() and "between 10:" in w.text()
        assert w.to_json()["start"].startswith("1970-01-01T10:")

    def test_a_cluster_in_too_few_tasks_is_no_outage(self) -> None:
        """A cluster of failures in too few tasks is no outage."""
        rng = np.random.default_rng(4)
        t, y, names = suite(rng, outage=(36000, 36900), extra=30)
        names = [("one" if i >= 1200 else x) for i, x in enumerate(names)]
        assert [w for w in scan_bursts(t, y, names) if 35000 < w.start < 37000] == []

    @pytest.mark.slow
    def test_false_alarm_rate_without_an_outage(self) -> None:
        """Monte Carlo over 60 suites whose failures do not cluster (fixed seeds): at alpha = 0.05
        the share with any window flagged stays well under 0.15 (a generous margin: binomial
        sd of the share is 0.028 at 0.05)."""
        flagged = 0
        for seed in range(60):
            t, y, names = suite(np.random.default_rng(1000 + seed), n=600, tasks=100)
            flagged += bool(scan_bursts(t, y, names, permutations=99, seed=seed))
        assert flagged / 60 <= 0.15

    def test_deterministic_and_edges(self) -> None:
        """The scan is deterministic and handles empty and edge inputs."""
        rng = np.random.default_rng(5)
        t, y, names = suite(rng, outage=(1000, 1900), extra=20)
        assert scan_bursts(t, y, names) == scan_bursts(t, y, names)
        assert scan_bursts([1.0] * 5, [True] * 5) == []  # too few trials
        assert scan_bursts(t, np.zeros(t.size, bool)) == []  # no failure
        with pytest.raises(ValueError, match="alpha"):
            scan_bursts(t, y, alpha=1.5)
        with pytest.raises(ValueError, match="same length"):
            scan_bursts(t, y[:-1])

    def test_contains_uses_slack(self) -> None:
        """A burst contains times within its slack."""
        w = Burst(100.0, 200.0, 5, 6, 3, 1.0, 4.0, 0.01, slack=1.0)
        assert w.contains(99.5) and w.contains(200.5) and not w.contains(202)


class TestTimes:
    @pytest.mark.parametrize(("value", "expected"), [
        ("2026-11-20T10:02:00Z", 1795168920.0), ("2026-11-20T10:02:00+00:00", 1795168920.0),
        ("2026-11-20T10:02:00", 1795168920.0), (1795168920, 1795168920.0), (1795168920000, 1795168920.0),
        ("1795168920", 1795168920.0), ("yesterday", None), (None, None), (True, None),
    ])
    def test_parse(self, value: object, expected: float | None) -> None:
        """parse_time reads ISO 8601 times and epoch seconds."""
        assert parse_time(value) == expected

    def test_trial_time_keys(self) -> None:
        """trial_time reads each start-time key, one level down in metadata too."""
        assert trial_time({"started_at": "2026-11-20T10:02:00Z"}) == 1795168920.0
        assert trial_time({"metadata": {"start_time": 5}}) == 5.0
        assert trial_time({"other": 1}) is None and trial_time(None) is None
        inspect = {"events": [{"event": "sample_init", "timestamp": "2024-10-15T16:53:13.264282+00:00"}]}
        assert trial_time(inspect) == pytest.approx(1729011193.264282)
