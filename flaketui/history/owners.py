"""Owners from a CODEOWNERS-style file: ``PATTERN OWNER…`` lines, globs over task ids or groups.

As in GitHub's CODEOWNERS, the last matching line wins; ``#`` starts a comment; a pattern
with no owner clears the owner of the tasks it matches. Patterns are :mod:`fnmatch` globs
(``*``, ``?``, ``[seq]``), matched case-sensitively against the whole task id, or against the
whole name of the task's group (the log's ``group`` field, as the history recorded it): a line
matches a task when it matches either.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from bisect import bisect_left
from pathlib import Path

_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Rule:
    """One line of an owners file."""

    pattern: str
    owners: tuple[str, ...]
    line: int
    regex: re.Pattern[str]
    prefix: str = ""
    """The pattern's literal start (up to its first ``*``, ``?`` or ``[``): only names that start
    with it can match, and those are one slice of the sorted names."""


class OwnersError(ValueError):
    """An owners file that cannot be read (names the file and line)."""


def parse_owners(text: str, source: str = "<owners>") -> list[Rule]:
    """The rules of an owners file, in file order."""
    rules = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pattern, *owners = line.split()
        try:
            regex = re.compile(fnmatch.translate(pattern))
        except re.error as exc:
            raise OwnersError(f"{source}:{number}: pattern {pattern!r} is not a glob ({exc})") from exc
        rules.append(Rule(pattern, tuple(owners), number, regex, _GLOB.split(pattern, 1)[0]))
    return rules


def read_owners(path: str | Path) -> list[Rule]:
    """The rules of the owners file at ``path`` (:class:`OwnersError` if unreadable)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OwnersError(f"owners file {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from exc
    return parse_owners(text, str(path))


def owners_of(tasks: Sequence[str], rules: Sequence[Rule],
              groups: Sequence[str | None] | None = None) -> list[tuple[str, ...]]:
    """Each task's owners (empty: none) by the last rule that matches its id or its group
    (``groups``, aligned with ``tasks``; None: no groups).

    Bounded by literal-prefix buckets: the names (task ids and groups) are sorted once, and a
    rule is tried only on the slice that starts with its literal prefix (two bisections), so a
    2,000-line file over 100,000 tasks costs the names each rule can match, not rules × tasks
    regex calls. Rules are taken from the last (the last match wins), and a name already owned
    is not tried again."""
    out: list[tuple[str, ...] | None] = [None] * len(tasks)
    names = [(name, i) for i, name in enumerate(tasks)]
    if groups is not None:
        names += [(g, i) for i, g in enumerate(groups) if g is not None]
    names.sort()
    keys = [name for name, _ in names]
    left = len(tasks)
    for rule in reversed(rules):  # the last match wins: the first found from the end
        if not left:
            break
        lo, hi = _slice(keys, rule.prefix)
        match = rule.regex.match
        for j in range(lo, hi):
            i = names[j][1]
            if out[i] is None and match(keys[j]):
                out[i] = rule.owners
                left -= 1
    return [o or () for o in out]


def _slice(keys: list[str], prefix: str) -> tuple[int, int]:
    """The range of sorted ``keys`` that start with ``prefix``."""
    if not prefix:
        return 0, len(keys)
    lo = bisect_left(keys, prefix)
    hi = lo
    end = len(keys)
    # the names with the prefix: from lo up to the first name past every extension of it
    if prefix[-1] < "\U0010ffff":
        hi = bisect_left(keys, prefix[:-1] + chr(ord(prefix[-1]) + 1), lo, end)
    else:
        while hi < end and keys[hi].startswith(prefix):
            hi += 1
    return lo, hi
