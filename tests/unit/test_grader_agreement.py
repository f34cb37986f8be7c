"""Agreement among graders: Fleiss' κ, Krippendorff's α, the grader share of outcome variance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flaketui.stats.agreement import (
    fleiss_kappa,
    fleiss_kappa_counts,
    grader_agreement,
    krippendorff_alpha_nominal,
)

# Fleiss' worked example as Wikipedia's "Fleiss' kappa" article gives it: 10 subjects, 14 raters,
# 5 categories, κ = 0.210 (P̄ = 0.378, P̄e = 0.213). Cross-checked against statsmodels below.
WIKI = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                 [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C (nominal data, four
# observers, missing data): α = 0.743. Units are columns there; here rows (one per unit).
K2011 = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, 3, None, None],
]


def rows_from_counts(counts: np.ndarray) -> list[list[int]]:
    return [[c for c, k in enumerate(row) for _ in range(int(k))] for row in counts]


class TestFleiss:
    def test_wikipedia_worked_example(self) -> None:
        """Fleiss' kappa gives 0.2099 on Wikipedia's worked example."""
        assert fleiss_kappa_counts(WIKI) == pytest.approx(0.2099, abs=5e-4)
        assert fleiss_kappa(rows_from_counts(WIKI)) == pytest.approx(fleiss_kappa_counts(WIKI), abs=1e-12)

    def test_against_statsmodels(self) -> None:
        """Fleiss' kappa equals statsmodels' fleiss_kappa."""
        sm = pytest.importorskip("statsmodels.stats.inter_rater")
        assert fleiss_kappa_counts(WIKI) == pytest.approx(sm.fleiss_kappa(WIKI, method="fleiss"), abs=1e-12)
        rng = np.random.default_rng(7)
        for _ in range(20):
            data = rng.integers(0, 3, size=(int(rng.integers(3, 30)), int(rng.integers(2, 6))))
            table, _cats = sm.aggregate_raters(data)
            assert fleiss_kappa(data.tolist()) == pytest.approx(sm.fleiss_kappa(table, method="fleiss"), abs=1e-10)

    @pytest.mark.parametrize("grades", [[[1, 1], [1, 1]], [[0, 0, 0]], []])
    def test_one_category_or_nothing_is_nan(self, grades: list) -> None:
        """Grades of one category, or none, give NaN."""
        assert math.isnan(fleiss_kappa(grades))


class TestKrippendorff:
    def test_published_worked_example(self) -> None:
        """Krippendorff's alpha gives 0.743 on the published worked example."""
        assert krippendorff_alpha_nominal(K2011) == pytest.approx(0.743, abs=5e-4)

    def test_against_the_krippendorff_package(self) -> None:
        """Krippendorff's alpha equals the krippendorff package's."""
        kd = pytest.importorskip("krippendorff")
        data = np.array([[np.nan if v is None else v for v in row] for row in K2011], dtype=float)
        ref = kd.alpha(reliability_data=data.T, level_of_measurement="nominal")
        assert krippendorff_alpha_nominal(K2011) == pytest.approx(ref, abs=1e-10)
        rng = np.random.default_rng(11)
        for _ in range(20):
            data = rng.integers(0, 3, size=(int(rng.integers(4, 25)), int(rng.integers(2, 5)))).astype(float)
            data[rng.random(data.shape) < 0.15] = np.nan
            if np.unique(data[~np.isnan(data)]).size < 2 or ((~np.isnan(data)).sum(axis=1) >= 2).sum() < 2:
                continue
            rows = [[None if np.isnan(v) else v for v in row] for row in data]
            ref = kd.alpha(reliability_data=data.T, level_of_measurement="nominal")
            assert krippendorff_alpha_nominal(rows) == pytest.approx(ref, abs=1e-10)

    def test_single_category_is_nan(self) -> None:
        """A single category gives NaN."""
        assert math.isnan(krippendorff_alpha_nominal([[1, 1], [1, None]]))


class TestGraderShare:
    def test_judges_that_split_on_every_trial(self) -> None:
        """Judges that split on every trial give a share of 1."""
        # gen_trials --cause-set v2 "grader": each trial graded [g, g, 1-g]
        g = grader_agreement([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]])
        assert (g.trials, g.graders, g.split_trials) == (4, 3, 4)
        # within: 4 trials x 2/3 (squares about 1/3 or 2/3); between: 4 x 3 x (1/6)^2
        assert g.within == pytest.approx(8 / 3) and g.between == pytest.approx(1 / 3)
        assert g.share == pytest.approx(0.8 / 0.9)
        assert g.within + g.between == pytest.approx(np.var([1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0]) * 12)

    def test_judges_that_agree(self) -> None:
        """Judges that agree give a share of 0 and kappa 1."""
        g = grader_agreement([[1, 1, 1], [0, 0, 0], [1, 1, 1]])
        assert g.share == 0.0 and g.split_trials == 0 and g.kappa == pytest.approx(1.0)
        assert g.to_json()["krippendorff_alpha"] == pytest.approx(1.0)

    def test_unequal_grade_counts(self) -> None:
        """Unequal grade counts per trial are handled."""
        g = grader_agreement([[1, 0], [1, None, 1], [0]])
        assert g.trials == 3 and g.split_trials == 1
        assert g.within == pytest.approx(0.5)
        assert math.isnan(g.kappa)  # κ needs every grader on a trial: no trial has all three
        assert g.alpha == pytest.approx(krippendorff_alpha_nominal([[1, 0], [1, None, 1], [0]]))
