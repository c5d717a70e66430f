"""A check of the MuJoCo installation that names the repair, run before `mujoco` is imported.

MuJoCo 4 ships as three distributions (`mujoco`, `mujoco-core`, `mujoco-studio`) that share the
`mujoco` package directory. Meta-World pins `mujoco==3.3.0`, so `pip install -e .` in an
environment that had MuJoCo 4 replaces `mujoco` and leaves `mujoco-core` and `mujoco-studio`
behind: `import mujoco` then fails deep inside ctypes (`libmujoco.so.4.0.0: cannot open shared
object file`) while `pip check` finds nothing wrong.
"""

from __future__ import annotations

import contextlib
from importlib import metadata

from registry import FocalppError

LEFT_BEHIND = ("mujoco-core", "mujoco-studio")


class BrokenMujocoInstall(FocalppError, ImportError):
    """`mujoco` and the distributions it shares a directory with are of different versions."""


def installed(names: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each distribution in `names` that is installed."""
    versions = {}
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def mujoco_install_problem(versions: dict[str, str]) -> str | None:
    """What is wrong with these installed versions of mujoco and its parts, with the repair,
    or None where they agree."""
    main = versions.get("mujoco")
    stale = {n: v for n, v in versions.items() if n in LEFT_BEHIND and v != main}
    if not stale:
        return None
    left = ", ".join(f"{n} {v}" for n, v in stale.items())
    return (
        f"mujoco {main or '(none)'} is installed beside {left}, which share its package "
        "directory (they stay behind when pip replaces MuJoCo 4 by the 3.3.0 that Meta-World "
        "pins), so `import mujoco` loads the wrong library. Repair the environment: "
        f"pip uninstall -y {' '.join(stale)} && pip install --force-reinstall --no-deps "
        f'"mujoco=={main or "3.3.0"}"'
    )


def check_mujoco() -> None:
    problem = mujoco_install_problem(installed(("mujoco", *LEFT_BEHIND)))
    if problem:
        raise BrokenMujocoInstall(problem)
