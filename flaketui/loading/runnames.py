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

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

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


def rename_runs(files: Sequence[Path], pieces: list[Parsed], fields: FieldMap,
                named: Sequence[str | os.PathLike[str]] = ()) -> list[Problem]:
    """Give the runs of ``pieces`` (what each of ``files`` held, read with its format's
    default run name) the names ``fields`` asks for, in place; return the notices.
    ``named``: the paths the user gave (``--runs-as-trials`` merges the run folders of a
    named folder that are one agent's repeated runs).

    Only runs named by their file are renamed (a run field in the trials is kept).
    """
    if not files:
        return []
    fmts = [formats.format_for(f) for f in files]
    read_as = [fmt.run_name(f) for fmt, f in zip(fmts, files, strict=True)]
    if fields.runs_as_trials:
        return _as_trials(files, pieces, fmts, read_as, named)
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


def _shape(name: str) -> str:
    """A folder's name with each run of digits one placeholder: ``run_1`` and ``run_12`` alike."""
    return _DIGIT_RUNS.sub("#", name)


_DIGIT_RUNS = re.compile(r"\d+")


def repeated_runs(named: Sequence[str | os.PathLike[str]], folders: Sequence[Path]) -> dict[Path, Path]:
    """The run folders (of ``folders``) that are one agent's repeated runs inside a folder the user
    named, mapped to that named folder: the leaderboard layout ``AGENT/run_1 … run_5``. A named
    folder's run folders are repeated runs when there are several, each directly below it, and
    their names differ only in their numbers (``run_1``, ``run_2``; two agents' folders, named
    differently, stay apart)."""
    out: dict[Path, Path] = {}
    distinct = list(dict.fromkeys(folders))
    for given in named:
        top = as_path(given)
        if not isinstance(top, Path) or not top.is_dir():
            continue
        top = top.absolute()
        below = [f for f in distinct if f.parent == top]
        if len(below) > 1 and len({_shape(f.name) for f in below}) == 1:
            out.update({f: top for f in below})
    return out


def _as_trials(files: Sequence[Path], pieces: list[Parsed], fmts: list[formats.LogFormat],
               read_as: list[str], named: Sequence[str | os.PathLike[str]] = ()) -> list[Problem]:
    """``--runs-as-trials``: the trials of every run in one run folder (a folder of run files,
    or a run folder with its summary and per-trial files) as one run named by that folder,
    and the run folders of a named folder that are one agent's repeated runs
    (:func:`repeated_runs`) as one run named by the named folder; each other run folder stays
    its own run (two agents given together stay two runs), named apart by path suffixes when
    two folders have one name. Trial numbers are dropped, so each task's trials number in file
    order."""
    folders = [fmt.run_folder(f).absolute() for fmt, f in zip(fmts, files, strict=True)]
    merged = repeated_runs(named, folders)
    folders = [merged.get(f, f) for f in folders]
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
    the names of the runs its trials are in (a run whose files say different things, runs read
    as trials of one run, keeps what they all agree on); ``log.conventions``: each run's harness and its
    way of counting errored trials (``LogFormat.errored_as``); and ``log.published``: the
    figures its harness published (``LogFormat.published``), kept only when every file of the
    run gives the same (runs read as trials of one run each published their own: none kept)."""
    published: dict[str, list[dict[str, Any]]] = {}
    # each source's runs from one sort of (source, run) keys, not a pass over every trial per source
    # (a Harbor job or Terminal-Bench folder is a source a trial); np.unique would import numpy.ma
    width = max(len(log.runs), 1)
    keys = np.sort(log.source.astype(np.int64) * width + log.run)
    keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if keys.size else keys
    runs_of: dict[int, list[str]] = {}
    for key in keys.tolist():
        runs_of.setdefault(key // width, []).append(log.runs[key % width])
    for i, src in enumerate(log.sources):
        try:
            fmt = formats.format_of_kind(src.kind)
        except ValueError:
            continue
        runs = runs_of.get(i, [])
        if not runs:
            continue
        for name in runs:
            log.conventions.setdefault(name, (fmt.errored_as, fmt.harness))
        path = as_path(src.path)
        try:
            figures = fmt.published(path)
        except (OSError, ValueError):
            figures = {}
        for name in runs:
            found = published.setdefault(name, [])
            if figures and figures not in found:
                found.append(figures)
            elif not figures and {} not in found:
                found.append({})
        try:
            meta = fmt.run_meta(path, log.fields)
        except (OSError, ValueError):
            meta = {}
        if fmt.harness:
            meta = {"harness": fmt.harness, **meta}
        if not meta:
            continue
        for name in runs:
            if name not in log.run_meta:
                log.run_meta[name] = dict(meta)
            elif log.run_meta[name] != meta:  # runs merged (--runs-as-trials): what they all say
                mine = log.run_meta[name]
                log.run_meta[name] = {k: v for k, v in mine.items() if k in meta and meta[k] == v}
    for name, found in published.items():
        if len(found) == 1 and found[0]:
            log.published[name] = {"harness": log.conventions[name][1] or "the harness", **found[0]}


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
