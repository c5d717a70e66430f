"""Build (or reuse) an offline dataset, or list the cached ones.

The command line is components/cli/collect.py (`python tools/collect.py --help` says it all).
"""

import sys

from components import numerics

# a dataset is built with portable numerics (unless --numerics free, or on a CPU where they
# cannot hold: numerics.build_default), set before torch loads
numerics.pin_for_command(default=lambda argv: numerics.build_default())

from components.cli.collect import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
