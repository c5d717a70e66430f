"""focalpp's built-in components, one sub-package per kind of part (see docs/ARCHITECTURE.md).

Importing a component module registers what it defines; recipes import the modules they use.
`load_builtin()` imports all of them, for the catalog and for tests that cover every component.
"""

from __future__ import annotations

import importlib
import pkgutil


def load_builtin() -> list[str]:
    """Import every module under `components` (registering its components); return their names."""
    loaded = []
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        importlib.import_module(info.name)
        loaded.append(info.name)
    return loaded
