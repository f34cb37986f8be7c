"""Triage notes: a person's review of flips and flaky tasks, kept in a sidecar file.

:mod:`flaketui.triage.store` reads and writes the notes (atomically, never through a
link); this package re-exports what the app, the command line and the review report use.
"""

from flaketui.sidecar import SIDECAR_SUFFIX, is_triage_file
from flaketui.triage.store import (
    BOM,
    DIRECTORY_SIDECAR,
    FORMAT,
    LABELS,
    MAX_BYTES,
    VERSION,
    TriageEntry,
    TriageFileError,
    TriageFileRefused,
    TriageKey,
    TriageStore,
    atomic_write,
    default_triage_path,
    dump_triage,
    load_entries,
    now_utc,
    parse_triage,
    read_triage_bytes,
)

__all__ = [
    "BOM", "DIRECTORY_SIDECAR", "FORMAT", "LABELS", "MAX_BYTES", "SIDECAR_SUFFIX", "VERSION",
    "TriageEntry", "TriageFileError", "TriageFileRefused", "TriageKey", "TriageStore", "atomic_write",
    "default_triage_path", "dump_triage", "is_triage_file", "load_entries", "now_utc", "parse_triage",
    "read_triage_bytes",
]
