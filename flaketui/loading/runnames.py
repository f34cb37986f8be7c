"""Run names that never merge two runs by accident.

A trial without a run field belongs to its file's run: the file's name without its
extensions (``--run-name-from file``, the default), its folder (``folder``), or the
harness's own run id where the file has one (``field``; Terminal-Bench's ``id``). Runs
with the same name merge, which is what shards of one run want; but when files from
*different folders* would give the same name (every Terminal-Bench trial file is called
``results.json``), each is named instead by the shortest suffix of its path that tells
them apart (``a/results`` and ``b/results``), and a notice says so.

``--runs-as-trials`` reads the runs of each run folder as trials of one run, named by that
folder (Terminal-Bench keeps repeated runs of one agent apart, as files side by side): each
task's trials are numbered in the order the files are read. Run folders stay apart: two
agents given together are two runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from flaketui.loading import formats
from flaketui.loading.location import as_path
from flaketui.loading.parsed import Parsed
from flaketui.model import FieldMap, Problem, TrialLog


def _anchor(fmt: formats.LogFormat, path: Path, name: str) -> Path:
    """The path the run name of ``path`` comes from: its run folder when the name is the
    folder's, else the file's path without its extensions."""
    folder = fmt.run_folder(path).absolute()
    return folder if name == folder.name else folder / name


def _suffix(path: Path, parts: int) -> str:
    return "/".join(path.parts[-parts:])


def rename_runs(files: Sequence[Path], pieces: list[Parsed], fields: FieldMap) -> list[Problem]:
    """Give the runs of ``pieces`` (what each of ``files`` held, read with its format's
    default run name) the names ``fields`` asks for, in place; return the notices.

    Only runs named by their file are renamed (a run field in the trials is kept).
    """
    if not files:
        return []
    fmts = [formats.format_for(f) for f in files]
    read_as = [fmt.run_name(f) for fmt, f in zip(fmts, files, strict=True)]
    if fields.runs_as_trials:
        return _as_trials(files, pieces, fmts, read_as)
    wanted = [fmt.run_folder(f).absolute().name if fields.run_name_from == "folder" else name
              for fmt, f, name in zip(fmts, files, read_as, strict=True)]
    anchors = [_anchor(fmt, f, name) for fmt, f, name in zip(fmts, files, wanted, strict=True)]
    by_name: dict[str, list[Path]] = {}
    for name, anchor in zip(wanted, anchors, strict=True):
        group = by_name.setdefault(name, [])
        if anchor not in group:
            group.append(anchor)
    final: dict[Path, str] = {}
    notices = []
    for name, group in by_name.items():
        if len(group) == 1:
            final[group[0]] = name
            continue
        depth = max(len(a.parts) for a in group)
        parts = next((k for k in range(2, depth + 1) if len({_suffix(a, k) for a in group}) == len(group)),
                     depth)
        for a in group:
            final[a] = _suffix(a, parts)
        notices.append(Problem(
            str(files[wanted.index(name)]), None,
            f"{len(group)} files in different folders share the name {name!r}; each file's run is "
            "named by its folder: " + ", ".join(repr(final[a]) for a in group)
            + " (--run-name-from file|folder|field to choose)", notice=True))
    for i, (piece, old, anchor) in enumerate(zip(pieces, read_as, anchors, strict=True)):
        new = final[anchor]
        if new != old and old in piece.runs:
            pieces[i] = replace(piece, runs=[new if r == old else r for r in piece.runs])
    return notices


def _as_trials(files: Sequence[Path], pieces: list[Parsed], fmts: list[formats.LogFormat],
               read_as: list[str]) -> list[Problem]:
    """``--runs-as-trials``: the trials of every run in one run folder (a folder of run files,
    or a run folder with its summary and per-trial files) as one run named by that folder;
    each run folder stays its own run (two agents given together stay two runs), named
    apart by path suffixes when two folders have one name. Trial numbers are dropped, so
    each task's trials number in file order."""
    folders = [fmt.run_folder(f).absolute() for fmt, f in zip(fmts, files, strict=True)]
    distinct = list(dict.fromkeys(folders))
    names: dict[Path, str] = {}
    for folder in distinct:
        names[folder] = folder.name or "/"
    by_name: dict[str, list[Path]] = {}
    for folder in distinct:
        by_name.setdefault(names[folder], []).append(folder)
    for group in by_name.values():
        if len(group) > 1:
            depth = max(len(a.parts) for a in group)
            parts = next((k for k in range(2, depth + 1) if len({_suffix(a, k) for a in group}) == len(group)),
                         depth)
            for a in group:
                names[a] = _suffix(a, parts)
    before: dict[Path, set[str]] = {}
    first: dict[Path, Path] = {}
    for f, folder, piece in zip(files, folders, pieces, strict=True):
        before.setdefault(folder, set()).update(piece.runs[r] for r in np.unique(piece.run).tolist())
        first.setdefault(folder, f)
    for i, (piece, folder) in enumerate(zip(pieces, folders, strict=True)):
        pieces[i] = replace(piece, runs=[names[folder]] if len(piece) else [], run=np.zeros_like(piece.run),
                            trial=np.full_like(piece.trial, -1))
    return [Problem(str(first[folder]), None,
                    f"--runs-as-trials: {len(before[folder])} runs read as trials of one run {names[folder]!r}",
                    notice=True)
            for folder in distinct if len(before[folder]) > 1]


def attach_run_meta(log: TrialLog) -> None:
    """Fill ``log.run_meta``: each source's run metadata (see ``LogFormat.run_meta``), under
    the names of the runs its trials are in."""
    for i, src in enumerate(log.sources):
        path = as_path(src.path)
        try:
            meta = formats.format_of_kind(src.kind).run_meta(path, log.fields)
        except (OSError, ValueError):
            continue
        if not meta:
            continue
        for r in np.unique(log.run[log.source == i]).tolist():
            log.run_meta.setdefault(log.runs[r], dict(meta))


def distinct_names(paths: Sequence[str], name: str) -> list[str]:
    """Names for runs that are all called ``name`` but come from ``paths`` (files or folders,
    e.g. ``compare dirA dirB``): the shortest path suffix that tells them apart."""
    places = [as_path(p) for p in paths]
    anchors = [(p.absolute() if p.is_dir() else p.absolute().parent) / name for p in places]
    if len(set(anchors)) < len(anchors):  # the same folder: the files' own names differ
        return [p.name for p in places]
    depth = max(len(a.parts) for a in anchors)
    parts = next((k for k in range(2, depth + 1) if len({_suffix(a, k) for a in anchors}) == len(anchors)), depth)
    return [_suffix(a, parts) for a in anchors]
