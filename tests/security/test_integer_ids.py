"""Integer ids are the log's text, exactly, on every path and format.

-9223372036854775809 (one below int64) and -9223372036854775808 were one task; 19 nines
after a minus became ``-10000000000000000000``; τ² ids 10**30 and 10**30 + 1 were one task
and the second trial was dropped as a duplicate; lm-eval ``doc_id``s the same. An integer
past the double range (and past Python's 4,300-digit conversion limit) is an id too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flaketui.loading import load_logs
from flaketui.loading.jsonl import LineParser, read_range
from flaketui.loading.records import RecordSink
from flaketui.loading.scan import parse_range
from flaketui.model import FieldMap

IDS = ["-9223372036854775809", "-9223372036854775808", "-" + "9" * 19, "9" * 19, "18446744073709551615",
       "18446744073709551616", str(10**30), str(10**30 + 1), "-" + "9" * 30, "8" * 350, "7" * 5000,
       "-" + "7" * 5000]
"""Neighbours at int64's ends, past 64 bits, past the double range, past ``int()``'s limit."""


def _lines(key: str = "task", extra: str = '"passed": true') -> str:
    return "".join(f'{{"{key}": {i}, {extra}}}\n' for i in IDS)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_jsonl_and_json_ids_are_their_text(tmp_path: Path, suffix: str) -> None:
    """Integer task ids in JSON Lines and JSON are kept as their text."""
    p = tmp_path / f"run{suffix}"
    p.write_text(_lines() if suffix == ".jsonl" else "[" + ",".join(_lines().splitlines()) + "]")
    log = load_logs([p], use_cache=False)
    assert log.tasks == IDS and not log.problems


def test_every_jsonl_path_gives_the_same_ids(tmp_path: Path) -> None:
    """The batch reader (the C scanner where built) and the per-line reader agree."""
    p = tmp_path / "run.jsonl"
    p.write_text(_lines() + '{"task": 5, "passed": false}\n')
    batch, _ = parse_range(str(p), 0, p.stat().st_size, FieldMap(), "run")
    sink = RecordSink(FieldMap(), "run")
    parser = LineParser(str(p), sink)
    read_range(str(p), 0, p.stat().st_size, parser)
    assert batch.tasks == list(sink.tasks) == [*IDS, "5"]
    assert not batch.problems and not parser.problems


def test_tau2_ids_past_64_bits_stay_apart(tmp_path: Path) -> None:
    """τ²-bench task ids past 64 bits stay apart."""
    sims = [{"id": f"s{n}", "task_id": IDS[n], "trial": 0, "termination_reason": "user_stop",
             "reward_info": {"reward": 1.0}, "messages": []} for n in range(len(IDS))]
    text = json.dumps({"timestamp": "2025-01-01", "info": {"num_trials": 1}, "tasks": [],
                       "simulations": sims})
    for i in IDS:  # json.dumps wrote the strings: make them numbers
        text = text.replace(f'"task_id": "{i}"', f'"task_id": {i}')
    p = tmp_path / "tau2.json"
    p.write_text(text)
    log = load_logs([p], use_cache=False)
    assert log.tasks == IDS and len(log) == len(IDS), [str(q)[:200] for q in log.problems]


def test_lm_eval_doc_ids_past_64_bits_stay_apart(tmp_path: Path) -> None:
    """lm-eval doc ids past 64 bits stay apart."""
    p = tmp_path / "samples_gsm8k_2024-01-01T00-00-00.000000.jsonl"
    p.write_text("".join(f'{{"doc_id": {i}, "filter": "none", "metrics": ["exact_match"], '
                         f'"exact_match": 1.0}}\n' for i in IDS))
    log = load_logs([p], use_cache=False)
    assert log.tasks == IDS and len(log) == len(IDS), [str(q)[:200] for q in log.problems]


def test_numbers_past_the_limit_elsewhere_are_one_line_problems(tmp_path: Path) -> None:
    """A 5,000-digit score, trial or metric: a problem or left out, never a traceback."""
    big = "7" * 5000
    p = tmp_path / "run.jsonl"
    p.write_text(f'{{"task": "a", "score": {big}}}\n{{"task": "b", "passed": true, "trial": {big}}}\n'
                 f'{{"task": "c", "passed": true, "metrics": {{"m": {big}, "n": 1}}}}\n'
                 f'{{"task": "d", "passed": true, "trace": [{{"x": {big}}}]}}\n')
    log = load_logs([p], use_cache=False)
    assert log.tasks == ["c", "d"]
    reasons = [q.reason for q in log.problems]
    assert reasons == ["score must be finite, got <an integer of 5000 digits>",
                       "trial must be a non-negative integer, got <an integer of 5000 digits>"]
