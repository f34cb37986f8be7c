"""``--format html``: one self-contained page for ``report``, ``compare`` and ``diff``.

The page opens from disk or an artifact store with no network: inline CSS, one small inline
script, inline SVG plots, nothing fetched. A Content-Security-Policy meta tag allows no load
at all (``default-src 'none'``) and runs only the page's own style and script, named by their
SHA-256 hashes, so a ``<script>`` or ``onerror=`` that slipped into the markup would not run.
It never does: every string from a log is passed through :func:`flaketui.sanitize.visible`
and :func:`html.escape` (:func:`esc`), attribute values are quoted and escaped, and nothing
from a log becomes a link (the only ``href`` is the page's own ``#f-N`` fragments). The
script's data is JSON in a ``<script type="application/json">`` block with ``<``, ``>``,
``&``, U+2028 and U+2029 written as ``\\uXXXX`` (:func:`json_block`), read with
``JSON.parse``.

The task table is written a chunk of rows at a time with the streaming writer of the other
reports (:func:`flaketui.output.stream._rows`: each distinct rest of a row drawn once), so a
100k-task page costs a few times the JSON report. Sorting (click a header) and filtering (the
text box) are done by the script from per-column sort keys embedded as JSON
(:attr:`~flaketui.output.columns.TaskColumn.sort`). Traces are embedded for at most
:data:`TRACE_TASKS` flaky tasks per run, each cut to
:data:`~flaketui.output.trace_pair.TRACE_CONTEXT` aligned rows either side of the first
divergence and :data:`~flaketui.output.trace_pair.LINE_WIDTH` characters a line; the page says so.
"""

from __future__ import annotations

import base64
import hashlib
import html
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from flaketui import __version__
from flaketui.output import formatting as fmt
from flaketui.output import stream
from flaketui.output.cells import cell_texts
from flaketui.output.columns import SCORE_KEYS, TASK_COLUMNS, TaskColumn
from flaketui.output.trace_pair import LINE_WIDTH, TRACE_CONTEXT, TracePair
from flaketui.sanitize import mask_command, mask_secrets, mask_url, visible
from flaketui.stats.suite import SuiteSummary, TaskStats

if TYPE_CHECKING:
    from flaketui.output.compare import CompareView
    from flaketui.output.report import Causes, ReportNotes

TRACE_TASKS = 50
"""Flaky tasks per run (the flakiest first) whose passing and failing traces are embedded."""
TABLE_ROWS = 10_000
"""Rows of a run's task table by default (the flakiest; ``--top N`` or ``--all`` choose):
a browser lays a 100k-row table out in tens of seconds."""
DETAILS_TASKS = 2000
"""Flaky tasks per run given an expandable section (suggested cause, traces)."""

NE = ' class="ne"'
"""A differing row's class attribute."""

HTML_KEYS = ("task", "n", "passes", "errored", "p_hat", "p_hat_ci", "pass_at_k", "pass_hat_k",
             "pass_hat_k_ci", "flakiness", "class", "to_decide", "mixed", "p_flaky")
"""The task table's columns (from :data:`~flaketui.output.columns.TASK_COLUMNS`)."""


def html_columns(st: TaskStats) -> list[TaskColumn]:
    """The page's task columns for ``st``: :data:`HTML_KEYS`, with the score columns after p̂'s
    interval for a graded run."""
    keys = list(HTML_KEYS)
    if st.scores is not None:
        at = keys.index("p_hat_ci") + 1
        keys[at:at] = SCORE_KEYS
    return [TASK_COLUMNS[key] for key in keys]

Write = Callable[[str], Any]


def esc(value: object) -> str:
    """A log string as HTML text or a quoted attribute value: control and invisible characters
    spelled out (:func:`~flaketui.sanitize.visible`), then ``& < > " '`` escaped."""
    return html.escape(visible(value if isinstance(value, str) else str(value)), quote=True)


_JSON_ESCAPES = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"),
                 ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def json_block(data: Any) -> str:
    """``data`` as the text of a ``<script type="application/json">``: no ``</script>``,
    ``<!--`` or line separator can end or change the block."""
    text = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    for raw, escaped in _JSON_ESCAPES:
        text = text.replace(raw, escaped)
    return text.decode()


