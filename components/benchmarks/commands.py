"""The real command line, as a user starts it: `python -m components.cli.<tool> ARGS` (the same
program as `tools/<tool>.py`). Only a benchmark that measures a whole command (its time from an
empty store, its peak memory, a build under other numerics) starts one; everything else under
components/ calls the library, and tests/test_layers.py fails on any other such start."""

from __future__ import annotations

import sys
from collections.abc import Sequence

TOOLS = ("run", "collect", "analyze")  # the command lines components/cli holds


def tool_command(tool: str, args: Sequence[str] = ()) -> list[str]:
    """argv of `tools/<tool>.py ARGS` as a library module."""
    if tool not in TOOLS:
        raise ValueError(f"no command line {tool!r} in components/cli: one of {TOOLS}")
    return [sys.executable, "-m", f"components.cli.{tool}", *args]
