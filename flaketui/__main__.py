"""`python -m flaketui` runs the command line."""

from flaketui.cli import run

if __name__ == "__main__":
    run()