@dataclass(frozen=True)
class PageInfo:
    """What every page says about how it was made."""

    command: Sequence[str] = field(default_factory=lambda: list(sys.argv))
    """The command line (shown as text, escaped, its secrets masked: :func:`~flaketui.sanitize.mask_command`)."""
    sources: Sequence[str] = ()
    """The logs read."""
    meta: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Run metadata by run name (:attr:`~flaketui.model.TrialLog.run_meta`)."""
    loading: Sequence[str] = ()
    """What loading met, said above the runs: the lines skipped (counted) and each note (a
    Harbor job's count of trials beside those on disk, jobs merged into one run), so that a
    reader can tell what the page covers."""


# --- the page ------------------------------------------------------------------

CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--mute:#656d76;--line:#d0d7de;--flaky:#9a6700;
--fail:#cf222e;--pass:#1a7f37;--hl:#fff8c5;--div:#ffebe9}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8d96a0;--line:#30363d;
--flaky:#d29922;--fail:#f85149;--pass:#3fb950;--hl:#3b2e00;--div:#4a1d1d}}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;
background:var(--bg);color:var(--fg)}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:1.6em}
code,pre,.mono,td{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
table{border-collapse:collapse}th,td{border-bottom:1px solid var(--line);padding:2px 8px;text-align:left;
vertical-align:top}
table.tasks td:not(:first-child){text-align:right;white-space:nowrap}
th.sort{cursor:pointer;user-select:none}th.sort:after{content:" \\2195";color:var(--mute)}
th[aria-sort=ascending]:after{content:" \\25B2"}th[aria-sort=descending]:after{content:" \\25BC"}
.c-flaky{color:var(--flaky);font-weight:600}.c-stable-fail{color:var(--fail)}.c-stable-pass{color:var(--pass)}
tr:has(.c-flaky) td:first-child{font-weight:600}
.mute,.note{color:var(--mute)}.warn{color:var(--fail)}.verdict{font-size:1.15em;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}svg{background:var(--bg)}svg text{fill:var(--fg);font-size:11px}
svg .axis{stroke:var(--mute)}svg .at{stroke:#0969da;fill:none;stroke-width:2}svg .hat{stroke:#bf3989;
fill:none;stroke-width:2}
svg .bar{fill:#0969da}svg text.lg-at{fill:#0969da}svg text.lg-hat{fill:#bf3989}
svg .dot-at{fill:#0969da}svg .dot-hat{fill:#bf3989}
svg .band-at{fill:#0969da;opacity:.15}svg .band-hat{fill:#bf3989;opacity:.15}
svg text.mark{fill:var(--fail);font-weight:600}
details{border:1px solid var(--line);border-radius:6px;margin:.4em 0;padding:.3em .7em}summary{cursor:pointer}
table.trace{width:100%;table-layout:fixed}table.trace td{white-space:pre-wrap;overflow-wrap:anywhere;text-align:left}
table.trace .n{width:3.5em;text-align:right;color:var(--mute)}tr.ne td{background:var(--hl)}
tr.dv td{background:var(--div);font-weight:600}
input.filter{font:inherit;padding:3px 6px;margin:.4em 0;min-width:22em}dl.meta dt{font-weight:600}
dl.meta dd{margin:0 0 .3em 1.5em}
"""

SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('flaketui-data').textContent);
function keyed(t){return (data.tables||{})[t.id];}
document.querySelectorAll('table.sortable').forEach(function(t){
  var d=keyed(t);if(!d)return;var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
  t.querySelectorAll('th[data-key]').forEach(function(th){
    th.classList.add('sort');th.tabIndex=0;
    function go(){var key=th.getAttribute('data-key');var v=d.sort[key];if(!v)return;
      var down=th.getAttribute('aria-sort')!=='descending'&&(th.getAttribute('aria-sort')==='ascending'||d.desc[key]);
      t.querySelectorAll('th[aria-sort]').forEach(function(o){o.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',down?'descending':'ascending');
      var idx=rows.map(function(_,i){return i;});
      idx.sort(function(a,b){var x=v[a],y=v[b];if(x===null&&y===null)return a-b;if(x===null)return 1;
if(y===null)return -1;
        return x===y?a-b:(down?(y-x):(x-y));});
      var frag=document.createDocumentFragment();idx.forEach(function(i){frag.appendChild(rows[i]);});
body.appendChild(frag);}
    th.addEventListener('click',go);th.addEventListener('keydown',function(e){if(e.key==='Enter')go();});
  });
  var box=document.querySelector('input.filter[data-table="'+t.id+'"]');
  if(box){var names=rows.map(function(r){return r.cells[0].textContent.toLowerCase();});var timer=null;
    box.addEventListener('input',function(){clearTimeout(timer);timer=setTimeout(function(){
      var q=box.value.toLowerCase();var shown=0;
      rows.forEach(function(r,i){var hit=!q||names[i].indexOf(q)>=0;r.hidden=!hit;if(hit)shown++;});
      var c=document.querySelector('[data-count="'+t.id+'"]');
if(c)c.textContent=shown+' of '+rows.length+' shown';},80);});}
});
function openHash(){var h=location.hash.slice(1);if(!h)return;var e=document.getElementById(h);
  if(e&&e.tagName==='DETAILS'){e.open=true;e.scrollIntoView();}}
window.addEventListener('hashchange',openHash);openHash();
})();
"""


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CSP = (f"default-src 'none'; style-src '{_hash(CSS)}'; script-src '{_hash(SCRIPT)}'; img-src 'none'; "
       "base-uri 'none'; form-action 'none'")
"""No load of any kind; only this module's own style and script run (by hash)."""


