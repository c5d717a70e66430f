"""A study: recipes × environments × seeds at one scale, read from a small TOML file.

    name = "table1-point-robots"
    recipes = ["focal.gin", "focalpp.gin"]      # under recipes/, or paths
    envs = ["sparse_point_robot", "point_robot_wind"]
    seeds = [0, 1, 2]
    scale = "cpu"                                # optional, default "cpu"
    bindings = ["loop.steps = 6000"]            # optional: --gin_param for every run
    plugins = []                                 # optional: --plugin for every run
    retries = 1                                  # optional: re-runs of a run that died
    numerics = "portable"                        # optional: portable (default: the same bits
                                                 # on every x86 CPU, one thread) or free
    threads_per_run = 1                          # optional: torch threads of each run (free)
    seeds_per_process = 1                        # optional: K > 1 trains each K seeds of a
                                                 # recipe in one process (tools/run.py --seeds)
    dataset_shards = 0                           # optional: build each env's dataset in K
                                                 # task shards on the backend first (K ≥ 2)
    analyses = ["embedding_variance"]            # optional: analyses of each finished run
    [variants]                                   # optional: named sets of extra bindings;
    "r0.2" = ["relabeled.goal_radius = -0.2"]   # every run is repeated for each variant

The same file runs on every backend (tools/sweep.py --backend local|ray).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from registry import FocalppError, RecipeError, default_recipes_dir, get, load_plugin
from registry.columns import check_group_member, column_file, find_recipe
from registry.constraints import check_seed

MAX_RETRIES = 100  # re-runs of a run that died: more is a typo, not a plan
MAX_THREADS = 1024  # torch threads of one run


class StudyError(FocalppError):
    """A study file that cannot be read or asks for something impossible."""


@dataclass(frozen=True)
class CollectSpec:
    """One dataset job of a study: building shard `shard` = (i, K) of an environment's dataset
    (`components.data.collect.collect_shard`), or merging its K shards (`merge` = K)."""

    name: str
    env: str
    scale: str
    bindings: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None
    merge: int | None = None
    numerics: str = "portable"  # a dataset is built with portable numerics

    def call(self) -> tuple[str, dict[str, Any]]:
        """The library call a worker makes for this job, and its arguments."""
        choices = {"env": self.env, "scale": self.scale, "bindings": list(self.bindings)}
        if self.shard:
            shard = {"index": self.shard[0], "count": self.shard[1], "numerics": self.numerics}
            return "collect_shard", {**choices, **shard}
        return "collect", {**choices, "merge": self.merge}


@dataclass(frozen=True)
class AnalyzeSpec:
    """Analyses of one finished run (`components.experiment.analyse`)."""

    name: str
    run_dir: str
    analyses: tuple[str, ...]
    plugins: tuple[str, ...] = ()  # the study's plugins: an analysis may be one of theirs
    numerics: str = "portable"  # the study's: analyses compute with the runs' numerics

    def call(self) -> tuple[str, dict[str, Any]]:
        """The library call a worker makes for this job, and its arguments."""
        arguments = {"analyses": list(self.analyses), "plugins": list(self.plugins)}
        return "analyse", {"run_dir": self.run_dir, **arguments}


@dataclass(frozen=True)
class RunSpec:
    """One run of a study: what `components.experiment.run` is asked for (as `tools/run.py`
    would be), and its directory's name."""

    name: str
    recipe: str
    env: str
    seed: int
    scale: str
    bindings: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    variant: str = ""
    numerics: str = "portable"

    @property
    def members(self) -> tuple[RunSpec, ...]:
        return (self,)

    def call(self, out: str, seeds: Sequence[int] | None = None) -> tuple[str, dict[str, Any]]:
        """The library call that starts this run in `out` (with `seeds`: those seeds of a group
        trained together in one process, `out` naming each one's directory with `{seed}`)."""
        return "run", {
            "recipe": self.recipe,
            "env": self.env,
            "scale": self.scale,
            "seeds": list(seeds or (self.seed,)),
            "grouped": seeds is not None,
            "out": out,
            "numerics": self.numerics,
            "bindings": list(self.bindings),
            "plugins": list(self.plugins),
            "label": self.variant,
        }


