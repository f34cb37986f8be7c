"""Output of ``gate``: its verdict line a run, and the ``--format json`` document (a contract for
scripts: README, "JSON output").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flaketui.output import formatting as fmt
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.stats.suite import GateResult


def gate_json(results: Sequence[GateResult]) -> dict[str, Any]:
    """The ``gate --format json`` document."""
    return {
        "passed": all(r.passed for r in results),
        "runs": [
            {
                "run": r.run,
                "k": r.k,
                "passed": r.passed,
                "pass_hat_k": fmt.json_float(r.pass_hat_k),
                "min_pass_hat_k": r.min_pass_hat_k,
                "max_flakiness": r.max_flakiness,
                "too_flaky": [{"task": t, "flakiness": f} for t, f in r.too_flaky],
                "reasons": r.reasons,
            }
            for r in results
        ],
    }


def verdict_line(r: GateResult) -> str:
    """``PASS run: …`` or ``FAIL run: …``, saying of each rule given whether it held."""
    verdict = "PASS" if r.passed else "FAIL"
    parts = [f"pass^{r.k} = " + ("undefined" if math.isnan(r.pass_hat_k) else f"{r.pass_hat_k:.3f}")]
    if r.min_pass_hat_k is not None:
        parts[0] += f" (floor {r.min_pass_hat_k:g}: {'FAILED' if r.floor_failed else 'ok'})"
    if r.max_flakiness is not None:
        cap = f"flakiness cap {r.max_flakiness:g}" + (f" with evidence at {r.confidence:.0%}"
                                                      if r.require_evidence else "")
        if not r.cap_failed:
            parts.append(f"{cap}: ok")
        else:
            why = ["no task has a non-errored trial"] if r.no_outcome else []
            if r.too_flaky:
                why.append(f"{len(r.too_flaky)} task(s) above it")
            if r.too_few_trials:
                why.append(f"{len(r.too_few_trials)} with too few trials to tell")
            parts.append(f"{cap}: FAILED ({', '.join(why)})")
    return f"{verdict} {visible(r.run)}: " + "; ".join(parts)
