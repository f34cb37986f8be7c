"""The fork map: every trial of a task as a tree of shared steps, with pass/fail per branch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from flaketui.sanitize import visible
from flaketui.traces.forkmap import ForkNode, chain, split_points
from flaketui.traces.normalise import describe

if TYPE_CHECKING:
    from flaketui.traces.forktest import ForkTest  # the decisive fork's test, found by the screen's worker

MAX_CHILDREN = 50
"""Branches shown under one fork; the rest are counted."""


def counts(node: ForkNode) -> Text:
    """``✓8 ✗0`` (and errored), green when all pass, red when all fail, amber when mixed."""
    style = "yellow" if node.mixed else ("green" if node.fails == 0 else "red")
    text = Text(f"✓{node.passes} ✗{node.fails}", style=f"bold {style}")
    if node.errored:
        text.append(f" !{node.errored}", style="dim")
    return text


def branches(node: ForkNode) -> list[tuple[int, int, int]]:
    """``(step, passes, trials)`` of each way on from ``node`` (the trials that end there last);
    errored trials count in neither, as in :func:`~flaketui.traces.fork_tests`."""
    out = [(c.number, c.passes, c.passes + c.fails) for c in node.children]
    if node.ended:
        passes = node.passes - sum(c.passes for c in node.children)
        fails = node.fails - sum(c.fails for c in node.children)
        out.append((node.number, passes, passes + fails))
    return out


def same_split(node: ForkNode, test: ForkTest) -> bool:
    """One of ``node``'s branches has the passes / trials of ``test``'s tested branch, and the
    others together its rest's."""
    ways = branches(node)
    b = test.branch
    return (any((p, n) == (b.passes, b.n) for _, p, n in ways)
            and sum(p for _, p, _ in ways) == b.passes + test.rest_passes
            and sum(n for _, _, n in ways) == b.n + test.rest_n)


def decisive_node(points: list[ForkNode], test: ForkTest) -> ForkNode | None:
    """The split point ``test`` is about: one where a branch starts at the test's step with the
    test's passes / trials per branch; else (the test is from the other divergence mode's map,
    e.g. a tool result the ``actions`` map leaves out) the shallowest split with those counts."""
    exact = [n for n in points if same_split(n, test) and any(s == test.step for s, _, _ in branches(n))]
    return next(iter(exact or [n for n in points if same_split(n, test)]), None)


def decisive_mark(test: ForkTest, node: ForkNode | None = None) -> str:
    """``◆ decisive: p = 0.015 (Holm 0.045)``; ``node`` (the split marked) not at the test's step:
    ``◆ decisive (step 3 in all mode): …``."""
    holm = f" (Holm {test.p_adjusted:.2g})" if test.tests > 1 else ""
    where = "" if node is None or any(s == test.step for s, _, _ in branches(node)) else \
        f" (step {test.step} in {test.mode} mode)"
    return f"◆ decisive{where}: p = {test.p_value:.2g}{holm}"


def node_label(nodes: list[ForkNode], split: bool, width: int = 56, *, branch: bool = False,
               decisive: ForkTest | None = None) -> Text:
    """Label of a chain of nodes: step range, counts (``branch``: also its passes / trials, for a
    branch of a split point), the split marker (and the decisive fork's test), the first step."""
    first, last = nodes[0], nodes[-1]
    a, b = visible(str(first.name)), visible(str(last.name))  # a harness's id is log text
    steps = f"step {a}" if first is last else f"steps {a}–{b}"
    text = Text(f"{steps:<11} ", style="cyan")
    text.append_text(counts(first))
    if branch:
        text.append(f" {first.passes}/{first.passes + first.fails} pass", style="dim")
    text.append("  ")
    if split:
        text.append(f"◆ outcomes split after step {visible(str(last.name))}", style="bold reverse yellow")
        text.append("  ")
    if decisive is not None:
        text.append(decisive_mark(decisive, last), style="bold reverse magenta")
        text.append("  ")
    text.append(visible(describe(first.step, width)), style="not bold")
    if last.ended and last.children:
        text.append(f"  ({last.ended} end here)", style="dim")
    return text


class ForkMap(Tree[ForkNode]):
    """A task's trials as a prefix tree of normalised steps (see :mod:`flaketui.traces.forkmap`).

    Linear stretches where nothing forks are shown as one line (``steps 4–6``);
    the fork where outcomes separate is marked ``◆``.
    """

    DEFAULT_CSS = """
    ForkMap { height: 1fr; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("fork map", id=id)
        self.show_root = True
        self.shown: tuple[ForkNode, int] | None = None
        """The map shown and its count of trials without a trace."""
        self.decisive: ForkTest | None = None
        """The task's decisive fork (:func:`~flaketui.traces.decisive_fork`), marked where it splits."""

    def set_decisive(self, test: ForkTest | None) -> None:
        """Mark ``test``'s split as the decisive fork (and show the map again)."""
        self.decisive = test
        if self.shown is not None:
            self.show_map(*self.shown)

    def show_map(self, root: ForkNode, no_trace: int = 0) -> None:
        """Fill the tree from ``root`` (built by :func:`~flaketui.traces.build_fork_map`)."""
        self.clear()
        self.shown = (root, no_trace)
        points = split_points(root)
        splits = {id(n) for n in points}
        test = self.decisive
        decisive = None if test is None else decisive_node(points, test)
        label = Text(f"{root.total} traced trials  ", style="bold")
        label.append_text(counts(root))
        if no_trace:
            label.append(f"   ({no_trace} trial(s) without a trace left out)", style="dim")
        if id(root) in splits:
            label.append(f"  ◆ outcomes split at step {visible(str(root.split_name))}", style="bold reverse yellow")
        if test is not None and decisive is root:
            label.append("  ")
            label.append(decisive_mark(test, root), style="bold reverse magenta")
        elif test is not None and decisive is None:
            label.append(f"   decisive fork at step {test.step} (p = {test.p_value:.2g}) is in the "
                         f"{test.mode} mode's map: v switches", style="dim")
        self.root.set_label(label)
        self.root.data = root
        if not splits:
            note = ("the outcomes do not separate along any branch: passing and failing trials "
                    "took the same steps" if root.mixed else "one outcome only: nothing to split")
            self.root.add_leaf(Text(note, style="italic dim"))
        self._add_children(self.root, root, splits, decisive)
        self.root.expand_all()

    def _add_children(self, parent: TreeNode[ForkNode], node: ForkNode, splits: set[int],
                      decisive: ForkNode | None = None) -> None:
        """Add ``node``'s branches under ``parent``, and theirs below them (with a stack, no
        recursion: a 5,000-step trace is a tree 5,000 deep)."""
        stack: list[tuple[TreeNode[ForkNode], ForkNode]] = [(parent, node)]
        while stack:
            tree_node, fork = stack.pop()
            later: list[tuple[TreeNode[ForkNode], ForkNode]] = []
            for child in fork.children[:MAX_CHILDREN]:
                nodes = chain(child)
                last = nodes[-1]
                split = any(id(n) in splits for n in nodes)
                test = self.decisive if decisive is not None and any(n is decisive for n in nodes) else None
                label = node_label(nodes, split, branch=id(fork) in splits, decisive=test)
                if last.children:
                    branch = tree_node.add(label, data=last, expand=True)
                    later.append((branch, last))
                else:
                    tree_node.add_leaf(label, data=last)
            if len(fork.children) > MAX_CHILDREN:
                tree_node.add_leaf(Text(f"… {len(fork.children) - MAX_CHILDREN} more branches",
                                        style="dim"))
            stack.extend(reversed(later))
