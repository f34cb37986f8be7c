#!/usr/bin/env python3
"""Write the bundled on-call assistant fixtures (deterministic: same bytes every run).

    python scripts/make_fixtures.py            # writes fixtures/oncall-*.jsonl

and the same bytes, gzip-compressed, as ``flaketui/demo/oncall-*.jsonl.gz``: the
demo logs shipped inside the package, so ``flaketui demo`` works from a wheel
(``tests/unit/test_wheel.py`` checks the two copies agree).

Two runs of a 25-task on-call assistant suite, 12 trials per task:

- ``oncall-baseline``: ``searchRunbook`` passes 10 of 12. The runbook retriever
  returns tied chunks in random order; when the "restart the service" chunk
  comes first the agent restarts checkout before looking at its metrics, and
  fails. 19 read-only tasks always pass, 5 write tasks always fail, and one
  trial of ``listAlerts`` errored in the harness.
- ``oncall-candidate``: the retriever sorts tied chunks deterministically.
  ``searchRunbook`` passes 12 of 12; ``summarizeIncident`` now always gets an
  outdated post-mortem first and breaks (0 of 12). Its suite pass^5 = 19/25 =
  0.76 clears the gate (floor 0.7, flakiness cap 0.2) that the baseline fails.

Known answers (k = 5, baseline): searchRunbook pass^5 = C(10,5)/C(12,5) = 0.318,
flakiness 0.556, suite pass^5 = (7/22 + 19)/25 = 0.773.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures"
PACKAGED = Path(__file__).resolve().parent.parent / "flaketui" / "demo"

STABLE_PASS = {
    "getAlertStatus": "alerts",
    "listAlerts": "alerts",
    "explainAlertRule": "alerts",
    "listOncallSchedule": "alerts",
    "readServiceLogs": "observability",
    "queryErrorRate": "observability",
    "queryLatency": "observability",
    "fetchDashboard": "observability",
    "checkDiskUsage": "infra",
    "getQueueDepth": "infra",
    "checkCertificateExpiry": "infra",
    "pingHealthcheck": "infra",
    "describeDeployment": "deploys",
    "listRecentDeploys": "deploys",
    "readConfigDiff": "deploys",
    "lookupOwner": "incidents",
    "getIncidentTimeline": "incidents",
    "summarizeIncident": "incidents",
    "findRelatedIncidents": "incidents",
}
STABLE_FAIL = {
    "rollbackDeploy": "deploys",
    "scaleOutService": "infra",
    "silenceAlert": "alerts",
    "rotateCredentials": "infra",
    "failoverDatabase": "infra",
}
TRIALS = 12

RUNBOOK_CHUNKS = {
    "dashboards": "Open the checkout dashboard and compare p99 latency with the error rate.",
    "metrics": "If the error rate is normal, query queue depth before acting.",
    "restart": "Restart the checkout service to clear stuck workers.",
}


class Clock:
    """Step ids and timestamps that differ on every trial (and say nothing about outcome)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = rng.randrange(0, 86_000)

    def stamp(self, step: dict) -> dict:
        self.t += self.rng.randrange(1, 9)
        h, m, s = self.t // 3600, self.t // 60 % 60, self.t % 60
        return {
            "id": f"step_{self.rng.getrandbits(40):010x}",
            "timestamp": f"2026-11-20T{h:02d}:{m:02d}:{s:02d}Z",
            **step,
            "latency_ms": self.rng.randrange(80, 2400),
        }


def search_runbook_trace(clock: Clock, order: list[str]) -> list[dict]:
    steps = [
        {"role": "user", "type": "message",
         "content": "PagerDuty: checkout p99 latency above 2s for 10 minutes. What do we do?"},
        {"role": "assistant", "type": "tool_call", "name": "searchRunbook",
         "args": {"query": "checkout p99 latency", "top_k": 3}},
        {"role": "tool", "type": "tool_result", "name": "searchRunbook",
         "content": "\n".join(f"[{i + 1}] {RUNBOOK_CHUNKS[c]}" for i, c in enumerate(order))},
    ]
    if order[0] == "restart":
        steps += [
            {"role": "assistant", "type": "tool_call", "name": "restartService",
             "args": {"service": "checkout"}},
            {"role": "tool", "type": "tool_result", "name": "restartService",
             "content": "checkout restarted; 212 in-flight orders dropped"},
            {"role": "assistant", "type": "message",
             "content": "I restarted checkout; latency should recover."},
        ]
    else:
        steps += [
            {"role": "assistant", "type": "tool_call", "name": "queryMetrics",
             "args": {"service": "checkout", "metric": "error_rate"}},
            {"role": "tool", "type": "tool_result", "name": "queryMetrics",
             "content": "error_rate=0.2% (normal); queue_depth=18k (high)"},
            {"role": "assistant", "type": "message",
             "content": "Errors are normal but the payment queue is backed up: scale the "
                        "payment workers; no restart needed."},
        ]
    return [clock.stamp(s) for s in steps]


