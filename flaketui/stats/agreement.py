"""Agreement among graders of the same trials: Fleiss' κ, Krippendorff's α, and grader variance.

When a trial carries several grades (judge samples, several scorers, a re-scored
copy), the grades form a trials × graders table. Disagreement within a row is
grader noise on one trajectory; variation between rows is the agent's. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Grades = Sequence[Sequence[float | None]]
"""One row per trial (subject), one value per grade; None or NaN: that grader gave none."""


def _table(grades: Grades) -> np.ndarray:
    rows = [[np.nan if v is None else float(v) for v in row] for row in grades]
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def fleiss_kappa(grades: Grades) -> float:
    """Fleiss' κ of a trials × graders table of nominal grades (every row the same number of grades).

    Parameters
    ----------
    grades : sequence of sequences
        One row per trial, one category value per grader.

    Returns
    -------
    float
        κ = (P̄ − P̄ₑ) / (1 − P̄ₑ); NaN when P̄ₑ = 1 (every grade the same category).

    Notes
    -----
    The formula is Fleiss (1971), eq. 2-9, as statsmodels'
    ``statsmodels.stats.inter_rater.fleiss_kappa(method="fleiss")`` computes it from
    the subjects × categories count table; rows with a missing grade are dropped.

    References
    ----------
    .. [1] J. L. Fleiss, "Measuring nominal scale agreement among many raters",
       Psychological Bulletin 76(5), 378-382, 1971. doi:10.1037/h0031619

    Examples
    --------
    >>> round(fleiss_kappa([[1, 1, 1], [0, 0, 0], [1, 0, 1]]), 4)
    0.55
    """
    x = _table(grades)
    x = x[~np.isnan(x).any(axis=1)] if x.size else x
    if x.shape[0] == 0 or x.shape[1] < 2:
        return float("nan")
    cats = np.unique(x)
    counts = (x[:, :, None] == cats[None, None, :]).sum(axis=1).astype(float)
    return fleiss_kappa_counts(counts)


def fleiss_kappa_counts(counts: np.ndarray) -> float:
    """Fleiss' κ from a subjects × categories table of counts (each row summing to the raters n).

    The same statistic as :func:`fleiss_kappa` (Fleiss 1971 [1]_), from the table
    statsmodels' ``fleiss_kappa`` takes.

    References
    ----------
    .. [1] J. L. Fleiss, Psychological Bulletin 76(5), 378-382, 1971. doi:10.1037/h0031619
    """
    table = np.asarray(counts, dtype=float)
    n_sub = table.shape[0]
    n_rat = table.sum(axis=1)[0]
    if n_sub == 0 or n_rat < 2:
        return float("nan")
    p_cat = table.sum(axis=0) / (n_sub * n_rat)  # eq. 2: share of all grades in each category
    p_sub = ((table * table).sum(axis=1) - n_rat) / (n_rat * (n_rat - 1))  # eq. 3: agreement on each subject
    p_bar, p_e = p_sub.mean(), float((p_cat * p_cat).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha_nominal(grades: Grades) -> float:
    """Krippendorff's α for nominal grades, missing grades allowed.

    Parameters
    ----------
    grades : sequence of sequences
        One row per trial (unit), one value per grader; None/NaN where a grader gave none.

    Returns
    -------
    float
        α = 1 − D_o / D_e from the coincidence matrix; NaN when fewer than two
        pairable grades or a single category (D_e = 0).

    Notes
    -----
    Units with fewer than two grades are not pairable and are left out. The
    coincidence matrix o_ck = Σ_u (number of c-k pairs in u) / (m_u − 1), and
    α = 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k (Krippendorff 2011, section C).

    References
    ----------
    .. [1] K. Krippendorff, "Computing Krippendorff's alpha-reliability",
       University of Pennsylvania, 2011. https://repository.upenn.edu/asc_papers/43

    Examples
    --------
    >>> round(krippendorff_alpha_nominal([[1, 1], [0, 0], [1, 0]]), 4)
    0.4444
    """
    x = _table(grades)
    if x.size == 0:
        return float("nan")
    cats = np.unique(x[~np.isnan(x)])
    if cats.size < 2:
        return float("nan")
    counts = (x[:, :, None] == cats[None, None, :]).sum(axis=1).astype(float)  # units × categories
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if counts.shape[0] == 0:
        return float("nan")
    # coincidences: o_ck = Σ_u n_uc (n_uk − [c = k]) / (m_u − 1)
    o = np.einsum("uc,uk,u->ck", counts, counts, 1.0 / (m - 1)) - np.diag((counts / (m - 1)[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n_c.sum() ** 2 - (n_c * n_c).sum()) / (n - 1)
    if d_e <= 0:
        return float("nan")
    return float(1.0 - d_o / d_e)


@dataclass(frozen=True)
class GraderAgreement:
    """How much of a task's outcome variance is its graders disagreeing on the same trial.

    ``within`` and ``between`` are the sums of squares of all grades about their
    trial's mean and of the trial means about the grand mean (``within + between``
    is the total); ``share`` is ``within / total`` (0 when every grade is the same).
    ``split_trials`` of ``trials`` have graders that disagree.
    """

    trials: int
    graders: int
    split_trials: int
    within: float
    between: float
    kappa: float
    alpha: float

    @property
    def share(self) -> float:
        """Share of the outcome variance that is disagreement among graders of the same trial."""
        total = self.within + self.between
        return self.within / total if total > 0 else 0.0

    def to_json(self) -> dict[str, float | int | None]:
        """Every field (NaN as None) plus ``grader_share``."""
        def num(v: float) -> float | None:
            return None if np.isnan(v) else round(float(v), 6)

        return {"trials": self.trials, "graders": self.graders, "split_trials": self.split_trials,
                "grader_share": num(self.share), "within_ss": num(self.within), "between_ss": num(self.between),
                "fleiss_kappa": num(self.kappa), "krippendorff_alpha": num(self.alpha)}


def grader_agreement(grades: Grades) -> GraderAgreement:
    """The one-way decomposition of a trials × graders table and its κ and α.

    Parameters
    ----------
    grades : sequence of sequences
        One row per trial; a trial with one grade adds to ``between`` only.

    Notes
    -----
    Sums of squares of the one-way analysis of variance with trials as groups
    (Fisher's decomposition, e.g. Montgomery, *Design and Analysis of
    Experiments*, 8th ed., section 3.3): SS_total = SS_within + SS_between over
    every grade, so unequal numbers of grades per trial are allowed.
    """
    x = _table(grades)
    ok = ~np.isnan(x)
    cnt = ok.sum(axis=1)
    keep = cnt > 0
    x, ok, cnt = x[keep], ok[keep], cnt[keep]
    if x.shape[0] == 0:
        return GraderAgreement(0, 0, 0, 0.0, 0.0, float("nan"), float("nan"))
    vals = np.where(ok, x, 0.0)
    means = vals.sum(axis=1) / cnt
    grand = vals.sum() / cnt.sum()
    within = float((np.where(ok, x - means[:, None], 0.0) ** 2).sum())
    between = float((cnt * (means - grand) ** 2).sum())
    lo = np.where(ok, x, np.inf).min(axis=1)
    hi = np.where(ok, x, -np.inf).max(axis=1)
    split = int((hi > lo).sum())
    return GraderAgreement(int(x.shape[0]), int(x.shape[1]), split, within, between,
                           fleiss_kappa(x.tolist()), krippendorff_alpha_nominal(
                               [[None if np.isnan(v) else v for v in row] for row in x.tolist()]))
