"""Every binding must configure something the run builds (registry/usage.py), and recipe files
are read file by file (registry/recipes.py): include cycles, unclosed brackets in included
files, markers of bindings that may go unused, macros."""

from __future__ import annotations

import gin
import pytest

from registry import RecipeError, RunContext, compose
from registry.columns import default_recipes_dir
from registry.gin_errors import build
from registry.parsing import _search_paths, parse_file
from registry.usage import check_used, unused_bindings
from tests.conftest import DATA


def built(tmp_path, recipe="toy_row.gin", **kwargs):
    """Compose a toy recipe and build its algorithm, as tools/run.py does before training."""
    comp = compose(recipe, recipes_dir=DATA / "recipes", **kwargs)
    context = RunContext(env="toy_env", scale="cpu", seed=0, run_dir=tmp_path)
    build(comp.experiment.algorithm, run=context)
    return comp


def test_a_run_whose_bindings_all_configure_something_passes(tmp_path):
    built(tmp_path)
    assert unused_bindings() == []


def test_a_binding_of_a_part_not_built_is_named_with_where_it_was_written(tmp_path):
    built(tmp_path, bindings=["toy_linear.scale = 3.0"])
    assert unused_bindings() == []  # toy_row builds toy_linear
    built(tmp_path, "lab_row.gin", plugins=[str(DATA / "lab_plugin.py")])
    assert unused_bindings() == []  # lab_row's included toy_linear settings are marked
    built(
        tmp_path,
        "lab_row.gin",
        plugins=[str(DATA / "lab_plugin.py")],
        bindings=["toy_linear.scale = 3.0"],
    )
    (found,) = unused_bindings()  # the mark covers the files, never the same name elsewhere
    assert found.startswith("toy_linear.scale = 3.0 (--gin_param): this run builds no toy_linear")
    assert "(its transition_encoder: @lab_cube)" in found


@pytest.mark.parametrize(
    ("binding", "why"),
    [
        ("nowhere/toy_algorithm.steps = 3", "toy_algorithm is built only unscoped, never in scope"),
        ("toy_algorithm.run = 1", "the part that builds toy_algorithm passes run itself"),
        ("UNREAD = 3", "no binding that a built part reads refers to %UNREAD"),
        ("embedding_variance.draws = 5", "embedding_variance is an analysis"),
    ],
    ids=["scope", "argument passed", "macro", "analysis not run"],
)
def test_why_a_binding_configures_nothing(binding, why, tmp_path):
    import components.evaluation.embedding_variance  # noqa: F401  (a registered analysis)

    built(tmp_path, bindings=[binding])
    (found,) = unused_bindings()
    assert found.startswith(f"{binding} (--gin_param): {why}")
    with pytest.raises(RecipeError, match="1 binding\\(s\\) configure nothing"):
        check_used()


def test_an_analysis_run_at_the_end_counts_as_built(tmp_path):
    import components.evaluation.embedding_variance  # noqa: F401

    built(tmp_path, bindings=["embedding_variance.draws = 5"])
    assert unused_bindings(later=["embedding_variance"]) == []


def test_a_macro_used_by_a_binding_that_is_read_counts(tmp_path):
    built(tmp_path, bindings=["STEPS = 4", "toy_algorithm.steps = %STEPS"])
    assert unused_bindings() == []


def test_an_undefined_macro_is_refused_when_composed(tmp_path):
    with pytest.raises(RecipeError, match=r"refers to the macro %STEP.*Did you mean: %STEPS\?"):
        compose(
            "toy_row.gin",
            bindings=["STEPS = 4", "toy_algorithm.steps = %STEP"],
            recipes_dir=DATA / "recipes",
        )


# --- recipe files, read one by one ---------------------------------------------------------


def write(tmp_path, **files: str):
    for name, text in files.items():
        (tmp_path / f"{name}.gin").write_text(text)
    return tmp_path / f"{next(iter(files))}.gin"


