from __future__ import annotations

import gymnasium
import pytest

import components.envs  # noqa: F401  (registers the families and gymnasium ids)
from registry import get

FAMILIES = {  # registry name -> (gymnasium id, obs dim, act dim, horizon, train, test)
    "sparse_point_robot": ("focalpp/SparsePointRobot-v0", 2, 2, 20, 80, 20),
    "point_robot_wind": ("focalpp/PointRobotWind-v0", 2, 2, 25, 40, 10),
    "sparse_cheetah_vel": ("focalpp/SparseCheetahVel-v0", 20, 6, 200, 80, 20),
    "sparse_cheetah_fwd_back": ("focalpp/SparseCheetahFwdBack-v0", 20, 6, 200, 2, 2),
    "sparse_ant_fwd_back": ("focalpp/SparseAntFwdBack-v0", 27, 8, 200, 2, 2),
    "walker_params": ("focalpp/WalkerParams-v0", 17, 6, 200, 40, 10),
}


@pytest.fixture(params=sorted(FAMILIES))
def family_name(request) -> str:
    return request.param


@pytest.fixture
def family(family_name):
    return get("env", family_name)(seed=0)


@pytest.fixture
def make_env():
    made = []

    def make(gym_id: str, **kwargs):
        env = gymnasium.make(gym_id, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