@dataclass(frozen=True)
class SeedGroupSpec:
    """Runs of one recipe, environment and variant that differ only in their seed, trained in
    one process as one seed-batched model (`tools/run.py --seeds`); each keeps its own run
    directory, named as its single run's."""

    name: str
    members: tuple[RunSpec, ...]

    @property
    def numerics(self) -> str:
        return self.members[0].numerics

    def call(self, runs_dir: Path, seeds: Sequence[int] | None = None) -> tuple[str, dict]:
        """The library call that starts the group's `seeds` (default: all) together."""
        seeds = list(seeds or [m.seed for m in self.members])
        return self.members[0].call(self.out_template(runs_dir), seeds)

    def out_template(self, runs_dir: Path) -> str:
        """The group's directories, `{seed}` standing for the seed."""
        first = self.members[0]
        return str(runs_dir / f"{first.name.removesuffix(f'-s{first.seed}')}-s{{seed}}")


def command_line(spec: RunSpec | SeedGroupSpec, runs_dir: Path) -> str:
    """The `tools/run.py` command that starts the run (or the group of seeds) `spec` by hand,
    into the study's `runs_dir`: what a study's dry run shows."""
    if isinstance(spec, SeedGroupSpec):
        arguments = spec.call(runs_dir)[1]
    else:
        arguments = spec.call(str(runs_dir / spec.name))[1]
    seeds = ",".join(map(str, arguments["seeds"]))
    words = ["--recipe", arguments["recipe"], "--env", arguments["env"]]
    words += ["--scale", arguments["scale"], "--seeds" if arguments["grouped"] else "--seed", seeds]
    words += ["--numerics", arguments["numerics"]]
    words += ["--label", arguments["label"]] if arguments["label"] else []
    words += [w for b in arguments["bindings"] for w in ("--gin_param", b)]
    words += [w for p in arguments["plugins"] for w in ("--plugin", p)]
    words += ["--out", arguments["out"]]
    return f"tools/run.py {shlex.join(words)}"  # shown to a user, never started


