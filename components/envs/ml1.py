"""Meta-World ML1: one family per Meta-World environment (`ml1_push`, `ml1_reach_wall`, ...).

The setting offline meta-RL papers use: ML1's own task variations of one manipulation
environment (50 train and 50 test, drawn by `metaworld.ML1(name, seed)`: train with the seed,
test with seed + 1), the goal position hidden from the observation (zeros in its last three
entries; where the goal varies apart from anything visible, the task must be inferred from the
context's rewards), 500-step episodes that end by time limit only, the dense shaped reward in
[0, 10] per step, and Meta-World's `success` flag per step (an episode succeeds if any step
does). A task is Meta-World's random vector (`rand_vec`: the object's and the goal's initial
positions, 3 or 6 numbers). Rewards depend on simulator state that the observation does not
carry, so a transition cannot be relabeled as another task's (`reward` says so).

`ml1pub_<name>` (`ML1PublishedFamily`) is the same environment as the published offline meta-RL
studies set it up: one draw's 50 variations, 40 train / 10 test, scored against the whole dataset.

The 50 names are Meta-World's (`ML1_NAMES`, checked against the installed package by a test);
`metaworld` is imported only when a family is built, so the other families run without it.
"""

from __future__ import annotations

import functools
import gzip
import json
import pickle
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Literal

import gymnasium
import numpy as np
from gymnasium import spaces

from components.envs.family import A, EnvFamily, Task, TaskParameters, check_vector
from components.envs.task_env import TaskEnvMixin
from registry import FocalppError, register

METAWORLD_VERSION = "3.1.1"  # what the task snapshot and the datasets were made with
GYM_ID = "focalpp/MetaWorldML1-v0"
HORIZON = 500
# Meta-World 3.1.1's ML1 environments, in its own order (metaworld.ML1.ENV_NAMES)
ML1_NAMES = (
    "assembly-v3", "basketball-v3", "bin-picking-v3", "box-close-v3", "button-press-topdown-v3",
    "button-press-topdown-wall-v3", "button-press-v3", "button-press-wall-v3",
    "coffee-button-v3", "coffee-pull-v3", "coffee-push-v3", "dial-turn-v3", "disassemble-v3",
    "door-close-v3", "door-lock-v3", "door-open-v3", "door-unlock-v3", "hand-insert-v3",
    "drawer-close-v3", "drawer-open-v3", "faucet-open-v3", "faucet-close-v3", "hammer-v3",
    "handle-press-side-v3", "handle-press-v3", "handle-pull-side-v3", "handle-pull-v3",
    "lever-pull-v3", "pick-place-wall-v3", "pick-out-of-hole-v3", "pick-place-v3",
    "plate-slide-v3", "plate-slide-side-v3", "plate-slide-back-v3", "plate-slide-back-side-v3",
    "peg-insert-side-v3", "peg-unplug-side-v3", "soccer-v3", "stick-push-v3", "stick-pull-v3",
    "push-v3", "push-wall-v3", "push-back-v3", "reach-v3", "reach-wall-v3", "shelf-place-v3",
    "sweep-into-v3", "sweep-v3", "window-open-v3", "window-close-v3",
)  # fmt: skip
# ML1's task variations at seed 0, as metaworld.ML1 draws them (it takes 1-3 s per
# environment; tests/components/envs/test_ml1.py checks the snapshot against a fresh draw)
SNAPSHOT = Path(__file__).with_name("ml1_tasks.json.gz")
# A goal that moves by less than this (metres) apart from the first observation is visible
HIDDEN_GOAL_RESIDUAL = 0.005


class MetaWorldMissing(FocalppError):
    """The Meta-World package is not installed or is another version."""


def family_name(env_name: str) -> str:
    """`push-v3` -> `ml1_push` (the name a recipe and `--env` use)."""
    return "ml1_" + env_name.removesuffix("-v3").replace("-", "_")


def metaworld_module():
    """The `metaworld` package, or an error that says how to install the version we use."""
    install = (
        f'pip install "metaworld=={METAWORLD_VERSION}" (it is a dependency of focalpp: '
        'pip install -e ".[dev]" installs it)'
    )
    try:
        import metaworld
    except ImportError as e:
        raise MetaWorldMissing(
            f"the Meta-World ML1 families need the `metaworld` package, which is not "
            f"installed ({e}); {install}"
        ) from e
    return metaworld