def page_head(title: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"referrer\" content=\"no-referrer\">\n"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>{CSS}</style></head><body>\n")


def page_tail(info: PageInfo, data: Mapping[str, Any]) -> str:
    """The metadata section, the script's data and the script, and the end of the page."""
    parts = ["<h2>How this page was made</h2>\n<dl class=\"meta\">",
             f"<dt>flaketui</dt><dd>{esc(__version__)}</dd>",
             f"<dt>command</dt><dd><code>{esc(mask_command(info.command))}</code></dd>"]
    if info.sources:
        logs = "<br>".join(f"<code>{esc(mask_url(s))}</code>" for s in info.sources)
        parts.append(f"<dt>logs</dt><dd>{logs}</dd>")
    for run, meta in info.meta.items():
        meta = mask_secrets(meta)
        if meta:
            items = "".join(f"<tr><td>{esc(k)}</td><td>{esc(_meta_value(v))}</td></tr>" for k, v in meta.items())
            parts.append(f"<dt>run metadata: {esc(run)}</dt><dd><table>{items}</table></dd>")
    parts.append("</dl>\n")
    return ("".join(parts) + f"<script type=\"application/json\" id=\"flaketui-data\">{json_block(data)}</script>\n"
            f"<script>{SCRIPT}</script>\n</body></html>\n")


def _meta_value(v: Any) -> str:
    if isinstance(v, str):
        return v[:2000]
    return orjson.dumps(v, default=str).decode()[:2000]


# --- plots -----------------------------------------------------------------------

W, H, PAD = 360, 220, 36


def curves_svg(st: TaskStats) -> str:
    """pass@k and pass^k over k (the suite's task-averaged estimates) as an inline SVG."""
    from flaketui.stats.curves import k_curve

    c = k_curve(st.n, st.passes, include=st.k)
    ks = c.ks.tolist()
    if not ks:
        return ""
    top = max(ks)

    def x(k: int) -> float:
        return PAD + (W - PAD - 10) * ((k - 1) / (top - 1) if top > 1 else 0.5)

    def y(v: float) -> float:
        return H - PAD - (H - PAD - 10) * v

    out = [f"<svg role=\"img\" aria-label=\"pass@k and pass^k over k\" width=\"{W}\" height=\"{H}\" "
           f"viewBox=\"0 0 {W} {H}\" xmlns=\"http://www.w3.org/2000/svg\"><title>pass@k and pass^k over k</title>",
           _axes("k (trials drawn)", x_ticks=_k_ticks(top))]
    for name, values, cls in (("pass@k", c.pass_at, "at"), ("pass^k", c.pass_hat, "hat")):
        pts = [(x(k), y(v), k, v) for k, v in zip(ks, values.tolist(), strict=True) if v == v]
        if not pts:
            continue
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in pts)
        out.append(f"<polyline class=\"{cls}\" points=\"{points}\"/>")
        for px, py, k, v in pts:
            out.append(f"<circle class=\"dot-{cls}\" cx=\"{px:.1f}\" cy=\"{py:.1f}\" r=\"2.5\">"
                       f"<title>{name[:-1]}{k} = {fmt.rate(v)}</title></circle>")
    if c.left_out:
        out.append(f"<text x=\"{PAD + 4}\" y=\"20\">over {int(c.tasks[0]):,} tasks with n ≥ {top}; "
                   f"{c.left_out:,} left out</text>")
    out.append(f"<text x=\"{W - 80}\" y=\"20\" class=\"lg-at\">— pass@k</text>"
               f"<text x=\"{W - 80}\" y=\"34\" class=\"lg-hat\">— pass^k</text>")
    out.append("</svg>")
    return "".join(out)


