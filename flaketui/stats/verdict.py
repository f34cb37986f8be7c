"""One verdict on two runs from all the evidence: directions (sign test) and sizes (CI, permutation test).

The sign test counts which way tasks changed; the mean difference of p̂ with
its paired CI, and the paired permutation test, weigh how much they changed.
They can disagree: 7 tasks up by a lot and 2 down by a little is not a
significant count (p = 0.18) but may be a clear gain in size. The verdict then
says what each piece of evidence says, and it never calls a difference absent
while the interval excludes zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: flaketui.stats imports this module at once, not the tests
    from flaketui.stats.paired import PairedComparison


@dataclass(frozen=True)
class Evidence:
    """The suite-level figures a verdict rests on."""

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

    @property
    def directions(self) -> int:
        """+1 when the sign test says B is better, −1 when it says A is, 0 when not significant."""
        if self.sign_p < self.alpha and self.fixed != self.broken:
            return 1 if self.fixed > self.broken else -1
        return 0

    @property
    def interval(self) -> int:
        """+1 when the CI of the mean difference lies above 0, −1 below, 0 when it holds 0 (or is missing)."""
        low, high = self.ci
        return 1 if low > 0 else -1 if high < 0 else 0

    @property
    def permutation(self) -> int:
        """+1 / −1 when the permutation test is significant (the sign of the mean difference), else 0."""
        if self.permutation_p < self.alpha and self.mean_diff == self.mean_diff and self.mean_diff != 0:
            return 1 if self.mean_diff > 0 else -1
        return 0

    @property
    def sizes(self) -> int:
        """+1 / −1 when the interval or the permutation test shows a difference (both follow the mean's sign)."""
        return self.interval or self.permutation

    def better(self, side: int) -> str:
        return self.run_b if side > 0 else self.run_a


def evidence(cmp: PairedComparison, alpha: float = 0.05) -> Evidence:
    """The sign test, mean difference with CI, and permutation test of a comparison."""
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
    )


def directions_text(ev: Evidence) -> str:
    """What the sign test says, e.g.
    ``directions alone: not significant (sign test p = 0.077: 7 fixed vs 2 broken)``."""
    counts = f"sign test p = {ev.sign_p:.2g}: {ev.fixed} fixed vs {ev.broken} broken"
    if ev.directions:
        return f"directions: {ev.better(ev.directions)} better ({counts})"
    return f"directions alone: not significant ({counts})"


def sizes_text(ev: Evidence) -> str:
    """What the mean difference's interval and the permutation test say, e.g.
    ``sizes: B better by 0.160 [0.008, 0.312] (permutation p = 0.031)``.

    The amount and its interval are those of the better run over the other
    (B − A when B is better, A − B when A is).
    """
    low, high = ev.ci
    side = ev.sizes or 1
    if side < 0:
        low, high = -high, -low
    interval = f"[{low:.3f}, {high:.3f}]" if low == low and high == high else "(no interval)"
    perm = f"permutation p = {ev.permutation_p:.2g}"
    if ev.interval:
        head = f"sizes: {ev.better(side)} better by {abs(ev.mean_diff):.3f} {interval}"
        if ev.permutation:
            return f"{head} ({perm})"
        return f"{head} (the interval excludes 0; the permutation test alone is not significant, {perm})"
    if ev.permutation:
        return (f"sizes: {ev.better(side)} better by {abs(ev.mean_diff):.3f} by the permutation test "
                f"({perm}), though its interval {interval} holds 0")
    return f"sizes: not shown to differ (mean difference {ev.mean_diff:+.3f} {interval}, {perm})"


def verdict_text(ev: Evidence) -> str:
    """One line that agrees with every figure it rests on.

    - all agree on a direction: ``B is better (p = 0.0156): 7 fixed vs 0 broken; sizes: …``
    - none shows a difference: ``not shown to differ at 5%: 7 fixed vs 4 broken happens by
      chance 55% of the time`` (the interval holds 0 and the permutation test agrees)
    - sizes show one, directions alone do not (or the reverse): the better run "by the sizes
      of the changes" (or "by the directions"), then what each says
    - directions and sizes point opposite ways: "the evidence conflicts", then what each says

    "Not shown to differ" is said of the sizes only when the interval holds 0
    and the permutation test is not significant.
    """
    if ev.tasks == 0:
        return "the runs have no task in common: nothing to compare"
    if ev.fixed + ev.broken == 0:
        return "no task changed its pass rate"
    level = f"{ev.alpha:.0%}"
    d, s = ev.directions, ev.sizes
    if d == 0 and s == 0:
        return (f"not shown to differ at {level}: {ev.fixed} fixed vs {ev.broken} broken happens by chance "
                f"{ev.sign_p:.0%} of the time")
    if d == s:
        return (f"{ev.better(d)} is better (p = {ev.sign_p:.3g}): {ev.fixed} fixed vs {ev.broken} broken; "
                f"{sizes_text(ev)}")
    parts = f"{directions_text(ev)}; {sizes_text(ev)}"
    if d == 0:
        return f"{ev.better(s)} is better at {level} by the sizes of the changes: {parts}"
    if s == 0:
        return f"{ev.better(d)} is better at {level} by the directions of the changes: {parts}"
    return (f"the evidence conflicts at {level}: {parts} (many small changes one way, fewer larger ones "
            "the other)")


def verdict(cmp: PairedComparison, alpha: float = 0.05) -> str:
    """One plain-language verdict from the sign test, the mean difference's CI and the permutation test.

    See :func:`flaketui.stats.verdict.verdict_text`: when the pieces of
    evidence disagree it names what each says, and it never calls a difference
    absent when the interval excludes zero.
    """
    return verdict_text(evidence(cmp, alpha))
