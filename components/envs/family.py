"""What every meta-environment family provides: tasks, a pure reward, and environments.

A family is a registered component of kind `env` (e.g. `sparse_point_robot`). It knows its task
distribution (a deterministic train/test split from a seed), the JSON form of a task, a numeric
task vector for batched reward functions, and how to make one gymnasium environment per task or
one batched environment over many tasks.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np

from components.envs.sparse import paper_sparsify, sparsify
from registry.constraints import check_seed

A = TypeVar("A")  # numpy array or torch tensor

Task = dict[str, Any]


@dataclass(frozen=True)
class TaskParameters:
    """The parameters of N tasks in their own units: values [N, P], a name per column."""

    values: np.ndarray
    names: tuple[str, ...]
    unit: str


@dataclass(frozen=True)
class TaskSplit:
    """Train and test tasks of one family and seed, as JSON-serialisable dicts."""

    train: tuple[Task, ...]
    test: tuple[Task, ...]

    def to_json(self) -> str:
        return json.dumps({"train": list(self.train), "test": list(self.test)})

    @classmethod
    def from_json(cls, text: str) -> TaskSplit:
        data = json.loads(text)
        return cls(tuple(data["train"]), tuple(data["test"]))


class EnvFamily(ABC):
    """Base of the six families. Subclasses set the class constants and the task methods.

    Args:
        seed: seed of the task distribution (which tasks exist and how they split).
        goal_radius: g of the sparse reward; None for a dense family; "default" takes the
            family's value from the paper's appendix table (`default_goal_radius`).
    """

    gym_id: ClassVar[str]
    obs_dim: ClassVar[int]
    act_dim: ClassVar[int]
    horizon: ClassVar[int]
    n_train: ClassVar[int]
    n_test: ClassVar[int]
    task_keys: ClassVar[tuple[str, ...]]
    default_goal_radius: ClassVar[float | None] = None
    task_changes: ClassVar[str] = "reward"  # or "dynamics": what differs between tasks
    test_is_train: ClassVar[bool] = False  # Fwd-Back: only two directions exist (DECISIONS §1)
    # How the paper's own numbers for this family were scored (components.envs.sparse): the
    # appendix formula unless the reference environment is known to have paid otherwise.
    paper_formula: ClassVar[str] = "appendix"
    # Meta-World: a success flag per step (scored beside the return), and a score normalised
    # by the dataset's own returns (the field's ML1 metric)
    has_success: ClassVar[bool] = False
    normalised_score: ClassVar[bool] = False
    # ÷ each test task's own data ("task"), or ÷ every episode of the dataset ("dataset": the
    # published Meta-World score, components.data.returns)
    score_reference: ClassVar[str] = "task"
    # every action dimension lies in [-action_bound, action_bound] (the environments' action
    # space; stored actions are held to it when a dataset loads)
    action_bound: ClassVar[float] = 1.0

    def __init__(
        self, *, seed: int = 0, goal_radius: float | Literal["default"] | None = "default"
    ):
        check_seed(seed, "task_data.seed (the dataset's seed)")
        self.seed = seed
        self.goal_radius = self.default_goal_radius if goal_radius == "default" else goal_radius
        if self.goal_radius == 0:
            raise ValueError("goal_radius must be non-zero, or None for dense rewards")
        self._tasks: list[Task] | None = None

    # --- tasks -----------------------------------------------------------------------------
    @abstractmethod
    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        """All distinct tasks of the family, train tasks first (n_train + n_test, or 2)."""

    @abstractmethod
    def task_vector(self, task: Task) -> np.ndarray:
        """The numbers the pure reward function needs about `task`, shape [P]; validates."""

    def all_tasks(self) -> list[Task]:
        if self._tasks is None:
            self._tasks = self.sample_tasks(np.random.default_rng(self.seed))
        return self._tasks

    def split(self) -> TaskSplit:
        """Deterministic train/test split for this family's seed."""
        tasks = self.all_tasks()
        if self.test_is_train:
            return TaskSplit(tuple(tasks), tuple(tasks))
        return TaskSplit(tuple(tasks[: self.n_train]), tuple(tasks[self.n_train :]))

    def resolve_task(self, task: Task | int | None) -> Task:
        """A task given as an index into `all_tasks()` (None means 0) or as a dict; validated."""
        tasks = self.all_tasks()
        if task is None:
            task = 0
        if isinstance(task, (int, np.integer)) and not isinstance(task, bool):
            if not 0 <= task < len(tasks):
                raise ValueError(
                    f"unknown task index {task} for {type(self).__name__}: "
                    f"expected 0 <= index < {len(tasks)}"
                )
            return tasks[int(task)]
        if not isinstance(task, dict):
            raise TypeError(
                f"a task is a dict with keys {list(self.task_keys)} or an index, got {task!r}"
            )
        if set(task) != set(self.task_keys):
            raise ValueError(
                f"malformed task {task!r} for {type(self).__name__}: expected exactly the keys "
                f"{list(self.task_keys)}"
            )
        vector = self.task_vector(task)  # raises on bad shapes
        if not np.all(np.isfinite(vector)):
            raise ValueError(f"malformed task {task!r}: parameters must be finite numbers")
        return task

    def split_indices(self) -> tuple[list[int], list[int]]:
        """Train and test positions in `all_tasks()` (the same two lists for Fwd-Back)."""
        n = len(self.all_tasks())
        if self.test_is_train:
            return list(range(n)), list(range(n))
        return list(range(self.n_train)), list(range(self.n_train, n))

    def task_vectors(self, tasks: Sequence[Task]) -> np.ndarray:
        """Stacked task vectors, shape [N, P]."""
        return np.stack([self.task_vector(t) for t in tasks])

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        """What tells the tasks apart, in the task's own units: the numbers a task vector z
        should encode (the decodability diagnostic reads them back). Default: the task
        vectors, unitless."""
        values = self.task_vectors(tasks)
        names = tuple(f"{self.task_keys[0]}[{i}]" for i in range(values.shape[1]))
        return TaskParameters(values, names if values.shape[1] > 1 else self.task_keys[:1], "")

    # --- rewards ---------------------------------------------------------------------------
    @abstractmethod
    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        """Dense reward, batched over leading dims: obs [..., F], action [..., A], task [..., P].

        Pure: numpy arrays or torch tensors in, the same out; only arithmetic and `.sum(-1)`.
        """

    def sparse_reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        return sparsify(self.reward(obs, action, next_obs, task), self.goal_radius)

    def paper_reward(self, reward: A) -> A:
        """The paper-comparable sparse reward of dense rewards (`paper_formula`); dense families
        return `reward` unchanged."""
        return paper_sparsify(reward, self.goal_radius, self.paper_formula)

    def dynamics(self, obs: A, action: A, task: A) -> A | None:
        """The next state of (obs, action) in tasks `task`, batched like `reward`, or None where
        no closed form is known (the MuJoCo families): lets a transition be relabeled as
        another task's on families whose tasks differ in dynamics."""
        return None

    def holding_error(self, obs: np.ndarray, task: np.ndarray) -> dict[str, np.ndarray] | None:
        """How far states obs [N, F] are from the goal of tasks [N, P], per named measure in
        the task's units ([N] each), for families whose tasks are goals to reach and hold;
        None for the others."""
        return None

    def oracle_action(self, obs: np.ndarray, task: np.ndarray) -> np.ndarray | None:
        """An action that knows the task and no policy beats, [N, A], or None where none is
        known (the MuJoCo families). Gives the ceilings of `components.evaluation.ceiling`."""
        return None

    def terminated(self, next_obs: np.ndarray) -> np.ndarray:
        """Whether the episode ends at `next_obs` [..., F] (never, unless a family says so)."""
        return np.zeros(np.shape(next_obs)[:-1], dtype=bool)

    # --- environments ----------------------------------------------------------------------
    def make(self, task: Task | int | None = None, **kwargs: Any):
        """One gymnasium environment (with its time limit) for `task`."""
        import gymnasium

        return gymnasium.make(self.gym_id, task=task, **self.gym_kwargs(), **kwargs)

    def simulator_versions(self) -> dict[str, str | None]:
        """Versions of simulators outside focalpp that a dataset of this family depends on
        (recorded in its manifest and checked on reading; none for the built-in families)."""
        return {}

    def gym_kwargs(self) -> dict[str, Any]:
        """What a gymnasium environment of this family needs to rebuild this family."""
        return {"task_seed": self.seed, "goal_radius": self.goal_radius}

    def make_batched(self, tasks: Sequence[Task], **kwargs: Any):
        """One environment per task, stepped together (see components.envs.batched)."""
        from components.envs.batched import VectorBatchedEnv

        return VectorBatchedEnv(self, tasks, **kwargs)


def check_vector(task: Task, key: str, length: int) -> np.ndarray:
    """`task[key]` as a float array of `length` numbers, or a ValueError naming the field."""
    try:
        value = np.asarray(task[key], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise ValueError(f"malformed task field {key!r}: {task[key]!r} is not numeric") from e
    if value.shape != (length,):
        raise ValueError(
            f"malformed task field {key!r}: expected {length} numbers, got {value.size}"
        )
    return value
