"""Run one experiment from a recipe.

The command line is components/cli/run.py (`python tools/run.py --help` says it all).
"""

import sys

from components import numerics
from components.outputs.run_record import recorded_numerics

# portable numerics where --numerics portable asks or the resumed run trained with them (free
# by default: a portable step costs 1.3-1.7 free ones, docs/NUMERICS.md), set before torch loads
numerics.pin_for_command(default=numerics.FREE, recorded=recorded_numerics)

from components.cli.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
