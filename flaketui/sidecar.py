"""The names of triage sidecars: files flaketui writes beside logs, and never reads as logs.

No imports beyond the standard library: the loader and the triage store both ask, and a
writer process starts in milliseconds.
"""

from __future__ import annotations

import os

SIDECAR_SUFFIX = ".triage.json"
"""Appended to the first log file's name for its triage sidecar; the loader skips such files."""


def is_triage_file(path: str | os.PathLike[str]) -> bool:
    """True for a triage sidecar (the loader must not read it as a log when given a folder)."""
    return os.path.basename(os.fspath(path)).lower().endswith(SIDECAR_SUFFIX)
