from __future__ import annotations

import shutil

import gin
import pytest
import toy_components

from registry import FocalppError, RecipeError, compose, get, operative_config
from registry.experiment import experiment
from registry.gin_errors import build
from tests.conftest import DATA


def test_gin_selects_and_binds_a_registered_component(toy_recipes):
    comp = compose("toy_row.gin", recipes_dir=toy_recipes)
    assert comp.experiment.algorithm is toy_components.ToyAlgorithm
    assert comp.experiment.algorithm_name == "toy_algorithm"
    assert gin.query_parameter("toy_algorithm.encoder").selector == "toy_linear"
    linear = toy_components.ToyLinear()
    assert (linear.scale, linear.shift) == (2.0, 10.0)


def test_includes_and_overrides_compose_in_documented_order(toy_recipes):
    # base (shift 1) < row (scale 2) < env (shift 10 / 20) < scale (shift 30) < bindings
    compose("toy_row.gin", recipes_dir=toy_recipes)
    assert gin.query_parameter("toy_linear.shift") == 10.0  # env column beats base
    assert gin.query_parameter("toy_algorithm.tag") == "row"  # row beats base
    compose("toy_row.gin", env="other_env", recipes_dir=toy_recipes)
    assert gin.query_parameter("toy_algorithm.tag") == "other_env"  # env column beats row
    comp = compose("toy_row.gin", env="toy_env", scale="big", recipes_dir=toy_recipes)
    assert gin.query_parameter("toy_linear.shift") == 30.0  # scale beats env column
    comp = compose("toy_row.gin", env="other_env", scale="big", recipes_dir=toy_recipes)
    assert gin.query_parameter("toy_linear.shift") == 40.0  # scale's env-specific part is last
    assert comp.sources[1].endswith("envs/other_env.gin")
    assert comp.sources[2].endswith("scales/big.gin")
    assert comp.sources[3].endswith("scales/big/other_env.gin")
    comp = compose(
        "toy_row.gin",
        scale="big",
        seed=7,
        bindings=["toy_linear.shift = 99.0"],
        recipes_dir=toy_recipes,
    )
    assert gin.query_parameter("toy_linear.shift") == 99.0  # bindings beat everything
    assert (comp.experiment.env, comp.experiment.scale, comp.experiment.seed) == (
        "toy_env",
        "big",
        7,
    )


def test_operative_config_round_trips(toy_recipes, tmp_path):
    comp = compose("toy_row.gin", scale="big", seed=3, recipes_dir=toy_recipes)
    algo = build(comp.experiment.algorithm, run=None)
    before = (
        type(algo.encoder).__name__,
        algo.encoder.scale,
        algo.encoder.shift,
        algo.steps,
        algo.tag,
    )
    config = operative_config()
    saved = tmp_path / "config.gin"
    saved.write_text(config)

    gin.clear_config()
    gin.parse_config_file(str(saved))
    exp = build(experiment)
    algo2 = build(exp.algorithm, run=None)
    after = (
        type(algo2.encoder).__name__,
        algo2.encoder.scale,
        algo2.encoder.shift,
        algo2.steps,
        algo2.tag,
    )
    assert after == before == ("ToyLinear", 2.0, 30.0, 5, "row")
    assert (exp.env, exp.scale, exp.seed) == ("toy_env", "big", 3)
    assert operative_config() == config


def test_plugin_file_outside_the_package_is_selected_by_a_recipe(toy_recipes):
    comp = compose("lab_row.gin", plugins=[str(DATA / "lab_plugin.py")], recipes_dir=toy_recipes)
    algo = build(comp.experiment.algorithm, run=None)
    assert type(algo.encoder).__name__ == "LabCube"
    assert algo.encoder(2.0) == 4.0
    # loading the same file again is a no-op, not a duplicate registration
    compose("lab_row.gin", plugins=[str(DATA / "lab_plugin.py")], recipes_dir=toy_recipes)


