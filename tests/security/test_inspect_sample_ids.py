"""``plan --emit inspect``: Inspect reads ``--sample-id`` as a comma-separated list of fnmatch
patterns (each stripped of spaces), so a task id ``*`` would select every sample. Checked with
Inspect's own parser and matcher: the emitted list selects exactly the planned tasks."""

from __future__ import annotations

import shlex

import pytest

from flaketui.output.emit import batches, commands

IDS = ["*", "a?", "[ab]", "[!x]", "t*1", "a", "ab", "b", "x", "t11", "t1", "42", "042", "a b", " pad", "pad ",
       "a,b", "user:x/y"]
"""Hostile ids (globs, a digit id and its zero-padded twin, spaces, a comma) and the ids a glob
among them would also match."""


@pytest.mark.slow
@pytest.mark.parametrize("planned", [["*"], ["a?"], ["[ab]"], ["[!x]", "t*1"], IDS])
def test_emitted_sample_ids_select_exactly_the_planned_tasks(planned: list[str]) -> None:
    """Inspect's parse_sample_id and sample_id_filter, given the emitted --sample-id, select the
    planned ids (those that can be written) and no other id of the dataset."""
    util = pytest.importorskip("inspect_ai._eval.task.util")
    samples = pytest.importorskip("inspect_ai._util.samples")
    from inspect_ai.dataset._util import normalise_sample_id

    text = commands("inspect", batches([("r", t, 1) for t in planned]))
    cmd = [ln for ln in text.splitlines() if ln.startswith("inspect eval")]
    left_out = {t for t in planned if "," in t or t != t.strip()}
    if not cmd:
        assert set(planned) <= left_out
        return
    argv = shlex.split(cmd[0])
    matcher = util.sample_id_filter(samples.parse_sample_id(argv[argv.index("--sample-id") + 1]))
    selected = {t for t in IDS if matcher.matches(t)}
    wanted = {t for t in IDS if any(normalise_sample_id(t) == normalise_sample_id(p)
                                    for p in planned if p not in left_out)}
    assert selected == wanted
