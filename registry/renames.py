"""Bindings that moved: the schedule, the data and the sizes left `focal` for their own
configurables (`loop`, `task_data`, `sizes`). A recipe, a run record or a `--gin_param` that
still says `focal.steps` is read as `loop.steps`, with a one-line note naming the new binding.

The configuration's fingerprint (a resumed run must be configured as the run it continues) is
taken after the renames; a checkpoint written before them carries the fingerprint of the same
configuration written with the old names, which `legacy_config_str` rebuilds.
"""

from __future__ import annotations

import re
import sys

import gin
import gin.config

from registry import gin_state

# (old configurable, old argument) -> (new configurable, new argument)
RENAMED: dict[tuple[str, str], tuple[str, str]] = {
    **{
        ("focal", old): ("task_data", new)
        for old, new in {
            "family": "family",
            "protocol": "protocol",
            "quality": "quality",
            "test_quality": "test_quality",
            "data_seed": "seed",
            "data_root": "root",
            "dataset_tag": "tag",
            "dataset_shards": "shards",
        }.items()
    },
    **{
        ("focal", name): ("sizes", name)
        for name in ("latent_dim", "meta_batch", "context_batch", "context_replace", "rl_batch")
    },
    **{
        ("focal", name): ("loop", name)
        for name in (
            "steps",
            "eval_every",
            "log_every",
            "checkpoint_every",
            "progress",
            "lr_decay",
            "lr_floor",
            "precision",
            "compile",
        )
    },
    ("focal", "evaluator"): ("loop", "meta_test"),
}

_noted: set[str] = set()


def renamed(selector: str, argument: str, where: str = "") -> tuple[str, str]:
    """The (selector, argument) a binding means now; a moved one is noted once per process.
    `selector` may be complete (`algorithm.focal`): its last name is looked up."""
    _prefix, _, name = selector.rpartition(".")
    new = RENAMED.get((name, argument))
    if new is None:
        return selector, argument
    old_text, new_text = f"{name}.{argument}", f"{new[0]}.{new[1]}"
    if old_text not in _noted:
        _noted.add(old_text)
        at = f" ({where})" if where else ""
        print(f"note: `{old_text}` is now `{new_text}`{at}; read as such", file=sys.stderr)
    return new


def renamed_name(text: str) -> str:
    """A `name.argument` (as `# may go unused:` lines write it) in today's names, no note."""
    name, _, argument = text.rpartition(".")
    new = RENAMED.get((name.rpartition(".")[2], argument))
    return f"{new[0]}.{new[1]}" if new else text


def renamed_binding(text: str) -> str:
    """A binding as text (`focal.steps = 6`, a run record's or a study's) in today's names, so
    records written before the renames compare equal to today's."""
    m = re.match(r"(\s*(?:[\w./]+/)?)([\w.]+)(\s*=.*)", text, re.DOTALL)
    return f"{m.group(1)}{renamed_name(m.group(2))}{m.group(3)}" if m else text


def legacy_config_str() -> str:
    """`gin.config_str()` with the moved bindings written back under `focal`, as a run
    composed before the renames recorded its configuration."""
    focal = gin_state.configurable("focal")
    if focal is None:
        return gin.config_str()
    back = {new: old for old, new in RENAMED.items()}
    legacy: dict = {}
    for (scope, selector), params in gin_state.bindings():
        short = selector.rpartition(".")[2]
        for argument, value in params.items():
            old = back.get((short, argument))
            key = (scope, focal.selector) if old else (scope, selector)
            legacy.setdefault(key, {})[old[1] if old else argument] = value
    return gin_state.config_text(legacy)
