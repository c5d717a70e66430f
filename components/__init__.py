"""focalpp's built-in components, one sub-package per kind of part (see docs/ARCHITECTURE.md).

Importing a component module registers what it defines; recipes import the modules they use.
`load_builtin()` imports all of them, for the catalog and for tests that cover every component;
the opt-in packages (the first edition's encoders) only where asked.
"""

from __future__ import annotations

import importlib
import pkgutil

OPT_IN = (f"{__name__}.first_edition",)  # packages nothing that ships imports


def load_builtin(opt_in: bool = False) -> list[str]:
    """Import every module under `components` (registering its components), with the opt-in
    packages where `opt_in` asks; return their names."""
    loaded = []
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if not opt_in and info.name.startswith(OPT_IN):
            continue
        importlib.import_module(info.name)
        loaded.append(info.name)
    return loaded