def test_a_plugin_file_also_imported_by_a_recipe_is_loaded_once(toy_recipes, tmp_path):
    """`--plugin my_file.py` plus a recipe line `import my_file`: one module, one registration."""
    (tmp_path / "twice_loaded.py").write_text(
        "from registry import register\n"
        "@register('transition_encoder', 'twice_loaded_encoder')\n"
        "class TwiceLoaded:\n    pass\n"
    )
    recipe = tmp_path / "row.gin"
    recipe.write_text((toy_recipes / "toy_row.gin").read_text() + "import twice_loaded\n")
    compose(recipe, plugins=[str(tmp_path / "twice_loaded.py")], recipes_dir=toy_recipes)
    assert get("transition_encoder", "twice_loaded_encoder").__module__ == "twice_loaded"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"recipe": "no_such.gin"}, r"recipe file not found: no_such.gin.*toy_row.gin"),
        (
            {"recipe": "toy_row.gin", "env": "toy_evn"},
            r"unknown --env 'toy_evn'.*Did you mean: toy_env",
        ),
        (
            {"recipe": "toy_row.gin", "scale": "huge"},
            r"unknown --scale 'huge'.*Available: big, cpu",
        ),
        (
            {"recipe": "toy_row.gin", "bindings": ["toy_algorithm.encoder = @toy_lineer"]},
            r"unknown component or configurable 'toy_lineer'.*Did you mean: toy_linear",
        ),
        (
            {"recipe": "toy_row.gin", "bindings": ["toy_linear.shfit = 1.0"]},
            r"'toy_linear' has no argument 'shfit'.*Did you mean: shift.*Its arguments: scale, shift",  # noqa: E501
        ),
        (
            {"recipe": "toy_row.gin", "bindings": ["nothing_here.x = 1"]},
            r"unknown component or configurable 'nothing_here'",
        ),
        (
            {"recipe": "toy_row.gin", "bindings": ["experiment.env = 'other_env'"]},
            r"choose them with --env and --scale",
        ),
        (
            {"recipe": "toy_row.gin", "bindings": ["experiment.algorithm = @toy_linear"]},
            r"must be a registered algorithm, got transition_encoder 'toy_linear'",
        ),
        (
            {"recipe": "base.gin"},
            r"the recipe chooses no algorithm.*toy_algorithm",
        ),
        (
            {"recipe": "toy_row.gin", "plugins": ["no_such_module_xyz"]},
            r"plugin module 'no_such_module_xyz' not found",
        ),
    ],
)
def test_bad_input_is_a_clear_recipe_error(toy_recipes, kwargs, message):
    recipe = kwargs.pop("recipe")
    with pytest.raises(FocalppError, match=message):
        compose(recipe, recipes_dir=toy_recipes, **kwargs)


def test_syntax_error_names_file_and_line(tmp_path, toy_recipes):
    bad = tmp_path / "bad.gin"
    bad.write_text("include 'base.gin'\n\ntoy_linear.scale = 1 2\n")
    with pytest.raises(RecipeError, match=rf"gin syntax error in {bad} line 3"):
        compose(bad, recipes_dir=toy_recipes)
    unclosed = tmp_path / "unclosed.gin"
    unclosed.write_text("include 'base.gin'\ntoy_linear.scale = (1,\n")
    with pytest.raises(RecipeError, match=r"gin syntax error in .*unclosed.gin"):
        compose(unclosed, recipes_dir=toy_recipes)


def test_missing_include_is_a_recipe_error(tmp_path, toy_recipes):
    bad = tmp_path / "missing_include.gin"
    bad.write_text("include 'not_there.gin'\n")
    with pytest.raises(RecipeError, match=r"not_there.gin"):
        compose(bad, recipes_dir=toy_recipes)


def test_bad_import_in_recipe_is_a_recipe_error(tmp_path, toy_recipes):
    bad = tmp_path / "bad_import.gin"
    bad.write_text("import no_such_module_abc\n")
    with pytest.raises(RecipeError, match=r"no_such_module_abc.*--plugin"):
        compose(bad, recipes_dir=toy_recipes)


def test_a_column_without_a_scale_file_of_its_own_reads_its_scale_group():
    """The point robots share scales/cpu/point_robots.gin (`# scale group: point_robots`), the
    MuJoCo families scales/<scale>/mujoco.gin; a family with a file of its own reads that."""
    import gin

    comp = compose("focal.gin", env="point_robot_wind", scale="cpu")
    assert any(s.endswith("scales/cpu/point_robots.gin") for s in comp.sources), comp.sources
    assert gin.query_parameter("brac.lr") == 3e-3  # point_robots.gin's, not the column's 1e-3
    comp = compose("focal.gin", env="walker_params", scale="cpu")
    assert any(s.endswith("scales/cpu/mujoco.gin") for s in comp.sources), comp.sources
    comp = compose("focal.gin", env="sparse_cheetah_vel", scale="paper")
    assert any(s.endswith("scales/paper/sparse_cheetah_vel.gin") for s in comp.sources)
    assert not any(s.endswith("scales/paper/mujoco.gin") for s in comp.sources)


def test_a_column_naming_two_scale_groups_is_refused(tmp_path):
    from registry.recipes import scale_group

    column = tmp_path / "two.gin"
    column.write_text("# scale group: point_robots\n# scale group: mujoco\n")
    with pytest.raises(RecipeError, match="names 2 scale groups"):
        scale_group(column)
    column.write_text("# scale group: mujoco   (a note)\n")
    assert scale_group(column) == "mujoco"


def test_a_binding_may_include_an_overlay_from_the_recipes_directory(toy_recipes, tmp_path):
    """A study's variant (or --gin_param) adds a whole overlay with one `include` line, found in
    the recipes directory as a recipe's includes are; its bindings win over the recipe's."""
    recipes = tmp_path / "recipes"
    shutil.copytree(toy_recipes, recipes)
    (recipes / "overlays").mkdir()
    (recipes / "overlays" / "bigger.gin").write_text("toy_linear.scale = 5.0\n")
    compose("toy_row.gin", bindings=["include 'overlays/bigger.gin'"], recipes_dir=recipes)
    assert gin.query_parameter("toy_linear.scale") == 5.0
    with pytest.raises(RecipeError, match=r"--gin_param includes 'overlays/none.gin'"):
        compose("toy_row.gin", bindings=["include 'overlays/none.gin'"], recipes_dir=recipes)