def summarize_trace(clock: Clock, outdated_first: bool) -> list[dict]:
    docs = ["PM-2291 (2026-11-19): payment queue backlog", "PM-1740 (2025-03-02): DNS outage"]
    if outdated_first:
        docs.reverse()
    steps = [
        {"role": "user", "type": "message", "content": "Summarise yesterday's checkout incident."},
        {"role": "assistant", "type": "tool_call", "name": "findPostmortems",
         "args": {"service": "checkout", "limit": 2}},
        {"role": "tool", "type": "tool_result", "name": "findPostmortems", "content": "; ".join(docs)},
        {"role": "assistant", "type": "message",
         "content": "Summary: " + ("a DNS outage took checkout down." if outdated_first
                                   else "a payment queue backlog slowed checkout.")},
    ]
    return [clock.stamp(s) for s in steps]


def generic_trace(clock: Clock, task: str, ok: bool) -> list[dict]:
    tool = task[0].lower() + task[1:]
    steps = [
        {"role": "user", "type": "message", "content": f"On-call request: {task} for checkout."},
        {"role": "assistant", "type": "tool_call", "name": tool, "args": {"service": "checkout"}},
        {"role": "tool", "type": "tool_result", "name": tool,
         "content": "ok" if ok else "403 Forbidden: the on-call role may not perform writes"},
        {"role": "assistant", "type": "message",
         "content": f"Done: {task} completed." if ok else f"I could not {task}: permission denied."},
    ]
    return [clock.stamp(s) for s in steps]


def record(rng: random.Random, run: str, task: str, group: str, trial: int, passed: bool,
           trace: list[dict] | None) -> dict:
    rec = {
        "run": run,
        "task": task,
        "trial": trial,
        "passed": passed,
        "group": group,
        "metrics": {
            "tokens": rng.randrange(900, 4200),
            "cost_usd": round(rng.uniform(0.004, 0.03), 4),
            "duration_s": round(rng.uniform(3, 40), 1),
        },
        "model": "oncall-agent-v3",
        "temperature": 0.7,
    }
    if trace is not None:
        rec["trace"] = trace
    return rec


def runbook_orders(run: str, rng: random.Random) -> list[list[str]]:
    if run == "oncall-candidate":
        return [["dashboards", "metrics", "restart"]] * TRIALS
    # Tied chunks in random order: 8 trials get A, 2 get C (restart in the middle: harmless),
    # 2 get B (restart first: the agent restarts checkout and fails).
    orders = (
        [["dashboards", "metrics", "restart"]] * 8
        + [["metrics", "restart", "dashboards"]] * 2
        + [["restart", "dashboards", "metrics"]] * 2
    )
    rng.shuffle(orders)
    return orders


def write_run(run: str, seed: int) -> Path:
    rng = random.Random(seed)
    lines: list[dict] = []
    tasks = sorted({**STABLE_PASS, **STABLE_FAIL, "searchRunbook": "observability"}.items())
    # The deterministic sort always puts the outdated post-mortem first: every trial fails.
    broken_trials = set(range(TRIALS)) if run == "oncall-candidate" else set()
    for task, group in tasks:
        orders = runbook_orders(run, rng) if task == "searchRunbook" else None
        for trial in range(TRIALS):
            clock = Clock(rng)
            if task == "searchRunbook":
                order = orders[trial]
                passed = order[0] != "restart"
                trace = search_runbook_trace(clock, order)
            elif task == "summarizeIncident":
                outdated = trial in broken_trials
                passed = not outdated
                trace = summarize_trace(clock, outdated)
            else:
                passed = task in STABLE_PASS
                trace = None if task == "pingHealthcheck" else generic_trace(clock, task, passed)
            lines.append(record(rng, run, task, group, trial, passed, trace))
        if task == "listAlerts" and run == "oncall-baseline":
            lines.append({"run": run, "task": task, "trial": TRIALS, "group": group,
                          "error": "harness: sandbox did not start within 300 s"})
    path = OUT / f"{run}.jsonl"
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in lines:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    # mtime=0 and no file name in the header: the same bytes every run
    with open(PACKAGED / f"{run}.jsonl.gz", "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(path.read_bytes())
    return path


def main() -> None:
    OUT.mkdir(exist_ok=True)
    PACKAGED.mkdir(exist_ok=True)
    for run, seed in (("oncall-baseline", 7), ("oncall-candidate", 11)):
        print(write_run(run, seed))


if __name__ == "__main__":
    main()
