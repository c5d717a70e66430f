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

import dataclasses
import difflib
import inspect
import io
import logging
import os
import re
import sys
import tokenize
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import gin
import gin.config
from gin import config_parser
from gin import utils as gin_utils

from registry import gin_state, usage
from registry.catalog import bindable_arguments
from registry.core import entries, get, names
from registry.errors import FocalppError, RecipeError
from registry.experiment import Experiment, RunContext, experiment
from registry.plugins import load_plugin
from registry.renames import renamed, renamed_name
from registry.usage import Source
from registry.validation import check_bindings

T = TypeVar("T")

SHIPPED_RECIPES = Path(__file__).resolve().parents[1] / "recipes"


COLUMN_FOLDERS = ("envs", "scales", "overlays")  # recipes/ folders that hold no recipe set


def default_recipes_dir() -> Path:
    """The recipes directory a run reads when none is given: $FOCALPP_RECIPES if set (read at
    each call, so one process may run tools with different ones), else the shipped recipes."""
    return Path(os.environ.get("FOCALPP_RECIPES") or SHIPPED_RECIPES)


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


def check_group_member(env: str) -> None:
    """A name that reads its group's column (`ml1_pushh`) must be a family the group's
    modules registered, so that a dry run refuses it as a real run would."""
    if env in names("env"):
        return
    group = env_group(env)
    members = names("env", f"{group}_*")
    close = difflib.get_close_matches(env, members, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise RecipeError(
        f"unknown --env {env!r}: not one of the {len(members)} families of the group "
        f"{group!r}.{hint} Available: {', '.join(members) or 'none'}"
    )


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


def checked_recipes_dir(recipes_dir: Path | None = None) -> Path:
    """The recipes directory (given, else $FOCALPP_RECIPES, else the shipped one); it must
    exist, or every recipe lookup would fail with an empty list of choices."""
    path = Path(recipes_dir or default_recipes_dir())
    if not path.is_dir():
        origin = (
            f" ($FOCALPP_RECIPES = {os.environ['FOCALPP_RECIPES']!r})"
            if recipes_dir is None and os.environ.get("FOCALPP_RECIPES")
            else ""
        )
        raise RecipeError(
            f"the recipes directory {path}{origin} is not a directory: point FOCALPP_RECIPES "
            "at a directory holding base.gin, envs/ and scales/, or unset it to use the "
            "shipped recipes"
        )
    return path


def find_recipe(recipe: str | Path, recipes_dir: Path) -> Path:
    """The recipe's path as given, else the name of a recipe in the recipes directory or in a
    recipe set there (`first_edition/x.gin`), never a column's or an overlay's file
    (`envs/x.gin` is an environment column) nor one outside it (`../x.gin` is a path from the
    working directory); error if neither."""
    if Path(recipe).is_file():
        return Path(recipe).resolve()
    inside, root = (recipes_dir / recipe).resolve(), Path(recipes_dir).resolve()
    in_set = inside.parent.parent == root and inside.parent.name not in COLUMN_FOLDERS
    if inside.is_file() and (inside.parent == root or in_set):
        return inside
    checked_recipes_dir(recipes_dir)
    shipped = sorted(p.name for p in recipes_dir.glob("*.gin"))
    close = difflib.get_close_matches(Path(recipe).name, shipped, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise RecipeError(
        f"recipe file not found: {recipe}.{hint} Recipes in {recipes_dir}: {', '.join(shipped)}"
    )


def columns(column: str, recipes_dir: Path | None = None) -> list[str]:
    """Names available in a column directory (`envs` or `scales`)."""
    return sorted(
        p.stem for p in (Path(recipes_dir or default_recipes_dir()) / column).glob("*.gin")
    )


SCALE_GROUP = re.compile(r"^[ \t]*#[ \t]*scale group:[ \t]*([\w.-]+)\b", re.MULTILINE)


def scale_group(env_file: Path) -> str | None:
    """The shared per-scale file an environment column reads where it has none of its own:
    its `# scale group: NAME` line (a group file of the column's own, like ml1's, has none)."""
    found = SCALE_GROUP.findall(env_file.read_text()) if env_file.is_file() else []
    if len(found) > 1:
        raise RecipeError(f"{env_file} names {len(found)} scale groups ({found}); name one")
    return found[0] if found else None


def env_group(env: str) -> str:
    """The group an environment name belongs to: its first word (`ml1_push` -> `ml1`)."""
    return env.split("_", 1)[0]


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def column_file(column: str, value: str, recipes_dir: Path) -> Path:
    flag = {"envs": "--env", "scales": "--scale"}[column]
    if not NAME.fullmatch(value) or ".." in value:  # a name is a name, never a path
        raise RecipeError(
            f"{flag} {value!r} is not a name (letters, digits, '_', '.', '-'; no folders): "
            f"expected one of {', '.join(columns(column, recipes_dir)) or 'none'}"
        )
    path = recipes_dir / column / f"{value}.gin"
    if path.is_file():
        return path
    group = recipes_dir / column / "groups" / f"{env_group(value)}.gin"
    if column == "envs" and value != env_group(value) and group.is_file():
        return group
    available = columns(column, recipes_dir)
    close = difflib.get_close_matches(value, available, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise RecipeError(
        f"unknown {flag} {value!r}: no {path}.{hint} Available: {', '.join(available) or 'none'}"
    )


def parse_file(path: Path, *, chain: tuple[Path, ...] = (), marks: frozenset = frozenset()) -> None:
    """Parse a recipe file statement by statement with gin's parser and binder; its `include`s
    are resolved here, so that a cycle is named with its chain, an error in an included file
    names that file and where it was included, and each binding remembers its file and line.
    `marks`: the `# may go unused:` entries of the files that include this one."""
    path = Path(path)
    with gin_errors(str(path)):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise RecipeError(f"cannot read recipe file {path}: {e}") from e
        own = _marks(text, path, MAY_GO_UNUSED)
        with _unclosed_brackets(text, str(path), numbered=True):
            _parse(text, str(path), (*chain, path.resolve()), marks | own, numbered=True)
        _check_marks(own, path, MAY_GO_UNUSED)
        _check_marks(_marks(text, path, OVERRIDES), path, OVERRIDES)


def parse_bindings(bindings: Sequence[str], source: str) -> None:
    text = "\n".join(bindings)
    with gin_errors(source), _unclosed_brackets(text, source, numbered=False):
        _parse(text, source, (), frozenset(), numbered=False)


@contextmanager
def _unclosed_brackets(text: str, where: str, numbered: bool) -> Iterator[None]:
    """The tokenizer's 'EOF in multi-line statement' as the line of the bracket left open."""
    try:
        yield
    except tokenize.TokenError as e:
        opened = _first_unclosed(text)
        if opened is None:
            raise
        line, bracket = opened
        content = text.splitlines()[line - 1].strip()
        at = f"{where} line {line}" if numbered else where
        raise RecipeError(
            f"gin syntax error in {at}: the bracket {bracket!r} opened here is "
            f"never closed (every line after it was read as part of its value)\n    {content}"
        ) from e


def _first_unclosed(text: str) -> tuple[int, str] | None:
    """(line, bracket) of the first bracket still open where the text ends."""
    stack: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                stack.append((token.start[0], token.string))
            elif token.type == tokenize.OP and token.string in ")]}" and stack:
                stack.pop()
    except tokenize.TokenError:
        pass
    return stack[0] if stack else None


def _parse(text: str, where: str, chain: tuple[Path, ...], marks: frozenset, numbered: bool):
    """What `gin.parse_config` does, with includes and the bindings' sources handled here."""
    named = io.StringIO(text)
    named.name = where  # gin's messages then say "In file <where>"
    parser = config_parser.ConfigParser(named, gin.config.ParserDelegate(skip_unknown=False))
    with gin_state.parse_scope() as context:
        for statement in parser:
            location = statement.location
            line = location.line_num if numbered else None
            if isinstance(statement, config_parser.IncludeStatement):
                _include(statement.filename, where, line or 0, chain, marks)
            elif isinstance(statement, config_parser.ImportStatement):
                _import(statement, context, f"{where} line {line}" if line else where)
            elif isinstance(statement, config_parser.BlockDeclaration):
                with gin_utils.try_with_location(location):
                    if not context.get_configurable(statement.selector):
                        raise ValueError(f"No configurable matching '{statement.selector}'.")
            else:
                with gin_utils.try_with_location(location):
                    _bind(statement, Source(where, line, _written(location.line_content)), marks)
        gin_state.add_imports(context.imports)


def _import(statement: config_parser.ImportStatement, context, at: str) -> None:
    try:
        context.process_import(statement)
    except ImportError as e:
        raise RecipeError(
            f"{at}: `{statement.format()}` fails: {type(e).__name__}: {e}. Check the module's "
            "name; a module of your own must sit next to the recipe or in the recipes "
            "directory, or be passed with --plugin FILE.py"
        ) from e
    except FocalppError:
        raise
    except Exception as e:  # the module itself is broken: its code, not the recipe line
        raise RecipeError(
            f"{at}: `{statement.format()}` fails while the module runs: {type(e).__name__}: "
            f"{e} (--debug shows where)"
        ) from e


def _written(line: str) -> str:
    """A binding's line as written, without its comment (`...` if its value goes on)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except tokenize.TokenError:
        return line.strip() + " ..."
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    return (line[: comment.start[1]] if comment else line).strip()


def _bind(statement: config_parser.BindingStatement, source: Source, marks: frozenset) -> None:
    scope, selector, arg, value, _ = statement
    if not arg:  # a macro: `NAME = value`
        scope, selector, arg = (f"{scope}/{selector}" if scope else selector), usage.MACRO, "value"
    else:  # a binding that moved (`loop.steps` -> `loop.steps`): read under its new name
        selector, arg = renamed(selector, arg, source.describe())
    gin.bind_parameter((scope, selector, arg), value)
    scope, complete = gin.config.ParsedBindingKey.parse((scope, selector, arg)).config_key
    optional = usage.marked(marks, complete, arg)
    usage.record((scope, complete, arg), dataclasses.replace(source, optional=optional))


def _include(name: str, where: str, line: int, chain: tuple[Path, ...], marks: frozenset):
    """Parse an included file (found as gin finds it, else next to the including file)."""
    at = f"{where} line {line}" if line else where
    path = _find_include(name, chain[-1].parent if chain else None)
    if path is None:
        searched = [p or "." for p in gin_state.search_path()]
        raise RecipeError(
            f"{at} includes {name!r}, which is not a file in {', '.join(map(str, searched))}"
            " (the recipes directory, the recipe's directory, the working directory)"
        )
    if path.resolve() in chain:
        cycle = " -> ".join(p.name for p in (*chain, path.resolve()))
        raise RecipeError(
            f"include cycle: {cycle} ({at} includes {name!r}, which is already being read); "
            "a recipe includes the row it extends, never one that includes it"
        )
    try:
        parse_file(path, chain=chain, marks=marks)
    except RecipeError as e:
        raise RecipeError(f"{e}\n  (included from {at})") from e


def _find_include(name: str, beside: Path | None) -> Path | None:
    prefixes = [""] if os.path.isabs(name) else list(gin_state.search_path())
    for prefix in [*prefixes, *([str(beside)] if beside else [])]:
        candidate = Path(prefix, name)
        if candidate.is_file():
            return candidate
    return None


MAY_GO_UNUSED = "may go unused"  # `# may go unused: name, ...`: defaults some rows never read
OVERRIDES = "overrides"  # `# overrides: name.argument, ...`: a column changes a row on purpose
_MARK_NAMES = re.compile(r":\s*([\w.]+(?:\s*,\s*[\w.]+)*)\s*,?\s*")


def _marks(text: str, path: Path, label: str) -> frozenset:
    """The names a file's `# <label>: name, name.argument` lines declare."""
    found: set[str] = set()
    for m in re.finditer(rf"^[ \t]*#[ \t]*{label}\b(.*)$", text, re.MULTILINE):
        names = _MARK_NAMES.fullmatch(m.group(1))
        if names is None:
            line = text.count("\n", 0, m.start()) + 1
            raise RecipeError(
                f"{path} line {line}: cannot read {m.group(0).strip()!r}: write "
                f"`# {label}: name, name.argument, ...` (configurables or their arguments)"
            )
        found |= {renamed_name(n.strip()) for n in names.group(1).split(",")}
    return frozenset(found)


def _check_marks(marks: frozenset, path: Path, label: str) -> None:
    """Each declared name is a configurable, or an argument of one (a typo would exempt nothing
    and hide nothing, but it would mislead a reader)."""
    for mark in sorted(marks):
        configurable, _, arg = mark.rpartition(".")
        if gin_state.configurable(mark) is not None:
            continue
        found = gin_state.configurable(configurable) if configurable else None
        if found is None or arg not in _parameters(found.wrapped):
            known = sorted({*names(), "experiment"})  # a name two kinds share, once
            close = difflib.get_close_matches(mark.split(".")[0], known, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise RecipeError(
                f"{path}: `# {label}:` names {mark!r}, which is neither a configurable "
                f"nor an argument of one.{hint} Write `name` or `name.argument` of a registered "
                "part"
            )


def _parameters(obj) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        return list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return []


def build_experiment() -> Experiment:
    return build(experiment)


# What the experiment hands an algorithm that asks for it by its constructor's argument name:
# the registered member (kind, name) built from the run's bindings with `run=`.
HANDED = {"run": None, "data": ("task_data", "task_data"), "loop": ("loop", "loop")}


def build_algorithm(exp: Experiment, run: RunContext) -> Any:
    """The chosen algorithm, handed what its constructor names: `run` (the RunContext),
    `data` (the task data, `task_data.*`) and `loop` (the training loop, `loop.*`), built here
    in that order so an algorithm of one's own asks only for what it uses."""
    wanted = _parameters(exp.algorithm)
    given: dict[str, Any] = {}
    for argument, member in HANDED.items():
        if argument in wanted:
            given[argument] = run if member is None else build(get(*member), run=run)
    return build(exp.algorithm, **given)


def operative_config() -> str:
    """The configuration of everything built so far, with defaults: re-parsing it re-runs."""
    return gin.operative_config_str()


def _query(name: str) -> object | None:
    try:
        return gin.query_parameter(name)
    except ValueError:
        return None


class _QuietMissingPaths(logging.Filter):
    """gin logs an error for every search-path miss while resolving an include; drop those."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Path not found")


@contextmanager
def _search_paths(*dirs: Path) -> Iterator[None]:
    # gin has no public way to put a search path first or to remove one again.
    prefixes = gin_state.search_path()
    saved, saved_sys_path = list(prefixes), list(sys.path)
    prefixes[:0] = [str(d) for d in dirs]
    sys.path[:0] = [str(d) for d in dirs]
    quiet = _QuietMissingPaths()
    logging.getLogger().addFilter(quiet)
    try:
        yield
    finally:
        prefixes[:] = saved
        sys.path[:] = saved_sys_path
        logging.getLogger().removeFilter(quiet)


_UNKNOWN = re.compile(r"No configurable matching (?:reference )?'@?([\w./]+?)(?:\(\))?'")
_NO_PARAM = re.compile(r"Configurable '([\w.]+)' doesn't have a parameter named '(\w+)'")
_REQUIRED = re.compile(r"Required bindings for `([\w.]+)` not provided in config: \[(.*)\]")


@contextmanager
def gin_errors(source: str) -> Iterator[None]:
    """Turn gin's parse and bind errors into RecipeError messages that say how to fix them."""
    try:
        yield
    except FocalppError:
        raise
    except SyntaxError as e:
        where = _syntax_location(e, source)
        message = e.msg.split("\n")[0]
        if token := re.search(r"Failed to parse token '(.*)'", e.msg):
            message = f"cannot parse the value {token.group(1)}"
        if "parse value" in message or token:
            message = (
                f"{message.rstrip('.')}: after `name.argument =` write a Python literal, e.g. "
                "`loop.steps = 12_000`, `brac.lr = 3e-4`, `task_data.quality = 'mixed'` (strings "
                "in quotes), `brac.hidden = (64, 64)`, `None`, `True`, or a component "
                "reference `@mlp_encoder` (gin has no nan or inf)"
            )
        raise RecipeError(f"gin syntax error in {where}: {message}") from e
    except tokenize.TokenError as e:
        msg, (line, _) = e.args
        raise RecipeError(f"gin syntax error in {source} near line {line}: {msg}") from e
    except ImportError as e:
        raise RecipeError(
            f"a module imported by {source} cannot be imported: {e}. Check the `import` line, "
            "or pass the module's file with --plugin"
        ) from e
    except OSError as e:
        raise RecipeError(f"cannot read a recipe file included from {source}: {e}") from e
    except (ValueError, RuntimeError) as e:
        raise RecipeError(_explain(str(e), source) or f"invalid recipe ({source}): {e}") from e


def build(factory: Callable[..., T], /, **kwargs: Any) -> T:
    """Call a gin-configured factory; gin's unknown/missing-binding errors become RecipeError.

    Other errors pass through untouched: they are bugs of the component, not of the recipe.
    """
    try:
        return factory(**kwargs)
    except FocalppError:
        raise
    except (ValueError, RuntimeError) as e:
        explained = _explain(str(e), "the recipe")
        if explained is None:
            raise
        raise RecipeError(explained) from e


def _syntax_location(e: SyntaxError, source: str) -> str:
    location = e.args[1] if len(e.args) > 1 else None
    filename = getattr(location, "filename", None) or e.filename or source
    line = getattr(location, "line_num", None) or e.lineno
    content = getattr(location, "line_content", None) or e.text or ""
    return f"{filename} line {line}" + (f"\n    {content.rstrip()}" if content else "")


def _explain(message: str, source: str) -> str | None:
    """Add suggestions to gin's message for unknown names, unknown arguments, missing bindings."""
    if m := _UNKNOWN.search(message):
        name = m.group(1).split("/")[-1]
        pool = [*names(), "experiment"]
        short = name.split(".")[-1]
        close = difflib.get_close_matches(short, pool, n=5, cutoff=0.5)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        return (
            f"unknown component or configurable {name!r} in {source}. {hint}If it is defined in "
            "a module not imported yet, add an `import <module>` line to the recipe or pass "
            f"--plugin <module or file.py>.\n{message}"
        )
    if m := _NO_PARAM.search(message):
        configurable, arg = m.groups()
        valid = _arguments_of(configurable.split(".")[-1])
        close = difflib.get_close_matches(arg, valid, n=3, cutoff=0.5)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        return (
            f"{configurable!r} has no argument {arg!r} (binding in {source}). {hint}"
            f"Its arguments: {', '.join(valid) or 'none'}.\n{message}"
        )
    if m := _REQUIRED.search(message):
        configurable, missing = m.groups()
        return f"{configurable!r} needs a value for {missing}: bind it in the recipe.\n{message}"
    return None


def _arguments_of(name: str) -> list[str]:
    if name == "experiment":
        return [a.name for a in bindable_arguments(experiment)]
    found = [e for e in entries() if e.name == name]
    return [a.name for a in bindable_arguments(found[0].obj)] if found else []
