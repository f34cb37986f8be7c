"""Reading trial logs. No Textual, no Rich."""

from flaketui.loading.formats import run_name_for
from flaketui.loading.loader import expand_paths, load_logs, read_trial

__all__ = ["expand_paths", "load_logs", "read_trial", "run_name_for"]
