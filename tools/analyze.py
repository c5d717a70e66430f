"""Measure trained runs: embedding variance, attention AUC, t-SNE, distribution shift.

The command line is components/cli/analyze.py (`python tools/analyze.py --help` says it all).
"""

import sys

from components import numerics
from components.outputs.run_record import recorded_numerics

# a run trained with portable numerics is analysed with them (set before torch loads)
if recorded_numerics(sys.argv[1:]) == numerics.PORTABLE:
    numerics.pin()

from components.cli.analyze import main

if __name__ == "__main__":
    sys.exit(main())
