"""Helpers the test modules share, one module per subject; a test module imports them from
here, never from another test module (which would run that module's tests' imports and tie
two files' edits together).

- ``app``: Pilot steps (settle after keys, record notifications, open a task's traces).
- ``compare``: the comparison pane on the two bundled fixture runs.
- ``logs``: writing small JSONL logs, and comparing two loaded trial tables.
- ``records``: random and benchmark-shaped JSONL records for the loader's differential tests.
- ``parsed``: the per-line parser's result, to compare block parsers against.
- ``folders``: a folder of many log files, and comparing what two loaders made of it.
- ``cache``: a log, its one index-cache entry and a forged entry, for the cache tests.
- ``cli``: running the command line in-process.
- ``traces``: trace steps in OpenAI's shape and the bundled fixture's trials.
- ``causes``: the two trace shapes and the story the flake-cause tests tell in them.
- ``history``: run records, the suite's history sequences and the recorder script.
- ``postgres``: a real PostgreSQL server (fixtures ``pg_server``, ``pg_url``) for the history's tests.
- ``planning``: a log of given per-task counts for the rerun plan.
- ``hostile``: names and payloads that try to reach the terminal or the browser; Markdown read back.
- ``harbor``: Harbor job folders built to Harbor's schema (rewards, timeouts, setup errors).
- ``webhook``: a real HTTP server on 127.0.0.1 standing in for a webhook (answers, 500s, stalls, drops).
"""
