"""How a focalpp component is named, registered, found and configured. Knows nothing about RL.

    from registry import register

    @register("transition_encoder", "mlp_encoder")
    class MLPEncoder(nn.Module): ...

A recipe then selects it with `@mlp_encoder` and binds `mlp_encoder.hidden = (200, 200)`.
See docs/ARCHITECTURE.md.
"""

from registry.catalog import Argument, CatalogEntry, catalog
from registry.columns import default_recipes_dir
from registry.core import Entry, entries, entry_of, get, names, register
from registry.errors import (
    DuplicateComponentError,
    FocalppError,
    PluginError,
    RecipeError,
    UnknownComponentError,
    UnknownKindError,
    WriteError,
)
from registry.experiment import Experiment, RunContext
from registry.kinds import KINDS
from registry.plugins import load_plugin
from registry.recipes import Composition, compose, operative_config

__all__ = [
    "KINDS",
    "Argument",
    "CatalogEntry",
    "Composition",
    "DuplicateComponentError",
    "Entry",
    "Experiment",
    "FocalppError",
    "PluginError",
    "RecipeError",
    "RunContext",
    "UnknownComponentError",
    "UnknownKindError",
    "WriteError",
    "catalog",
    "compose",
    "default_recipes_dir",
    "entries",
    "entry_of",
    "get",
    "load_plugin",
    "names",
    "operative_config",
    "register",
]
