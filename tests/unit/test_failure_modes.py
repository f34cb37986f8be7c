"""Failure modes: failing trials grouped by a deterministic signature; ``failure_modes`` in the JSON."""

from __future__ import annotations

import json
from functools import partial

import pytest

from flaketui.loading import load_logs, read_trial
from flaketui.model import ERRORED, FAIL, PASS, Trial
from flaketui.traces import flaky_rows, suggest_causes, suggest_task
from flaketui.traces.causes import suite_failure_modes
from flaketui.traces.failure_modes import (
    TrialSignature,
    action_shape,
    exception_type,
    failure_modes,
    mask,
    message_of,
    termination_reason,
)
from tests.helpers.causes import GENERATOR, STYLES, needs_shared, story


def trial(number: int, outcome: int, trace: list | None, error: object = None, task: str = "task",
          **extra: object) -> Trial:
    return Trial("run", task, number, outcome, None, None, {}, error, trace, dict(extra), f"log.jsonl:{number + 1}")


class TestParts:
    @pytest.mark.parametrize(("text", "masked"), [
        ("error: request timed out after 30s", "error: request timed out after <n>"),
        ("KeyError: 'R48009' in /srv/app/handlers.py line 12", "KeyError: <s> in <path> line <n>"),
        ("reservation R48009 not found", "reservation <id> not found"),
        ("job 3f2a9c1b-0d4e-4a7b-9c1d-2e3f4a5b6c7d failed", "job <id> failed"),
        ("HTTP 503 Service Unavailable", "HTTP <n> Service Unavailable"),
    ])
    def test_mask(self, text: str, masked: str) -> None:
        """mask replaces ids, numbers and paths in failure texts."""
        assert mask(text) == masked

    def test_the_same_failure_on_other_ids_masks_alike(self) -> None:
        """The same failure on other ids masks alike."""
        assert mask("sandbox sb-9f3a21c7 lost after 512 s") == mask("sandbox sb-0b7d44e1 lost after 7 s")

    def test_exception_and_message(self) -> None:
        """The exception type and message are read from an error text."""
        assert exception_type("ConnectionResetError: [Errno 104] Connection reset by peer") == "ConnectionResetError"
        assert exception_type({"type": "asyncio.TimeoutError", "message": "x"}) == "TimeoutError"
        assert exception_type('{"message": "RateLimitError: 429"}') == "RateLimitError"
        assert exception_type("it went wrong") is None
        assert message_of({"message": "boom", "type": "X"}) == "boom"
        assert message_of({"traceback": "Traceback…\n  File x\nValueError: bad"}) == "ValueError: bad"
        assert message_of(None) is None

    def test_termination_and_action(self) -> None:
        """The termination reason and last action are read."""
        assert termination_reason({"termination_reason": "max_steps"}) == "max_steps"
        assert termination_reason({"metadata": {"stop_reason": "too many turns (40)"}}) == "too many turns (<n>)"
        assert termination_reason({}) is None
        assert action_shape({"name": "cancel", "arguments": '{"reservation_id": "R1", "reason": "x"}'}) == \
            "cancel(reason,reservation_id)"

    def test_signature_and_kind(self) -> None:
        """A trial's signature has its kind and text."""
        sig = TrialSignature(3, "TimeoutError", "TimeoutError: after <n>", None, "search(q)")
        assert sig.kind == "exception"
        assert sig.signature == "exception=TimeoutError | error=TimeoutError: after <n> | action=search(q)"
        assert TrialSignature(1, action="f(a)").kind == "action" and TrialSignature(1).signature == "-"


class TestModes:
    def test_grouped_most_trials_first_example_in_natural_order(self) -> None:
        """Failure modes are grouped most trials first, examples in natural order."""
        sigs = [("task-10", TrialSignature(0, error="HTTP <n>")), ("task-2", TrialSignature(4, error="HTTP <n>")),
                ("task-2", TrialSignature(1, error="HTTP <n>")), ("task-3", TrialSignature(0, action="f(a)"))]
        modes = failure_modes(sigs)
        assert [(m.signature, m.trials, m.tasks) for m in modes] == [("error=HTTP <n>", 3, 2), ("action=f(a)", 1, 1)]
        assert modes[0].example == ("task-2", 1) and modes[0].kind == "error"
        assert modes[0].to_json() == {"signature": "error=HTTP <n>", "kind": "error", "trials": 3, "tasks": 2,
                                      "example": {"task": "task-2", "trial": 1}}

    def test_from_suggestions(self) -> None:
        """Failure modes come from the cause suggestions."""
        shape = STYLES["flat"]
        s = suggest_task("t", [trial(0, PASS, story(shape)), trial(1, FAIL, story(shape, action="restart")),
                               trial(2, ERRORED, story(shape), "worker crashed: TimeoutError")])
        by_trial = {x.trial: x for x in s.signatures}
        assert by_trial[1].action == "restart(service)" and by_trial[1].kind == "action"
        assert by_trial[2].exception == "TimeoutError" and by_trial[2].errored
        e = suggest_task("e", [trial(0, PASS, story(shape)),
                               trial(1, FAIL, story(shape, second="HTTP 503 Service Unavailable"),
                                     termination_reason="error")])
        (sig,) = e.signatures
        assert sig.error == "HTTP <n> Service Unavailable" and sig.termination == "error"
        modes = suite_failure_modes([s, e])
        assert sum(m.trials for m in modes) == 3


@pytest.mark.slow
@needs_shared
def test_report_json_lists_failure_modes(tmp_path) -> None:
    """report's JSON lists the failure modes."""
    import subprocess
    import sys

    from flaketui.session.jobs import find_causes
    from flaketui.output.report import report_json
    from flaketui.stats import summarise
    from flaketui.stats.suite import task_stats

    out = tmp_path / "v2.jsonl"
    subprocess.run([sys.executable, str(GENERATOR), "--tasks", "150", "--trials", "8", "--causes", "--cause-set",
                    "v2", "--seed", "5", "--out", str(out)], check=True)
    log = load_logs([out])
    run = log.runs[0]
    causes = find_causes(log, [run])
    st = task_stats(log.run_outcomes(run), 1)
    doc = report_json(1, [(st, summarise(st))], causes)
    modes = doc["runs"][0]["failure_modes"]
    assert modes and all(set(m) == {"signature", "kind", "trials", "tasks", "example"} for m in modes)
    assert [m["trials"] for m in modes] == sorted((m["trials"] for m in modes), reverse=True)
    got = suggest_causes(partial(read_trial, log), flaky_rows(log.run_outcomes(run)))
    assert sum(m["trials"] for m in modes) == sum(len(s.signatures) for s in got.values())
    json.dumps(doc)
