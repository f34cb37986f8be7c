"""Risk tiers: tasks that must get more trials than the rest, whatever their figures.

A task is in the high tier when one of its trials is tagged with a risk tag
(``high-risk`` or ``write`` by default) or when it was flaky in a run; the
others are in the low tier. Each tier has its own minimum number of trials.
No Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

HIGH, LOW = "high", "low"
"""Risk tiers: ``high`` (tagged high-risk or write, or flaky before) and ``low`` (the rest)."""

DEFAULT_RISK_TAGS = ("high-risk", "write")
"""Tags (in a trial's ``tags`` or ``risk`` field) that put a task in the high tier."""


class TaskTraits(Protocol):
    """What a plan knows of a task beyond its outcomes (:class:`flaketui.loading.extras.TaskExtras`)."""

    @property
    def tags(self) -> frozenset[str]:
        """Lower-case tags of the task's trials."""
        ...

    @property
    def temperature(self) -> float | None:
        """Sampling temperature of the task's trials, if the log records one."""
        ...


@dataclass(frozen=True)
class Tier:
    """A task's risk tier and why it is in it."""

    name: str
    """:data:`HIGH` or :data:`LOW`."""
    reason: str


READ_ONLY = Tier(LOW, "read-only, stable")
"""The tier of a task neither tagged nor flaky before."""


def tier_of(tags: frozenset[str], flaky_before: Sequence[str], risk_tags: Sequence[str]) -> Tier:
    """The tier of a task with ``tags`` that was flaky in the runs ``flaky_before``.

    Examples
    --------
    >>> tier_of(frozenset({"write"}), [], DEFAULT_RISK_TAGS)
    Tier(name='high', reason='tagged write')
    >>> tier_of(frozenset(), [], DEFAULT_RISK_TAGS).name
    'low'
    """
    if not tags and not flaky_before:
        return READ_ONLY
    hit = sorted(tags & {t.lower() for t in risk_tags})
    if hit:
        return Tier(HIGH, "tagged " + ", ".join(hit))
    if flaky_before:
        return Tier(HIGH, "flaky before in " + ", ".join(flaky_before))
    return READ_ONLY
