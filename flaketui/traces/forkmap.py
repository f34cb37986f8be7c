"""The fork map: all trials of a task as a prefix tree of normalised steps.

Each node is a step that a set of trials share after sharing every step before
it; it counts the passing, failing and errored trials that went through it.
Where a node's trials continue in different ways the tree forks, and the fork
where the outcomes separate (:attr:`ForkNode.splits`) is the branch point that
tells, for example, "every trial that took the restart-first branch failed".
Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from flaketui.model import ERRORED, PASS
from flaketui.traces.normalise import Normaliser
from flaketui.traces.steps import ALL, action_keys, check_mode, harness_step_ids


@dataclass(eq=False, repr=False)
class ForkNode:
    """A step shared by a set of trials (the root, ``depth == 0``, stands for the start).

    ``step`` is the normalised step of the first trial that reached the node and
    ``number`` its 1-based place in that trial's trace (in ``actions`` mode the
    tree holds only the agent's actions, so ``depth`` counts actions and
    ``number`` steps); ``ended`` counts trials whose trace ends at this node.
    """

    signature: str | None
    step: Any
    depth: int
    passes: int = 0
    fails: int = 0
    errored: int = 0
    trials: list[int] = field(default_factory=list)
    ended: int = 0
    children: list[ForkNode] = field(default_factory=list)
    number: int = 0
    harness_id: Any = None
    """The harness's own id of the step (ATIF ``step_id``, τ²'s ``turn_idx``) in the first trial
    that reached the node (:func:`~flaketui.traces.steps.harness_step_ids`); None: it numbers none."""

    @property
    def name(self) -> Any:
        """The step as it is shown: its harness id, else its 1-based place (:attr:`number`)."""
        return self.number if self.harness_id is None else self.harness_id

    def __repr__(self) -> str:  # the dataclass one recurses into every child
        return (f"ForkNode(depth={self.depth}, number={self.number}, passes={self.passes}, "
                f"fails={self.fails}, errored={self.errored}, children={len(self.children)})")

    @property
    def total(self) -> int:
        return self.passes + self.fails + self.errored

    @property
    def mixed(self) -> bool:
        """Both passing and failing trials went through this node."""
        return self.passes > 0 and self.fails > 0

    @property
    def continuations(self) -> int:
        """Ways the trials go on from here: children, plus one if some trials end here."""
        return len(self.children) + (1 if self.ended else 0)

    @property
    def splits(self) -> bool:
        """The outcomes separate here: mixed, forking, and some branch is all-pass or all-fail."""
        if not self.mixed or self.continuations < 2:
            return False
        return any(c.passes == 0 or c.fails == 0 for c in self.children)

    @property
    def split_step(self) -> int:
        """The 1-based step where the ways on from this node start: the earliest first step of its
        branches (the step of a branch that starts it, as :class:`~flaketui.traces.forktest.Branch`
        and the decisive fork's ``step`` count it), this node's own step when it has none.

        For the root this is not step 1: in ``actions`` mode the first action can come after
        the instructions and user turns (a map that said "outcomes split at step 1" above
        branches that start at step 5 contradicted its "decisive fork at step 5"). A display marking a split
        says ``split at step {node.split_step}``.
        """
        if not self.children:
            return max(self.number, 1)
        return min(c.number for c in self.children)

    @property
    def split_name(self) -> Any:
        """:attr:`split_step` as it is shown: the harness's id of the branch's step that starts it."""
        if not self.children:
            return self.name if self.number else 1
        return min(self.children, key=lambda c: c.number).name

    def walk(self) -> Iterator[ForkNode]:
        """This node and every node below it, depth first, in child order (no recursion)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


def build_fork_map(
    trials: Sequence[tuple[int, int, Sequence[Any] | None]],
    normaliser: Normaliser | None = None,
    mode: str = ALL,
) -> ForkNode:
    """Build the prefix tree of ``trials``.

    Args:
        trials: ``(trial number, outcome, trace)`` per trial; outcome is
            :data:`~flaketui.model.PASS`, ``FAIL`` or ``ERRORED``. Trials without a
            trace are left out.
        normaliser: Which keys to ignore when comparing steps.
        mode: ``all``: every step is a node. ``actions``: only the agent's
            actions (:func:`~flaketui.traces.steps.action_keys`) are, so trials
            fork where the agent acted differently, not where the user reworded.

    Returns:
        The root. Children are ordered by the number of trials through them
        (most first), then by first appearance.
    """
    check_mode(mode)
    norm = normaliser or Normaliser()
    root = ForkNode(None, None, 0)
    for number, outcome, trace in trials:
        if trace is None:
            continue
        node = root
        _count(node, number, outcome)
        keys = norm.signatures(trace) if mode == ALL else action_keys(trace, norm)
        ids = harness_step_ids(trace)
        for i, (step, sig) in enumerate(zip(trace, keys, strict=True)):
            if sig is None:
                continue
            child = next((c for c in node.children if c.signature == sig), None)
            if child is None:
                child = ForkNode(sig, norm.step(step), node.depth + 1, number=i + 1,
                                 harness_id=ids[i] if ids else None)
                node.children.append(child)
            node = child
            _count(node, number, outcome)
        node.ended += 1
    for node in root.walk():
        node.children.sort(key=lambda c: -c.total)  # stable: ties keep first appearance
    return root


def _count(node: ForkNode, number: int, outcome: int) -> None:
    node.trials.append(number)
    if outcome == PASS:
        node.passes += 1
    elif outcome == ERRORED:
        node.errored += 1
    else:
        node.fails += 1


def split_points(root: ForkNode) -> list[ForkNode]:
    """Every node where the outcomes separate, shallowest first."""
    found = [n for n in root.walk() if n.splits]
    found.sort(key=lambda n: n.depth)
    return found


def chain(node: ForkNode) -> list[ForkNode]:
    """``node`` and the nodes below it that every one of its trials goes through.

    A display can show such a chain as one line (steps 4-6) since nothing forks in it.
    """
    out = [node]
    while len(node.children) == 1 and not node.ended and node.children[0].total == node.total:
        node = node.children[0]
        out.append(node)
    return out
