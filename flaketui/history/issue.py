"""``history issue-body TASK``: a Markdown issue for a flaky task, for a person to pipe into
``gh issue create --body-file -`` or GitLab; flaketui posts nothing. Every string from the
history or a log is Markdown-escaped (:func:`md_text`). No Textual, no Rich.
"""

from __future__ import annotations

import shlex
from typing import Any

from flaketui.history.status import TaskTimeline
from flaketui.sanitize import markdown_text, mask_url, visible


def md_text(text: object) -> str:
    """``text`` as literal Markdown text on one line: :func:`~flaketui.sanitize.markdown_text` (the
    one rule of every Markdown writer), line breaks as spaces."""
    return markdown_text(str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " "))


def _log_of(meta: dict[str, Any]) -> list[str] | None:
    for key in ("log", "source", "path", "log_path"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return [visible(mask_url(value))]
    return None


def issue_markdown(tl: TaskTimeline, latest: dict[str, Any] | None) -> str:
    """The issue: a title line, the state and owner, the evidence, the runs (trials, passes,
    p̂), the latest flaky or failing run's first divergence and suggested source (as recorded
    by ``history record --causes``), and the commands to reproduce."""
    task = tl.task
    # the title says the task's state as the history has it: "flaky" only with the evidence for it
    lines = [f"# {md_text(tl.state.capitalize())} task: {md_text(task)}", "",
             f"- **State:** {md_text(tl.state)}" + (f" (computed: {md_text(tl.computed_state)})"
                                                    if tl.state != tl.computed_state else ""),
             f"- **Owner:** {', '.join(md_text(o) for o in tl.owner) if tl.owner else 'none'}",
             f"- **Evidence:** {md_text(tl.evidence)}",
             f"- **Runs:** in {len(tl.runs)} of {tl.runs_recorded} recorded runs"]
    if tl.group:
        lines.append(f"- **Group:** {md_text(tl.group)}")
    if tl.quarantine:
        q = tl.quarantine
        lines.append(f"- **Quarantined** by {md_text(q['who'])} at {md_text(q['at'])}: {md_text(q['why'])}")
    lines += ["", "## Recorded runs", "", "| run | recorded | trials | passes | errored | p̂ | state after |",
              "|---|---|---:|---:|---:|---:|---|"]
    for r in tl.runs[-20:]:
        p = "" if r.p_hat is None else f"{r.p_hat:.2f}"
        lines.append(f"| {md_text(r.name)} | {md_text(r.recorded_at)} | {r.trials} | {r.passes} | {r.errored} "
                     f"| {p} | {md_text(r.state)} |")
    if len(tl.runs) > 20:
        lines.append(f"\n({len(tl.runs) - 20} earlier runs not shown)")
    lines += ["", "## Latest flaky or failing run", ""]
    log: list[str] | None = None
    if latest is None:
        lines.append("None recorded.")
    else:
        # visible: a log path is pasted into the ```sh block, where a raw line break could close it
        log = [visible(mask_url(p)) for p in latest["log"]] if latest.get("log") else _log_of(latest["meta"])
        lines.append(f"Run {md_text(latest['run'])} ({md_text(latest['recorded_at'])}): "
                     f"{latest['passes']} of {latest['trials']} trials passed, {latest['errored']} errored.")
        lines.append("")
        div = latest["first_divergence"]
        src = latest["suggested_source"]
        lines.append(f"- **First divergence:** {'step ' + md_text(div) if div is not None else 'not recorded'}")
        if latest.get("divergence_evidence"):
            lines.append(f"- **What differs:** {md_text(latest['divergence_evidence'])}")
        lines.append(f"- **Suggested source:** {md_text(src) if src else 'not recorded'}")
        if latest.get("log_note"):
            lines.append(f"- **From the log:** {md_text(latest['log_note'])}")
        elif div is None and src is None:
            lines.append("\n(Recorded without traces: `flaketui history record LOG --causes` records both, "
                         "or give the log with `--log LOG`.)")
    where = " ".join(shlex.quote(part) for part in log) if log else "LOG"
    name = shlex.quote(visible(task))
    lines += ["", "## Reproduce", "", "```sh",
              "flaketui history status --state flaky --state regressed --format json",
              f"flaketui report {where} --causes",
              f"flaketui diff {where} --task {name}",
              f"flaketui plan {where}",
              "```", ""]
    return "\n".join(lines)
