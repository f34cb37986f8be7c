"""Test the forks: does a task's outcome depend on the branch its trials took?

At every split point of the fork map (:func:`~flaketui.traces.forkmap.split_points`)
each branch is tested against the rest of the node's trials with Fisher's exact
test, two-sided, on the 2×2 table (branch, rest) × (passes, failures); errored
trials are in neither column. A two-way split is one test (told from its smaller
branch); a split with more ways is one test per branch. The p-values of all a task's tests are adjusted
with Holm's step-down method, valid under any dependence between the tests.

The fork map is built in both divergence modes: ``actions`` for the agent's own
choices, and ``all`` for the forks where a tool result differs (the same chunks
in another order); a fork at a user's turn is not tested (a simulated user's
rewording is not the agent's doing, as in ``actions`` mode). A test that splits
the same trials in the same way in both maps is counted once, at its earlier step.
The test with the smallest p-value (ties: the earlier step) is the task's
*decisive fork*.

Sources: R. A. Fisher, *Statistical Methods for Research Workers* (1925), §21.02,
as computed by :func:`scipy.stats.fisher_exact` (the two-sided p-value sums the
probabilities of the tables no more likely than the observed one); S. Holm,
"A simple sequentially rejective multiple test procedure", *Scand. J. Statist.*
6 (1979) 65-70 (:func:`holm`, pinned to statsmodels' ``multipletests(method="holm")``).
Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from flaketui.stats.exact import fisher_pvalue
from flaketui.stats.pertask import holm
from flaketui.traces.forkmap import ForkNode, build_fork_map, split_points
from flaketui.traces.normalise import Normaliser, compact, one_line
from flaketui.traces.steps import ACTIONS, ALL, USER_ROLES, is_agent, role, step_line

LABEL_WIDTH = 60
"""Longest branch label (one line; ``…`` marks a cut)."""
ENDS = "(trace ends)"
"""The label of the branch of trials that end at the split."""


@dataclass(frozen=True)
class Branch:
    """One way the trials went on from a split point.

    ``step`` is the 1-based step (in the trace of the branch's first trial) that
    starts the branch; ``label`` is that step on one line (a tool result's
    content). For the trials whose trace (in ``actions`` mode: whose actions)
    end at the split, ``label`` is ``(trace ends)`` and ``step`` the split's step.
    ``n`` counts passes and failures (errored trials are neither).
    """

    step: int
    label: str
    passes: int
    n: int
    result: bool = False
    """The step is a tool result (``label`` is its content)."""

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "label": self.label, "result": self.result, "passes": self.passes, "n": self.n}


@dataclass(frozen=True)
class ForkTest:
    """Fisher's exact test of one branch of a split point against the rest of its trials.

    ``step`` is the tested branch's step; ``branches`` are every way the trials
    went on from the split (the tested one is ``branches[tested]``); ``rest_passes``
    and ``rest_n`` count the others. ``p_adjusted`` is Holm-adjusted over the
    task's tests (``tests`` of them).
    """

    step: int
    mode: str
    branches: tuple[Branch, ...]
    tested: int
    rest_passes: int
    rest_n: int
    p_value: float
    p_adjusted: float
    tests: int

    @property
    def branch(self) -> Branch:
        return self.branches[self.tested]

    def text(self) -> str:
        """``when step 3 returns `[1] Restart…`: 0 of 2 pass; otherwise 10 of 10 (p = 0.015)``."""
        b = self.branch
        if b.label == ENDS:
            what = "the agent does nothing more" if self.mode == ACTIONS else "the trace ends"
            when = f"when {what} after step {b.step}"
        else:
            when = f"when step {b.step} {'returns' if b.result else 'is'} `{b.label}`"
        holm = f", Holm-adjusted over {self.tests} tests: {self.p_adjusted:.2g}" if self.tests > 1 else ""
        return (f"{when}: {b.passes} of {b.n} pass; otherwise {self.rest_passes} of {self.rest_n} "
                f"(p = {self.p_value:.2g}{holm})")

    def to_json(self) -> dict[str, Any]:
        """``{"step", "mode", "branches": [{"step", "label", "passes", "n"}], "tested", "rest": {…},
        "p_value", "p_adjusted", "tests", "text"}``."""
        return {
            "step": self.step,
            "mode": self.mode,
            "branches": [b.to_json() for b in self.branches],
            "tested": self.tested,
            "rest": {"passes": self.rest_passes, "n": self.rest_n},
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "tests": self.tests,
            "text": self.text(),
        }


SETUP_ROLES = frozenset({"system", "developer"})
"""Roles of the instructions a trial starts from (not a tool's doing)."""


def is_tool_result(step: Any) -> bool:
    """A step that is not the agent's, the user's or the instructions': a tool result (or a plain string step)."""
    return not is_agent(step) and role(step) not in USER_ROLES | SETUP_ROLES


def _share(b: Branch) -> float:
    return b.passes / b.n if b.n else 0.0


def _branches(node: ForkNode) -> list[tuple[Branch, frozenset[int]]]:
    """Each way on from ``node`` with the trial numbers that took it."""
    out = []
    passes = fails = 0
    seen: set[int] = set()
    for child in node.children:
        result = is_tool_result(child.step) and isinstance(child.step, dict) and "content" in child.step
        label = one_line(compact(child.step["content"]), LABEL_WIDTH) if result else step_line(child.step, LABEL_WIDTH)
        out.append((Branch(child.number, label, child.passes, child.passes + child.fails, result),
                    frozenset(child.trials)))
        passes, fails = passes + child.passes, fails + child.fails
        seen.update(child.trials)
    if node.ended:
        ended = frozenset(node.trials) - seen
        n_pass, n_fail = node.passes - passes, node.fails - fails
        out.append((Branch(node.number, ENDS, n_pass, n_pass + n_fail), ended))
    return out


def fork_tests(
    trials: Sequence[tuple[int, int, Sequence[Any] | None]],
    normaliser: Normaliser | None = None,
    modes: Sequence[str] = (ALL, ACTIONS),
) -> list[ForkTest]:
    """Every split point's branch tests, Holm-adjusted together, smallest p first (ties: earlier step).

    Args:
        trials: ``(trial number, outcome, trace)`` per trial, as for
            :func:`~flaketui.traces.forkmap.build_fork_map`.
        normaliser: Which keys to ignore.
        modes: The divergence modes whose fork maps are tested; a test that
            splits the same trials the same way in two maps is counted once.
    """
    raw: list[ForkTest] = []
    seen: dict[tuple[frozenset[int], frozenset[int]], int] = {}
    for mode in modes:
        for node in split_points(build_fork_map(trials, normaliser, mode)):
            if mode == ALL and not all(is_tool_result(c.step) for c in node.children):
                continue  # the agent's forks are tested in actions mode; a user's rewording is no fork
            branches = _branches(node)
            everyone = frozenset(node.trials)
            total_pass = sum(b.passes for b, _ in branches)
            total_n = sum(b.n for b, _ in branches)
            if len(branches) == 2:  # one test: it reads best from the smaller (then the worse) branch
                ways: Sequence[int] = [min((0, 1), key=lambda k: (branches[k][0].n, _share(branches[k][0])))]
            else:
                ways = range(len(branches))
            for k in ways:
                b, members = branches[k]
                key = (everyone, members)
                twin = (everyone, everyone - members)
                p = fisher_pvalue(b.passes, b.n, total_pass - b.passes, total_n - b.n)
                test = ForkTest(b.step, mode, tuple(x for x, _ in branches), k, total_pass - b.passes,
                                total_n - b.n, p, p, 0)
                earlier = seen.get(key, seen.get(twin))
                if earlier is not None:  # the same partition in the other map: keep the earlier step
                    if raw[earlier].step > b.step:
                        raw[earlier] = test
                    continue
                seen[key] = len(raw)
                raw.append(test)
    adjusted = holm(np.array([t.p_value for t in raw], dtype=float)).tolist()
    out = [replace(t, p_adjusted=a, tests=len(raw)) for t, a in zip(raw, adjusted, strict=True)]
    out.sort(key=lambda t: (t.p_value, t.step))
    return out


def decisive_fork(
    trials: Sequence[tuple[int, int, Sequence[Any] | None]],
    normaliser: Normaliser | None = None,
    modes: Sequence[str] = (ALL, ACTIONS),
) -> ForkTest | None:
    """The split test with the smallest p-value (see :func:`fork_tests`), or None when nothing splits."""
    tests = fork_tests(trials, normaliser, modes)
    return tests[0] if tests else None