@dataclass(frozen=True)
class Study:
    name: str
    recipes: tuple[str, ...]
    envs: tuple[str, ...]
    seeds: tuple[int, ...]
    scale: str = "cpu"
    bindings: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    retries: int = 1
    numerics: str = "portable"
    threads_per_run: int = 1
    seeds_per_process: int = 1
    dataset_shards: int = 0
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    analyses: tuple[str, ...] = ()
    record: str | None = None  # its compact record, a folder under results/
    source: str = field(default="", compare=False)

    def dataset_jobs(self, env: str) -> tuple[list[CollectSpec], CollectSpec]:
        """The shard builds of `env`'s dataset and the merge that follows them."""
        k = self.dataset_shards
        shards = [
            CollectSpec(f"dataset-{env}-{i}-of-{k}", env, self.scale, self.bindings, shard=(i, k))
            for i in range(k)
        ]
        return shards, CollectSpec(f"dataset-{env}-merge", env, self.scale, self.bindings, merge=k)

    def shard_bindings(self) -> tuple[str, ...]:
        """What a run binds to read the dataset this study built in shards."""
        return (f"task_data.shards = {self.dataset_shards}",) if self.dataset_shards else ()

    def runs(self) -> list[RunSpec]:
        """Every run, environment-major, then variant, then recipe, then seed: the order of the
        index and of the runs' start, so that a study stopped part-way has every recipe of its
        first environments to compare rather than its first recipe everywhere."""
        variants = self.variants or {"": ()}
        return [
            RunSpec(
                name=f"{Path(recipe).stem}-{env}{f'-{variant}' if variant else ''}-s{seed}",
                recipe=recipe,
                env=env,
                seed=seed,
                scale=self.scale,
                bindings=(*self.bindings, *self.shard_bindings(), *extra),
                plugins=self.plugins,
                variant=variant,
                numerics=self.numerics,
            )
            for env in self.envs
            for variant, extra in variants.items()
            for recipe in self.recipes
            for seed in self.seeds
        ]

    def jobs(self) -> list[RunSpec | SeedGroupSpec]:
        """What the backend executes: each run, or with `seeds_per_process` = K each K
        consecutive seeds of a recipe, environment and variant as one job."""
        runs, k = self.runs(), self.seeds_per_process
        if k <= 1:
            return list(runs)
        jobs: list[RunSpec | SeedGroupSpec] = []
        n = len(self.seeds)
        for start in range(0, len(runs), n):  # runs() is seed-minor: one block per row
            block = runs[start : start + n]
            for i in range(0, n, k):
                members = tuple(block[i : i + k])
                first, last = members[0], members[-1]
                stem = first.name.removesuffix(f"-s{first.seed}")
                jobs.append(SeedGroupSpec(f"{stem}-s{first.seed}-{last.seed}", members))
        return jobs

    def check(self) -> None:
        """Every plugin loads, and every recipe, environment column, scale and analysis (built
        in or from a plugin) exists, before any run."""
        import components.evaluation.analyses

        for plugin in self.plugins:
            load_plugin(plugin)
        for name in self.analyses:
            get("analysis", name)  # raises, with suggestions
        for recipe in self.recipes:
            find_recipe(recipe, default_recipes_dir())  # raises, with suggestions
        import components.envs  # noqa: F401  (registers the families, the groups' too)

        for column, values in (("envs", self.envs), ("scales", (self.scale,))):
            for value in values:  # resolved as tools/run.py resolves --env and --scale
                try:
                    path = column_file(column, value, default_recipes_dir())
                    if path.parent.name == "groups":  # `ml1_hammer` reads its group's column
                        check_group_member(value)
                except RecipeError as e:
                    raise StudyError(f"{self.source}: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "recipes": list(self.recipes),
            "envs": list(self.envs),
            "seeds": list(self.seeds),
            "scale": self.scale,
            "bindings": list(self.bindings),
            "plugins": list(self.plugins),
            "retries": self.retries,
            "numerics": self.numerics,
            "threads_per_run": self.threads_per_run,
            "seeds_per_process": self.seeds_per_process,
            "dataset_shards": self.dataset_shards,
            "variants": {k: list(v) for k, v in self.variants.items()},
            "analyses": list(self.analyses),
        }


REQUIRED = {"name": str, "recipes": list, "envs": list, "seeds": list}
KIND_WORDS = {str: "a string", list: "a list", int: "a whole number", dict: "a table"}
ITEM_WORDS = {str: "strings", int: "whole numbers"}
OPTIONAL = {
    "scale": str,
    "bindings": list,
    "plugins": list,
    "retries": int,
    "numerics": str,
    "threads_per_run": int,
    "seeds_per_process": int,
    "dataset_shards": int,
    "variants": dict,
    "analyses": list,
    "record": str,
}


