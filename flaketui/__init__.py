"""flaketui: find, understand and gate flaky AI-agent evaluation tasks."""

__version__ = "0.1.0"
