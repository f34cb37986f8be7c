"""Why a task flakes: suggest its source of flakiness from the marks its traces leave.

Every (passing, failing) pair of a flaky task's trials — or, for a task with
more, a fixed pseudo-random sample of :data:`MAX_PAIRS` — is classified by what
happens where the two traces part ways in the ``actions`` divergence mode (the
agent's tool calls and final answer count; see :mod:`flaketui.traces.steps`):

- **environment** — the failing trial errored, or a step before the divergence
  differs and one side of it has the shape of a failure (:func:`error_text`:
  an ``error`` field, an HTTP status 429 or 5xx, an exception name such as
  ``TimeoutError``, timeout, rate-limit or connection wording);
- **ordering-concurrency** — from the first difference on, a run of steps is the
  same multiset in another order (parallel results arriving the other way);
- **tool-nondeterminism** — the agent made the same calls but a tool result
  before the divergence differs (the same call returned other content);
- **sampling** — everything before the divergence is the same and the agent's
  action differs (a reworded user turn does not count, as in ``actions`` mode);
- **harness-bug** — the agent's actions and the tool results are the same, yet
  one passed and one failed;
- **user-simulator** — the first difference is a (simulated) user's turn and the
  agent's first different action follows it and carries what that turn said
  (a token the one user turn has and the other has not is in the action);
- **grader** — the trials carry several grades each (:func:`trial_grades`) and
  they split on the same trial: on identical trajectories, or when grader
  disagreement is at least half the task's outcome variance
  (:func:`flaketui.stats.agreement.grader_agreement`);
- **burst** — an environment task whose failures sit inside a window where
  failures across many tasks cluster in time (:mod:`flaketui.traces.burst`,
  found over all the tasks :func:`suggest_causes` is given).

A pair without both traces is ``unknown``. The task's suggestion is the cause
most pairs agree on when that is at least half of them and more than any other
cause, else ``unknown``; with it come the share of pairs that agree, one
pair's evidence a person can check on screen, and the decisive fork
(:mod:`flaketui.traces.forktest`). A suggestion only pre-fills a label: it is
never a label. The suite summary lays each failing trial's cause at its first
critical source — the agent, the simulated user, the environment or the grader
(:data:`SOURCE_OF`) — beside τ²-bench's own count from its reviews where a log
has them (:func:`harness_first_critical_sources`). Pure Python: no Textual, no Rich.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from flaketui.model import ERRORED, FAIL, PASS, RunOutcomes, Trial
from flaketui.stats.agreement import GraderAgreement, grader_agreement
from flaketui.traces.align import EQUAL, align_traces
from flaketui.traces.burst import Burst, scan_bursts, trial_time
from flaketui.traces.consistency import NO_CONSISTENCY, Consistency, task_consistency
from flaketui.traces.failure_modes import (
    FailureMode,
    TrialSignature,
    action_shape,
    exception_type,
    failure_modes,
    mask,
    message_of,
    termination_reason,
)
from flaketui.traces.forktest import ForkTest, decisive_fork, is_tool_result
from flaketui.traces.normalise import Normaliser, compact, one_line, parse_json_string
from flaketui.traces.steps import ACTIONS, USER_ROLES, harness_step_ids, is_agent, role, step_line, tool_calls

SAMPLING = "sampling"
TOOL = "tool-nondeterminism"
ORDERING = "ordering-concurrency"
ENVIRONMENT = "environment"
HARNESS = "harness-bug"
USER_SIM = "user-simulator"
GRADER = "grader"
BURST = "burst"
UNKNOWN = "unknown"
CAUSES = (SAMPLING, TOOL, ORDERING, ENVIRONMENT, HARNESS, USER_SIM, GRADER, BURST, UNKNOWN)
"""Every suggested source of flakiness, as ``report --causes`` spells them."""

MAX_PAIRS = 100
"""Pairs classified per task at most; a task with more is sampled (fixed seed)."""
VALUE_WIDTH = 300
"""Longest evidence value (one line; ``…`` marks a cut)."""
ORDER_WINDOW = 64
"""Longest run of steps looked at for the same steps in another order."""

_STATUS = r"(?:429|5\d\d)"
_ERROR_SHAPES = re.compile(
    "|".join((
        rf"\b(?:HTTP|status|status[ _]code|error)\W{{0,3}}{_STATUS}\b",  # HTTP 503, status: 429
        rf"\b{_STATUS}\W{{0,3}}(?:too many requests|internal server error|bad gateway|service unavailable"
        r"|gateway time-?out|server error)",
        r"\(\s*" + _STATUS + r"\s*\)",  # Gateway Timeout (504)
        r"(?-i:\b\w*(?:Timeout|Connection|Connect|RateLimit|Network|Socket|Unavailable|Overloaded|Server|HTTP)"
        r"\w*(?:Error|Exception)\b)",  # TimeoutError, ConnectionResetError, RateLimitError
        r"\btimed?[ -]?out\b|\btimeout\b|\bdeadline exceeded\b",
        r"\brate[ -]?limit|\btoo many requests\b|\bquota exceeded\b|\bthrottl",
        r"\bconnection (?:reset|refused|aborted|closed|error)|(?-i:\bECONN[A-Z]+\b|\bEPIPE\b)|\bbroken pipe\b"
        r"|\bnetwork is unreachable\b",
        r"\b(?:service|server) (?:unavailable|overloaded)\b|\binternal server error\b",
        r"^\W{0,3}(?:error|exception|traceback|fatal)\s*[:(\[]",  # "Error: …", "Traceback (most recent…"
        r"^\W{0,3}(?-i:[A-Z]\w*(?:Error|Exception))\b",  # "KeyError: …" (exception names are case-sensitive)
    )),
    re.IGNORECASE,
)
"""What a failed call looks like, by shape: status codes, exception names, wording."""
_ERROR_WORDS = ("error", "exception", "time", "deadline exceeded", "rate", "too many requests", "quota exceeded",
                "throttl", "connection", "econn", "epipe", "broken pipe", "network is unreachable", "unavailable",
                "overloaded", "traceback", "fatal")
"""Words (lower case) one of which every match of :data:`_ERROR_SHAPES` without a status code holds."""
_STATUS_CODE = re.compile(_STATUS)
_STATUS_KEYS = ("status", "status_code", "http_status")


def error_text(step: Any) -> str | None:
    """The failure a tool result reports, on one line, or None.

    A step is a failure when it has a true ``error`` or ``is_error`` field (or its
    content is a JSON object that has), a ``status``/``status_code`` of 429 or
    5xx, or when its content matches one of the shapes of a failed call
    (HTTP 429/5xx, an exception name like ``ConnectionResetError``, timeout,
    rate-limit or connection wording, text starting ``Error:`` or with an exception name).
    """
    if isinstance(step, dict):
        for obj in (step, parse_json_string(step.get("content"))):
            if not isinstance(obj, dict):
                continue
            for key in ("error", "is_error"):
                if obj.get(key):
                    value = obj[key]
                    return one_line(compact(value if key == "error" and value is not True else obj), VALUE_WIDTH)
            for key in _STATUS_KEYS:
                code = obj.get(key)
                if isinstance(code, int) and not isinstance(code, bool) and (code == 429 or 500 <= code <= 599):
                    return one_line(compact(obj), VALUE_WIDTH)
        content = step.get("content", step.get("output"))
    else:
        content = step
    if content is None:
        return None
    text = content if isinstance(content, str) else compact(content)
    if _could_be_error(text) and _ERROR_SHAPES.search(text):
        return one_line(text, VALUE_WIDTH)
    return None


def _could_be_error(text: str) -> bool:
    """False only for a text :data:`_ERROR_SHAPES` cannot match: ASCII (where ignoring case is
    lower-casing) holding none of :data:`_ERROR_WORDS` and no status code. The shapes' regex
    takes about a millisecond on a long tool output; most outputs are ruled out by this first."""
    if not text.isascii():
        return True
    lower = text.lower()
    return any(w in lower for w in _ERROR_WORDS) or _STATUS_CODE.search(text) is not None


@dataclass(frozen=True)
class Evidence:
    """What one (passing, failing) pair shows, to be checked on screen.

    ``trial_a`` passed, ``trial_b`` did not; ``step_a``/``step_b`` are the 1-based
    steps where the mark is (None: the traces are the same). ``kind`` names the
    mark: ``action`` (the agent's steps differ), ``result`` (the same call, other
    results), ``order`` (the same steps in another order; ``a``/``b`` are the
    ``steps`` swapped steps joined by `` | ``), ``error`` (a call failed; ``error``
    is its text), ``errored-trial``, ``same-trace``, ``same-actions`` (only
    wording the ``actions`` mode does not count differs), ``user-turn`` (``a``/``b``
    the two user turns at ``step_a``/``step_b``, ``action_a``/``action_b`` the
    agent's actions that followed), ``grades`` (``a``/``b`` each trial's grades),
    ``burst`` (``error`` the outage window) or ``no-trace``. ``call`` is
    the tool call whose results differ, when there is one.
    """

    cause: str
    kind: str
    trial_a: int
    trial_b: int
    step_a: int | None = None
    step_b: int | None = None
    call: str | None = None
    a: str | None = None
    b: str | None = None
    error: str | None = None
    steps: int = 1
    action_a: str | None = None
    action_b: str | None = None
    id_a: int | str | None = None
    id_b: int | str | None = None

    def text(self) -> str:
        """The evidence on one line, e.g. ``step 3: searchRunbook(…) returned "[1] Open…" vs "[1] Restart…"``;
        a step is named as its harness numbers it (ATIF ``step_id``, τ²'s ``turn_idx``) when it does."""
        sa = self.id_a if self.id_a is not None else self.step_a
        sb = self.id_b if self.id_b is not None else self.step_b
        where = f"step {sa}" if sa == sb else f"step {sa} / {sb}"
        pair = f"trial {self.trial_a} (pass) vs trial {self.trial_b}"
        if self.kind == "errored-trial":
            return f"{pair} errored: {self.error}"
        if self.kind in ("same-trace", "same-actions"):
            return f"{pair}: {self.a}"
        if self.kind == "no-trace":
            return f"{pair}: a trace is missing"
        if self.kind == "user-turn":
            return (f"{where}: the user said {self.a} vs {self.b}; the agent then did {self.action_a} "
                    f"vs {self.action_b}")
        if self.kind == "grades":
            return f"{pair}: the same trajectory graded {self.a} vs {self.b}"
        if self.kind == "burst":
            return f"{pair} failed inside an outage: {self.error}"
        if self.kind == "order":
            return f"{where}, {self.steps} steps in another order: {self.a} vs {self.b}"
        if self.kind == "error":
            return f"{where}: {self.call or 'the call'} failed: {self.error}"
        if self.kind == "result":
            return f"{where}: {self.call or 'the call'} returned {self.a} vs {self.b}"
        return f"{where}: {self.a} vs {self.b}"

    def to_json(self) -> dict[str, Any]:
        """Every field, plus ``text``."""
        return {
            "cause": self.cause, "kind": self.kind, "trial_a": self.trial_a, "trial_b": self.trial_b,
            "step_a": self.step_a, "step_b": self.step_b, "call": self.call, "a": self.a, "b": self.b,
            "error": self.error, "steps": self.steps, "action_a": self.action_a, "action_b": self.action_b,
            "step_id_a": self.id_a, "step_id_b": self.id_b, "text": self.text(),
        }


@dataclass(frozen=True)
class CauseSuggestion:
    """A flaky task's suggested source of flakiness.

    ``cause`` is one of :data:`CAUSES`; ``agree`` of ``pairs`` classified pairs
    gave the most common cause (``votes`` has them all); ``evidence`` is the first
    such pair's; ``decisive_fork`` the split whose outcome depends most on the
    branch (None: nothing splits).
    """

    task: str
    cause: str
    agree: int
    pairs: int
    votes: dict[str, int] = field(default_factory=dict)
    evidence: Evidence | None = None
    decisive_fork: ForkTest | None = None
    sampled: bool = False
    grader: GraderAgreement | None = None
    """Agreement among the trials' grades, when they carry several each."""
    attribution: tuple[dict[str, Any], ...] = ()
    """The harness's own attribution of failing trials (τ²'s ``review`` / ``user_only_review``)."""
    timeline: tuple[tuple[int, float | None, bool], ...] = ()
    """(trial, start time or None, broke) of every trial, for :func:`apply_bursts`: a trial broke when
    it errored or failed with an error (an exception or an error message in its trace)."""
    signatures: tuple[TrialSignature, ...] = ()
    """How each failing or errored trial went wrong (:mod:`flaketui.traces.failure_modes`)."""
    burst: Burst | None = None
    """The outage window the task's failures sit in (cause ``burst``)."""
    trial_causes: tuple[tuple[int, str], ...] = ()
    """(trial, cause) of every failing or errored trial: the cause most of its pairs give (ties in
    :data:`CAUSES` order; a trial in no classified pair takes the task's), for
    :func:`first_critical_sources`."""
    consistency: Consistency = NO_CONSISTENCY
    """How alike the task's passing trials' actions are (:mod:`flaketui.traces.consistency`), from
    the trials already read for the pairs."""

    @property
    def share(self) -> float:
        """Fraction of the classified pairs that agree on the most common cause."""
        return self.agree / self.pairs if self.pairs else 0.0

    def text(self) -> str:
        """``tool-nondeterminism, 9 of 10 pairs``."""
        return f"{self.cause}, {self.agree} of {self.pairs} pairs"

    def to_json(self) -> dict[str, Any]:
        """The keys ``report --causes`` adds to a flaky task: ``suspected_cause``, ``cause_share``,
        ``cause_pairs``, ``cause_votes``, ``cause_evidence``, ``decisive_fork``, …, and the passing
        trials' ``action_consistency`` and ``sequence_consistency`` (:class:`Consistency`)."""
        return {
            "suspected_cause": self.cause,
            "cause_share": self.share,
            "cause_pairs": {"agree": self.agree, "pairs": self.pairs, "sampled": self.sampled},
            "cause_votes": dict(self.votes),
            "cause_evidence": None if self.evidence is None else self.evidence.to_json(),
            "decisive_fork": None if self.decisive_fork is None else self.decisive_fork.to_json(),
            "grader_agreement": None if self.grader is None else self.grader.to_json(),
            "harness_attribution": list(self.attribution),
            "burst": None if self.burst is None else self.burst.to_json(),
            **self.consistency.to_json(),
        }


class _Memo(Normaliser):
    """A normaliser that remembers every step it normalised, for one task's pairs and forks.

    Each trial is in many pairs; normalising its steps once per task instead of
    once per pair is most of the time saved. Steps are remembered by identity
    (and kept alive, so an identity is never reused while remembered).
    """

    _inner: Normaliser
    _seen: dict[int, tuple[Any, Any]]
    _sigs: dict[int, tuple[Any, str]]

    @classmethod
    def of(cls, inner: Normaliser) -> _Memo:
        memo = cls(inner.extra_keys, inner.noise_keys)
        object.__setattr__(memo, "_inner", inner)
        object.__setattr__(memo, "_seen", {})
        object.__setattr__(memo, "_sigs", {})
        return memo

    def step(self, step: Any) -> Any:
        if not isinstance(step, dict):
            return self._inner.step(step)
        hit = self._seen.get(id(step))
        if hit is None or hit[0] is not step:
            hit = (step, self._inner.step(step))
            self._seen[id(step)] = hit
        return hit[1]

    def signature(self, step: Any) -> str:
        if not isinstance(step, dict):
            return self._inner.signature(step)
        hit = self._sigs.get(id(step))
        if hit is None or hit[0] is not step:
            hit = (step, super().signature(step))
            self._sigs[id(step)] = hit
        return hit[1]


@dataclass(frozen=True)
class _Side:
    """One trial prepared once for every pair it is in."""

    trial: int
    trace: list[Any] | None
    signatures: list[str]
    error: Any = None
    errored: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


def _prepare(trial: Trial, norm: Normaliser) -> _Side:
    return _Side(trial.trial, trial.trace, norm.signatures(trial.trace) if trial.trace is not None else [],
                 trial.error, trial.outcome == ERRORED, trial.extra or {})


GRADE_KEYS = ("grades", "judge_grades", "scores", "judgements", "judgments")
"""Extra fields read as a trial's several grades (a list, or a mapping of grader → grade)."""
_GRADE_WORDS = {"c": 1.0, "correct": 1.0, "pass": 1.0, "passed": 1.0, "yes": 1.0, "true": 1.0,
                "i": 0.0, "incorrect": 0.0, "fail": 0.0, "failed": 0.0, "no": 0.0, "false": 0.0}


def _grade(value: Any) -> float | None:
    if isinstance(value, Mapping):  # Inspect's Score: {"value": "C", "answer": …}
        value = value.get("value", value.get("score"))
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _GRADE_WORDS.get(value.strip().lower())
    return None


def trial_grades(extra: Mapping[str, Any] | None, path: str | None = None) -> list[float] | None:
    """A trial's several grades (two or more), or None.

    Read from ``path`` (dotted, into the extra fields) or the first of
    :data:`GRADE_KEYS`: a list of scores (numbers, booleans, ``C``/``I``) or a
    mapping of grader name → grade (several Inspect scorers, each a number or a
    ``{"value": …}``); grades that are not one of these are left out.
    """
    if not extra:
        return None
    found: Any = None
    if path:
        found = extra
        for part in path.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
    else:
        found = next((extra[k] for k in GRADE_KEYS if isinstance(extra.get(k), (list, tuple, Mapping))), None)
    if isinstance(found, Mapping):
        found = list(found.values())
    if not isinstance(found, (list, tuple)):
        return None
    grades = [g for g in (_grade(v) for v in found) if g is not None]
    return grades if len(grades) >= 2 else None


REVIEW_KEYS = ("review", "user_only_review")
"""Extra fields holding the harness's own attribution of a failure (τ²-bench's reviews)."""


def _attribution(trial: int, extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """τ²'s ``review`` / ``user_only_review`` of one trial: each error's source and severity, and the summary."""
    out = []
    for key in REVIEW_KEYS:
        review = parse_json_string(extra.get(key))
        if not review:
            continue
        errors: list[dict[str, Any]] = []
        stack: list[tuple[Any, int]] = [(review, 0)]
        while stack:  # every error the review names, depth first, at most 5 levels down
            node, depth = stack.pop()
            if isinstance(node, Mapping):
                src = next((node[k] for k in ("source", "error_source", "critical_source", "author")
                            if isinstance(node.get(k), str)), None)
                if src is not None:
                    errors.append({"source": src, "severity": node.get("severity"),
                                   "turn": node.get("turn_idx", node.get("turn")),
                                   **({"tick": node["tick_start"]} if node.get("tick_start") is not None else {})})
                kids: list[Any] = list(node.values())
            elif isinstance(node, list):
                kids = node[:50]
            else:
                continue
            if depth < 4:
                stack.extend((v, depth + 1) for v in reversed(kids))
        summary = review.get("summary") if isinstance(review, Mapping) else (review if isinstance(review, str)
                                                                            else None)
        out.append({"trial": trial, "review": key, "errors": errors,
                    "summary": one_line(str(summary), VALUE_WIDTH) if summary else None})
    return out


def _swapped(sa: Sequence[str], sb: Sequence[str], pa: int, pb: int) -> int:
    """Length k ≥ 2 of the shortest run from ``pa``/``pb`` that holds the same steps in another order (0: none)."""
    diff: Counter[str] = Counter()
    for k in range(1, min(ORDER_WINDOW, len(sa) - pa, len(sb) - pb) + 1):
        x, y = sa[pa + k - 1], sb[pb + k - 1]
        if x != y:
            diff[x] += 1
            diff[y] -= 1
            if diff[x] == 0:
                del diff[x]
            if diff[y] == 0:
                del diff[y]
        if k >= 2 and not diff and sa[pa:pa + k] != sb[pb:pb + k]:
            return k
    return 0


def _call_before(trace: Sequence[Any], index: int, result: Any, norm: Normaliser) -> str | None:
    """The tool call a result at ``index`` answers: the nearest earlier agent call (of the result's name)."""
    name = result.get("name") if isinstance(result, dict) else None
    fallback = None
    for i in range(min(index, len(trace)) - 1, -1, -1):
        calls = tool_calls(norm.step(trace[i])) if is_agent(trace[i]) else []
        for call in calls:
            if name is None or call.get("name") == name:
                return step_line({"tool_calls": [call]}, VALUE_WIDTH, norm)
        if calls and fallback is None:
            fallback = step_line(trace[i], VALUE_WIDTH, norm)
    return fallback


def _line(trace: Sequence[Any], i: int | None, norm: Normaliser) -> str:
    if i is None or i >= len(trace):
        return "(none)"
    step = norm.step(trace[i])
    if is_tool_result(step) and isinstance(step, dict) and "content" in step:
        return one_line(compact(step["content"]), VALUE_WIDTH)
    return step_line(step, VALUE_WIDTH, norm)


def classify_pair(passing: Trial, failing: Trial, normaliser: Normaliser | None = None) -> Evidence:
    """The mark that a passing and a failing (or errored) trial leave where they part (see the module)."""
    norm = _Memo.of(normaliser or Normaliser())
    a, b = _prepare(passing, norm), _prepare(failing, norm)
    return _named(_classify(a, b, norm), a, b)


def _named(ev: Evidence, a: _Side, b: _Side) -> Evidence:
    """``ev`` with its steps' ids as the harness numbers them (``step_a``/``step_b`` stay the rows
    a view moves to): the ids are masked by the normaliser, so pairs classified once by their
    normalised steps are named by their own traces."""
    if ev.step_a is None and ev.step_b is None:
        return ev
    ids_a, ids_b = harness_step_ids(a.trace), harness_step_ids(b.trace)
    if not ids_a and not ids_b:
        return ev

    def name(ids: tuple[Any, ...], step: int | None) -> int | str | None:
        return ids[step - 1] if ids and step is not None and 0 < step <= len(ids) else None

    return replace(ev, id_a=name(ids_a, ev.step_a), id_b=name(ids_b, ev.step_b))


def _classify(a: _Side, b: _Side, norm: Normaliser) -> Evidence:
    ev = {"trial_a": a.trial, "trial_b": b.trial}
    if b.errored:
        return Evidence(ENVIRONMENT, "errored-trial", **ev, error=one_line(compact(b.error), VALUE_WIDTH))
    if a.trace is None or b.trace is None:
        return Evidence(UNKNOWN, "no-trace", **ev)
    ta, tb = a.trace, b.trace
    if a.signatures == b.signatures:
        return Evidence(HARNESS, "same-trace", **ev, a=f"the same {len(ta)} steps after normalisation",
                        b="scored differently")
    al = align_traces(ta, tb, norm, ACTIONS)
    end = al.divergence_row if al.divergence_row is not None else len(al.rows)
    pa = pb = 0
    user: tuple[int | None, int | None, int, int] | None = None  # the first user turn that differs, if it leads
    for row in al.rows[:end]:
        if row.tag != EQUAL and any(i is not None and is_tool_result(t[i]) for i, t in ((row.a, ta), (row.b, tb))):
            return _context_change(a, b, row.a, row.b, pa, pb, norm)
        if row.tag != EQUAL and user is None and any(i is not None and role(t[i]) in USER_ROLES
                                                       for i, t in ((row.a, ta), (row.b, tb))):
            user = (row.a, row.b, pa, pb)
        elif user is not None and row.tag == EQUAL and row.a is not None and is_agent(ta[row.a]) \
                and tool_calls(norm.step(ta[row.a])):
            user = (None, None, -1, -1)  # the agent acted the same after it: the change did not lead
        pa += row.a is not None
        pb += row.b is not None
    if al.divergence_row is not None and user is not None and user[2] >= 0:
        da, db = (al.divergence_a or 1) - 1, (al.divergence_b or 1) - 1
        found = _user_led(a, b, user, da, db, norm)
        if found is not None:
            return found
    if al.divergence_row is None:
        return Evidence(HARNESS, "same-actions", **ev,
                        a="the same actions and tool results (only other wording differs)", b="scored differently")
    da, db = (al.divergence_a or 1) - 1, (al.divergence_b or 1) - 1
    k = _swapped(a.signatures, b.signatures, da, db)
    if k:
        return _order(a, b, da, db, k, norm)
    return Evidence(SAMPLING, "action", **ev, step_a=da + 1, step_b=db + 1,
                    a=_line(ta, da, norm), b=_line(tb, db, norm))


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.@]*[A-Za-z0-9]|[A-Za-z0-9]")


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text) if len(t) > 1 or t.isdigit()}


