"""Confounds of a comparison: which configuration fields differ between two runs.

A paired comparison reads the flakiness delta as the effect of what changed
between run A and run B. That reading holds only when one variable changed
(model, temperature, seed, agent or harness commit, prompt hash…): with two or
more, the delta cannot be attributed to any one of them. The configuration is
read from named fields of each run's first trial (``--config-field NAME``; a
dotted name reaches inside an object, ``info.model``), and, for a field the trial
lacks, from what the harness wrote about the run (``TrialLog.run_meta``: τ²'s
``info`` gives ``agent_model``, ``user_model``, ``domain``, ``git_commit``, ``seed``).

No Textual, no Rich.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from flaketui.model import Trial, TrialLog
from flaketui.sanitize import mask_secrets

DEFAULT_CONFIG_FIELDS = ("model", "model_name", "agent", "temperature", "seed", "commit", "agent_commit",
                         "harness_commit", "prompt_hash", "info.model", "info.temperature", "info.seed",
                         "agent_model", "user", "user_model", "domain", "git_commit", "timeout_multiplier",
                         "jobs_differ")
"""Fields the comparison pane reads when no ``--config-field`` is named (absent ones are left out)."""

CONFIGURATION = "configuration"
"""The suggested source of a flip between runs whose configurations differ: the change of
configuration, never the model's own sampling."""

MISSING = "(absent)"
"""The value shown for a field a run's first trial does not have."""


def field_value(record: Mapping[str, Any], name: str) -> Any:
    """``record[name]``, or the nested value of a dotted name (``info.model``); None when absent.

    Examples
    --------
    >>> field_value({"info": {"model": "m1"}}, "info.model")
    'm1'
    >>> field_value({"info.model": "flat"}, "info.model")
    'flat'
    >>> field_value({}, "seed") is None
    True
    """
    if name in record:
        return record[name]
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _text(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return str(value)


def run_config(log: TrialLog, run: str, fields: Sequence[str],
               read_trial: Callable[..., Trial]) -> dict[str, str]:
    """The named configuration fields of ``run``, read from its first trial (in file order),
    else from the run's metadata (``log.run_meta[run]``: a harness's run-level configuration).

    ``read_trial`` is :func:`flaketui.loading.read_trial`, passed in by the
    caller: the core's parts stand apart (stats never imports loading; see the
    import-linter layers in pyproject.toml). Values are kept as text (a number
    or object as its JSON); a field the trial lacks is left out (and
    counts as :data:`MISSING` in :func:`confounds`). An empty ``fields`` reads
    nothing (no file is opened). Secrets in the values are masked (:func:`~flaketui.sanitize.mask_secrets`).
    """
    if not fields or run not in log.runs:
        return {}
    rows = np.flatnonzero(log.run == log.runs.index(run))
    if not rows.size:
        return {}
    trial = read_trial(log, int(rows[0]), max_steps=0)
    record: dict[str, Any] = {**trial.extra, "metrics": trial.metrics}
    meta = log.run_meta.get(run) or {}
    values = {name: field_value(record, name) for name in fields}
    values = {name: field_value(meta, name) if v is None else v for name, v in values.items()}
    # Shown in every output of compare and the app: a model "name" may be a URL with a password.
    return mask_secrets({name: _text(v) for name, v in values.items() if v is not None})


def confounds(config_a: Mapping[str, str], config_b: Mapping[str, str]) -> list[str]:
    """The configuration keys whose values differ between the runs (a key one lacks counts).

    Examples
    --------
    >>> confounds({"model": "m1", "seed": "1"}, {"model": "m2", "seed": "1"})
    ['model']
    """
    keys = list(dict.fromkeys([*config_a, *config_b]))
    return [k for k in keys if config_a.get(k, MISSING) != config_b.get(k, MISSING)]


def confound_values(config_a: Mapping[str, str], config_b: Mapping[str, str]) -> list[dict[str, str]]:
    """The differing fields with each run's value, ``[{field, a, b}]`` (compare's JSON ``confounds``).

    Examples
    --------
    >>> confound_values({"model": "m1"}, {"model": "m2"})
    [{'field': 'model', 'a': 'm1', 'b': 'm2'}]
    """
    return [{"field": k, "a": config_a.get(k, MISSING), "b": config_b.get(k, MISSING)}
            for k in confounds(config_a, config_b)]


def confound_text(config_a: Mapping[str, str], config_b: Mapping[str, str]) -> str:
    """``agent_model gpt-4o vs claude-sonnet-4-5; timeout_multiplier 2.0 vs 4.0`` (log text: the
    caller makes it visible)."""
    return values_text(confound_values(config_a, config_b))


def values_text(values: Sequence[Mapping[str, str]]) -> str:
    """:func:`confound_values`' list as one line: ``model m1 vs m2; seed 1 vs 2``."""
    return "; ".join(f"{d['field']} {d['a']} vs {d['b']}" for d in values)


def confound_warning(config_a: Mapping[str, str], config_b: Mapping[str, str]) -> str | None:
    """A one-line warning when more than one configuration field differs, with each one's
    values, else None.

    The controlled-comparison reading of the flakiness delta (the change is the
    effect of the one variable that changed) holds only when one changed.
    """
    differ = confounds(config_a, config_b)
    if len(differ) < 2:
        return None
    return (f"confounded: the runs differ in {len(differ)} configuration fields "
            f"({confound_text(config_a, config_b)}); the flakiness delta cannot be read as the effect of one change")


def confound_note(config_a: Mapping[str, str], config_b: Mapping[str, str]) -> str | None:
    """What a comparison says of the runs' configurations: :func:`confound_warning` when more than
    one field differs, ``the runs differ in one configuration field: model m1 vs m2`` when one
    does (a controlled comparison, its values said), else None (log text: the caller makes it
    visible)."""
    differ = confounds(config_a, config_b)
    if len(differ) == 1:
        return f"the runs differ in one configuration field: {confound_text(config_a, config_b)}"
    return confound_warning(config_a, config_b)
