"""Minari interchange (optional extra `focalpp[minari]`): one Minari dataset per task.

Export writes `<namespace>/task-<k>-<quality>-v0` for every task of one quality, with the task's
parameters, its split and the quality in the dataset metadata (`focalpp` key, a JSON string) and
the sparse reward in each step's infos. Transitions are cut into episodes wherever an episode
ended or the next observation does not continue the stored sequence (relabeled data become
one-step episodes). Import reads such datasets back into the store's arrays.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

import components.envs  # noqa: F401  (the families and their gymnasium ids)
from components.data.store import Dataset, DatasetError, QualityData
from components.transitions import FIELDS, Transitions
from registry import get


def _minari():
    try:
        import minari
        from minari.data_collector import EpisodeBuffer
    except ImportError as e:  # the optional extra is not installed
        raise DatasetError(
            "the Minari bridge needs the optional extra: pip install -e '.[minari]'"
        ) from e
    return minari, EpisodeBuffer


def dataset_id(namespace: str, task: int, quality: str) -> str:
    return f"{namespace}/task-{task}-{quality}-v0"


def episodes_of(t: Transitions, length: int) -> list[slice]:
    """Episode boundaries of one task's transitions [N, ...] (first `length` are real)."""
    if length == 0:
        return []
    ended = t.terminated[:length] | t.truncated[:length]
    breaks = ~np.all(np.isclose(t.next_obs[: length - 1], t.obs[1:length]), axis=-1)
    cut = ended.copy()
    cut[: length - 1] |= breaks
    cut[length - 1] = True
    ends = np.flatnonzero(cut) + 1
    starts = np.concatenate([[0], ends[:-1]])
    return [slice(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def export_quality(
    dataset: Dataset, quality: str, namespace: str, *, tasks: Sequence[int] | None = None
) -> list[str]:
    """Write one Minari dataset per task of `quality`; return their ids."""
    minari, EpisodeBuffer = _minari()
    data = dataset.quality(quality)
    family = get("env", dataset.manifest["family"])(seed=dataset.manifest["seed"])
    ids = []
    tasks = range(len(data.length)) if tasks is None else tasks
    train = set(dataset.split_indices("train"))
    for k in tasks:
        # the task's own environment: a Minari user's `recover_environment()` rebuilds it
        spec_env = gymnasium.make(family.gym_id, task=int(k), **family.gym_kwargs())
        t = data.transitions.map(lambda x, k=k: x[k])
        buffers = []
        for part in episodes_of(t, int(data.length[k])):
            obs = np.concatenate([t.obs[part], t.next_obs[part][-1:]]).astype(np.float64)
            buffers.append(
                EpisodeBuffer(
                    observations=obs,
                    actions=t.action[part].astype(np.float32),
                    rewards=t.reward[part].astype(np.float64),
                    terminations=t.terminated[part].astype(bool),
                    truncations=t.truncated[part].astype(bool),
                    infos={"sparse_reward": t.sparse_reward[part].astype(np.float64)},
                )
            )
        name = dataset_id(namespace, k, quality)
        with warnings.catch_warnings():  # Minari asks for author e-mails and permalinks
            warnings.simplefilter("ignore", UserWarning)
            created = minari.create_dataset_from_buffers(
                name,
                buffers,
                env=spec_env.spec,
                algorithm_name=f"focalpp {dataset.manifest['protocol']} protocol",
                author="focalpp",
                description=f"focalpp {dataset.manifest['family']} task {k}, quality {quality}",
                data_format="hdf5",
            )
        created.storage.update_metadata(
            {
                "focalpp": json.dumps(
                    {
                        "family": dataset.manifest["family"],
                        "protocol": dataset.manifest["protocol"],
                        "seed": dataset.manifest["seed"],
                        "task_index": int(k),
                        "task": dataset.tasks[k],
                        "split": "train" if k in train else "test",
                        "quality": quality,
                        "goal_radius": dataset.manifest.get("goal_radius"),
                    }
                )
            }
        )
        ids.append(name)
        spec_env.close()
    return ids


def import_datasets(ids: Sequence[str]) -> tuple[QualityData, list[dict[str, Any]]]:
    """Read Minari datasets (one per task, as exported) into arrays [n_tasks, N, ...].

    Returns the quality data and each dataset's focalpp metadata (task, split, quality).
    """
    minari, _ = _minari()
    per_task, meta = [], []
    for name in ids:
        ds = minari.load_dataset(name)
        raw = ds.storage.metadata.get("focalpp")
        if raw is None:
            raise DatasetError(
                f"Minari dataset {name} has no focalpp metadata (not exported by focalpp)"
            )
        meta.append(json.loads(raw))
        parts = []
        for ep in ds.iterate_episodes():
            n = len(ep.actions)
            parts.append(
                Transitions(
                    obs=ep.observations[:n],
                    action=ep.actions,
                    reward=ep.rewards,
                    sparse_reward=np.asarray(ep.infos["sparse_reward"])[-n:],
                    next_obs=ep.observations[1 : n + 1],
                    terminated=ep.terminations,
                    truncated=ep.truncations,
                )
            )
        per_task.append(
            Transitions(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in FIELDS})
        )
    length = np.array([len(t.reward) for t in per_task], dtype=np.int64)
    n = int(length.max())

    def pad(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, np.zeros((n - len(x), *x.shape[1:]), x.dtype)])

    stacked = Transitions(
        **{
            f: np.stack([pad(getattr(t, f)) for t in per_task]).astype(
                bool if f in ("terminated", "truncated") else np.float32
            )
            for f in FIELDS
        }
    )
    return QualityData(stacked, length), meta