def _user_led(a: _Side, b: _Side, user: tuple[int | None, int | None, int, int], da: int, db: int,
              norm: Normaliser) -> Evidence | None:
    """``user-simulator`` evidence when the agent's diverging action carries what a differing user turn said.

    ``user`` is the first row that differs (a user turn: its indexes and places);
    the actions are at ``da``/``db``. The user turns shown and compared are each
    side's last before its action (the one the action follows), or the first
    differing ones. The action follows the turn when a distinctive token (with a
    digit, or of five letters or more: a reservation id, a name, a product the
    user gave) that only one side's user turn has is also in that side's tool
    call (name and arguments, not the agent's chat) and not in the other's.
    """
    assert a.trace is not None and b.trace is not None
    ia, ib, pa, pb = user
    la, lb = _last_user(a.trace, da), _last_user(b.trace, db)
    if la is not None and lb is not None and a.signatures[la] != b.signatures[lb]:
        ia, ib = la, lb
        pa, pb = la, lb
    ua, ub = _line(a.trace, ia, norm), _line(b.trace, ib, norm)
    xa, xb = _line(a.trace, da, norm), _line(b.trace, db, norm)
    said_a = _tokens(ua) if ia is not None else set()
    said_b = _tokens(ub) if ib is not None else set()
    did_a, did_b = _call_tokens(a.trace, da, norm), _call_tokens(b.trace, db, norm)
    echo = (said_b - said_a) & (did_b - did_a) | (said_a - said_b) & (did_a - did_b)
    if not any(any(c.isdigit() for c in t) or len(t) >= 5 for t in echo):
        return None
    return Evidence(USER_SIM, "user-turn", a.trial, b.trial, pa + 1, pb + 1, a=ua, b=ub, action_a=xa, action_b=xb)


