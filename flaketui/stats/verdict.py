"""One verdict on two runs, resting on one pre-specified primary test; the other figures are secondary.

Taking whichever of several tests rejects raises the chance of a false winner above
α (with equal trials about 6.5% at α = 5%, far more with unequal trials, where the
sign test itself is invalid). So the verdict names a winner only when the primary
test — the within-task permutation test of :mod:`flaketui.stats.stratified`, valid
whatever the trial counts — rejects at α, and quotes its p-value and the mean
difference with its interval. The sign test and the sign-flip permutation test are
reported beside it as secondary evidence where they are valid (equal trials per
task) and never turn a non-rejection into a winner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flaketui.stats.stratified import NAME as PRIMARY

if TYPE_CHECKING:  # annotations only: flaketui.stats imports this module at once, not the tests
    from flaketui.stats.paired import PairedComparison

UNEQUAL_TRIALS_NOTE = ("the sign test is not shown: trial counts differ between the runs, and then a rise and "
                       "a fall of p̂ are not equally likely under no difference")


@dataclass(frozen=True)
class Evidence:
    """The suite-level figures a verdict rests on (``primary_p``) and its secondary evidence."""

    run_a: str
    run_b: str
    tasks: int
    alpha: float
    fixed: int
    broken: int
    sign_p: float
    mean_diff: float
    """Mean over common tasks of p̂_B − p̂_A."""
    ci: tuple[float, float]
    permutation_p: float
    primary_p: float
    equal_trials: bool
    """Every task has as many trials in A as in B: the secondary tests are valid."""
    single_trial: bool = False
    """One trial per task in both runs: the primary test is the exact McNemar test."""
    adjusted_p: float | None = None
    """The primary p-value adjusted across comparisons (Holm, against a baseline); None for one comparison."""
    mde: float = float("nan")
    """The smallest difference this comparison detects with 80% power (:mod:`flaketui.stats.noise`)."""

    @property
    def decisive_p(self) -> float:
        """The p-value the winner is decided by: the adjusted one when there is one."""
        return self.primary_p if self.adjusted_p is None else self.adjusted_p

    @property
    def winner(self) -> int:
        """+1 when the primary test says B is better, −1 when it says A is, 0 when it does not reject."""
        if self.decisive_p < self.alpha and self.mean_diff == self.mean_diff and self.mean_diff != 0:
            return 1 if self.mean_diff > 0 else -1
        return 0

    def better(self, side: int) -> str:
        return self.run_b if side > 0 else self.run_a

    @property
    def secondary_rejects(self) -> bool:
        """A secondary test (valid here: equal trials) is below α: worth saying, never a winner."""
        return self.equal_trials and min(self.sign_p, self.permutation_p) < self.alpha

    @property
    def winner_run(self) -> str | None:
        """The better run's name when the primary test rejects, else None."""
        return self.better(self.winner) if self.winner else None


def evidence(cmp: PairedComparison, alpha: float = 0.05, adjusted_p: float | None = None) -> Evidence:
    """The primary test and the secondary figures of a comparison (``adjusted_p``: its primary p-value
    adjusted across several comparisons)."""
    from flaketui.stats.noise import comparison_noise

    return Evidence(
        run_a=cmp.run_a,
        run_b=cmp.run_b,
        tasks=len(cmp.tasks),
        alpha=alpha,
        fixed=cmp.test.fixed,
        broken=cmp.test.broken,
        sign_p=cmp.test.pvalue,
        mean_diff=cmp.mean_diff.value,
        ci=cmp.mean_diff.ci,
        permutation_p=cmp.permutation.pvalue,
        primary_p=cmp.primary.pvalue,
        equal_trials=cmp.equal_trials,
        single_trial=cmp.single_trial,
        adjusted_p=adjusted_p,
        mde=comparison_noise(cmp, alpha).mde,
    )


def _signed(x: float) -> str:
    """``+0.160``; a difference that rounds to zero is ``+0.000``, never ``-0.000`` (the core's
    copy of :func:`flaketui.output.formatting.fixed`, which the statistics layer cannot import)."""
    return f"{round(x, 3) + 0.0:+.3f}"


