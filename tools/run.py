"""Run one experiment from a recipe.

The command line is components/cli/run.py (`python tools/run.py --help` says it all).
"""

import sys

from components import numerics

# portable numerics where --numerics portable asks (or the resumed run trained with them):
# set before torch loads
numerics.pin_for_command(default=numerics.RUN_DEFAULT)

from components.cli.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
