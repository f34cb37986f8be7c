"""``history trend`` drawn: an axis-labelled text chart (the terminal and the app) and the page's
SVG chart, from :func:`flaketui.history.trend.trend_doc` 's document. Every string from the history
(run and task names) is made visible (text) or escaped (HTML); nothing is computed here but places.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from flaketui.sanitize import visible

SPARK = "▁▂▃▄▅▆▇█"
MARKS = {"flaky": "F", "regressed": "R", "fixed": "X", "quarantine_ended": "Q"}
"""The letter a change is marked with under the chart's run axis."""
CHANGES_SHOWN = 50
"""The changes the text lists (JSON and the page have every one)."""


def _short_date(at: str) -> str:
    return at[:10]


def text_chart(series: Sequence[tuple[str, str, Sequence[float | None]]], runs: Sequence[str],
               dates: Sequence[str], marks: Sequence[str] = (), height: int = 8, col: int = 3) -> list[str]:
    """Lines of a chart of rates in [0, 1] over runs (oldest left): ``series`` is (name, glyph,
    values); a y axis ticked 0, 0.5 and 1; an x axis numbering the runs; ``marks`` (a string per
    run, may be empty) on a line of their own; then the runs' numbers, names and dates."""
    width = len(runs) * col
    grid = [[" "] * width for _ in range(height + 1)]
    drawn = [float(v) for _, _, values in series for v in values if v is not None and v == v]
    # The y axis from 0, or from a tenth below the lowest value when all are high (a suite at
    # 0.97-0.99 would otherwise be one flat line at the top); at most 0.9, so a suite at 1.0 in
    # every run keeps an axis of some height.
    lo = min(0.9, math.floor(min(drawn) * 10) / 10) if drawn and min(drawn) >= 0.5 else 0.0
    span = 1.0 - lo
    for _, glyph, values in series:
        for j, v in enumerate(values):
            if v is None or v != v:
                continue
            row = height - round((float(v) - lo) / span * height)
            cell = j * col + col // 2
            grid[row][cell] = glyph if grid[row][cell] == " " else "◆"
    ticks = {0: "1.0", height // 2: f"{lo + span / 2:.2f}".rstrip("0").rstrip("."), height: f"{lo:.1f}"}
    if height % 2:  # the middle tick would not sit on a row
        ticks.pop(height // 2)
    lines = []
    for i, row in enumerate(grid):
        lines.append(f"{ticks.get(i, ''):>4} ┤" + "".join(row).rstrip())
    lines.append("     └" + "─" * width)
    axis = "".join(f"{j + 1:^{col}}" for j in range(len(runs)))
    lines.append("      " + axis.rstrip())
    if marks and any(marks):
        lines.append("      " + "".join(f"{m[:col]:^{col}}" for m in marks).rstrip())
    legend = "  ".join(f"{glyph} {name}" for name, glyph, _ in series)
    if any("◆" in row for row in grid):
        legend += "  ◆ several"
    lines.append(f"      {legend}" + ("   (F flaky, R regressed, X fixed)" if marks and any(marks) else ""))
    for j, (name, date) in enumerate(zip(runs, dates, strict=True)):
        lines.append(f"      {j + 1:>3}  {visible(name)}  {_short_date(date)}")
    return lines


def _marks(run: dict[str, Any]) -> str:
    return "".join(sorted({MARKS.get(c["kind"], "?") for c in run["changes"]}))


def _rate(e: dict[str, Any]) -> str:
    if e["value"] is None:
        return "-"
    lo, hi = e["ci"]
    ci = f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""
    return f"{e['value']:.3f}{ci}"


def trend_lines(doc: dict[str, Any], top: int = 20) -> list[str]:
    """``history trend`` as text: the suite's chart, a line per run, the changes, and the tasks
    that were ever flaky or failing (up to ``top``) with their p̂ per run as a sparkline."""
    runs = doc["runs"]
    if not runs:
        return [f"{doc['runs_recorded']} runs recorded: no trend to draw"]
    k = doc["k"]
    lines = [f"{len(runs)} of {doc['runs_recorded']} recorded runs, oldest first; pass^{k} at k = {k}; "
             f"states at cap {doc['cap']:g}" + (f"; flaky / undetermined: each run's classes at flakiness cap "
                                                f"{doc['flaky_cap']:g}" if "flaky_cap" in doc else ""), ""]
    lines += text_chart([("pass@1", "●", [r["pass_at_1"]["value"] for r in runs]),
                         (f"pass^{k}", "○", [r["pass_hat_k"]["value"] for r in runs])],
                        [r["run"] for r in runs], [r["recorded_at"] for r in runs], [_marks(r) for r in runs])
    lines.append("")
    head = ("#", "RUN", "RECORDED", "TASKS", "PASS@1 [95% CI]", f"PASS^{k} [95% CI]", "FLAKY", "UNDET.", "QUAR.")
    rows = [(str(j + 1), visible(r["run"]), r["recorded_at"], str(r["tasks"]), _rate(r["pass_at_1"]),
             _rate(r["pass_hat_k"]), str(r["counts"]["flaky"]),
             str(r["counts"]["undetermined"]), str(r["counts"]["quarantined"])) for j, r in enumerate(runs)]
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(head)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [head, *rows]]
    changes = [(j, r, c) for j, r in enumerate(runs) for c in r["changes"]]
    for j, r, c in changes[:CHANGES_SHOWN]:
        lines.append(f"run {j + 1} ({visible(r['run'])}): {visible(c['task'])} {c['kind']} (was {c['from']})")
    if len(changes) > CHANGES_SHOWN:
        lines.append(f"… and {len(changes) - CHANGES_SHOWN} more changes (--format json lists every one)")
    bad = [t for t in doc["tasks"] if t["state"] != "stable"][:top]
    if bad:
        lines += ["", "p̂ per run of the tasks ever flaky or failing (· not in the run):"]
        width = max(len(visible(t["task"])) for t in bad)
        for t in bad:
            spark = "".join("·" if p is None else SPARK[min(int(p * len(SPARK)), len(SPARK) - 1)] for p in t["p_hat"])
            lines.append(f"  {visible(t['task']).ljust(width)}  {t['state']:<10} {spark}")
    return lines


# --- the page --------------------------------------------------------------------

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 720, 300, 44, 90, 14, 14


def trend_svg(doc: dict[str, Any]) -> str:
    """The suite's pass@1 and pass^k per run (their intervals as bands; changes marked) as an
    inline SVG: y ticks at 0, 0.25, …, 1; on x each run's number, name and date."""
    from flaketui.output.html import esc

    runs = doc["runs"]
    if not runs:
        return ""
    k = doc["k"]
    span = W - PAD_L - PAD_R

    def x(j: int) -> float:
        return PAD_L + (span * (j / (len(runs) - 1)) if len(runs) > 1 else span / 2)

    def y(v: float) -> float:
        return PAD_T + (H - PAD_T - PAD_B) * (1 - v)

    out = [f"<svg role=\"img\" aria-label=\"pass@1 and pass^{k} per recorded run\" width=\"{W}\" height=\"{H}\" "
           f"viewBox=\"0 0 {W} {H}\" xmlns=\"http://www.w3.org/2000/svg\"><title>pass@1 and pass^{k} per run"
           "</title>",
           f"<line class=\"axis\" x1=\"{PAD_L}\" y1=\"{PAD_T}\" x2=\"{PAD_L}\" y2=\"{H - PAD_B}\"/>",
           f"<line class=\"axis\" x1=\"{PAD_L}\" y1=\"{H - PAD_B}\" x2=\"{W - PAD_R}\" y2=\"{H - PAD_B}\"/>"]
    for v in (0, 0.25, 0.5, 0.75, 1):
        out.append(f"<line class=\"axis\" x1=\"{PAD_L - 4}\" y1=\"{y(v):.1f}\" x2=\"{PAD_L}\" y2=\"{y(v):.1f}\"/>"
                   f"<text x=\"{PAD_L - 6}\" y=\"{y(v) + 4:.1f}\" text-anchor=\"end\">{v:g}</text>")
    for j, r in enumerate(runs):
        label = f"{j + 1} {r['run'][:24]} {_short_date(r['recorded_at'])}"
        out.append(f"<line class=\"axis\" x1=\"{x(j):.1f}\" y1=\"{H - PAD_B}\" x2=\"{x(j):.1f}\" "
                   f"y2=\"{H - PAD_B + 4}\"/><text x=\"{x(j):.1f}\" y=\"{H - PAD_B + 14}\" text-anchor=\"end\" "
                   f"transform=\"rotate(-40 {x(j):.1f} {H - PAD_B + 14})\">{esc(label)}</text>")
    for key, name, cls in (("pass_at_1", "pass@1", "at"), ("pass_hat_k", f"pass^{k}", "hat")):
        pts = [(j, r[key]) for j, r in enumerate(runs) if r[key]["value"] is not None]
        band = [(j, e) for j, e in pts if e["ci"][0] is not None]
        if len(band) > 1:
            upper = " ".join(f"{x(j):.1f},{y(e['ci'][1]):.1f}" for j, e in band)
            lower = " ".join(f"{x(j):.1f},{y(e['ci'][0]):.1f}" for j, e in reversed(band))
            out.append(f"<polygon class=\"band-{cls}\" points=\"{upper} {lower}\"/>")
        if len(pts) > 1:
            out.append(f"<polyline class=\"{cls}\" points=\""
                       + " ".join(f"{x(j):.1f},{y(e['value']):.1f}" for j, e in pts) + "\"/>")
        for j, e in pts:
            out.append(f"<circle class=\"dot-{cls}\" cx=\"{x(j):.1f}\" cy=\"{y(e['value']):.1f}\" r=\"3\">"
                       f"<title>{esc(runs[j]['run'])}: {name} = {_rate(e)}</title></circle>")
    for j, r in enumerate(runs):
        if r["changes"]:
            what = "; ".join(f"{c['task']} {c['kind']}" for c in r["changes"][:20])
            more = f" and {len(r['changes']) - 20} more" if len(r["changes"]) > 20 else ""
            out.append(f"<text class=\"mark\" x=\"{x(j):.1f}\" y=\"{PAD_T + 10}\" text-anchor=\"middle\">"
                       f"{esc(_marks(r))}<title>{esc(what + more)}</title></text>")
    out.append(f"<text x=\"{W - 150}\" y=\"{PAD_T + 10}\" class=\"lg-at\">— pass@1</text>"
               f"<text x=\"{W - 150}\" y=\"{PAD_T + 24}\" class=\"lg-hat\">— pass^{k}</text></svg>")
    return "".join(out)


def write_trend_html(write: Callable[[str], Any], doc: dict[str, Any], info: Any = None) -> None:
    """The trend page: the chart, a table per run (intervals, counts, changes) and the tasks
    ever flaky or failing with their p̂ per run; the page machinery (strict CSP, escaping) of
    :mod:`flaketui.output.html`."""
    from flaketui.output.html import PageInfo, esc, page_head, page_tail

    runs = doc["runs"]
    k = doc["k"]
    write(page_head("flaketui history trend"))
    write(f"<h1>The suite over time</h1>\n<p>{len(runs)} of {doc['runs_recorded']} recorded runs, oldest first; "
          f"pass^{k} at k = {k}; states at cap {doc['cap']:g}"
          + (f"; flaky and undetermined: each run's classes at flakiness cap {float(doc['flaky_cap']):g}"
             if "flaky_cap" in doc else "") + ". F: a task turned flaky, R: regressed, "
          f"X: fixed.</p>\n<div class=\"plots\">{trend_svg(doc)}</div>\n")
    write(f"<h2>Runs</h2>\n<table><thead><tr><th>#</th><th>run</th><th>recorded</th><th>tasks</th>"
          f"<th>pass@1 [95% CI]</th><th>pass^{k} [95% CI]</th><th>flaky</th><th>undetermined</th>"
          "<th>quarantined</th><th>changes</th></tr></thead><tbody>\n")
    for j, r in enumerate(runs):
        changes = "<br>".join(f"{esc(c['task'])} {esc(c['kind'])}" for c in r["changes"])
        write(f"<tr><td>{j + 1}</td><td>{esc(r['run'])}</td><td>{esc(r['recorded_at'])}</td><td>{r['tasks']}</td>"
              f"<td>{esc(_rate(r['pass_at_1']))}</td><td>{esc(_rate(r['pass_hat_k']))}</td>"
              f"<td>{r['counts']['flaky']}</td><td>{r['counts']['undetermined']}</td>"
              f"<td>{r['counts']['quarantined']}</td><td>{changes}</td></tr>\n")
    write("</tbody></table>\n")
    bad = [t for t in doc["tasks"] if t["state"] != "stable"]
    if bad:
        head = "".join(f"<th>{j + 1}</th>" for j in range(len(runs)))
        write(f"<h2>Tasks ever flaky or failing: p̂ per run</h2>\n<table class=\"tasks\"><thead><tr><th>task</th>"
              f"<th>state</th>{head}</tr></thead><tbody>\n")
        for t in bad[:2000]:
            cells = "".join("<td class=\"mute\">·</td>" if p is None else f"<td>{p:.2f}</td>" for p in t["p_hat"])
            write(f"<tr><td>{esc(t['task'])}</td><td>{esc(t['state'])}</td>{cells}</tr>\n")
        write("</tbody></table>\n")
    page_info = info if info is not None else PageInfo()
    write(page_tail(page_info, {"trend": {"k": k, "runs": [r["run"] for r in runs]}}))
