"""What flaketui prints and exports: reports, the review, planning tables, quarantine lists.

Renderers read the headless core (loading, stats, traces, triage) and never the app;
:mod:`flaketui.output.columns` declares the per-task columns once for every output and
the app's task table.
"""