def test_an_include_cycle_names_its_chain(tmp_path):
    top = write(tmp_path, a="include 'b.gin'\n", b="include 'c.gin'\n", c="include 'a.gin'\n")
    with pytest.raises(RecipeError, match=r"include cycle: a\.gin -> b\.gin -> c\.gin -> a\.gin"):
        compose(top, recipes_dir=DATA / "recipes")


def test_an_unclosed_bracket_in_an_included_file_names_that_file_and_line(tmp_path):
    top = write(
        tmp_path, a="include 'b.gin'\n", b="include 'toy_row.gin'\ntoy_linear.scale = (2.0,\n"
    )
    with pytest.raises(RecipeError) as caught:
        compose(top, recipes_dir=DATA / "recipes")
    message = str(caught.value)
    assert f"{tmp_path / 'b.gin'} line 2: the bracket '(' opened here is never closed" in message
    assert f"(included from {top} line 1)" in message


def test_a_missing_include_names_the_directories_searched(tmp_path):
    top = write(tmp_path, a="include 'nothing.gin'\n")
    with pytest.raises(RecipeError, match=r"a\.gin line 1 includes 'nothing\.gin', which is not"):
        compose(top, recipes_dir=DATA / "recipes")


def test_an_include_is_found_beside_the_file_that_includes_it(tmp_path):
    (tmp_path / "rows").mkdir()
    write(tmp_path / "rows", b="include 'toy_row.gin'\ntoy_algorithm.tag = 'b'\n")
    write(tmp_path / "rows", c="include 'b.gin'\n")  # b.gin is beside c.gin only
    top = write(tmp_path, a="include 'rows/c.gin'\n")
    compose(top, recipes_dir=DATA / "recipes")
    assert gin.query_parameter("toy_linear.scale") == 2.0  # toy_row.gin was read through b.gin


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("# may go unused: toy_linaer", "Did you mean: toy_linear?"),
        ("# may go unused toy_linear", "cannot read"),
        ("# may go unused: toy_linear.nothing", "neither a configurable nor an argument"),
        ("# overrides: toy_linaer.scale", "`# overrides:` names 'toy_linaer.scale'"),
        ("# overrides toy_linear.scale", "cannot read"),
    ],
)
def test_a_marker_that_names_nothing_is_refused(line, message, tmp_path):
    top = write(tmp_path, a=f"include 'toy_row.gin'\n{line}\n")
    with pytest.raises(RecipeError, match=message):
        compose(top, recipes_dir=DATA / "recipes")


def test_a_marker_may_name_one_argument(tmp_path):
    top = write(tmp_path, a="include 'toy_row.gin'\n# may go unused: toy_square.x\n")
    with pytest.raises(RecipeError, match="neither a configurable"):  # toy_square has no x
        compose(top, recipes_dir=DATA / "recipes")
    top = write(tmp_path, a="include 'toy_row.gin'\n# may go unused: toy_linear.scale\n")
    compose(top, recipes_dir=DATA / "recipes")


@pytest.mark.parametrize("recipe", ["focalpp.gin", "mbml.gin", "corro_model.gin"])
def test_reading_file_by_file_gives_the_configuration_gin_gives(recipe):
    """The same parsed configuration (and so the same fingerprint of runs made before) as
    gin's own parse_config_file."""
    comp = compose(recipe, env="walker_params", scale="paper", seed=0, device="cpu")
    ours = gin.config_str()
    gin.clear_config()
    with _search_paths(default_recipes_dir(), default_recipes_dir()):
        for source in comp.sources[:-1]:
            gin.parse_config_file(source)
    gin.parse_config(
        [
            "experiment.env = 'walker_params'",
            "experiment.scale = 'paper'",
            "experiment.seed = 0",
            "experiment.device = 'cpu'",
        ]
    )
    assert ours == gin.config_str()


def test_parse_file_reads_a_single_file(tmp_path):
    top = write(tmp_path, a="import toy_components\ntoy_linear.scale = 4.0\n")
    gin.clear_config()
    parse_file(top)
    assert gin.query_parameter("toy_linear.scale") == 4.0
