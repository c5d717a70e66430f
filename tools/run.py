"""Run one experiment from a recipe.

The command line is components/cli/run.py (`python tools/run.py --help` says it all).
"""

import sys

from components.cli.run import main

if __name__ == "__main__":
    sys.exit(main())
