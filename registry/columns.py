"""The recipes directory and its columns: where a recipe, an environment column or a scale file
is found (`find_recipe`, `column_file`), which exist (`columns`), and which group a family of
Meta-World's ML1 reads (`env_group`, `scale_group`)."""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from registry.core import names
from registry.errors import RecipeError

SHIPPED_RECIPES = Path(__file__).resolve().parents[1] / "recipes"

COLUMN_FOLDERS = ("envs", "scales", "overlays")  # recipes/ folders that hold no recipe set


def default_recipes_dir() -> Path:
    """The recipes directory a run reads when none is given: $FOCALPP_RECIPES if set (read at
    each call, so one process may run tools with different ones), else the shipped recipes."""
    return Path(os.environ.get("FOCALPP_RECIPES") or SHIPPED_RECIPES)


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