def histogram_svg(st: TaskStats, bins: int = 10) -> str:
    """The spread of p̂ over tasks (ten bins over [0, 1]) as an inline SVG."""
    from flaketui.stats.curves import histogram

    counts = histogram(st.p_hat, bins).tolist()
    most = max(counts) or 1
    bw = (W - PAD - 10) / bins
    out = [f"<svg role=\"img\" aria-label=\"histogram of p-hat\" width=\"{W}\" height=\"{H}\" "
           f"viewBox=\"0 0 {W} {H}\" xmlns=\"http://www.w3.org/2000/svg\"><title>tasks by p̂</title>",
           _axes("p̂ (pass rate per task)", most, [(i / 5, f"{i / 5:.1f}") for i in range(6)])]
    for i, n in enumerate(counts):
        h = (H - PAD - 10) * n / most
        out.append(f"<rect class=\"bar\" x=\"{PAD + i * bw + 1:.1f}\" y=\"{H - PAD - h:.1f}\" width=\"{bw - 2:.1f}\" "
                   f"height=\"{h:.1f}\"><title>p̂ in [{i / bins:.1f}, {(i + 1) / bins:.1f}"
                   f"{']' if i == bins - 1 else ')'}: {n:,} tasks</title></rect>")
    out.append("</svg>")
    return "".join(out)


def _axes(label: str, y_max: int | None = None, x_ticks: Sequence[tuple[float, str]] = ()) -> str:
    """The two axes, 0 and the top of the y axis, a tick and its value at each of ``x_ticks``
    (position in [0, 1] along the x axis, text), and the x label."""
    top = "1" if y_max is None else f"{y_max:,}"
    ticks = []
    for at, text in x_ticks:
        tx = PAD + (W - PAD - 10) * at
        ticks.append(f"<line class=\"axis\" x1=\"{tx:.1f}\" y1=\"{H - PAD}\" x2=\"{tx:.1f}\" y2=\"{H - PAD + 4}\"/>"
                     f"<text x=\"{tx:.1f}\" y=\"{H - PAD + 15}\" text-anchor=\"middle\">{esc(text)}</text>")
    return (f"<line class=\"axis\" x1=\"{PAD}\" y1=\"10\" x2=\"{PAD}\" y2=\"{H - PAD}\"/>"
            f"<line class=\"axis\" x1=\"{PAD}\" y1=\"{H - PAD}\" x2=\"{W - 10}\" y2=\"{H - PAD}\"/>"
            f"<text x=\"{PAD - 4}\" y=\"{H - PAD}\" text-anchor=\"end\">0</text>"
            f"<text x=\"{PAD - 4}\" y=\"16\" text-anchor=\"end\">{top}</text>"
            + "".join(ticks)
            + f"<text x=\"{(W + PAD) / 2:.0f}\" y=\"{H - 4}\" text-anchor=\"middle\">{label}</text>")


