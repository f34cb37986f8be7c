"""Graded scores: the per-task mean score, its bounded-score interval, SD and score flakiness,
the run's mean score and within-task share, each pinned to an independent computation
(scipy, statsmodels, math.fsum), on built Harbor jobs with partial rewards and on JSON Lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from flaketui.cli import main
from flaketui.loading import load_logs
from flaketui.model import FieldMap
from flaketui.stats.scores import counted_scores, is_graded, mean_score_interval, task_scores, within_task_share
from flaketui.stats.suite import mean_estimate, summarise, task_stats
from tests.helpers.cli import run
from tests.helpers.harbor import SETUP_ERROR, TIMEOUT, build_job
from tests.helpers.logs import write_log

PARTIAL = {"fix-perms": [(0.55, None), (0.91, None), (0.098, None)],
           "hello": [(1.0, None), (1.0, None), (0.0, TIMEOUT)],
           "setup": [(0.4, None), (None, SETUP_ERROR), (0.6, None)]}
"""A built Harbor job: partial rewards, a timeout the verifier scored 0, a setup error with no reward."""


def test_interval_is_clopper_pearson_for_whole_totals() -> None:
    """With 0/1 scores the interval is scipy's exact binomial (Clopper-Pearson) interval."""
    for n, c in [(3, 0), (3, 2), (5, 5), (10, 7)]:
        ci = mean_score_interval([n], [c])
        ref = sps.binomtest(c, n).proportion_ci(0.95, method="exact")
        assert (ci.low[0], ci.high[0]) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_interval_at_a_fractional_total_is_the_beta_quantile() -> None:
    """A fractional total s takes the beta quantiles B(α/2; s, n−s+1) and B(1−α/2; s+1, n−s) (scipy.stats.beta)."""
    ci = mean_score_interval([3], [1.558])
    assert ci.low[0] == pytest.approx(sps.beta.ppf(0.025, 1.558, 3 - 1.558 + 1))
    assert ci.high[0] == pytest.approx(sps.beta.ppf(0.975, 1.558 + 1, 3 - 1.558))


