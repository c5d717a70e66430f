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
    """A column is a family, or a variant that names its family (the relabeled dataset)."""
    import components.envs  # noqa: F401
    from registry import names

    variants = set(columns("envs")) - set(names("env"))
    assert variants == {"sparse_point_robot_relabeled"}
    text = (RECIPES_DIR / "envs" / "sparse_point_robot_relabeled.gin").read_text()
    assert "focal.family = 'sparse_point_robot'" in text


ROWS = ["focal", "focalpp_contrastive", "focalpp_batchwise", "focalpp_seqwise", "focalpp"]


@pytest.mark.parametrize("row", ROWS)
def test_row_recipes_compose_and_state_their_ingredients(row):
    import gin

    comp = compose(f"{row}.gin", recipes_dir=RECIPES_DIR)
    assert comp.experiment.algorithm_name == "focal"
    header = (RECIPES_DIR / f"{row}.gin").read_text().split("include")[0]
    objective = gin.query_parameter("focal.objective").selector
    assert objective in ("focal_dml", "matrix_moco")
    assert ("DML" in header or "distance-metric" in header) == (objective == "focal_dml")


BASELINES = {
    "batch_pearl": ("focal", "Rakelly"),
    "contextual_bcq": ("focal", "Fujimoto"),
    "mbml": ("mbml", "Li, Yang"),
}


@pytest.mark.parametrize("recipe", sorted(BASELINES))
def test_baseline_recipes_compose_and_name_their_paper(recipe):
    algorithm, authors = BASELINES[recipe]
    comp = compose(f"{recipe}.gin", recipes_dir=RECIPES_DIR)
    assert comp.experiment.algorithm_name == algorithm
    header = (RECIPES_DIR / f"{recipe}.gin").read_text().split("include")[0]
    assert authors in header and "baseline" in header