def _k_ticks(top: int, most: int = 6) -> list[tuple[float, str]]:
    """Ticks of the k axis: 1, the top k and evenly spaced whole values between, at most ``most``."""
    if top <= 1:
        return [(0.5, "1")]
    step = max(1, -(-(top - 1) // (most - 1)))
    ks = sorted({*range(1, top + 1, step), top})
    if len(ks) > 2 and ks[-1] - ks[-2] < step / 2:
        ks.pop(-2)  # the top too close to the tick before it
    return [((k - 1) / (top - 1), str(k)) for k in ks]


# --- tables -------------------------------------------------------------------------


def _sort_keys(values: Any) -> np.ndarray:
    """A column's sort keys for the script, as floats (orjson writes NaN as null: sorted last)."""
    return np.ascontiguousarray(values, dtype=np.float64)


def task_rows(st: TaskStats, links: Mapping[int, str]) -> Iterator[str]:
    """The ``<tr>`` rows of ``st`` in its order, :data:`~flaketui.output.stream.CHUNK` rows a
    string; row ``i`` in ``links`` gets its name linked to the page's own ``#links[i]``."""
    columns = html_columns(st)
    cls = [c.key for c in columns].index("class")

    def cell(j: int, text: str) -> str:
        if j == cls:
            return f"<span class=\"c-{esc(text)}\">{esc(text)}</span>"
        return html.escape(text)

    start = 0
    for piece in stream.chunks(st, np.arange(len(st))):
        names = _escape_all(cell_texts(columns[0], piece))
        for i in range(start, start + len(piece)):
            if i in links:
                names[i - start] = f"<a href=\"#{links[i]}\">{names[i - start]}</a>"
        start += len(piece)
        yield from stream._rows(piece, columns, 0, names, cell, "</td><td>", "<tr><td>{}</td><td>{}</td></tr>\n")


_SPECIAL = frozenset("&<>\"'")


def _escape_all(texts: list[str]) -> list[str]:
    """:func:`html.escape` of each text; a chunk with no ``& < > " '`` (the common case) as it is."""
    if _SPECIAL.isdisjoint("".join(texts)):
        return texts
    return [html.escape(t) for t in texts]


def task_table(write: Write, table_id: str, st: TaskStats, links: Mapping[int, str]) -> dict[str, Any]:
    """Write the sortable, filterable task table of ``st`` (already in display order); returns
    the script's data for it (each column's sort keys)."""
    columns = html_columns(st)
    write(f"<p><input class=\"filter\" type=\"search\" placeholder=\"filter tasks by name\" "
          f"data-table=\"{table_id}\" aria-label=\"filter tasks by name\"> "
          f"<span class=\"mute\" data-count=\"{table_id}\">{len(st):,} tasks</span> "
          "<span class=\"mute\">(flakiest first; click a header to sort)</span></p>\n")
    head = "".join(f"<th data-key=\"{c.key}\" title=\"{esc(c.tooltip)}\">{esc(c.header(st.k))}</th>" for c in columns)
    write(f"<table class=\"tasks sortable\" id=\"{table_id}\"><thead><tr>{head}</tr></thead><tbody>\n")
    for text in task_rows(st, links):
        write(text)
    write("</tbody></table>\n")
    return {"sort": {c.key: _sort_keys(c.sort(st)) for c in columns},
            "desc": {c.key: c.descending for c in columns}}


# --- traces ------------------------------------------------------------------------------


def _step(n: Any) -> str:
    return "" if n is None else esc(str(n))


def trace_html(pair: TracePair) -> str:
    """Two traces side by side, the first divergence highlighted, then its differing fields."""
    d = pair.diff
    first = ("none: the traces do not differ in this mode" if d.step_a is None
             else f"step {_step(d.name_a(d.step_a))} of A, step {_step(d.name_b(d.step_b))} of B")
    out = [f"<p>A = <b>{esc(pair.label_a)}</b>, B = <b>{esc(pair.label_b)}</b>; "
           f"divergence mode {esc(d.mode)}; first divergence: {first}</p>"]
    if d.around:
        out.append("<table class=\"trace\"><thead><tr><th class=\"n\">#</th><th>A</th><th class=\"n\">#</th>"
                   "<th>B</th></tr></thead><tbody>")
        for r in d.around:
            mark = (" class=\"dv\"" if (r.step_a, r.step_b) == (d.step_a, d.step_b) and d.step_a is not None
                    else " class=\"ne\"" if r.tag != "equal" else "")
            out.append(f"<tr{mark}><td class=\"n\">{_step(d.name_a(r.step_a))}</td><td>{esc(r.line_a or '')}</td>"
                       f"<td class=\"n\">{_step(d.name_b(r.step_b))}</td><td>{esc(r.line_b or '')}</td></tr>")
        out.append("</tbody></table>")
    changes = d.divergent_changes
    if changes:
        out.append("<p>at the divergence:</p><ul>"
                   + "".join(f"<li><code>{esc(c.text(LINE_WIDTH))}</code></li>" for c in changes[:20]) + "</ul>")
    return "".join(out)


def cause_html(s: Any) -> str:
    """A ``--causes`` suggestion: the cause and its share, the evidence, the decisive fork."""
    parts = [f"<p>suspected source: <b>{esc(s.text())}</b></p><ul>"]
    if s.evidence is not None:
        parts.append(f"<li>evidence: {esc(s.evidence.text())}</li>")
    if s.decisive_fork is not None:
        parts.append(f"<li>decisive fork: {esc(s.decisive_fork.text())}</li>")
    parts.append("</ul>")
    return "".join(parts)


# --- report -------------------------------------------------------------------------------


def write_report_html(write: Write, k: int, runs: Sequence[tuple[TaskStats, SuiteSummary]],
                      causes: Causes | None = None, pairs: Mapping[str, Mapping[str, TracePair]] | None = None,
                      info: PageInfo | None = None, top: int | None = TABLE_ROWS, notes: ReportNotes | None = None,
                      ) -> None:
    """Write the ``report --format html`` page through ``write``: what loading met
    (:attr:`PageInfo.loading`), then per run the summary with its intervals and ``notes``' lines
    (the errored trials by kind), the curves and the p̂ histogram, the task table (its ``top``
    flakiest tasks; None: every task), and each flaky task's section (its suggested cause with
    ``causes``, its traces from ``pairs``)."""
    from flaketui.output.report import (
        NO_NOTES,
        TABLE_LEGEND,
        display_order,
        first_shown,
        left_out_line,
        summary_lines,
    )

    notes = notes or NO_NOTES

    info = info or PageInfo()
    pairs = pairs or {}
    data: dict[str, Any] = {"tables": {}}
    write(page_head(f"flaketui report (k = {k})"))
    write(f"<h1>flaketui report <span class=\"mute\">(k = {k})</span></h1>\n")
    if info.loading:
        write("<div class=\"loading\">" + "".join(f"<p class=\"note\">{esc(x)}</p>" for x in info.loading)
              + "</div>\n")
    for r, (st, sm) in enumerate(runs):
        order = display_order(st)
        shown = st.take(order[:top])
        write(f"<h2>run {esc(st.run)}</h2>\n")
        said = [*summary_lines(sm, notes), *notes.lines(sm.run)]
        write("<div class=\"summary\">" + "".join(f"<p>{esc(x)}</p>" for x in said) + "</div>\n")
        for w in sm.warnings:
            write(f"<p class=\"warn\">warning: {esc(w)}</p>\n")
        write(f"<div class=\"plots\">{curves_svg(st)}{histogram_svg(st)}</div>\n")
        flaky = np.flatnonzero(shown.mixed).tolist()[:DETAILS_TASKS]  # a trace pair needs a pass and a failure
        links = {i: f"f-{r}-{j}" for j, i in enumerate(flaky)}
        data["tables"][f"tasks-{r}"] = task_table(write, f"tasks-{r}", shown, links)
        write(f"<p class=\"note\">{esc(TABLE_LEGEND)}</p>\n")
        if len(shown) < len(st):
            write(f"<p class=\"note\">{esc(left_out_line(len(st) - len(shown), len(shown), first=first_shown(st)))}"
                  "</p>\n")
        if flaky:
            found = (causes or {}).get(st.run, {})
            run_pairs = pairs.get(st.run, {})
            total = int(st.mixed.sum())
            write(f"<h3>Tasks that passed and failed ({total:,})</h3>\n<p class=\"note\">Traces are embedded "
                  f"for at most {TRACE_TASKS} of them per run (the flakiest; {len(run_pairs)} here), "
                  f"{TRACE_CONTEXT} aligned steps either side of the first divergence, lines cut at "
                  f"{LINE_WIDTH} characters"
                  + (f"; only the first {DETAILS_TASKS:,} of them have a section" if total > DETAILS_TASKS else "")
                  + (". Suspected sources need <code>--causes</code>." if causes is None else ".") + "</p>\n")
            for i in flaky:
                task = shown.tasks[i]
                body = []
                if task in found:
                    body.append(cause_html(found[task]))
                if task in run_pairs:
                    body.append(trace_html(run_pairs[task]))
                if not body:
                    body.append("<p class=\"mute\">no trace embedded</p>")
                write(f"<details id=\"{links[i]}\"><summary><b>{esc(task)}</b> "
                      f"<span class=\"mute\">p̂ = {fmt.rate(float(shown.p_hat[i]))}, {int(shown.passes[i])}/"
                      f"{int(shown.n[i])}</span></summary>{''.join(body)}</details>\n")
    write(page_tail(info, data))


# --- compare -------------------------------------------------------------------------------


COMPARE_HEADERS = (("task", "task", False), ("change", "change", False), ("flip", "kind", False),
                   ("p̂ A", "p_a", True), ("p̂ B", "p_b", True), ("Δ", "delta", True), ("n A", "n_a", True),
                   ("n B", "n_b", True), ("p adj.", "p_adjusted", False))


def write_compare_html(write: Write, v: CompareView, pairs: Mapping[str, TracePair] | None = None,
                       info: PageInfo | None = None) -> None:
    """Write the ``compare --format html`` page: the verdict first with its primary test, the
    secondary tests, the confound warning, the changed tasks (sortable) and the flipped tasks'
    traces (``pairs``: a trial of A beside one of B)."""
    from flaketui.output.compare import CHANGED, compare_json
    from flaketui.output.report import left_out_line
    from flaketui.output.review import signed, uncompared_text

    info = info or PageInfo()
    pairs = pairs or {}
    c = v.cmp
    doc = compare_json(v)
    p = doc["primary_test"]
    write(page_head(f"flaketui compare: {c.run_b} vs {c.run_a}"))
    write(f"<h1>{esc(c.run_b)} <span class=\"mute\">vs</span> {esc(c.run_a)}</h1>\n")
    write(f"<p class=\"verdict\">{esc(doc['verdict'])}</p>\n")
    if v.confound:
        write(f"<p class=\"warn\">warning: {esc(v.confound)}</p>\n")
    low, high = doc["mean_diff_ci"] or (float("nan"), float("nan"))  # by score: the score test's figures
    primary = (f"{p['name']}: p = {fmt.pvalue(p['p_value'])} ({p['method']}, {p['resamples']} resamples, "
               f"{p['informative_tasks']} informative tasks)")
    rows = [("winner", doc["winner"] if doc["winner"] is not None else "none (the primary test does not reject)"),
            ("primary test", primary),
            ("statistic", p["statistic"]),
            ("mean difference (B - A)", f"{signed(doc['mean_diff'])} {fmt.interval(low, high, digits=3)}"),
            ("sign test p (secondary)", "not valid: trial counts differ" if doc["sign_test_p"] is None
             else fmt.pvalue(doc["sign_test_p"])),
            ("sign-flip permutation p (secondary)", "not valid: trial counts differ" if doc["permutation_p"] is None
             else fmt.pvalue(doc["permutation_p"])),
            ("tasks in common", f"{doc['tasks']:,}"), ("fixed / broken / unchanged",
                                                     f"{len(c.fixed):,} / {len(c.broken):,} / {c.unchanged:,}"
                                                     f"{uncompared_text(c)}"),
            ("only in A / only in B", f"{len(c.only_a):,} / {len(c.only_b):,}"), ("alpha", f"{v.alpha:g}")]
    write("<table class=\"figures\">" + "".join(f"<tr><th>{esc(a)}</th><td>{esc(b)}</td></tr>" for a, b in rows)
          + "</table>\n")
    write("<h2>Summary</h2>\n<ul>" + "".join(f"<li>{esc(x)}</li>" for x in v.lines()) + "</ul>\n")
    if v.config_a or v.config_b:
        keys = list(dict.fromkeys([*v.config_a, *v.config_b]))
        differ = set(v.confounds)
        write("<h2>Configuration</h2>\n<table><thead><tr><th>field</th><th>A</th><th>B</th></tr></thead><tbody>"
              + "".join(f"<tr{NE if key in differ else ''}><td>{esc(key)}</td>"
                        f"<td>{esc(v.config_a.get(key, ''))}</td><td>{esc(v.config_b.get(key, ''))}</td></tr>"
                        for key in keys) + "</tbody></table>\n")
    every = v.rows()
    flips = every[:TABLE_ROWS]
    write(f"<h2>Changed tasks ({len(every):,})</h2>\n")
    write(f"<p><input class=\"filter\" type=\"search\" placeholder=\"filter tasks by name\" data-table=\"flips\" "
          f"aria-label=\"filter tasks by name\"> <span class=\"mute\" data-count=\"flips\">{len(flips):,} tasks</span>"
          " <span class=\"mute\">(flipped first; click a header to sort)</span></p>\n")
    head = "".join(f"<th data-key=\"{key}\">{esc(label)}</th>" for label, key, _ in COMPARE_HEADERS)
    write(f"<table class=\"tasks sortable\" id=\"flips\"><thead><tr>{head}</tr></thead><tbody>\n")
    anchors = {t: f"d-{j}" for j, t in enumerate(pairs)}
    for start in range(0, len(flips), stream.CHUNK):
        out = []
        for fr in flips[start:start + stream.CHUNK]:
            name = esc(fr.task)
            if fr.task in anchors:
                name = f"<a href=\"#{anchors[fr.task]}\">{name}</a>"
            kind = f"<span class=\"c-flaky\">{esc(fr.kind)}</span>" if fr.flipped else esc(fr.kind)
            change = "c-stable-fail" if fr.change == "broken" else "c-stable-pass"
            out.append(f"<tr><td>{name}</td><td><span class=\"{change}\">{esc(fr.change)}</span></td><td>{kind}</td>"
                       f"<td>{fmt.rate(fr.p_a)}</td><td>{fmt.rate(fr.p_b)}</td><td>{signed(fr.delta)}</td>"
                       f"<td>{fr.n_a}</td><td>{fr.n_b}</td><td>{fmt.pvalue(fr.p_adjusted)}</td></tr>\n")
        write("".join(out))
    write("</tbody></table>\n")
    if len(flips) < len(every):
        write(f"<p class=\"note\">{esc(left_out_line(len(every) - len(flips), len(flips), *CHANGED))}</p>\n")
    names = [fr.task for fr in flips]
    from flaketui.model import natural_ranks

    sort = {"task": natural_ranks(names).tolist() if names else [],
            "change": [0 if fr.change == "broken" else 1 for fr in flips],
            "kind": [0 if fr.flipped else 1 for fr in flips],
            "p_a": _sort_keys(np.array([fr.p_a for fr in flips])),
            "p_b": _sort_keys(np.array([fr.p_b for fr in flips])),
            "delta": _sort_keys(np.array([fr.delta for fr in flips])),
            "n_a": [fr.n_a for fr in flips], "n_b": [fr.n_b for fr in flips],
            "p_adjusted": _sort_keys(np.array([fr.p_adjusted for fr in flips]))}
    data = {"tables": {"flips": {"sort": sort, "desc": {key: d for _, key, d in COMPARE_HEADERS}}}}
    if pairs:
        write(f"<h2>Flipped tasks: where the traces part</h2>\n<p class=\"note\">At most {TRACE_TASKS} tasks "
              f"(the flipped ones first), {TRACE_CONTEXT} aligned steps either side of the first divergence, "
              f"lines cut at {LINE_WIDTH} characters.</p>\n")
        for task, pair in pairs.items():
            write(f"<details id=\"{anchors[task]}\"><summary><b>{esc(task)}</b></summary>"
                  f"{trace_html(pair)}</details>\n")
    elif flips:
        write("<p class=\"note\">No trace of a changed task could be read.</p>\n")
    if not flips:
        write("<p class=\"mute\">no task changed its pass rate</p>\n")
    write(page_tail(info, data))


# --- diff ----------------------------------------------------------------------------------


def write_diff_html(write: Write, pair: TracePair, info: PageInfo | None = None) -> None:
    """Write the ``diff --format html`` page: two trials side by side, the first divergence
    highlighted, and every differing field."""
    info = info or PageInfo()
    d = pair.diff
    write(page_head(f"flaketui diff: {pair.task}"))
    write(f"<h1>{esc(pair.task)}</h1>\n")
    write(trace_html(pair) + "\n")
    if d.changes:
        write("<h2>Every differing field</h2>\n<table><thead><tr><th>step A</th><th>step B</th><th>field</th>"
              "<th>A → B</th><th>counts</th></tr></thead><tbody>")
        for ch in d.changes[:2000]:
            write(f"<tr><td>{_step(d.name_a(ch.step_a))}</td><td>{_step(d.name_b(ch.step_b))}</td>"
                  f"<td>{esc(ch.path or '(step)')}</td>"
                  f"<td>{esc(ch.text(LINE_WIDTH))}</td><td>{'yes' if ch.counts else 'no'}</td></tr>\n")
        write("</tbody></table>\n")
        if len(d.changes) > 2000:
            write(f"<p class=\"note\">{len(d.changes) - 2000:,} more changes not shown "
                  "(--format json lists all).</p>\n")
    write(page_tail(info, {"tables": {}}))
