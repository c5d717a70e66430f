"""`# fixed: name.argument — why` lines: a recipe's defining choice, refused when a later file or
flag changes it, kept when it binds the same value; a line that cannot be read or names no
argument is refused with its file and line."""

from __future__ import annotations

import pytest

from registry import RecipeError, compose


def recipe(tmp_path, *lines: str):
    path = tmp_path / "mine.gin"
    path.write_text("\n".join(["include 'focal.gin'", *lines, ""]))
    return path


def test_a_fixed_binding_changed_later_is_refused_with_its_reason(tmp_path):
    path = recipe(tmp_path, "# fixed: focal.objective — my method is its objective")
    with pytest.raises(
        RecipeError, match=r"fixes `focal.objective`.*my method is its objective.*makes it None"
    ):
        compose(path, env="sparse_point_robot", scale="tiny", bindings=["focal.objective = None"])


def test_a_fixed_binding_bound_again_to_its_value_or_left_alone_composes(tmp_path):
    path = recipe(tmp_path, "# fixed: focal.encoder — my method is its encoder")
    compose(path, env="sparse_point_robot", scale="tiny")
    compose(
        path, env="sparse_point_robot", scale="tiny", bindings=["focal.encoder = @context_encoder"]
    )


def test_a_fixed_default_is_fixed_too(tmp_path):
    """Left at its default by the recipe, a binding of it later is a change."""
    path = recipe(tmp_path, "# fixed: focal.agent — SAC-based")
    with pytest.raises(RecipeError, match=r"makes it @iql, not unbound \(its default\)"):
        compose(path, env="sparse_point_robot", scale="tiny", bindings=["focal.agent = @iql"])


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("# fixed: focal.agent", r"cannot read '# fixed: focal.agent'.*write `# fixed: name"),
        ("# fixed focal.agent — why", r"cannot read '# fixed focal.agent — why'"),
        ("# fixed: focal.agnet — why", r"line 2: `# fixed: focal.agnet` names no argument"),
        ("# fixed: nothing.at_all — why", r"`# fixed: nothing.at_all` names no argument"),
    ],
)
def test_a_fixed_line_that_cannot_be_read_or_names_nothing_is_refused(tmp_path, line, said):
    with pytest.raises(RecipeError, match=said):
        compose(recipe(tmp_path, line), env="sparse_point_robot", scale="tiny")
