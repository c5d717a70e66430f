from __future__ import annotations

import gin
import pytest

import components.data.protocols
import components.data.relabel
import components.envs  # noqa: F401
from components.data.build import ensure_dataset

TINY = [  # a few seconds: 100 point-robot tasks, 60 SAC steps, 3 checkpoints of 2 episodes
    "behaviour_sac.env_steps = 60",
    "behaviour_sac.start_steps = 20",
    "behaviour_sac.batch_size = 16",
    "checkpoints.checkpoints = 3",
    "checkpoints.episodes = 2",
]


def build_tiny(root, family="sparse_point_robot", protocol="checkpoints", seed=0, extra=()):
    gin.clear_config()
    gin.parse_config([*TINY, *extra])
    try:
        return ensure_dataset(family, protocol, seed, root=root)
    finally:
        gin.clear_config()


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("datasets"))