def installed_version() -> str | None:
    try:
        return metadata.version("metaworld")
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def ml1_tasks(env_name: str, seed: int) -> tuple[tuple[tuple[float, ...], ...], ...]:
    """ML1's (train, test) random vectors of `env_name` at `seed`: the snapshot where it holds
    them for the installed version, else drawn by `metaworld.ML1` (1-3 s)."""
    if seed == 0 and installed_version() == METAWORLD_VERSION:
        stored = _snapshot()
        if stored["metaworld"] == METAWORLD_VERSION and env_name in stored["tasks"]:
            split = stored["tasks"][env_name]
            return tuple(tuple(map(tuple, split[k])) for k in ("train", "test"))
    return draw_ml1_tasks(env_name, seed)


@functools.cache
def _snapshot() -> dict:
    with gzip.open(SNAPSHOT, "rt") as f:
        return json.load(f)


def draw_ml1_tasks(env_name: str, seed: int) -> tuple[tuple[tuple[float, ...], ...], ...]:
    """ML1's (train, test) random vectors, drawn by the installed `metaworld` itself."""
    benchmark = metaworld_module().ML1(env_name, seed=seed)

    def vectors(tasks) -> tuple[tuple[float, ...], ...]:
        return tuple(tuple(map(float, pickle.loads(t.data)["rand_vec"])) for t in tasks)

    return vectors(benchmark.train_tasks), vectors(benchmark.test_tasks)


def write_snapshot(path: Path = SNAPSHOT) -> None:
    """Draw every environment's seed-0 tasks and store them (when Meta-World changes)."""
    tasks = {}
    for name in ML1_NAMES:
        train, test = draw_ml1_tasks(name, 0)
        tasks[name] = {"train": train, "test": test}
    with gzip.open(path, "wt") as f:
        json.dump({"metaworld": installed_version(), "seed": 0, "tasks": tasks}, f)


class ML1Family(EnvFamily):
    """One Meta-World ML1 environment's task variations (a subclass per environment sets
    `env_name`; `ML1_FAMILIES`).

    Args:
        seed: the ML1 seed (which task variations exist: train at `seed`, test at `seed + 1`).
        goal_radius: must stay None: Meta-World's reward is dense, its success flag is scored
            beside it.
    """

    env_name: ClassVar[str] = "reach-v3"
    gym_id = GYM_ID
    obs_dim: ClassVar[int] = 39
    act_dim: ClassVar[int] = 4
    horizon: ClassVar[int] = HORIZON
    n_train, n_test = 50, 50
    task_keys = ("rand_vec",)
    default_goal_radius = None
    # The goal and the object's start differ between tasks; rewards depend on simulator state,
    # so no other task's reward can be computed for a stored transition.
    task_changes = "goal"
    has_success = True
    normalised_score = True

    def __init__(
        self, *, seed: int = 0, goal_radius: float | Literal["default"] | None = "default"
    ):
        if goal_radius not in ("default", None):
            raise ValueError(
                f"{family_name(self.env_name)}.goal_radius = {goal_radius}: Meta-World's "
                "reward is dense (its success rate is scored beside it); leave it None"
            )
        super().__init__(seed=seed, goal_radius=None)

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        train, test = ml1_tasks(self.env_name, self.seed)
        return [{"rand_vec": list(v)} for v in (*train, *test)]

    @property
    def rand_vec_dim(self) -> int:
        return len(self.all_tasks()[0]["rand_vec"])

    def task_vector(self, task: Task) -> np.ndarray:
        return check_vector(task, "rand_vec", self.rand_vec_dim)

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        """What a task vector z should encode: the goal's position where it is hidden (it is
        in no observation), else the random vector (the object's start, visible)."""
        kind = goal_kind(self)
        if kind.hidden:
            goals = np.stack([start_state(self.env_name, tuple(t["rand_vec"]))[1] for t in tasks])
            return TaskParameters(goals, ("goal_x", "goal_y", "goal_z"), "m")
        values = self.task_vectors(tasks)
        names = tuple(f"rand_vec[{i}]" for i in range(values.shape[1]))
        return TaskParameters(values, names, "m")

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        raise FocalppError(
            f"{family_name(self.env_name)}: Meta-World's rewards depend on simulator state that "
            "a transition does not record, so a transition cannot be scored (relabeled) as "
            "another task's; use a method that does not relabel rewards (e.g. corro_model.gin "
            "instead of corro.gin)"
        )

    def gym_kwargs(self) -> dict[str, Any]:
        return {"env_name": self.env_name, "task_seed": self.seed}

    def simulator_versions(self) -> dict[str, str | None]:
        return {"metaworld": installed_version()}


