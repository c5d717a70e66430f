"""What every command-line tool shares: its consoles and how it reports a user's error."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from components.runtime import tune_allocator
from registry import FocalppError

out = Console(highlight=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def run_tool(execute: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a tool's body: user errors print one line and exit 2 (a traceback with --debug)."""
    tune_allocator()
    try:
        return execute(args)
    except FocalppError as e:
        if getattr(args, "debug", False):
            raise
        err.print(f"[bold red]error:[/] {escape(str(e))}")
        return 2
    except KeyboardInterrupt as e:
        err.print(f"interrupted: {escape(str(e))}" if str(e) else "interrupted")
        return 130
