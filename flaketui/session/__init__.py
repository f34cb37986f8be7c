"""The headless session both faces share: what was loaded, with which options, and what has been
computed for each run so far. No Textual, no Rich: the CLI runs a session's jobs to the end, the app
runs them in workers and draws what they fill in."""