def _last_user(trace: Sequence[Any], before: int) -> int | None:
    """The index of the last user turn before step ``before`` (0-based), or None."""
    for i in range(min(before, len(trace)) - 1, -1, -1):
        if role(trace[i]) in USER_ROLES:
            return i
    return None


def _call_tokens(trace: Sequence[Any], i: int, norm: Normaliser) -> set[str]:
    """The tokens of the tool calls of step ``i`` (or of its text when it is the final answer)."""
    if i >= len(trace):
        return set()
    step = norm.step(trace[i])
    calls = tool_calls(step)
    if calls:
        return _tokens(" ".join(step_line({"tool_calls": [c]}, None, norm) for c in calls))
    return _tokens(_line(trace, i, norm))


def _order(a: _Side, b: _Side, pa: int, pb: int, k: int, norm: Normaliser) -> Evidence:
    assert a.trace is not None and b.trace is not None
    return Evidence(ORDERING, "order", a.trial, b.trial, pa + 1, pb + 1,
                    a=" | ".join(_line(a.trace, pa + i, norm) for i in range(k)),
                    b=" | ".join(_line(b.trace, pb + i, norm) for i in range(k)), steps=k)


def _context_change(a: _Side, b: _Side, ia: int | None, ib: int | None, pa: int, pb: int,
                    norm: Normaliser) -> Evidence:
    """Classify a tool result that differs before the agent's actions do (``pa``/``pb``: its place)."""
    assert a.trace is not None and b.trace is not None
    k = _swapped(a.signatures, b.signatures, pa, pb)
    if k:
        return _order(a, b, pa, pb, k, norm)
    sa = norm.step(a.trace[ia]) if ia is not None else None
    sb = norm.step(b.trace[ib]) if ib is not None else None
    call = _call_before(b.trace, pb, sb, norm) if sb is not None else _call_before(a.trace, pa, sa, norm)
    err_b = error_text(sb) if sb is not None else None
    err_a = error_text(sa) if sa is not None else None
    values = {"step_a": pa + 1, "step_b": pb + 1, "call": call,
              "a": _line(a.trace, ia, norm), "b": _line(b.trace, ib, norm)}
    if bool(err_a) != bool(err_b):
        return Evidence(ENVIRONMENT, "error", a.trial, b.trial, **values, error=err_b or err_a)
    return Evidence(TOOL, "result", a.trial, b.trial, **values)


