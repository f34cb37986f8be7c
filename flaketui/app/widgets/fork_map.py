"""The fork map: every trial of a task as a tree of shared steps, with pass/fail per branch."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from flaketui.sanitize import visible
from flaketui.traces import ForkNode, chain, describe, split_points

MAX_CHILDREN = 50
"""Branches shown under one fork; the rest are counted."""


def counts(node: ForkNode) -> Text:
    """``✓8 ✗0`` (and errored), green when all pass, red when all fail, amber when mixed."""
    style = "yellow" if node.mixed else ("green" if node.fails == 0 else "red")
    text = Text(f"✓{node.passes} ✗{node.fails}", style=f"bold {style}")
    if node.errored:
        text.append(f" !{node.errored}", style="dim")
    return text


def node_label(nodes: list[ForkNode], split: bool, width: int = 56) -> Text:
    """Label of a chain of nodes: step range, counts, the first step, and the split marker."""
    first, last = nodes[0], nodes[-1]
    steps = f"step {first.number}" if first is last else f"steps {first.number}–{last.number}"
    text = Text(f"{steps:<11} ", style="cyan")
    text.append_text(counts(first))
    text.append("  ")
    if split:
        text.append(f"◆ outcomes split after step {last.number}", style="bold reverse yellow")
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

    def show_map(self, root: ForkNode, no_trace: int = 0) -> None:
        """Fill the tree from ``root`` (built by :func:`~flaketui.traces.build_fork_map`)."""
        self.clear()
        splits = {id(n) for n in split_points(root)}
        label = Text(f"{root.total} traced trials  ", style="bold")
        label.append_text(counts(root))
        if no_trace:
            label.append(f"   ({no_trace} trial(s) without a trace left out)", style="dim")
        if id(root) in splits:
            label.append("  ◆ outcomes split at step 1", style="bold reverse yellow")
        self.root.set_label(label)
        self.root.data = root
        if not splits:
            note = ("the outcomes do not separate along any branch: passing and failing trials "
                    "took the same steps" if root.mixed else "one outcome only: nothing to split")
            self.root.add_leaf(Text(note, style="italic dim"))
        self._add_children(self.root, root, splits)
        self.root.expand_all()

    def _add_children(self, parent: TreeNode[ForkNode], node: ForkNode, splits: set[int]) -> None:
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
                label = node_label(nodes, split)
                if last.children:
                    branch = tree_node.add(label, data=last, expand=True)
                    later.append((branch, last))
                else:
                    tree_node.add_leaf(label, data=last)
            if len(fork.children) > MAX_CHILDREN:
                tree_node.add_leaf(Text(f"… {len(fork.children) - MAX_CHILDREN} more branches",
                                        style="dim"))
            stack.extend(reversed(later))