class ML1PublishedFamily(ML1Family):
    """One Meta-World environment as the offline meta-RL studies that publish per-task FOCAL and
    FOCAL++ scores set it up (`ml1pub_<name>`): the 50 variations of one ML1 draw (ML1's
    training variations at `seed`, in ML1's order), the first `train_variations` for training
    and the last `test_variations` for testing (their code: `tasks[:n_train]`,
    `tasks[-n_eval:]`); goal hidden, 500-step episodes, dense reward and success as in ML1.
    The normalised score divides by the mean return of all the dataset's episodes, as theirs.

    Args:
        seed: the ML1 seed (which 50 variations exist).
        goal_radius: must stay None (see ML1Family).
        train_variations, test_variations: the split (40 / 10 as published); together at most
            the draw's 50, so that no variation is both.
    """

    variations: ClassVar[int] = 50
    n_train, n_test = 40, 10
    score_reference = "dataset"  # their score: ÷ the mean return of every dataset episode

    def __init__(
        self,
        *,
        seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        train_variations: int = 40,
        test_variations: int = 10,
    ):
        name = published_family_name(self.env_name)
        for value, what in ((train_variations, "train"), (test_variations, "test")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FocalppError(
                    f"{name}.{what}_variations = {value!r}: expected a whole number ≥ 1"
                )
        if train_variations + test_variations > self.variations:
            raise FocalppError(
                f"{name}: {train_variations} train + {test_variations} test variations = "
                f"{train_variations + test_variations}, but one ML1 draw has "
                f"{self.variations}: a variation cannot be both (published: 40 + 10)"
            )
        super().__init__(seed=seed, goal_radius=goal_radius)
        self.n_train, self.n_test = train_variations, test_variations

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        drawn, _ = ml1_tasks(self.env_name, self.seed)
        chosen = (*drawn[: self.n_train], *drawn[len(drawn) - self.n_test :])
        return [{"rand_vec": list(v)} for v in chosen]

    def gym_kwargs(self) -> dict[str, Any]:
        return {**super().gym_kwargs(), "split": (self.n_train, self.n_test)}


def published_family_name(env_name: str) -> str:
    """`push-v3` -> `ml1pub_push`."""
    return family_name(env_name).replace("ml1_", "ml1pub_", 1)


def _family_classes(
    base: type[ML1Family], name_of, prefix: str, doc: str
) -> dict[str, type[ML1Family]]:
    classes = {}
    for env_name in ML1_NAMES:
        registered = name_of(env_name)
        cls = type(
            prefix + registered.split("_", 1)[1].title().replace("_", ""),
            (base,),
            {"env_name": env_name, "__doc__": doc.format(env_name), "__module__": __name__},
        )
        classes[env_name] = register("env", registered)(cls)
    return classes


ML1_FAMILIES = _family_classes(
    ML1Family, family_name, "ML1_", "Meta-World ML1 `{}`: 50 train / 50 test goals."
)
ML1_PUBLISHED_FAMILIES = _family_classes(
    ML1PublishedFamily,
    published_family_name,
    "ML1Pub_",
    "Meta-World ML1 `{}` as published: 40 train / 10 test of one draw's 50 variations.",
)


def ml1_family_class(env_name: str, published: bool = False) -> type[ML1Family]:
    if env_name not in ML1_FAMILIES:
        known = ", ".join(family_name(n) for n in ML1_NAMES)
        raise FocalppError(f"unknown Meta-World ML1 environment {env_name!r}; available: {known}")
    return (ML1_PUBLISHED_FAMILIES if published else ML1_FAMILIES)[env_name]


def ml1_family(env_name: str, seed: int, split: Sequence[int] | None = None) -> ML1Family:
    """The family a gymnasium environment or a collection worker rebuilds: ML1's own split, or
    the published one with `split` = (train, test) variations."""
    if split is None:
        return ml1_family_class(env_name)(seed=seed)
    train, test = split
    return ml1_family_class(env_name, published=True)(
        seed=seed, train_variations=train, test_variations=test
    )


# --- the simulator ---------------------------------------------------------------------------


def simulator(env_name: str, render_mode: str | None = None):
    """A fresh Meta-World environment of `env_name` (goal hidden until a task sets it)."""
    metaworld_module()
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    return ALL_V3_ENVIRONMENTS[env_name](render_mode=render_mode)


def set_simulator_task(sim, env_name: str, rand_vec: Sequence[float]) -> None:
    """Meta-World's own `set_task` with an ML1 task (goal hidden)."""
    import metaworld
    from metaworld.env_dict import ML1_ARGS_KWARGS

    kwargs = {k: v for k, v in ML1_ARGS_KWARGS[env_name]["kwargs"].items() if k != "task_id"}
    data = dict(
        rand_vec=np.asarray(rand_vec, dtype=np.float64),
        env_cls=type(sim),
        partially_observable=True,
        **kwargs,
    )
    sim.set_task(metaworld.Task(env_name=env_name, data=pickle.dumps(data)))


@functools.cache
def _probe_simulator(env_name: str):
    return simulator(env_name)


@functools.cache
def start_state(env_name: str, rand_vec: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The first observation (goal hidden) and the goal position of a task (kept: the goal
    kind, the task parameters and the scripted donors all ask; callers must not modify)."""
    sim = _probe_simulator(env_name)
    set_simulator_task(sim, env_name, rand_vec)
    obs, _ = sim.reset()
    return np.asarray(obs, dtype=np.float64), np.asarray(sim._get_pos_goal(), dtype=np.float64)


class GoalKind:
    """Whether an environment's goal can be read from the first observation.

    `goal_spread`: the largest standard deviation of a goal coordinate over the tasks (m);
    `residual`: the largest of what an affine map of the first observation leaves of it (m);
    hidden: the goal varies by more than `HIDDEN_GOAL_RESIDUAL` apart from what is visible.
    """

    def __init__(self, goal_spread: float, residual: float):
        self.goal_spread, self.residual = goal_spread, residual
        self.hidden = residual > HIDDEN_GOAL_RESIDUAL

    def describe(self) -> str:
        if self.goal_spread <= HIDDEN_GOAL_RESIDUAL:
            return "fixed goal (only the object's start varies, visible)"
        if self.hidden:
            return (
                f"hidden goal (it varies by {self.residual * 100:.1f} cm apart from what is seen)"
            )
        return "goal follows the visible object (readable from the first observation)"


@functools.cache
def _goal_kind(env_name: str, seed: int) -> GoalKind:
    train, test = ml1_tasks(env_name, seed)
    starts = [start_state(env_name, v) for v in (*train, *test)]
    first = np.stack([s[0][:18] for s in starts])  # hand, gripper, objects (no history, no goal)
    goals = np.stack([s[1] for s in starts])
    features = np.c_[first, np.ones(len(first))]
    coefficients, *_ = np.linalg.lstsq(features, goals, rcond=None)
    residual = float((goals - features @ coefficients).std(0).max())
    return GoalKind(float(goals.std(0).max()), residual)


def goal_kind(family: ML1Family) -> GoalKind:
    """Measured over the family's 100 tasks (a reset of each, about a second)."""
    return _goal_kind(family.env_name, family.seed)


class ML1Env(TaskEnvMixin, gymnasium.Env):
    """One Meta-World ML1 environment with one task, goal hidden; the focalpp env interface.

    `info` carries `task`, `dense_reward`, `sparse_reward` (equal: the family is dense) and
    `success` (Meta-World's flag, a bool). `goal()` gives the task's goal position, hidden from
    the observation, for behaviour policies that are told it (the scripted experts). `split`
    (train, test): the published family's variations (`ML1PublishedFamily`), which a task
    given by its index refers to; None: ML1's own.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 80}

    def __init__(
        self,
        *,
        env_name: str,
        task: Task | int | None = None,
        task_seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        render_mode: str | None = None,
        split: Sequence[int] | None = None,
    ):
        self.family_cls = ml1_family_class(env_name, published=split is not None)
        self.split = None if split is None else tuple(split)
        self.env_name = env_name
        self.sim = simulator(env_name, render_mode)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, (ML1Family.obs_dim,), np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (ML1Family.act_dim,), np.float32)
        self._init_family(task, task_seed, goal_radius)

    def _init_family(self, task, task_seed, goal_radius) -> None:
        if self.split is None:
            return super()._init_family(task, task_seed, goal_radius)
        if goal_radius not in ("default", None):
            raise ValueError(f"goal_radius = {goal_radius}: Meta-World's reward is dense")
        self.family = ml1_family(self.env_name, task_seed, self.split)
        self.set_task(task)

    def _apply_task(self) -> None:
        set_simulator_task(self.sim, self.env_name, self.task["rand_vec"])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)  # Meta-World's episodes are deterministic given the task
        self._reset_task(options)
        obs, _ = self.sim.reset()
        return np.asarray(obs, dtype=np.float64), {"task": self.task_info()}

    def step(self, action: Any):
        a = self._check_action(action)
        obs, reward, _, truncated, info = self.sim.step(a.astype(np.float32))
        reward = float(reward)
        info = {
            "task": self.task_info(),
            "dense_reward": reward,
            "sparse_reward": reward,
            "success": bool(info["success"]),
        }
        return np.asarray(obs, dtype=np.float64), reward, False, bool(truncated), info

    def goal(self) -> np.ndarray:
        """The goal position the observation hides (for scripted behaviour policies)."""
        return np.asarray(self.sim._get_pos_goal(), dtype=np.float64).copy()

    def render(self):
        return self.sim.render()

    def close(self) -> None:
        self.sim.close()


if GYM_ID not in gymnasium.registry:
    gymnasium.register(id=GYM_ID, entry_point=f"{__name__}:ML1Env", max_episode_steps=HORIZON)
