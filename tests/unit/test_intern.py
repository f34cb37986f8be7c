"""Merging pieces' name tables (flaketui.loading.parsed.intern) numbers names first seen,
first numbered, exactly as a dict filled table by table does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from flaketui.loading import parsed
from flaketui.loading.parsed import _intern_by_dict, intern


def tables_of(seed: int, pieces: int, names: int, overlap: float) -> list[list[str]]:
    rng = random.Random(seed)
    pool = [f"task-{i}" for i in range(names)]
    out = []
    for _ in range(pieces):
        size = rng.randint(0, names // 2)
        picked = rng.sample(pool, size) if rng.random() < overlap else [f"p{rng.random()}" for _ in range(size)]
        out.append(picked)
    return out


def check(tables: list[list[str]]) -> tuple[list[str], list[np.ndarray]]:
    names, ids = intern(tables)
    want_names, want_ids = _intern_by_dict(tables)
    assert names == want_names
    assert len(ids) == len(tables)
    for got, want, table in zip(ids, want_ids, tables, strict=True):
        assert got.dtype == np.int32
        assert got.tolist() == want.tolist()
        assert [names[i] for i in got.tolist()] == table
    return names, ids


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0])
def test_same_as_a_dict(seed: int, overlap: float) -> None:
    """Random tables, disjoint or sharing names, some empty."""
    check(tables_of(seed, 6, 40, overlap))


def test_disjoint_tables_keep_their_order() -> None:
    """Names all distinct: each table's numbers are its own after the names before it."""
    names, ids = check([["a", "b"], [], ["c"], ["d", "e"]])
    assert names == ["a", "b", "c", "d", "e"] and ids[3].tolist() == [3, 4]


def test_one_table_and_none() -> None:
    """Interning gives one name table, and none for no names."""
    assert check([[], ["x", "y"], []])[0] == ["x", "y"]
    assert check([])[0] == [] and check([[], []])[0] == []


def test_hash_collisions_fall_back_to_the_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name hashed alike: unequal names with equal hashes are still told apart."""
    monkeypatch.setattr(parsed, "hash", lambda name: 7, raising=False)
    check([["a", "b"], ["b", "c"], ["a"]])
    check([["a"], ["b"]])


def test_equal_hashes_of_equal_names_need_no_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated names across tables (a task in every piece) are merged by their hashes."""
    calls: list[int] = []
    real = parsed._intern_by_dict
    monkeypatch.setattr(parsed, "_intern_by_dict", lambda t: calls.append(1) or real(t))
    check([["a", "b", "c"], ["c", "d"], ["a", "d", "e"]])
    assert not calls
