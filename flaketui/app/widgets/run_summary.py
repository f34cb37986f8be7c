"""The run's summary above the task table: it owns its part of the screen.

The screen hands it the facts (:class:`~flaketui.app.run_view.SummaryFacts`, computed by
:meth:`flaketui.app.run_view.RunView.summary_facts`); the widget lays the text out to the width
and colours it, and computes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from flaketui.app.widgets.themed import theme_colours, themed
from flaketui.output import formatting as fmt
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.run_view import SummaryFacts  # the facts it draws (the run's view computes them)
    from flaketui.stats.estimators import MeanEstimate
    from flaketui.stats.suite import SuiteSummary


def summary_figures(sm: SuiteSummary) -> list[tuple[str, MeanEstimate]]:
    """(label, estimate) of the suite figures: pass@1, pass@k and pass^k, or at k = 1,
    where the three are one figure, ``pass@1`` once; then a graded run's mean score."""
    score = [] if sm.mean_score is None else [("mean score", sm.mean_score)]
    if sm.k == 1:
        return [("pass@1", sm.pass_at_1), *score]
    return [("pass@1", sm.pass_at_1), (f"pass@{sm.k}", sm.pass_at_k), (f"pass^{sm.k}", sm.pass_hat_k), *score]


def flow(chunks: list[Text], width: int, sep: str) -> Text:
    """``chunks`` joined by ``sep``, a new line where the next chunk would pass ``width``:
    lines break between chunks, never inside one."""
    out = Text()
    used = 0
    for chunk in chunks:
        if used and used + len(sep) + chunk.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(sep)
            used += len(sep)
        out.append_text(chunk)
        used += chunk.cell_len
    return out


class RunSummary(Static):
    """The run's figures, flowed to the width: a line breaks between figures, never inside one
    (``[0.64,`` / ``0.91]``)."""

    def show(self, facts: SummaryFacts, width: int) -> None:
        """Draw ``facts`` at ``width`` cells."""
        sm = facts.summary
        narrow = width < 100
        head = [Text(visible(sm.run), style="bold")]
        if facts.runs > 1:
            head[0].append(f" ({facts.position + 1}/{facts.runs})" if narrow else
                           f" (run {facts.position + 1} of {facts.runs}, r: pick)", style="dim")
        if facts.ran:  # who ran it (the harness's configuration), when the log says
            head.append(Text(facts.ran, style="dim"))
        counted = sm.pass_at_1.tasks
        tasks = f"{sm.tasks} tasks" + (f" ({counted} with an outcome)" if counted != sm.tasks else "")
        head += [Text(tasks), Text(f"{sm.trials} trials"), Text(f"{sm.errored} errored"),
                 Text(f"{sm.flaky_tasks} flaky", style="bold yellow" if sm.flaky_tasks else ""),
                 Text(f"{sm.undetermined_tasks} undetermined, {sm.stable_tasks} stable (cap {sm.flaky_cap:g})"),
                 Text(f"{sm.mixed_tasks} mixed", style="dim")]
        k_text = Text(f"k = {sm.k}")
        if facts.k_is_default:
            k_text.append(" (most tasks' trials)", style="dim")
        k_text.append(" +/−", style="dim")
        head.append(k_text)
        figures: list[Text] = []
        for label, est in summary_figures(sm):
            figure = Text(f"{label} ", style="dim")
            figure.append(fmt.rate(est.value), style="bold")
            figure.append(f" {fmt.suite_interval(est)}", style="dim")
            figures.append(figure)
        if sm.tasks_below_k:
            figures.append(Text(f"{sm.tasks_below_k} task(s) with n < k left out", style="yellow"))
        if facts.gate is not None:
            passed, reasons = facts.gate
            if passed:
                figures.append(Text(" gate PASS ", style="bold black on green"))
            else:
                figures.append(Text(" gate FAIL ", style="bold white on red"))
                figures.append(Text("; ".join(reasons), style="red"))
        text = flow(head, width, " · ")
        text.append("\n")
        text.append_text(flow(figures, width, "   "))
        if facts.causes_line is not None:
            text.append("\n" + facts.causes_line, style="dim")
        alerts = facts.alerts
        if len(alerts) == 1 and len(alerts[0]) + 2 + len(" (e: show)") <= width:
            text.append(f"\n⚠ {alerts[0]}" + (" (e: show)" if facts.problems else ""), style="yellow")
        elif alerts:
            # Folded to one line, so that the table keeps its rows on a small terminal: e shows them all.
            more = f" (+{len(alerts) - 1} more; e: show all)" if len(alerts) > 1 else " (e: show)"
            line = Text(f"⚠ {alerts[0]}", style="yellow", no_wrap=True, overflow="ellipsis")
            line.truncate(max(10, width - len(more)), overflow="ellipsis")
            line.append(more, style="yellow bold")
            text.append("\n")
            text.append_text(line)
        self.update(themed(text, theme_colours(self.app.theme_variables)))
