"""A task's class with evidence: flaky, stable or undetermined against a stated flakiness cap.

"Passed once and failed once" is a fact about a task's trials (``mixed``), not
evidence that it is flaky: in a suite of 300 tasks where 270 pass or fail at
least 90% of the time, most tasks that both passed and failed in five trials
are stable tasks that were unlucky. A task's class here says what its trials
show about its flakiness f = 4p(1 − p) against a cap: ``flaky`` when its exact
interval rules out f ≤ cap, ``stable-pass`` / ``stable-fail`` when it rules out
f > cap, ``undetermined`` otherwise, ``unrepeated`` with one trial. Beside the
class, an empirical-Bayes estimate (:mod:`flaketui.stats.empirical_bayes`)
ranks the tasks by how likely they are to be flaky.

Pure numpy: the report path starts without scipy (its import takes longer than a
small report); tests pin every figure to scipy.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from flaketui.stats.arrays import Bools, Floats
from flaketui.stats.estimators import (
    CONFIDENCE,
    FLAKY,
    NO_TRIALS,
    STABLE_FAIL,
    STABLE_PASS,
    UNREPEATED,
    Interval,
    clopper_pearson,
)
from flaketui.stats.special import lbeta

DEFAULT_FLAKY_CAP = 0.36
"""The flakiness 4p(1 − p) above which a task counts as flaky: 0.36 is a pass rate strictly between
0.1 and 0.9 (a task failing or passing at most one trial in ten is stable), the zones of ``plan``'s
default ``--margin 0.1``."""

UNDETERMINED = "undetermined"
"""Class of a task whose exact interval holds both flaky and stable pass rates: more trials decide."""

CLASSES = (FLAKY, UNDETERMINED, STABLE_PASS, STABLE_FAIL, UNREPEATED, NO_TRIALS)
"""Every class, in the order the headline counts them."""

STABLE_CLASSES = (STABLE_PASS, STABLE_FAIL)

MAX_TRIALS_TO_DECIDE = 1_000_000
"""Beyond this many trials a task at its observed rate is called never decided (its rate sits on
the cap)."""

_TOL = 1e-12
"""A bound computed as 0.8999999 counts as 0.9 (as in :func:`flaketui.stats.precision.decide`)."""


def check_cap(cap: float) -> None:
    """Raise ``ValueError`` unless 0 < cap < 1."""
    if not (isinstance(cap, (int, float)) and 0 < cap < 1):
        raise ValueError(f"flaky cap ({cap}) must be between 0 and 1")


def cap_rates(cap: float = DEFAULT_FLAKY_CAP) -> tuple[float, float]:
    """The pass rates (p_lo, p_hi) where the flakiness 4p(1 − p) equals ``cap``.

    Flakiness rises with p below 0.5 and falls above it, so f > cap exactly when
    p_lo < p < p_hi, the roots of 4p(1 − p) = cap: p = (1 ∓ √(1 − cap)) / 2.

    Examples
    --------
    >>> [round(x, 6) for x in cap_rates(0.36)]
    [0.1, 0.9]
    >>> tuple(round(p, 4) for p in cap_rates(0.2))
    (0.0528, 0.9472)
    """
    root = math.sqrt(max(0.0, 1.0 - cap))
    return (1 - root) / 2, (1 + root) / 2


def margin_of(cap: float) -> float:
    """The width m of the stable zones [0, m] and [1 − m, 1] of a cap (``plan --margin``): p_lo."""
    return cap_rates(cap)[0]


def cap_of_margin(margin: float) -> float:
    """The flakiness cap 4m(1 − m) of stable zones of width ``margin``."""
    return 4 * margin * (1 - margin)


def evidence_classes(n: ArrayLike, c: ArrayLike, cap: float = DEFAULT_FLAKY_CAP,
                     confidence: float = CONFIDENCE, interval: Interval | None = None) -> list[str]:
    """Each task's class against the flakiness ``cap``, from its exact interval of p.

    With (p_lo, p_hi) from :func:`cap_rates` and [L, U] the two-sided
    Clopper–Pearson interval at ``confidence`` (or ``interval``, e.g. a
    confidence sequence where a plan peeks):

    - ``flaky``: p_lo < L and U < p_hi (every rate the trials allow is flakier than the cap);
    - ``stable-pass``: L ≥ p_hi; ``stable-fail``: U ≤ p_lo (no allowed rate is);
    - ``undetermined``: the interval holds rates on both sides of a cap rate;
    - ``unrepeated``: one trial; ``no-trials``: none.

    Notes
    -----
    A task whose flakiness is at most the cap has p ≤ p_lo or p ≥ p_hi; it is
    called flaky only when its interval's bound on that side misses p, which
    happens with probability at most α/2 (2.5% at 95%): the share of stable
    tasks labelled flaky is bounded whatever the trials per task. A flaky task
    is called stable with probability at most α/2 the same way.

    References
    ----------
    .. [1] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26(4):404-413, 1934.
    .. [2] J. C. Hsu, R. L. Berger, "Stepwise confidence intervals without
       multiplicity adjustment for dose-response and toxicity studies", JASA
       94(446):468-482, 1999 (deciding a zone from an interval's position).

    Examples
    --------
    >>> evidence_classes([10, 10, 40, 40, 1, 0, 5], [5, 9, 40, 0, 1, 0, 5])
    ['flaky', 'undetermined', 'stable-pass', 'stable-fail', 'unrepeated', 'no-trials', 'undetermined']
    """
    check_cap(cap)
    p_lo, p_hi = cap_rates(cap)
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.float64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.float64))
    ci = interval if interval is not None else clopper_pearson(n_arr, c_arr, confidence)
    lo = np.nan_to_num(np.atleast_1d(ci.low), nan=0.0)
    hi = np.nan_to_num(np.atleast_1d(ci.high), nan=1.0)
    code = np.select(
        [n_arr == 0, n_arr == 1, lo >= p_hi - _TOL, hi <= p_lo + _TOL, (lo > p_lo) & (hi < p_hi)],
        [5, 4, 2, 3, 0], default=1)
    return list(map(CLASSES.__getitem__, code.tolist()))


def mixed(n: ArrayLike, c: ArrayLike) -> Bools:
    """Per task, whether it both passed and failed (the old "flaky"): a fact, not a class.

    >>> mixed([4, 4, 1], [2, 4, 1]).tolist()
    [True, False, False]
    """
    n_arr = np.asarray(n)
    c_arr = np.asarray(c)
    return (c_arr > 0) & (c_arr < n_arr)


def stable_after(cap: float = DEFAULT_FLAKY_CAP, confidence: float = CONFIDENCE) -> int:
    """Trials, all passing, at which a task's exact interval calls it stable-pass.

    The Clopper–Pearson lower bound at n of n passes is (α/2)^(1/n); the
    smallest n with (α/2)^(1/n) ≥ p_hi is ⌈ln(α/2) / ln(p_hi)⌉ (36 at the
    default cap). Below it no task can be called stable, which is what "few
    trials" means for the default ranking.

    >>> stable_after()
    36
    """
    p_hi = cap_rates(cap)[1]
    alpha = 1 - confidence
    n = math.ceil(math.log(alpha / 2) / math.log(p_hi) - 1e-9)
    return max(2, n)


def _cs_decided(n: Floats, c: Floats, p_lo: float, p_hi: float,
                confidence: float) -> Bools:
    """Whether Robbins' mixture confidence sequence (as
    :func:`flaketui.stats.precision.confidence_sequence`, for real-valued passes ``c``: a task's
    observed rate carried forward; without scipy) lies within one zone, without finding its bounds: the sequence is the set where the mixture's excess is negative, an interval round the
    observed rate (the log-likelihood is concave), so a cap rate on one side of the rate is outside
    it exactly when the excess there is not negative. Two evaluations a task instead of two
    bisections (what made the report's ``to decide`` column cost tens of milliseconds)."""
    threshold = -math.log1p(-confidence)
    log_b = lbeta(c + 1, n - c + 1)
    mle = np.where(n > 0, c / np.where(n > 0, n, 1), 0.5)

    def outside(p: float) -> Bools:
        with np.errstate(divide="ignore", invalid="ignore"):
            ex = log_b - np.where(c > 0, c * math.log(p), 0.0) - np.where(n - c > 0, (n - c) * math.log1p(-p), 0.0)
        return ex - threshold >= 0

    above = (mle >= p_hi - _TOL) & (c > 0) & outside(p_hi - _TOL)  # low ≥ p_hi
    below = (mle <= p_lo + _TOL) & (c < n) & outside(p_lo + _TOL)  # high ≤ p_lo
    inside = (mle > p_lo) & (mle < p_hi) & (c > 0) & (c < n) & outside(p_lo) & outside(p_hi)
    return above | below | inside


def trials_to_decide(n: ArrayLike, c: ArrayLike, cap: float = DEFAULT_FLAKY_CAP,
                     confidence: float = CONFIDENCE) -> Floats:
    """Further trials until a task is decided flaky or stable, if it keeps its observed rate: the plan's figure.

    The plan decides on Robbins' confidence sequence
    (:func:`flaketui.stats.precision.confidence_sequence`), valid however often it
    is rerun, so this is the N − n for the smallest N at which the sequence of N
    trials passing at the task's rate p̂ (all of them for a task that passed
    every trial, none for one that failed every trial) lies on one side of the
    cap rates. It is more than the exact interval would need at a fixed n: the
    price of looking after every batch.

    Returns
    -------
    ndarray
        Per task: 0 when already decided by the sequence, NaN with no trial or
        when a task at its rate is never decided (p̂ on a cap rate: more than
        :data:`MAX_TRIALS_TO_DECIDE` trials).

    References
    ----------
    .. [1] H. Robbins, Annals of Mathematical Statistics 41(5):1397-1409, 1970.
    .. [2] S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, Annals of Statistics
       49(2):1055-1080, 2021. doi:10.1214/20-AOS1991

    Examples
    --------
    >>> trials_to_decide([12, 0, 10], [12, 0, 5]).tolist()
    [57.0, nan, 0.0]
    """
    p_lo, p_hi = cap_rates(cap)
    n_arr = np.atleast_1d(np.asarray(n, dtype=np.float64))
    c_arr = np.atleast_1d(np.asarray(c, dtype=np.float64))
    out = np.full(n_arr.shape, np.nan)
    has = n_arr > 0
    if not has.any():
        return out
    pairs, inverse = np.unique(np.stack([n_arr[has], c_arr[has]], axis=1), axis=0, return_inverse=True)
    un, uc = pairs[:, 0], pairs[:, 1]
    rate = uc / un
    now = _cs_decided(un, uc, p_lo, p_hi, confidence)
    top = np.full(un.shape, float(MAX_TRIALS_TO_DECIDE))
    ever = _cs_decided(top, rate * top, p_lo, p_hi, confidence)
    lo, hi = un.copy(), top.copy()  # lo never decided, hi decided
    for _ in range(int(math.ceil(math.log2(MAX_TRIALS_TO_DECIDE))) + 1):
        mid = np.floor((lo + hi) / 2)
        ok = _cs_decided(mid, rate * mid, p_lo, p_hi, confidence)
        lo, hi = np.where(ok, lo, mid), np.where(ok, mid, hi)
    need = np.where(now, 0.0, np.where(ever, hi - un, np.nan))
    out[has] = need[np.ravel(inverse)]
    return out
