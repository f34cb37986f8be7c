"""Owners files are matched in bounded time: the rules are bucketed by literal prefix, so a big
owners file over a big history costs what each rule can match, and the answer is the same as
trying every rule on every task, last match winning."""

from __future__ import annotations

import fnmatch
import random
import time

import pytest

from flaketui.history.owners import owners_of, parse_owners


def brute(tasks, rules, groups):  # type: ignore[no-untyped-def]
    """The last rule whose glob matches the task id or its group, trying every rule."""
    out = []
    for t, g in zip(tasks, groups, strict=True):
        got = ()
        for r in rules:
            if fnmatch.fnmatchcase(t, r.pattern) or (g is not None and fnmatch.fnmatchcase(g, r.pattern)):
                got = r.owners
        out.append(got)
    return out


def test_owners_match_brute_force():
    """Bucketed matching gives what trying every rule on every task gives (seeded random globs)."""
    rng = random.Random(7)
    alphabet = "ab/-*?[]x"
    tasks = ["".join(rng.choice("ab/-x1") for _ in range(rng.randint(0, 6))) for _ in range(400)]
    groups = [rng.choice([None, "a", "b/x", "[a]", "\U0010ffff"]) for _ in tasks]
    lines = []
    for i in range(120):
        pat = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        lines.append(f"{pat} @o{i}" if i % 9 else pat)
    lines += ["\U0010ffff* @top", "a\U0010ffff @edge"]
    rules = parse_owners("\n".join(lines))
    assert owners_of(tasks, rules, groups) == brute(tasks, rules, groups)


@pytest.mark.slow
def test_two_thousand_rules_over_100k_tasks_is_fast():
    """A 2,000-line owners file over 100,000 tasks (with groups) is matched in under 2 s."""
    tasks = [f"suite{i % 2000}/case-{i}" for i in range(100_000)]
    groups = [f"team{i % 50}" if i % 3 == 0 else None for i in range(100_000)]
    text = "\n".join([f"suite{i}/* @owner{i}" for i in range(1990)]
                     + [f"team{i}* @t{i}" for i in range(10)])
    rules = parse_owners(text)
    t0 = time.perf_counter()
    got = owners_of(tasks, rules, groups)
    elapsed = time.perf_counter() - t0
    assert got[5] == ("@owner5",) and got[3] == ("@t3",)
    assert elapsed < 2.0, f"{elapsed:.2f} s"