def test_errored_rule_apart_leaves_out_and_counted_scores_zero() -> None:
    """Errored trials: left out when apart; when counted, a scored one keeps its score and an unscored one scores 0."""
    score, errored = [0.5, np.nan, 0.2, np.nan], [False, True, True, False]
    apart = counted_scores(score, errored, "apart")
    counted = counted_scores(score, errored, "fail")
    assert np.array_equal(apart, [0.5, np.nan, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(counted, [0.5, 0.0, 0.2, np.nan], equal_nan=True)


def test_within_task_share_matches_statsmodels_anova() -> None:
    """1 − ICC from the one-way ANOVA mean squares of statsmodels' anova_lm, unequal trials per task."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(7)
    sizes = [3, 5, 4, 6, 3]
    seg = np.repeat(np.arange(5), sizes)
    x = np.clip(rng.normal(0.2 * seg / 4 + 0.4, 0.2), 0, 1)
    table = anova_lm(smf.ols("x ~ C(g)", data=pd.DataFrame({"x": x, "g": seg})).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    big_n, a = len(x), len(sizes)
    n0 = (big_n - sum(s * s for s in sizes) / big_n) / (a - 1)
    between = max(0.0, (msb - msw) / n0)
    assert within_task_share(x, seg) == pytest.approx(msw / (between + msw))


def test_task_scores_mean_sd_and_flakiness_by_hand() -> None:
    """Per task: the mean, the ddof-1 SD (numpy) and whether scores moved, two tasks that never pass."""
    st = task_scores([0.55, 0.91, 0.098, 0.0, 0.0, 0.0], [False] * 6, [0, 3, 6], "apart")
    assert st.mean_score.tolist() == pytest.approx([np.mean([0.55, 0.91, 0.098]), 0.0])
    assert st.score_sd[0] == pytest.approx(np.std([0.55, 0.91, 0.098], ddof=1))
    assert st.score_flaky.tolist() == [True, False]  # 0.55 vs 0.91: both fail, yet the score moved


def test_graded_means_partial_credit() -> None:
    """A run is graded when a score is neither 0 nor 1; 0/1 rewards alone are pass/fail."""
    assert is_graded([0.0, 1.0, 0.55])
    assert not is_graded([0.0, 1.0, np.nan])


def test_built_harbor_job_mean_score_and_sd(tmp_path: Path) -> None:
    """A built Harbor job with partial rewards: per-task mean and SD, and Harbor's mean (missing = 0, fsum) when
    errored trials count."""
    job = build_job(tmp_path / "job", PARTIAL)
    log = load_logs([job], FieldMap(errored_as="fail"))
    st = task_stats(log.run_outcomes(log.runs[0]), 3)
    assert st.scores is not None
    by = dict(zip(st.tasks, st.scores.mean_score.tolist(), strict=True))
    assert by["fix-perms"] == pytest.approx((0.55 + 0.91 + 0.098) / 3)
    assert by["hello"] == pytest.approx(2 / 3)  # the timeout keeps its reward 0
    assert by["setup"] == pytest.approx(1.0 / 3)  # the setup error scores 0
    sd = dict(zip(st.tasks, st.scores.score_sd.tolist(), strict=True))
    assert sd["fix-perms"] == pytest.approx(np.std([0.55, 0.91, 0.098], ddof=1))
    rewards = [r if r is not None else 0.0 for attempts in PARTIAL.values() for r, _ in attempts]
    sm = summarise(st)
    assert sm.mean_score is not None
    assert sm.mean_score.value == pytest.approx(math.fsum(rewards) / len(rewards))  # Harbor's eval mean
    ref = mean_estimate(st.scores.mean_score)  # pass@1's interval code path, on the task means
    assert sm.mean_score.ci == ref.ci
    apart = task_stats(load_logs([job], FieldMap(errored_as="apart")).run_outcomes(log.runs[0]), 3)
    assert apart.scores is not None
    by_apart = dict(zip(apart.tasks, apart.scores.mean_score.tolist(), strict=True))
    assert by_apart["hello"] == 1.0 and by_apart["setup"] == pytest.approx(0.5)  # errored trials left out


def test_report_json_keys_graded_and_not(tmp_path: Path) -> None:
    """JSON has mean_score, mean_score_ci, score_sd per task and mean_score, mean_score_ci, within_task_share per
    run; a pass/fail log has the keys with null values and no score columns in the table."""
    graded = write_log(tmp_path / "g.jsonl", [{"task": t, "trial": i, "score": x}
                                              for t, xs in {"a": [0.55, 0.91, 0.098], "b": [1, 1, 0.5]}.items()
                                              for i, x in enumerate(xs)])
    code, out, _ = run("report", graded, "--format", "json", "--no-cache")
    assert code == 0
    doc = json.loads(out)["runs"][0]
    assert doc["summary"]["mean_score"] == pytest.approx((0.519333 + 0.833333) / 2, abs=1e-5)
    assert len(doc["summary"]["mean_score_ci"]) == 2 and 0 <= doc["summary"]["within_task_share"] <= 1
    task = {t["task"]: t for t in doc["tasks"]}["a"]
    assert task["mean_score"] == pytest.approx(0.519333, abs=1e-5)
    assert task["score_sd"] == pytest.approx(np.std([0.55, 0.91, 0.098], ddof=1))
    assert task["score_flaky"] is True and len(task["mean_score_ci"]) == 2
    plain = write_log(tmp_path / "p.jsonl", [{"task": "a", "trial": i, "passed": i > 0} for i in range(3)])
    code, out, _ = run("report", plain, "--format", "json", "--no-cache")
    doc = json.loads(out)["runs"][0]
    assert doc["summary"]["mean_score"] is None and doc["summary"]["within_task_share"] is None
    assert doc["tasks"][0]["mean_score"] is None and doc["tasks"][0]["score_flaky"] is None
    code, out, _ = run("report", plain, "--no-cache")
    assert "mean score" not in out
    code, out, _ = run("report", graded, "--no-cache")
    assert "mean score = 0.676" in out


def test_score_field_takes_a_dotted_path(tmp_path: Path) -> None:
    """--score-field result.value reads a nested number as the trial's score."""
    log = write_log(tmp_path / "n.jsonl", [{"task": "a", "trial": i, "result": {"value": x}}
                                            for i, x in enumerate([0.2, 0.4, 1.0])])
    code, out, _ = run("report", log, "--score-field", "result.value", "--format", "json", "--no-cache")
    assert code == 0
    assert json.loads(out)["runs"][0]["tasks"][0]["mean_score"] == pytest.approx(0.5333333)


def test_html_page_has_the_score_columns_for_a_graded_run(tmp_path: Path) -> None:
    """The page's summary says the mean score and its task table has the sortable mean score column."""
    graded = write_log(tmp_path / "g.jsonl", [{"task": t, "trial": i, "score": x}
                                              for t, xs in {"a": [0.55, 0.91, 0.098], "b": [1, 1, 0.5]}.items()
                                              for i, x in enumerate(xs)])
    code, out, _ = run("report", graded, "--format", "html", "--no-cache")
    assert code == 0
    assert "mean score = 0.676" in out and '<th data-key="mean_score"' in out


def test_inspect_partial_credit_as_value_to_float() -> None:
    """Inspect's C/P/I/N values score 1, 0.5, 0, 0 as its value_to_float maps them; numbers stay numbers."""
    from flaketui.loading.formats.inspect_log import score_value

    assert [score_value(v) for v in ("C", "P", "I", "N", 0.75, "0.25")] == [1.0, 0.5, 0.0, 0.0, 0.75, 0.25]


def test_mean_score_column_sorts_in_the_app_order() -> None:
    """The mean score column sorts by each task's mean score (the app's sort and the page's read the same values)."""
    from flaketui.output.columns import TASK_COLUMNS

    st = task_stats(_outcomes([[0.2, 0.4], [0.9, 1.0], [0.0, 0.1]]), 2)
    assert TASK_COLUMNS["mean_score"].sort(st).tolist() == pytest.approx([0.3, 0.95, 0.05])
    assert TASK_COLUMNS["mean_score"].header(2) == "mean score"


def _outcomes(scores: list[list[float]]):  # type: ignore[no-untyped-def]
    """A run's outcomes with these trial scores per task (passing at 1)."""
    from flaketui.model import RunOutcomes

    flat = np.array([x for xs in scores for x in xs])
    bounds = np.concatenate([[0], np.cumsum([len(xs) for xs in scores])])
    n = np.diff(bounds)
    return RunOutcomes("r", [f"t{i}" for i in range(len(scores))], n,
                       np.array([sum(x >= 1 for x in xs) for xs in scores]), np.zeros(len(scores), np.int64),
                       [None] * len(scores), np.arange(flat.size), bounds, "apart", flat, np.zeros(flat.size, bool))


def test_summary_counts_score_flakiness_pass_fail_cannot_show(tmp_path: Path) -> None:
    """A task failing every trial with scores 0.55, 0.91, 0.098 counts as moved with the same outcome throughout."""
    log = write_log(tmp_path / "m.jsonl", [{"task": t, "trial": i, "score": x}
                                           for t, xs in {"a": [0.55, 0.91, 0.098], "b": [1, 0.5, 1], "c": [0, 0, 0]}.items()
                                           for i, x in enumerate(xs)])
    code, out, _ = run("report", log, "--format", "json", "--no-cache")
    summary = json.loads(out)["runs"][0]["summary"]
    assert (summary["score_moved_tasks"], summary["score_moved_same_outcome_tasks"]) == (2, 1)


def test_csv_and_markdown_have_the_score_columns_only_when_graded(tmp_path: Path) -> None:
    """CSV gets mean_score, its bounds and score_sd for a graded log (the values of the JSON), Markdown the
    labelled columns; a pass/fail log's CSV header is the usual one."""
    import csv
    import io

    graded = write_log(tmp_path / "g.jsonl", [{"task": "a", "trial": i, "score": x}
                                              for i, x in enumerate([0.55, 0.91, 0.098])])
    code, out, _ = run("report", graded, "--format", "csv", "--no-cache")
    row = next(csv.DictReader(io.StringIO(out)))
    assert float(row["mean_score"]) == pytest.approx(0.519333, abs=1e-5)
    assert float(row["score_sd"]) == pytest.approx(np.std([0.55, 0.91, 0.098], ddof=1), abs=1e-5)
    assert float(row["mean_score_low"]) < 0.5193 < float(row["mean_score_high"])
    code, out, _ = run("report", graded, "--format", "markdown", "--no-cache")
    assert "| mean score | score CI | score SD |" in out
    plain = write_log(tmp_path / "p.jsonl", [{"task": "a", "trial": i, "passed": i > 0} for i in range(3)])
    code, out, _ = run("report", plain, "--format", "csv", "--no-cache")
    assert "mean_score" not in out.splitlines()[0]


@pytest.mark.filterwarnings("error")
def test_scores_at_the_float_range_give_no_interval_and_no_warning() -> None:
    """Scores of 1e308 and -1e308: the range overflows, so the interval is NaN (not a zero-width one) and numpy warns nothing."""
    sc = task_scores(np.array([1e308, -1e308, 0.5, 0.25]), np.zeros(4, dtype=bool), np.array([0, 3, 4]), "apart")
    assert np.isnan(sc.mean_score_ci.low).all() and np.isnan(sc.mean_score_ci.high).all()
    assert sc.score_flaky[0] and not sc.score_flaky[1]


def test_suite_mean_score_of_equal_tasks_says_no_interval(tmp_path: Path) -> None:
    """Every task's mean score the same on 60 tasks (no few-task posterior joins the t interval there): the
    report says why there is no interval instead of printing [0.50, 0.50]."""
    log = tmp_path / "equal.jsonl"
    log.write_text("".join(json.dumps({"task_id": f"t{t}", "trial": j, "passed": v > 0.5, "score": v}) + "\n"
                           for t in range(60) for j, v in enumerate([0.2, 0.8, 0.3, 0.7])))
    res = CliRunner().invoke(main, ["report", str(log)])
    assert res.exit_code == 0, res.output
    assert "mean score = 0.500 (no interval: all 60 tasks 0.500)" in res.output
