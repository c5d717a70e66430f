"""A process started by this library imports this checkout's code whatever its working
directory (the checkout's root first on PYTHONPATH), so a study or a benchmark started from one
checkout never runs another's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def checkout_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with this checkout first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env
