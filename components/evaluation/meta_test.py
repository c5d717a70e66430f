"""The meta-test protocol (DECISIONS §5), for all test tasks and runs at once, and for the K seeds
of a seed-batched learner at once (`MetaTest.for_seeds`).

For each test task, `runs` independent runs. A run's context grows by one horizon of random
transitions from the task's OFFLINE test data per episode; z is inferred from the whole context
and the deterministic policy (tanh of the mean) is rolled out online for one episode. A task's
score is the return of the LAST episode (context = `context_transitions`), averaged over runs;
online transitions never enter the context.

Because online data never enters the context, the last episode depends only on the final
context: with `curve=False` only that episode is rolled out (same result, `episodes`× cheaper);
`curve=True` rolls out every episode and also reports the return per context size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.returns import normalised
from components.data.sampler import TensorSampler
from components.data.store import QualityData
from components.envs.family import EnvFamily
from components.evaluation.ceiling import ceiling
from components.evaluation.episodes import Returns
from components.evaluation.modes import eval_mode
from components.evaluation.test_contexts import NotApplicable, Scene
from components.evaluation.test_contexts.sealed import without_test_data
from registry import FocalppError, get, names, register
from registry.constraints import Count, PositiveInt
from registry.validation import check_arguments


@dataclass(frozen=True)
class MetaTestResult:
    """Per-task scores (mean over runs) of the last episode; [n_test] arrays.

    Sparse families have three returns per task: `returns` (dense), `sparse_returns` (the
    appendix formula, what the context sees) and `paper_returns` (the formula the paper's own
    numbers were scored with, `family.paper_formula`; components.envs.sparse). `headline` uses
    the appendix sparse return on sparse families, the dense return otherwise. `ceiling`: the
    mean return of a task-knowing oracle on the same tasks per formula, where the family has one.
    `curve`: mean headline return per episode (context size), when rolled out. On Meta-World:
    `success` (the fraction of runs whose episode succeeded, per task) and `dataset_returns`
    (the mean return of the task's offline episodes of the quality trained on), whose ratio to
    `returns` is the normalised score (components.data.returns).
    """

    tasks: list[int]
    returns: np.ndarray
    sparse_returns: np.ndarray | None
    context_sizes: list[int]
    curve: list[float] = field(default_factory=list)
    paper_returns: np.ndarray | None = None
    paper_formula: str | None = None
    ceiling: dict[str, float] | None = None
    success: np.ndarray | None = None
    dataset_returns: np.ndarray | None = None
    protocols: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def normalised_scores(self) -> np.ndarray | None:
        if self.dataset_returns is None:
            return None
        return normalised(self.returns, self.dataset_returns)

    @property
    def headline_returns(self) -> np.ndarray:
        return self.sparse_returns if self.sparse_returns is not None else self.returns

    @property
    def mean(self) -> float:
        return float(self.headline_returns.mean())

    @property
    def std(self) -> float:
        return float(self.headline_returns.std())

    @property
    def dense_mean(self) -> float:
        return float(self.returns.mean())

    def describe(self) -> str:
        n = f"over {len(self.tasks)} test tasks"
        if self.sparse_returns is None:
            text = f"test return {self.mean:.2f} ± {self.std:.2f}"
            if self.normalised_scores is not None:
                scores = self.normalised_scores
                text += f", normalised score {np.nanmean(scores):.3f} ± {np.nanstd(scores):.3f}"
            if self.success is not None:
                text += f", success rate {self.success.mean():.2f}"
            return f"{text} {n}"
        text = f"test sparse return {self.mean:.2f} ± {self.std:.2f}"
        if self.paper_returns is not None:
            text += (
                f", paper-comparable ({self.paper_formula}) "
                f"{self.paper_returns.mean():.2f} ± {self.paper_returns.std():.2f}"
            )
        return f"{text} {n}"

    def to_dict(self) -> dict[str, Any]:
        def per_task(values: np.ndarray) -> dict[str, float]:
            return dict(zip(map(str, self.tasks), values.tolist(), strict=True))

        record: dict[str, Any] = {
            "test_return_mean": self.mean,
            "test_return_std": self.std,
            "dense_return_mean": self.dense_mean,
            "per_task_return": per_task(self.returns),
            "context_sizes": self.context_sizes,
        }
        if self.sparse_returns is not None:
            record["sparse_return_mean"] = float(self.sparse_returns.mean())
            record["per_task_sparse_return"] = per_task(self.sparse_returns)
        if self.paper_returns is not None:
            record["paper_return_mean"] = float(self.paper_returns.mean())
            record["paper_return_std"] = float(self.paper_returns.std())
            record["paper_formula"] = self.paper_formula
            record["per_task_paper_return"] = per_task(self.paper_returns)
        if self.ceiling is not None:
            record["ceiling"] = self.ceiling
        if self.success is not None:
            record["success_rate"] = float(self.success.mean())
            record["per_task_success"] = per_task(self.success)
        if self.dataset_returns is not None:
            scores = self.normalised_scores
            record["normalised_score"] = float(np.nanmean(scores))
            record["normalised_score_std"] = float(np.nanstd(scores))
            record["per_task_normalised_score"] = per_task(scores)
            record["dataset_return_mean"] = float(self.dataset_returns.mean())
            record["per_task_dataset_return"] = per_task(self.dataset_returns)
        if self.curve:
            record["curve"] = self.curve
        if self.protocols:
            record["test_contexts"] = {"offline": self.cell(), **self.protocols}
        return record

    def cell(self) -> dict[str, Any]:
        """This result as a test-context protocol's cell (the headline's under `offline`)."""
        cell: dict[str, Any] = {
            "mean": self.mean,
            "std": self.std,
            "dense_mean": self.dense_mean,
            "per_task": dict(
                zip(map(str, self.tasks), self.headline_returns.tolist(), strict=True)
            ),
        }
        if self.paper_returns is not None:
            cell["paper_mean"] = float(self.paper_returns.mean())
        if self.success is not None:
            cell["success_rate"] = float(self.success.mean())
        if self.normalised_scores is not None:
            cell["normalised_score"] = float(np.nanmean(self.normalised_scores))
        return cell


@register("meta_test", "meta_test")
class MetaTest:
    """Scores a context encoder and a policy on held-out tasks, online.

    Args:
        runs: independent runs per test task.
        context_transitions: context size of the last (scored) episode (DECISIONS §5: 400 for point
            robots, 600 for MuJoCo); a multiple of the horizon.
        curve: roll out every episode of the growing context, not only the last.
        max_tasks: score only the first this many test tasks (0: all of them), for smoke
            tests of families with many long episodes.
        protocols: the test-context protocols (registered `test_context`s,
            docs/TEST_CONTEXTS.md) scored beside the headline, each on the same rows and start
            states, each a cell of the result (`protocols`); `offline` is the headline's own.
            A reference row (task vectors given) is scored offline only.
        protocols_every_time: score them at every meta-test; by default only at the run's
            last (`final`, set by the loop), where eval.json records them: the online ones
            cost episodes.

    Example (a policy that stands still, on Sparse-Point-Robot's 20 test tasks; the data's
    contents do not matter to it; the robot starts one unit from every goal: −1 per step):
        >>> import numpy as np, torch
        >>> from components.data.context import ContextLayout
        >>> from components.data.store import QualityData
        >>> from components.encoders.context import ContextEncoder
        >>> from components.envs.point_robot import SparsePointRobot
        >>> from components.transitions import Transitions
        >>> family, layout = SparsePointRobot(seed=0), ContextLayout(2, 2, sparse=True)
        >>> k, n = len(family.all_tasks()), 40
        >>> f = dict(obs=2, action=2, next_obs=2, reward=(), sparse_reward=(), terminated=())
        >>> t = Transitions(**{x: np.zeros((k, n, *np.atleast_1d(d)), np.float32)
        ...                   for x, d in f.items()}, truncated=np.zeros((k, n), bool))
        >>> meta_test = MetaTest(runs=1, context_transitions=40)
        >>> result = meta_test(family=family, data=QualityData(t, np.full(k, n)),
        ...     tasks=family.split_indices()[1], layout=layout,
        ...     encoder=ContextEncoder(sizes=layout.sizes, latent_dim=3),
        ...     act=lambda obs, z: torch.zeros(len(obs), 2), device=torch.device("cpu"), seed=0)
        >>> len(result.tasks), float(result.returns.mean())
        (20, -20.0)
        >>> meta_test.close()
    """

    def __init__(
        self,
        *,
        runs: PositiveInt = 3,
        context_transitions: PositiveInt = 400,
        curve: bool = False,
        max_tasks: Count = 0,
        protocols: Sequence[str] = ("offline",),
        protocols_every_time: bool = False,
    ):
        check_arguments("meta_test", MetaTest.__init__, locals())
        self.runs, self.context_transitions, self.curve = runs, context_transitions, curve
        self.max_tasks = max_tasks
        self.protocols = _protocols(protocols)
        self._offline = self.protocols.get("offline") or get("test_context", "offline")()
        self.protocols_every_time = protocols_every_time
        self.final = False  # the loop sets it before the run's last meta-test
        self._env: Any = None
        self._ceiling: tuple[tuple[int, ...], dict[str, float] | None] | None = None

    def __call__(self, *, seed: int, **kwargs: Any) -> MetaTestResult:
        """Evaluate. `tasks`: dataset task indices of the test split; `act(obs, z)` -> actions;
        `dataset_returns`: per test task, the mean return of its offline episodes of the
        quality trained on (the normalised score's denominator), where the family reports one;
        `task_z`: per test task, a task vector given instead of the encoder's (a reference row).
        Keyword arguments as `for_seeds`, with one seed.

        The encoder runs in eval mode (no dropout) and is restored afterwards.
        """
        return self.for_seeds(seeds=[seed], **kwargs)[0]

    def for_seeds(
        self,
        *,
        family: EnvFamily,
        data: QualityData,
        tasks: list[int],
        layout: ContextLayout,
        encoder: nn.Module,
        act,
        device: torch.device,
        seeds: Sequence[int],
        dataset_returns: np.ndarray | None = None,
        task_z: torch.Tensor | None = None,
        dataset: Any = None,
        train: TensorSampler | None = None,
    ) -> list[MetaTestResult]:
        """The meta-tests of K seeds trained together, at once: one environment of every
        seed's runs of every test task (K·N rows, seed-major), one encoder call per context
        size and one policy call per step for all of them. `encoder` and `act` are the
        seed-batched networks (seed k's rows k·N … (k+1)·N − 1, components/seeds); seed k's
        contexts are drawn, and its episodes reset, exactly as its meta-test alone would
        (`__call__` is this with one seed). `dataset`, `train`: the run's dataset and its
        training tasks' data, for the protocols that collect with a training task's behaviour
        policy or try training tasks' task vectors. Returns each seed's result, in `seeds`'
        order."""
        if self.max_tasks:
            tasks = list(tasks)[: self.max_tasks]
            if dataset_returns is not None:
                dataset_returns = np.asarray(dataset_returns)[: self.max_tasks]
            if task_z is not None:
                task_z = task_z[: self.max_tasks]
        horizon = family.horizon
        episodes = max(1, self.context_transitions // horizon)
        sizes = [horizon * k for k in range(1, episodes + 1)]
        sizes[-1] = self.context_transitions
        if not self.curve:
            sizes = sizes[-1:]
        positions = torch.arange(len(tasks), device=device).repeat_interleave(self.runs)  # [N]
        rows = len(positions)
        env = self._environment(family, [tasks[i] for i in positions.tolist()] * len(seeds))
        scene = Scene(
            family=family,
            env=env,
            layout=layout,
            encoder=encoder,
            act=act,
            device=device,
            seeds=list(seeds),
            test_tasks=list(tasks),
            positions=positions,
            context_transitions=self.context_transitions,
            data=data,
            dataset=dataset,
            train=train,
        )
        with eval_mode(encoder):
            # the headline: the offline context, growing by a horizon per episode on a curve
            per_episode = self._offline.episodes(scene, sizes, task_z)
            scored = task_z is None and (self.final or self.protocols_every_time)
            protocols = self._other_protocols(scene) if scored else {}
        if self._ceiling is None or self._ceiling[0] != tuple(tasks):
            best = ceiling(family, tasks)
            self._ceiling = (tuple(tasks), best.means() if best is not None else None)
        results = []
        for k in range(len(seeds)):
            seed_rows = slice(k * rows, (k + 1) * rows)
            cells = {
                name: self._result(
                    family, tasks, sizes[-1:], [r], seed_rows, dataset_returns
                ).cell()
                if isinstance(r, Returns)
                else r
                for name, r in protocols.items()
            }
            results.append(
                self._result(family, tasks, sizes, per_episode, seed_rows, dataset_returns, cells)
            )
        return results

    def _other_protocols(self, scene: Scene) -> dict[str, Returns | dict[str, str]]:
        """Each bound protocol but `offline` (the headline's own), scored on the same rows:
        its returns, or why it could not score the run."""
        scored: dict[str, Returns | dict[str, str]] = {}
        for name, protocol in self.protocols.items():
            if name == "offline":
                continue
            seen = scene if protocol.reads_test_data else without_test_data(scene, name)
            try:
                scored[name] = protocol(seen)
            except NotApplicable as e:
                scored[name] = {"not_applicable": str(e)}
        return scored

    def _result(
        self,
        family: EnvFamily,
        tasks: list[int],
        sizes: list[int],
        per_episode: list[Returns],
        rows: slice,
        dataset_returns: np.ndarray | None,
        protocols: dict[str, dict[str, Any]] | None = None,
    ) -> MetaTestResult:
        """One seed's result from its rows of every episode's returns; each other protocol's
        cell from its rows of that protocol's scored episode, computed the same way."""
        n = len(tasks)

        def per_task(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[rows].reshape(n, self.runs).mean(1)

        curve = []
        if self.curve:
            curve = [
                float((ep.sparse if ep.sparse is not None else ep.dense)[rows].mean())
                for ep in per_episode
            ]
        last = per_episode[-1]
        return MetaTestResult(
            tasks=list(tasks),
            returns=per_task(last.dense),
            sparse_returns=per_task(last.sparse),
            context_sizes=sizes,
            curve=curve,
            paper_returns=per_task(last.paper),
            paper_formula=family.paper_formula if last.paper is not None else None,
            ceiling=self._ceiling[1],
            success=per_task(None if last.success is None else last.success.astype(np.float64)),
            dataset_returns=None if dataset_returns is None else np.asarray(dataset_returns),
            protocols=protocols or {},
        )

    @property
    def environment(self):
        """The batched environment of the last meta-test (None before the first)."""
        return None if self._env is None else self._env[1]

    def _environment(self, family: EnvFamily, task_ids: list[int]):
        """One batched environment for all runs of all test tasks, made once and reused."""
        key = (id(family), tuple(task_ids))
        if self._env is None or self._env[0] != key:
            if self._env is not None:
                self._env[1].close()
            all_tasks = family.all_tasks()
            self._env = (key, family.make_batched([all_tasks[i] for i in task_ids]))
        return self._env[1]

    def close(self) -> None:
        if self._env is not None:
            self._env[1].close()
            self._env = None


def _protocols(chosen: Sequence[str]) -> dict[str, Any]:
    """The bound protocols, built (their settings are gin bindings), by name."""
    if isinstance(chosen, str) or not chosen:
        raise FocalppError(
            f"meta_test.protocols = {chosen!r}: expected a non-empty list of test-context "
            "protocols, e.g. ['offline', 'zero_shot']; registered: "
            + ", ".join(names("test_context"))
        )
    if len(set(chosen)) != len(chosen):
        raise FocalppError(f"meta_test.protocols = {list(chosen)!r} names a protocol twice")
    return {name: get("test_context", name)() for name in chosen}
