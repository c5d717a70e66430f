"""Every shipped environment column and scale parses and composes with base.gin."""

from __future__ import annotations

import pytest
from gin import config_parser

from components.reports.metaworld import REFERENCES
from components.reports.paper import ROWS
from registry import compose, default_recipes_dir
from registry.columns import COLUMN_FOLDERS, columns


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
    comp = compose(recipe, env=env, scale=scale, recipes_dir=default_recipes_dir())
    assert (comp.experiment.env, comp.experiment.scale) == (env, scale)
    assert comp.sources[0] == str(recipe)
    assert comp.sources[1] == str(default_recipes_dir() / "envs" / f"{env}.gin")


def test_env_columns_name_registered_families():
    """A column is a family, or a variant that names its family (the relabeled dataset)."""
    import components.envs  # noqa: F401
    from registry import names

    variants = set(columns("envs")) - set(names("env"))
    assert variants == {"sparse_point_robot_relabeled"}
    text = (default_recipes_dir() / "envs" / "sparse_point_robot_relabeled.gin").read_text()
    assert "task_data.family = 'sparse_point_robot'" in text


RECIPES = sorted(p.stem for p in default_recipes_dir().glob("*.gin") if p.name != "base.gin")
# recipe sets, folders of recipes that import their own parts (the first edition's, opt-in)
RECIPES += sorted(f"{p.parent.name}/{p.stem}" for p in default_recipes_dir().glob("*/*.gin")
                  if p.parent.name not in COLUMN_FOLDERS)  # fmt: skip


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_composes_on_every_column_and_scale(recipe, capfd, monkeypatch):
    """Every recipe in the directory × every environment column × every scale: parsed, checked
    (types, ranges, component kinds) and resolved to its experiment, in today's names (no
    binding that moved out of `focal` is noted)."""
    from registry import renames

    monkeypatch.setattr(renames, "_noted", set())  # each moved name is noted once per process
    for env in columns("envs"):
        for scale in columns("scales"):
            comp = compose(f"{recipe}.gin", env=env, scale=scale, recipes_dir=default_recipes_dir())
            assert (comp.experiment.env, comp.experiment.scale) == (env, scale)
    assert "is now" not in capfd.readouterr().err


def test_shipped_studies_use_todays_names():
    """No study file binds a name that moved (registry/renames.py); the recipes are checked
    as they compose (no note printed, above)."""
    import re

    from registry.renames import RENAMED

    old = re.compile("|".join(rf"\b{name}\.{argument}\b" for name, argument in RENAMED))
    for path in sorted((default_recipes_dir().parent / "studies").glob("*.toml")):
        assert not old.search(path.read_text()), path


SUCCESSORS = ("corro", "corro_model", "csro", "unicorn", "unicorn_sup")  # docs/METHODS.md
# labelled variants of the paper's rows: the first edition's encoders (opt-in, recipes/
# first_edition/), FOCAL++ with DML
# (docs/DECISIONS.md §4)
VARIANTS = (
    "first_edition/focalpp_output_sum",
    "first_edition/focalpp_batchwise_softmax",
    "first_edition/focalpp_seqwise_transformer",
    "focalpp_dml",
)
BACKBONES = ("focal_iql", "focalpp_iql")  # rows on another offline learner (docs/methods/iql.md)


def test_the_paper_rows_baselines_and_successors_are_the_recipes():
    """The paper's Table 1 rows, the baselines below, the successors and the reference rows
    (the floor and ceiling of task inference) and the rows' labelled variants are exactly the
    recipe files, with the rows on another backbone."""
    expected = set(ROWS) | set(BASELINES) | set(SUCCESSORS) | set(REFERENCES) | set(VARIANTS)
    expected |= set(BACKBONES)
    assert set(RECIPES) == expected


class _Literal(config_parser.ParserDelegate):
    """Reads references and macros as text, so two bindings compare by what they say."""

    def configurable_reference(self, scoped_name, evaluate):
        return f"@{scoped_name}{'()' if evaluate else ''}"

    def macro(self, name):
        return f"%{name}"


def statements(path):
    return list(config_parser.ConfigParser(path.read_text(), _Literal()))


def bindings_of(path) -> dict:
    """(scope, selector, argument) -> value after parsing `path` and what it includes."""
    bound = {}
    for statement in statements(path):
        if isinstance(statement, config_parser.IncludeStatement):
            bound.update(bindings_of(default_recipes_dir() / statement.filename))
        elif isinstance(statement, config_parser.BindingStatement):
            bound[(statement.scope, statement.selector, statement.arg_name)] = statement.value
    return bound


@pytest.mark.parametrize("recipe", [r for r in RECIPES if r != "focal"])
def test_a_recipe_binds_only_what_differs_from_what_it_includes(recipe):
    """A row that includes another binds nothing the included one already binds to the same
    value (FOCAL, the root row, states its choices in full)."""
    path = default_recipes_dir() / f"{recipe}.gin"
    own = statements(path)
    parents = [s.filename for s in own if isinstance(s, config_parser.IncludeStatement)]
    inherited = {}
    for parent in parents:
        inherited.update(bindings_of(default_recipes_dir() / parent))
    restated = [
        f"{s.location.line_content.strip()} (line {s.location.line_num})"
        for s in own
        if isinstance(s, config_parser.BindingStatement)
        and inherited.get(
            (s.scope, s.selector, s.arg_name), inherited.get(("", s.selector, s.arg_name), object())
        )
        == s.value
    ]
    assert restated == [], f"{recipe}.gin restates what {parents} binds: {restated}"


@pytest.mark.parametrize("row", ROWS)
def test_row_recipes_compose_and_state_their_ingredients(row):
    import gin

    comp = compose(f"{row}.gin", recipes_dir=default_recipes_dir())
    assert comp.experiment.algorithm_name == "focal"
    header = (default_recipes_dir() / f"{row}.gin").read_text().split("include")[0]
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
    comp = compose(f"{recipe}.gin", recipes_dir=default_recipes_dir())
    assert comp.experiment.algorithm_name == algorithm
    header = (default_recipes_dir() / f"{recipe}.gin").read_text().split("include")[0]
    assert authors in header and "baseline" in header
