"""Meta-environment families (registered as kind `env`) and their gymnasium environments.

Importing this package registers the six families and the 50 Meta-World ML1 families with
focalpp and their ids with gymnasium (`focalpp/SparsePointRobot-v0`, ...); see the README for the
table. It first checks that MuJoCo is installed in one piece (components.envs.install).
"""

# ruff: noqa: E402 (the check runs before any module that imports mujoco)
from components.envs.install import check_mujoco

check_mujoco()

from components.envs import ant, half_cheetah, ml1, point_robot, walker
from components.envs.batched import BatchStep
from components.envs.family import EnvFamily, TaskSplit
from components.envs.sparse import sparsify

__all__ = [
    "BatchStep",
    "EnvFamily",
    "TaskSplit",
    "ant",
    "half_cheetah",
    "ml1",
    "point_robot",
    "sparsify",
    "walker",
]