def primary_text(ev: Evidence) -> str:
    """``within-task permutation test p = 0.0031 (primary); mean difference (B − A) +0.160 [0.041, 0.279]``."""
    low, high = ev.ci
    interval = f"[{_signed(low)}, {_signed(high)}]" if low == low and high == high else "(no interval)"
    mcnemar = ", the exact McNemar test with one trial per task" if ev.single_trial else ""
    adjusted = "" if ev.adjusted_p is None else f", Holm-adjusted {ev.adjusted_p:.2g}"
    return (f"{PRIMARY} p = {ev.primary_p:.2g}{adjusted} (primary{mcnemar}); "
            f"mean difference (B - A) {_signed(ev.mean_diff)} {interval}")


def secondary_clause(equal_trials: bool, sign: str, permutation: str) -> str:
    """The secondary tests' clause, their p-values given as the caller shows them, or why they are not shown.

    The verdict and the review word the sign test and the sign-flip permutation test alike, and
    both hold them back unless every task has as many trials in A as in B (:data:`UNEQUAL_TRIALS_NOTE`);
    only how a p-value is written differs between them."""
    if not equal_trials:
        return UNEQUAL_TRIALS_NOTE
    return f"secondary: sign test p = {sign}, sign-flip permutation p = {permutation}"


def secondary_text(ev: Evidence) -> str:
    """The sign test and the sign-flip permutation test, or why they are not shown."""
    return secondary_clause(ev.equal_trials, f"{ev.sign_p:.2g} ({ev.fixed} fixed vs {ev.broken} broken)",
                            f"{ev.permutation_p:.2g}")


def verdict_text(ev: Evidence) -> str:
    """One line: the winner (or none) by the primary test, its figures, then the secondary ones.

    - ``B is better at 5%: within-task permutation test p = 0.0031 (primary); mean difference …;
      secondary: sign test p = 0.016 (7 fixed vs 0 broken), …``
    - ``not shown to differ at 5%: within-task permutation test p = 0.077 (primary); …``

    A secondary figure below α never makes a winner: the verdict says so when one is. The
    primary test conditions on the tasks run (it asks whether these runs differ on these
    tasks), while the interval of the mean difference is over tasks (Miller 2024): when the
    test rejects and the interval holds 0, the verdict says the difference is shown on these
    tasks only.
    """
    if ev.tasks == 0:
        return "the runs have no task in common: nothing to compare"
    if ev.fixed + ev.broken == 0:
        return "no task changed its pass rate" + could_detect(ev)
    level = f"{ev.alpha:.0%}"
    head = f"{ev.better(ev.winner)} is better at {level}" if ev.winner else f"not shown to differ at {level}"
    text = f"{head}: {primary_text(ev)}"
    low, high = ev.ci
    if ev.winner and low <= 0 <= high:
        # The test conditions on these tasks; the interval is over tasks drawn like them.
        text += " (the interval over tasks holds 0: the difference is shown on these tasks, not beyond them)"
    text += f"; {secondary_text(ev)}"
    if not ev.winner and ev.secondary_rejects:
        text += " (secondary evidence only: the verdict rests on the primary test)"
    if not ev.winner:
        text += could_detect(ev)
    return text


def could_detect(ev: Evidence) -> str:
    """What a comparison that found nothing could have found: ``; this comparison could detect ≥ 0.087
    (80% power)``, or nothing when that is unknown (fewer than two tasks)."""
    if ev.mde != ev.mde:
        return ""
    return f"; this comparison could detect ≥ {ev.mde:.3f} (80% power)"


def short_verdict_text(ev: Evidence) -> str:
    """The verdict without the figures the pane shows on the lines above it, e.g.
    ``A is better at 5% (within-task permutation test p = 0.00085), on these tasks: the interval
    over tasks holds 0``."""
    if ev.tasks == 0 or ev.fixed + ev.broken == 0:
        return verdict_text(ev)
    level = f"{ev.alpha:.0%}"
    test = f"({PRIMARY} p = {ev.decisive_p:.2g})"
    if not ev.winner:
        return f"not shown to differ at {level} {test}" + (
            "; a secondary test below α does not change it" if ev.secondary_rejects else "") + could_detect(ev)
    low, high = ev.ci
    caveat = ", on these tasks: the interval over tasks holds 0" if low <= 0 <= high else ""
    return f"{ev.better(ev.winner)} is better at {level} {test}{caveat}"


def verdict(cmp: PairedComparison, alpha: float = 0.05, adjusted_p: float | None = None) -> str:
    """The plain-language verdict of :func:`verdict_text` for a comparison."""
    return verdict_text(evidence(cmp, alpha, adjusted_p))
