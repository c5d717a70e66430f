"""Meta-environment families (registered as kind `env`) and their gymnasium environments.

Importing this package registers the six families with focalpp and their ids with gymnasium
(`focalpp/SparsePointRobot-v0`, ...); see the README for the table.
"""

from components.envs import ant, half_cheetah, point_robot, walker
from components.envs.batched import BatchStep
from components.envs.family import EnvFamily, TaskSplit
from components.envs.sparse import sparsify

__all__ = [
    "BatchStep",
    "EnvFamily",
    "TaskSplit",
    "ant",
    "half_cheetah",
    "point_robot",
    "sparsify",
    "walker",
]
