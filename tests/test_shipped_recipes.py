"""Every shipped environment column and scale parses and composes with base.gin."""

from __future__ import annotations

import pytest

from registry import RECIPES_DIR, compose
from registry.recipes import columns


def test_columns_exist():
    assert set(columns("envs")) >= {
        "sparse_point_robot",
        "point_robot_wind",
        "sparse_cheetah_vel",
        "sparse_cheetah_fwd_back",
        "sparse_ant_fwd_back",
        "walker_params",
    }
    assert set(columns("scales")) >= {"cpu", "paper"}


@pytest.mark.parametrize("scale", columns("scales"))
@pytest.mark.parametrize("env", columns("envs"))
def test_every_column_composes(env, scale, tmp_path):
    recipe = tmp_path / "probe.gin"
    recipe.write_text(
        "import toy_components\ninclude 'base.gin'\nexperiment.algorithm = @toy_algorithm\n"
    )
    comp = compose(recipe, env=env, scale=scale, recipes_dir=RECIPES_DIR)
    assert (comp.experiment.env, comp.experiment.scale) == (env, scale)
    assert comp.sources[0] == str(recipe)
    assert comp.sources[1] == str(RECIPES_DIR / "envs" / f"{env}.gin")


def test_env_columns_name_registered_families():
    import components.envs  # noqa: F401
    from registry import names

    assert set(columns("envs")) <= set(names("env"))
