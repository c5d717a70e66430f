"""Build (or reuse) an offline dataset, or list the cached ones.

The command line is components/cli/collect.py (`python tools/collect.py --help` says it all).
"""

import sys

from components import numerics

numerics.pin()  # a dataset is built with portable numerics, set before torch loads

from components.cli.collect import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
