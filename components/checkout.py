"""A command of this library in a fresh process: `python -m components.cli.<tool> ARGS`, importing
this checkout's code whatever the working directory (its root first on PYTHONPATH), so a study or
a benchmark started from one checkout never runs another's."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("run", "collect", "analyze")  # the command lines components/cli holds


def tool_command(tool: str, args: Sequence[str] = ()) -> list[str]:
    """argv of `tools/<tool>.py ARGS` as a library module."""
    if tool not in TOOLS:
        raise ValueError(f"no command line {tool!r} in components/cli: one of {TOOLS}")
    return [sys.executable, "-m", f"components.cli.{tool}", *args]


def tool_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with this checkout first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env
