"""Log formats other than flaketui's own JSONL (plain, gzip) and JSON arrays.

A format registers a reader for the files it recognises; :func:`reader_for`
returns ``None`` for files the JSONL/JSON readers handle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flaketui.model import FieldMap, Source

Reader = Callable[[Path, FieldMap, str], tuple[str, dict[str, Any]]]
"""Reads a whole file: returns (source kind, parsed state as built by the loader)."""


def reader_for(path: Path) -> Reader | None:
    """The special reader for ``path``, or ``None`` when it is plain JSONL / JSON."""
    return None


def read_record(source: Source, offset: int, length: int) -> dict[str, Any] | None:
    """Read one record back from a special format, or ``None`` for JSONL / JSON sources."""
    return None