def load_study(path: Path) -> Study:
    """Read and check a study file; every problem names the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise StudyError(f"study file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise StudyError(f"{path} is not valid TOML: {e}") from e
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise StudyError(
            f"{path}: unknown key(s) {', '.join(unknown)}; a study has "
            f"{', '.join([*REQUIRED, *OPTIONAL])}"
        )
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key not in raw:
            if key in REQUIRED:
                raise StudyError(f"{path}: missing `{key}` ({KIND_WORDS[kind]})")
            continue
        value = raw[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise StudyError(
                f"{path}: `{key}` must be {KIND_WORDS[kind]}, got {type(value).__name__} {value!r}"
            )
    for key in ("recipes", "envs", "bindings", "plugins", "analyses"):
        _check_items(path, key, raw.get(key, []), str)
    _check_items(path, "seeds", raw["seeds"], int)
    for key in ("recipes", "envs", "seeds"):
        if not raw[key]:
            raise StudyError(f"{path}: `{key}` is empty; list at least one")
    for key in ("recipes", "envs", "seeds", "plugins", "analyses"):
        if len(set(raw.get(key, []))) != len(raw.get(key, [])):
            raise StudyError(f"{path}: `{key}` lists an entry twice: {raw[key]}")
    for seed in raw["seeds"]:
        try:
            check_seed(seed, "seed")
        except FocalppError as e:
            raise StudyError(f"{path}: `seeds` lists {e}") from None
    if not re.fullmatch(r"[\w.-]+", raw["name"]):
        raise StudyError(
            f"{path}: `name` {raw['name']!r} must be a plain name (letters, digits, . _ -)"
        )
    for key, low, high in (("retries", 0, MAX_RETRIES), ("threads_per_run", 1, MAX_THREADS)):
        value = raw.get(key, low)
        if not low <= value <= high:
            raise StudyError(f"{path}: `{key}` = {value}: expected {low} to {high:,}")
    mode = raw.get("numerics", "portable")
    if mode not in ("portable", "free"):
        raise StudyError(f"{path}: `numerics` {mode!r}: expected 'portable' or 'free'")
    if mode == "portable" and raw.get("threads_per_run", 1) != 1:
        raise StudyError(
            f"{path}: `threads_per_run` = {raw['threads_per_run']} with portable numerics, which "
            "run one thread per process (a thread count changes the bits): drop it, or set "
            "numerics = 'free'"
        )
    if raw.get("seeds_per_process", 1) < 1:
        raise StudyError(f"{path}: `seeds_per_process` must be ≥ 1 (1: one run per process)")
    if raw.get("dataset_shards", 0) < 0 or raw.get("dataset_shards", 0) == 1:
        raise StudyError(f"{path}: `dataset_shards` must be 0 (no sharding) or ≥ 2")
    for name, extra in raw.get("variants", {}).items():
        if not re.fullmatch(r"[\w.]+", name):
            raise StudyError(f"{path}: variant name {name!r} must be letters, digits, . or _")
        if not isinstance(extra, list):
            raise StudyError(f"{path}: variant {name!r} must list bindings, got {extra!r}")
        _check_items(path, f"variants.{name}", extra, str)
    record = raw.get("record")
    if record is not None and (
        not re.fullmatch(r"[\w.-]+(/[\w.-]+)*", record) or ".." in record.split("/")
    ):
        raise StudyError(
            f"{path}: `record` {record!r} must be a folder under results/ (e.g. "
            "'paper_blocks/coupled'), not a path out of it"
        )
    stems = [Path(r).stem for r in raw["recipes"]]
    if len(set(stems)) != len(stems):
        raise StudyError(f"{path}: two recipes share a file name, so their runs would collide")
    return Study(
        name=raw["name"],
        recipes=tuple(raw["recipes"]),
        envs=tuple(raw["envs"]),
        seeds=tuple(raw["seeds"]),
        scale=raw.get("scale", "cpu"),
        bindings=tuple(raw.get("bindings", ())),
        plugins=tuple(raw.get("plugins", ())),
        retries=raw.get("retries", 1),
        numerics=mode,
        threads_per_run=raw.get("threads_per_run", 1),
        seeds_per_process=raw.get("seeds_per_process", 1),
        dataset_shards=raw.get("dataset_shards", 0),
        variants={k: tuple(v) for k, v in raw.get("variants", {}).items()},
        analyses=tuple(raw.get("analyses", ())),
        record=record,
        source=str(path),
    )


def _check_items(path: Path, key: str, items: list, kind: type) -> None:
    bad = [v for v in items if not isinstance(v, kind) or isinstance(v, bool)]
    if bad:
        raise StudyError(f"{path}: `{key}` must list {ITEM_WORDS[kind]}, got {bad[0]!r}")


def check_record_folder(study: Study, records: Path | None, results: Path, studies: Path) -> None:
    """`--records` is the study's own record wherever it lies under `results`: the folder its
    file names (`record`), or, where it names none, a folder no other study in `studies` names,
    so that one study's runs never join another's record. A folder outside `results` (a scratch
    copy) is the caller's."""
    if records is None:
        return
    try:
        folder = records.resolve().relative_to(results.resolve()).as_posix()
    except ValueError:
        return
    if folder == ".":
        raise StudyError(
            f"--records {records}: that is the results folder itself; give the study's own "
            "folder under it (results/<study>)"
        )
    if study.record is not None and folder != study.record:
        raise StudyError(
            f"--records {records}: {study.source} records into results/{study.record}, not "
            f"results/{folder}; give that folder (or a copy outside results/ to try it)"
        )
    if study.record is None:
        owners = [p for p in sorted(studies.glob("*.toml")) if _record_of(p) == folder]
        if owners:
            raise StudyError(
                f"--records {records}: that folder is the record of {studies.name}/"
                f"{owners[0].name}, not of "
                f"{study.source}; this study's runs would join another study's record. Give "
                "the study a folder of its own (and a `record` line naming it)"
            )


