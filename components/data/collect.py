"""Build (or reuse) the dataset a run of an environment column would read, as a library call:
`collect(env)`, or one task shard of it (`collect_shard`) and their merge (`collect(merge=K)`).
`tools/collect.py` is the command line over these, and a study's dataset jobs call them.

    from components.data.collect import collect
    dataset = collect("sparse_point_robot", scale="tiny")

The settings come from the same files as a run's: recipes/envs/<env>.gin, then the scale's
files, then `bindings`; where an argument is not given, the bound `task_data.family`,
`.protocol`, `.seed`, `.tag` and `.root` say which dataset (so a run and this call build the same
one). Every binding must configure the collection: one that nothing built here reads is refused
before anything is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import components.data.protocols  # registers the protocols
import components.data.relabel
import components.envs  # noqa: F401  (registers the families)
from components.data.behaviour import Progress
from components.data.build import ensure_dataset
from components.data.shards import build_shard, merge_shards
from components.data.store import Dataset, cache_root, check_tag
from components.data.tasks import bound
from components.outputs.run_dir import check_name_lengths
from registry import FocalppError, get, names
from registry.constraints import check_seed
from registry.recipes import compose_columns
from registry.usage import check_used

# What collecting reads of the task_data bindings (a run's dataset), without building task_data
READ = tuple(f"task_data.{name}" for name in ("family", "protocol", "seed", "tag", "root"))


@dataclass(frozen=True)
class Which:
    """The dataset a collection names: family, protocol and seed, and where it is kept."""

    family: str
    protocol: str
    seed: int
    tag: str | None
    root: Path
    scale: str


def which(
    env: str,
    *,
    scale: str = "cpu",
    bindings: Sequence[str] = (),
    protocol: str | None = None,
    seed: int | None = None,
    tag: str | None = None,
    root: str | Path | None = None,
) -> Which:
    """Compose `env`'s column at `scale` with `bindings` and resolve the dataset it names (the
    arguments given win over the bound task_data settings); every name and binding checked."""
    compose_columns(env, scale, list(bindings))
    family = bound("family", env)
    get("env", family)  # unknown names fail here, with suggestions
    protocol = protocol or bound("protocol", "checkpoints")
    get("dataset", protocol)
    chosen = seed if seed is not None else bound("seed", 0)
    check_seed(chosen, "seed" if seed is not None else "task_data.seed")
    tag = tag or bound("tag")
    check_tag(tag)
    where = Path(root or bound("root") or cache_root())
    check_name_lengths(where, "dataset store")
    _check_bindings_used(family, protocol, chosen)
    return Which(family, protocol, chosen, tag, where, scale)


def collect(
    env: str,
    *,
    merge: int | None = None,
    progress: Progress | None = None,
    numerics: str | None = None,
    **choices,
) -> Dataset:
    """The dataset of `env` (see `which` for `choices`): loaded where it is in the store, else
    built and stored; with `merge` = K, the K shards built by `collect_shard` joined (tagged
    `-shards<K>`: another dataset than the build in one piece). `numerics` 'free' builds in this
    process with its own kernels (data of this machine only); by default portable where they
    can hold."""
    if merge is not None and merge < 2:
        raise FocalppError(f"merge {merge}: expected the number K ≥ 2 of shards built")
    at = which(env, **choices)
    place = {"root": at.root, "tag": at.tag, "scale": at.scale}
    if merge is not None:
        return merge_shards(at.family, at.protocol, at.seed, merge, **place)
    return ensure_dataset(
        at.family, at.protocol, at.seed, **place, progress=progress, numerics=numerics
    )


def collect_shard(
    env: str,
    index: int,
    count: int,
    *,
    progress: Progress | None = None,
    numerics: str | None = None,
    **choices,
) -> Path:
    """Train the behaviour policies of task shard `index` of `count` of `env`'s dataset only
    (components/data/shards.py), in this process, which must have `numerics` in force (set
    before torch loaded: tools/collect.py and a study's workers do); its directory.
    `collect(env, merge=count)` joins them."""
    at = which(env, **choices)
    place = {"root": at.root, "tag": at.tag, "scale": at.scale}
    return build_shard(
        at.family,
        at.protocol,
        at.seed,
        index,
        count,
        **place,
        progress=progress,
        mode=numerics,
    )


def _check_bindings_used(family: str, protocol: str, seed: int) -> None:
    """Every binding configures the collection, as a run's must: build the protocol and the
    family (cheap), counting the behaviour learners and networks a build makes later; the files
    composed for it (env column, scale) bind parts of runs too, so only the bindings given are
    judged."""
    get("dataset", protocol)()
    get("env", family)(seed=seed)
    check_used(
        later=[*names("behaviour_learner"), *names("network")],
        given="--gin_param",
        read=READ,
        what="that collecting this dataset builds, so the dataset would not be the one they "
        "describe; nothing was built",
        builder="this collection",
    )
