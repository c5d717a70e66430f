"""Compose a run's configuration from recipe files and bindings, strictly, in a documented order.

Order (later wins): the recipe (with everything it `include`s, base.gin first by convention) →
the environment column `envs/<env>.gin` → the scale `scales/<scale>.gin` → the scale's
environment-specific part `scales/<scale>/<env>.gin` (if present) → the run's env, scale and
seed → `--gin_param` bindings. `include` paths resolve against the recipes directory first,
then the recipe's directory, then the working directory, then the including file's own
directory; an include cycle is an error that names its chain. A recipe's `import` lines may name
modules next to the recipe or in the recipes directory (both are importable while recipes are
parsed). Each binding's file and line are kept (`registry.usage`), and a file's
`# may go unused: name, name.argument` lines declare bindings of it (and of what it includes)
that a run may leave unread: defaults for parts not every row builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gin
import gin.config

from registry import gin_state, usage
from registry.columns import (
    COLUMN_FOLDERS,
    check_group_member,
    checked_recipes_dir,
    column_file,
    columns,
    env_group,
    find_recipe,
    scale_group,
)
from registry.errors import RecipeError
from registry.experiment import Experiment, experiment
from registry.fixed import check_fixed, fixed_in
from registry.gin_errors import build, gin_errors
from registry.parsing import OVERRIDES, _marks, _search_paths, parse_bindings, parse_file
from registry.plugins import load_plugin
from registry.validation import check_bindings


@dataclass(frozen=True)
class Composition:
    """A parsed configuration as a value: what was read, in order, the experiment it describes,
    and gin's whole configuration with each binding's file and line (`config`, `provenance`).

    gin holds one configuration per process; a composition keeps its own, so any number of
    them coexist and `apply()` makes one gin's configuration again right before it is built
    (`components.experiment.train` does): composing another in between changes nothing."""

    recipe: Path
    sources: tuple[str, ...]
    experiment: Experiment
    overridden: tuple[str, ...] = ()  # the row's bindings that a column or scale file changed
    bindings: tuple[str, ...] = ()  # the extra bindings asked for (`--gin_param`), as given
    plugins: tuple[str, ...] = ()  # the plugins imported first, as given
    config: gin_state.Snapshot | None = None
    provenance: tuple = ()  # usage.sources_snapshot(): each binding's history

    def apply(self) -> None:
        """Make this composition gin's configuration (and the bindings' sources) again."""
        if self.config is None:  # made by hand: whatever gin holds is taken as it
            return
        for plugin in self.plugins:
            load_plugin(plugin)
        self.config.restore()
        usage.restore_sources(self.provenance)


def compose(
    recipe: str | Path,
    *,
    env: str | None = None,
    scale: str | None = None,
    seed: int | None = None,
    device: str | None = None,
    bindings: Sequence[str] = (),
    plugins: Sequence[str] = (),
    recipes_dir: Path | None = None,
) -> Composition:
    """Clear gin, import plugins, parse recipe → env → scale → bindings; return the experiment."""
    recipes_dir = checked_recipes_dir(recipes_dir)
    gin.clear_config()
    usage.clear_sources()
    for plugin in plugins:
        load_plugin(plugin)
    recipe_path = find_recipe(recipe, recipes_dir)
    sources = [str(recipe_path)]
    with _search_paths(recipes_dir, recipe_path.parent):
        parse_file(recipe_path)
        fixed = fixed_in(recipe_path)  # the recipe's defining choices, as its files leave them
        env = env or _query("experiment.env")
        if not env:
            raise RecipeError(
                f"{recipe_path} names no environment: bind `experiment.env` or pass --env "
                f"(one of: {', '.join(columns('envs', recipes_dir))})"
            )
        scale = scale or _query("experiment.scale") or "cpu"
        sources += parse_columns(env, scale, recipes_dir)
        sources += parse_set_scale(recipe_path, scale, recipes_dir)
    run_bindings = [f"experiment.env = {env!r}", f"experiment.scale = {scale!r}"]
    if seed is not None:
        run_bindings.append(f"experiment.seed = {int(seed)}")
    if device is not None:
        run_bindings.append(f"experiment.device = {device!r}")
    parse_bindings(run_bindings, "the run's --env/--scale/--seed/--device")
    with _search_paths(recipes_dir, recipe_path.parent):  # `include 'overlays/coupled.gin'`
        parse_bindings(bindings, "--gin_param")
    sources.append("bindings: " + "; ".join([*run_bindings, *bindings]))
    usage.check_macros()
    check_bindings()
    check_fixed(fixed, recipe_path)
    chosen = build_experiment()
    if (chosen.env, chosen.scale) != (env, scale):
        raise RecipeError(
            "a --gin_param binding changed experiment.env or experiment.scale; "
            "choose them with --env and --scale so their recipe files are included"
        )
    # Bind the recipe's defaults explicitly, so the same run composes to the same configuration
    # however it was asked for (flags given or not); resumed runs compare configurations.
    parse_bindings(
        [f"experiment.seed = {chosen.seed}", f"experiment.device = {chosen.device!r}"],
        "the run's resolved seed and device",
    )
    return Composition(
        recipe_path,
        tuple(sources),
        chosen,
        overridden_row_bindings(recipes_dir),
        tuple(bindings),
        tuple(plugins),
        gin_state.snapshot(),
        usage.sources_snapshot(),
    )


def compose_config(
    config: str,
    *,
    recipe: str | Path,
    sources: Sequence[str] = (),
    seed: int | None = None,
    bindings: Sequence[str] = (),
    plugins: Sequence[str] = (),
) -> Composition:
    """A composition from a configuration as gin writes it (`gin.config_str()`, which a run
    records): no recipe file is read, so a run is rebuilt as it was configured whatever became
    of its files since. `recipe` and `sources` only name what it was composed from; `seed`
    (one of several seeds trained together) and `bindings` (an analysis's own) are bound after."""
    gin.clear_config()
    usage.clear_sources()
    for plugin in plugins:
        load_plugin(plugin)
    with gin_errors("the recorded configuration"):
        gin.parse_config(config)
    extra = [*([f"experiment.seed = {int(seed)}"] if seed is not None else []), *bindings]
    if extra:
        parse_bindings(extra, "the run's seed and extra bindings")
    return Composition(
        Path(recipe),
        tuple(sources),
        build_experiment(),
        (),
        tuple(bindings),
        tuple(plugins),
        gin_state.snapshot(),
        usage.sources_snapshot(),
    )


def overridden_row_bindings(recipes_dir: Path) -> tuple[str, ...]:
    """The recipe's own bindings (its file and those it includes) whose value an environment
    column or scale file changed: later files win, so the row would silently not be the row it
    reads as. A column file that means it says so with a `# overrides: name.argument` line
    (the Fwd-Back columns: two tasks, so every meta-batch repeats them)."""
    columns = (recipes_dir / "envs", recipes_dir / "scales")
    said = []
    for binding in usage.provenance():
        last = binding.source
        if not _under(last.where, columns) or _intended(last, binding.name):
            continue
        for earlier in binding.overrode:
            if (
                earlier.line
                and not _under(earlier.where, columns)
                and _value(earlier) != _value(last)
            ):
                said.append(
                    f"{earlier.describe()}: `{earlier.text}` is overridden by {last.describe()}: "
                    f"`{last.text}`"
                )
    return tuple(said)


def _under(where: str, folders: tuple[Path, ...]) -> bool:
    path = Path(where).resolve()
    return any(path.is_relative_to(folder.resolve()) for folder in folders)


def _value(source: usage.Source) -> str:
    return source.text.partition("=")[2].strip()


def _intended(source: usage.Source, name: str) -> bool:
    """The column file declares this override (`# overrides: name.argument, ...`; read and
    checked with the file when it was parsed)."""
    path = Path(source.where)
    declared = _marks(path.read_text(), path, OVERRIDES)
    short = name.rsplit("/", 1)[-1]  # scope dropped: `algorithm.focal.x` -> focal.x matches
    return any(short == d or short.endswith(f".{d}") for d in declared if d)


def parse_columns(env: str, scale: str, recipes_dir: Path) -> list[str]:
    """Parse envs/<env>.gin, scales/<scale>.gin and, if present, scales/<scale>/<env>.gin.

    The last holds what a scale means for one environment (e.g. paper-scale step counts of a
    MuJoCo family). A family of a group (`ml1_push`: group `ml1`) without a file of its own
    reads the group's (`envs/groups/ml1.gin`, `scales/<scale>/ml1.gin`); an environment column
    with a `# scale group: NAME` line and no file of its own reads `scales/<scale>/NAME.gin`
    (the point robots share theirs, the MuJoCo families theirs). Call inside `_search_paths`;
    returns the files parsed.
    """
    paths = [column_file("envs", env, recipes_dir), column_file("scales", scale, recipes_dir)]
    for name in (env, env_group(env), scale_group(paths[0])):
        if name is None:
            continue
        specific = recipes_dir / "scales" / scale / f"{name}.gin"
        if specific.is_file():
            paths.append(specific)
            break
    for path in paths:
        parse_file(path)
    if paths[0].parent.name == "groups":  # any name of the group reads its file: is it one?
        check_group_member(env)
    return [str(p) for p in paths]


def parse_set_scale(recipe_path: Path, scale: str, recipes_dir: Path) -> list[str]:
    """A recipe set, a folder of recipes under the recipes directory (recipes/first_edition/),
    sizes the parts only its recipes build per scale: <folder>/scales/<scale>.gin, read after
    the scale's own files. Call inside `_search_paths`; returns the files parsed."""
    folder = recipe_path.parent
    if folder.parent != Path(recipes_dir).resolve() or folder.name in COLUMN_FOLDERS:
        return []
    path = folder / "scales" / f"{scale}.gin"
    if not path.is_file():
        return []
    parse_file(path)
    return [str(path)]


def compose_columns(
    env: str, scale: str = "cpu", bindings: Sequence[str] = (), recipes_dir: Path | None = None
) -> list[str]:
    """Clear gin and parse only an environment column, a scale and bindings (no recipe).

    For tools that build parts without an algorithm (dataset collection).
    """
    recipes_dir = checked_recipes_dir(recipes_dir)
    gin.clear_config()
    usage.clear_sources()
    with _search_paths(recipes_dir, recipes_dir):
        sources = parse_columns(env, scale, recipes_dir)
    parse_bindings(bindings, "--gin_param")
    usage.check_macros()
    check_bindings()
    return sources


def build_experiment() -> Experiment:
    return build(experiment)


def operative_config() -> str:
    """The configuration of everything built so far, with defaults: re-parsing it re-runs."""
    return gin.operative_config_str()


def _query(name: str) -> object | None:
    try:
        return gin.query_parameter(name)
    except ValueError:
        return None
