"""`python -m flaketui` runs the command line."""

from flaketui.cli import main

if __name__ == "__main__":
    main()