def _classify_all(pairs: Sequence[tuple[_Side, _Side]], norm: Normaliser) -> list[Evidence]:
    """:func:`classify_pair` of each pair; pairs with the same two traces (after normalisation) are classified once."""
    done: dict[tuple[tuple[str, ...], tuple[str, ...]], Evidence] = {}
    out = []
    for a, b in pairs:
        if b.errored or a.trace is None or b.trace is None:
            out.append(_classify(a, b, norm))
            continue
        key = (tuple(a.signatures), tuple(b.signatures))
        seen = done.get(key)
        if seen is None:
            seen = done[key] = _classify(a, b, norm)
        out.append(_named(replace(seen, trial_a=a.trial, trial_b=b.trial), a, b))
    return out


def pair_indexes(passing: int, failing: int, max_pairs: int = MAX_PAIRS) -> list[tuple[int, int]]:
    """Every (passing, failing) index pair, or ``max_pairs`` of them drawn without replacement (seed 0), in order."""
    total = passing * failing
    if total <= max_pairs:
        return [(i, j) for i in range(passing) for j in range(failing)]
    picks = np.sort(np.random.default_rng(0).choice(total, size=max_pairs, replace=False))
    return [(int(x) // failing, int(x) % failing) for x in picks]


def suggest_task(
    task: str,
    trials: Sequence[Trial],
    normaliser: Normaliser | None = None,
    max_pairs: int = MAX_PAIRS,
    fork: bool = True,
    grades_field: str | None = None,
    rescored: Mapping[int, float] | None = None,
) -> CauseSuggestion | None:
    """The suggested source of flakiness of one task from its trials (None: the task is not flaky).

    A task is flaky when it has a passing and a failing trial; its errored trials
    are paired with the passing ones too (each is environment evidence).

    Args:
        task: The task's name.
        trials: Its trials, with traces (:func:`~flaketui.loading.read_trial`).
        normaliser: Which keys to ignore.
        max_pairs: Pairs classified at most (more: a fixed sample).
        fork: Also test the forks (:func:`~flaketui.traces.forktest.decisive_fork`).
        grades_field: Where each trial's several grades are (dotted path into its
            extra fields; default: :data:`GRADE_KEYS`).
        rescored: Trial number → its grade in a re-scored copy of the log (1 pass, 0 fail):
            that grade joins the trial's own (its several grades, else its outcome), so a
            re-scoring that disagrees on the same trajectory is grader disagreement.
    """
    norm = _Memo.of(normaliser or Normaliser())
    passing = [t for t in trials if t.outcome == PASS]
    failing = [t for t in trials if t.outcome == FAIL]
    if not passing or not failing:
        return None
    failing += [t for t in trials if t.outcome == ERRORED]
    sides_a = [_prepare(t, norm) for t in passing]
    sides_b = [_prepare(t, norm) for t in failing]
    picks = pair_indexes(len(sides_a), len(sides_b), max_pairs)
    evidence = _classify_all([(sides_a[i], sides_b[j]) for i, j in picks], norm)
    grades = [(t, g) for t in trials if t.outcome != ERRORED and (g := _all_grades(t, grades_field, rescored))]
    agreement = grader_agreement([g for _, g in grades]) if len(grades) >= 2 else None
    if agreement is not None and agreement.split_trials:
        graded = {t.trial: g for t, g in grades}
        for i, e in enumerate(evidence):  # identical trajectories whose grades split: the grader
            ga, gb = graded.get(e.trial_a), graded.get(e.trial_b)
            split = ga is not None and gb is not None and (min(ga) < max(ga) or min(gb) < max(gb))
            if split and (e.cause == HARNESS or agreement.share >= 0.5):
                evidence[i] = Evidence(GRADER, "grades", e.trial_a, e.trial_b, a=_grades_text(ga),
                                       b=_grades_text(gb))
    votes = Counter(e.cause for e in evidence)
    ranked = votes.most_common()
    top, agree = ranked[0]
    cause = top
    if agree * 2 < len(evidence) or len(ranked) > 1 and ranked[1][1] == agree:
        cause = UNKNOWN
    shown = next(e for e in evidence if e.cause == top)
    test = decisive_fork([(t.trial, t.outcome, t.trace) for t in trials], norm) if fork else None
    attribution = tuple(x for t in failing for x in _attribution(t.trial, t.extra or {}))
    signatures = tuple(_signature(t, evidence, norm) for t in failing)
    broke = {sig.trial for sig in signatures if sig.errored or sig.exception or sig.error}
    timeline = tuple((t.trial, trial_time(t.extra), t.trial in broke) for t in trials)
    return CauseSuggestion(task, cause, agree, len(evidence), {c: votes[c] for c in CAUSES if votes[c]},
                           shown, test, len(picks) < len(sides_a) * len(sides_b), agreement, attribution,
                           timeline, signatures, trial_causes=_trial_causes(failing, evidence, cause),
                           consistency=task_consistency(passing, norm))


def _all_grades(trial: Trial, path: str | None, rescored: Mapping[int, float] | None) -> list[float] | None:
    """A trial's several grades (:func:`trial_grades`), with its re-scored grade added when it has one."""
    own = trial_grades(trial.extra, path)
    again = rescored.get(trial.trial) if rescored else None
    if again is None:
        return own
    return [*(own or [1.0 if trial.outcome == PASS else 0.0]), float(again)]


def _trial_causes(failing: Sequence[Trial], evidence: Sequence[Evidence], task_cause: str
                  ) -> tuple[tuple[int, str], ...]:
    """Each failing or errored trial's cause: the one most of its pairs give, ties in :data:`CAUSES` order."""
    by_trial: dict[int, Counter[str]] = {}
    for e in evidence:
        by_trial.setdefault(e.trial_b, Counter())[e.cause] += 1
    out = []
    for t in failing:
        votes = by_trial.get(t.trial)
        if not votes:
            out.append((t.trial, task_cause))
            continue
        top = max(votes.values())
        out.append((t.trial, next(c for c in CAUSES if votes[c] == top)))
    return tuple(out)


def _grades_text(grades: Sequence[float]) -> str:
    return "[" + ", ".join(f"{g:g}" for g in grades) + "]"


def _signature(trial: Trial, evidence: Sequence[Evidence], norm: Normaliser) -> TrialSignature:
    """How one failing or errored trial went wrong (see :mod:`flaketui.traces.failure_modes`)."""
    errored = trial.outcome == ERRORED
    message = message_of(trial.error) if trial.error not in (None, False, "") else None
    exc = exception_type(trial.error) if message else None
    trace = trial.trace or []
    if message is None:
        for step in reversed(trace):
            if is_tool_result(step) and (text := error_text(step)) is not None:
                message, exc = text, exception_type(text)
                break
    action = None
    ev = next((e for e in evidence if e.trial_b == trial.trial and e.kind in ("action", "user-turn")), None)
    if ev is not None and ev.step_b is not None:
        for i in range(ev.step_b - 1, len(trace)):
            calls = tool_calls(norm.step(trace[i])) if is_agent(trace[i]) else []
            if calls:
                action = action_shape(calls[0])
                break
    return TrialSignature(trial.trial, exc, mask(message) if message else None,
                          termination_reason(trial.extra), action, errored)


_Job = tuple[str, list[int], Normaliser, int, bool, str | None, Mapping[int, float] | None]
_WORKER_READ: Callable[[int], Trial] | None = None
"""The trial reader of a pool worker (sent once per worker process, not once per task)."""


def _init_worker(read: Callable[[int], Trial]) -> None:
    global _WORKER_READ
    _WORKER_READ = read


def _suggest_rows(read: Callable[[int], Trial], job: _Job) -> CauseSuggestion | None:
    task, rows, norm, max_pairs, fork, grades_field, rescored = job
    return suggest_task(task, [read(r) for r in rows], norm, max_pairs, fork, grades_field, rescored)


def _pool_job(job: _Job) -> CauseSuggestion | None:
    assert _WORKER_READ is not None
    return _suggest_rows(_WORKER_READ, job)


def suggest_causes(
    read: Callable[[int], Trial],
    rows_by_task: Mapping[str, Iterable[int]],
    normaliser: Normaliser | None = None,
    max_pairs: int = MAX_PAIRS,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    fork: bool = True,
    bursts: bool = True,
    grades_field: str | None = None,
    rescored: Mapping[str, Mapping[int, float]] | None = None,
) -> dict[str, CauseSuggestion]:
    """Read the given tasks' trials and suggest each flaky one's source of flakiness.

    Args:
        read: Reads one trial, with its trace, from its row:
            ``functools.partial(flaketui.loading.read_trial, log)`` (the core's
            parts stand apart, so the caller hands the reader in). With
            ``workers > 1`` it must pickle; it is sent once to each worker.
        rows_by_task: Task name → its :class:`~flaketui.model.TrialLog` rows, of one
            run (:func:`flaky_rows`); a task without both a pass and a failure
            gets no suggestion.
        normaliser: Which keys to ignore.
        max_pairs: Pairs classified per task at most.
        workers: Processes to spread the tasks over (1: in this process).
        progress: Called with (tasks done, tasks) after each task.
        fork: Also find each task's decisive fork.
        bursts: Look for outage windows over these tasks' trials and call the
            environment tasks whose failures sit in one ``burst`` (:func:`apply_bursts`).
        grades_field: Where each trial's several grades are (see :func:`trial_grades`).
        rescored: Task → trial number → its grade in a re-scored copy of the log
            (:func:`suggest_task`'s ``rescored``).

    Returns:
        Task name → suggestion, in the order of ``rows_by_task``, flaky tasks only.
    """
    norm = normaliser or Normaliser()
    jobs: list[_Job] = [(task, [int(r) for r in rows], norm, max_pairs, fork, grades_field,
                         rescored.get(task) if rescored is not None else None)
                        for task, rows in rows_by_task.items()]
    out: dict[str, CauseSuggestion] = {}

    def take(done: int, result: CauseSuggestion | None) -> None:
        if result is not None:
            out[result.task] = result
        if progress is not None:
            progress(done, len(jobs))

    if workers <= 1 or len(jobs) < 2:
        for n, job in enumerate(jobs, 1):
            take(n, _suggest_rows(read, job))
        return apply_bursts(out) if bursts else out
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(read,)) as pool:
        for n, result in enumerate(pool.map(_pool_job, jobs, chunksize=max(1, len(jobs) // (workers * 8))), 1):
            take(n, result)
    return apply_bursts(out) if bursts else out


@dataclass(frozen=True)
class Rescoring:
    """A second log of the same trials re-scored (``report --rescored``), paired by task and trial number.

    ``grades`` has each paired trial's re-scored grade (task → trial → 1 pass / 0 fail), which
    :func:`suggest_task` adds to the trial's own; ``unpaired`` of the log's graded trials have no
    re-scored twin, ``rescored_only`` re-scored trials have none in the log (both said, never
    dropped unseen); ``run`` is the re-scored log's run paired with this one.
    """

    grades: Mapping[str, Mapping[int, float]]
    paired: int
    unpaired: int
    rescored_only: int
    run: str

    def line(self) -> str:
        """``re-scored (X): 950 trials paired by task and trial; 12 trials not paired (no re-scored twin),
        3 re-scored trials not in the log``."""
        text = f"re-scored ({self.run}): {self.paired} trials paired by task and trial"
        if self.unpaired or self.rescored_only:
            text += (f"; {self.unpaired} trials not paired (no re-scored twin), {self.rescored_only} "
                     "re-scored trials not in the log")
        return text

    def to_json(self) -> dict[str, Any]:
        """``{run, paired, unpaired, rescored_only}``."""
        return {"run": self.run, "paired": self.paired, "unpaired": self.unpaired,
                "rescored_only": self.rescored_only}


BURST_SHARE = 0.5
"""An environment task is ``burst`` when more than this share of its broken trials sit inside outage windows."""


def find_bursts(suggestions: Iterable[CauseSuggestion], seed: int = 0) -> list[Burst]:
    """The outage windows among the trials of ``suggestions`` (:func:`~flaketui.traces.burst.scan_bursts`
    over every trial with a start time; the cases are the trials that broke: errored, or failed
    with an error, as an outage's failures do)."""
    times, failed, tasks = [], [], []
    for s in suggestions:
        for _trial, t, bad in s.timeline:
            if t is not None:
                times.append(t)
                failed.append(bad)
                tasks.append(s.task)
    return scan_bursts(times, failed, tasks, seed=seed)


def apply_bursts(suggestions: dict[str, CauseSuggestion], windows: Sequence[Burst] | None = None
                 ) -> dict[str, CauseSuggestion]:
    """``suggestions`` with each ``environment`` task whose failures sit in an outage window called ``burst``.

    Args:
        suggestions: Task → suggestion (their :attr:`~CauseSuggestion.timeline` is read).
        windows: The outage windows (default: :func:`find_bursts` of ``suggestions``;
            a caller that has every trial of the run, stable tasks too, can pass
            :func:`~flaketui.traces.burst.scan_bursts` of them).
    """
    windows = find_bursts(suggestions.values()) if windows is None else windows
    if not windows:
        return suggestions
    out = {}
    for task, s in suggestions.items():
        bad = [(trial, t) for trial, t, f in s.timeline if f]
        where = [next((w for w in windows if t is not None and w.contains(t)), None) for _, t in bad]
        inside = [w for w in where if w is not None]
        if s.cause == ENVIRONMENT and bad and len(inside) > BURST_SHARE * len(bad):
            window = Counter(inside).most_common(1)[0][0]
            trial_b = next(trial for (trial, _), w in zip(bad, where, strict=True) if w is window)
            trial_a = s.evidence.trial_a if s.evidence is not None else trial_b
            ev = Evidence(BURST, "burst", trial_a, trial_b, error=window.text(),
                          a=None if s.evidence is None else s.evidence.text())
            votes = dict(s.votes)
            votes[BURST] = votes.pop(ENVIRONMENT, 0)
            when = {trial: t for trial, t, _ in s.timeline if t is not None}
            trial_causes = tuple((trial, BURST if c == ENVIRONMENT and trial in when
                                  and any(w.contains(when[trial]) for w in windows) else c)
                                 for trial, c in s.trial_causes)
            s = replace(s, cause=BURST, votes={c: votes[c] for c in CAUSES if votes.get(c)}, evidence=ev,
                        burst=window, trial_causes=trial_causes)
        out[task] = s
    return out


def suite_failure_modes(suggestions: Iterable[CauseSuggestion]) -> list[FailureMode]:
    """The failure modes of the failing and errored trials of ``suggestions``' tasks, most trials first."""
    return failure_modes((s.task, sig) for s in suggestions for sig in s.signatures)


SOURCES = ("agent", "user", "environment", "grader", "unknown")
"""Who broke a failing trial first, as the suite summary counts them (τ²-bench's
``sims_by_first_critical_source`` counts agent and user; flaketui adds the environment and the grader)."""
SOURCE_OF = {SAMPLING: "agent", USER_SIM: "user", TOOL: "environment", ORDERING: "environment",
             ENVIRONMENT: "environment", BURST: "environment", GRADER: "grader", HARNESS: "grader",
             UNKNOWN: "unknown"}
"""The source each cause is laid at: the agent's own choice (``sampling``); the simulated user; the
environment (tools that answer otherwise or in another order, failed calls, outages); the grader
(the same trajectory scored otherwise: ``grader``, ``harness-bug``)."""


def first_critical_sources(suggestions: Iterable[CauseSuggestion]) -> dict[str, int]:
    """Failing and errored trials of the flaky tasks by first critical source (:data:`SOURCES` order,
    sources with none left out): each trial's cause (:attr:`CauseSuggestion.trial_causes`) laid at
    its source by :data:`SOURCE_OF`."""
    counts = Counter(SOURCE_OF[c] for s in suggestions for _, c in s.trial_causes)
    return {src: counts[src] for src in SOURCES if counts[src]}


_CRITICAL = {"agent": ("critical",), "user": ("critical_helped", "critical_hindered")}
"""τ²-bench's critical severities by error source (its ``compute_metrics``)."""


def harness_first_critical_sources(suggestions: Iterable[CauseSuggestion]) -> dict[str, int] | None:
    """The harness's own count of the same failing trials by first critical source, or None when
    no trial carries a review.

    τ²-bench's rule (``sims_by_first_critical_source`` in its ``compute_metrics``): of a trial's
    ``review`` errors, the critical ones (an agent error of severity ``critical``, a user error of
    ``critical_helped`` or ``critical_hindered``); the earliest (by ``tick_start``, else
    ``turn_idx``) names the source, else ``none``. A trial with only a ``user_only_review``
    counts ``user`` when a user error is critical, else ``none``.
    """
    counts: Counter[str] = Counter()
    for s in suggestions:
        by_trial: dict[int, dict[str, dict[str, Any]]] = {}
        for att in s.attribution:
            by_trial.setdefault(att["trial"], {})[att["review"]] = att
        for reviews in by_trial.values():
            att = reviews.get("review") or reviews.get("user_only_review")
            if att is None:
                continue
            only_user = att["review"] == "user_only_review"
            critical = [e for e in att["errors"] if isinstance(e.get("source"), str)
                        and (not only_user or e["source"].lower() == "user")
                        and e.get("severity") in _CRITICAL.get(e["source"].lower(), ())]

            def position(e: dict[str, Any]) -> float:
                at = e.get("tick") if e.get("tick") is not None else e.get("turn")
                return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else float("inf")

            counts[min(critical, key=position)["source"].lower() if critical else "none"] += 1
    if not counts:
        return None
    order = ["agent", "user", "none"]
    return {src: counts[src] for src in [*order, *sorted(set(counts) - set(order))] if counts[src]}


SOURCES_LINE = "mixed tasks' failures by first critical source: "
"""How :func:`sources_line` starts."""


def sources_line(suggestions: Sequence[CauseSuggestion]) -> str | None:
    """``mixed tasks' failures by first critical source: agent 12, user 5, environment 30, grader 4``, and τ²'s own
    count beside it when the trials carry its reviews (None: no flaky task)."""
    ours = first_critical_sources(suggestions)
    if not ours:
        return None
    line = SOURCES_LINE + ", ".join(f"{k} {v}" for k, v in ours.items())
    theirs = harness_first_critical_sources(suggestions)
    if theirs:
        line += "; the harness's review: " + ", ".join(f"{k} {v}" for k, v in theirs.items())
    return line


def suite_bursts(suggestions: Iterable[CauseSuggestion]) -> list[Burst]:
    """The distinct outage windows the ``burst`` suggestions sit in, earliest first."""
    seen = {id(s.burst): s.burst for s in suggestions if s.burst is not None}
    return sorted(seen.values(), key=lambda w: w.start)


def flaky_rows(outcomes: RunOutcomes) -> dict[str, np.ndarray]:
    """Task name → :class:`~flaketui.model.TrialLog` rows, for the tasks of ``outcomes`` with a pass and a failure."""
    flaky = np.flatnonzero((outcomes.passes > 0) & (outcomes.passes < outcomes.n))
    return {outcomes.tasks[i]: outcomes.task_rows(int(i)) for i in flaky}


def breakdown(suggestions: Iterable[CauseSuggestion]) -> list[tuple[str, int]]:
    """Flaky tasks per suspected cause, most first (ties in :data:`CAUSES` order), causes with none left out."""
    counts = Counter(s.cause for s in suggestions)
    return sorted(((c, counts[c]) for c in CAUSES if counts[c]), key=lambda x: -x[1])


SHORT_NAMES = {ORDERING: "ordering", HARNESS: "harness", USER_SIM: "user-sim"}
"""How the suite summary's breakdown line names the causes with long names."""


def breakdown_line(suggestions: Iterable[CauseSuggestion]) -> str:
    """``mixed tasks by suspected source: tool-nondeterminism 9, sampling 5, ordering 2, harness 1``."""
    parts = [f"{SHORT_NAMES.get(c, c)} {n}" for c, n in breakdown(suggestions)]
    return "mixed tasks by suspected source: " + (", ".join(parts) if parts else "none")