def _record_of(path: Path) -> str | None:
    """The `record` a study file names, or None (a file that does not parse names none)."""
    try:
        record = tomllib.loads(path.read_text()).get("record")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return record if isinstance(record, str) else None


def check_products(kept: list[dict], numerics: str, records: Path | None) -> None:
    """New runs of portable numerics join a record only where its portable runs computed their
    matrix products as this code does (numpy's OpenBLAS, components/products.py): a record made
    before trained on MKL's, another build, which its commit still reproduces."""
    if numerics != "portable":
        return
    for run in kept:
        ran = run.get("numerics") or {}
        if ran.get("mode") == "portable" and ran.get("products", "mkl") != "openblas":
            commit = str(run.get("commit") or "unknown")[:7]
            raise StudyError(
                f"{records} holds runs of portable numerics whose matrix products were MKL's "
                f"({run['run']}, commit {commit}); this code computes them with numpy's OpenBLAS "
                "(docs/NUMERICS.md), so new runs would be another build beside them. Run the "
                f"study from a worktree at the record's commit (git worktree add DIR {commit}), "
                "or record it in another folder"
            )


def check_recorded(kept: list[dict], runs: list[RunSpec], records: Path | None) -> None:
    """A run of the record counts as this study's run of the same name only where it was
    trained with the study's choices for it (recipe, environment, scale, seed, variant, bindings,
    plugins, numerics); a record's run trained otherwise is refused, never counted as done."""
    specs = {spec.name: spec for spec in runs}
    for run in kept:
        spec = specs.get(run["run"])
        if spec is None:
            continue
        recorded = {
            "recipe": Path(str(run.get("recipe"))).stem,
            "env": run.get("env"),
            "scale": run.get("scale"),
            "seed": run.get("seed"),
            "variant": run.get("label") or "",
            "bindings": list(run.get("bindings") or []),
            "plugins": [_plugin(p) for p in run.get("plugins") or []],
            "numerics": (run.get("numerics") or {}).get("mode", "free"),
        }
        wanted = {
            "recipe": Path(spec.recipe).stem,
            "env": spec.env,
            "scale": spec.scale,
            "seed": spec.seed,
            "variant": spec.variant,
            "bindings": list(spec.bindings),
            "plugins": [_plugin(p) for p in spec.plugins],
            "numerics": spec.numerics,
        }
        differ = [k for k in wanted if recorded[k] != wanted[k]]
        if differ:
            said = "; ".join(f"{k} {recorded[k]!r} there, {wanted[k]!r} here" for k in differ)
            hint = (
                ' (a record made before portable numerics: set numerics = "free" in the study '
                "to go on with it)"
                if differ == ["numerics"] and recorded["numerics"] == "free"
                else ""
            )
            raise StudyError(
                f"{records} holds a run {run['run']!r} trained otherwise than this study's run of "
                f"that name ({said}): it is not this study's run, so it cannot count as done. "
                f"Record the study in another folder, or remove that run from the record{hint}"
            )


def _plugin(plugin: str) -> str:
    """A plugin as compared: a file by its name (a record keeps its absolute path)."""
    return Path(plugin).name if str(plugin).endswith(".py") else plugin
