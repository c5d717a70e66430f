"""The tools' argument parser: argparse, except that a value beginning with '-' reaches the
option that expects it.

argparse reads `--shard -1/2` or `--seeds -3-4` as an option followed by another option, and
stops with only "expected one argument"; the value never reaches the option's own check, which
names the range it expects. Here an option that takes one value is joined to the next word
(`--shard=-1/2`) whenever that word is not itself one of the tool's options, so every
command-line number meets its range check. And a path (an option or argument of `type=Path`)
is never an empty text: `Path('')` is the current directory, so `--out ''` (an unset shell
variable) would write a record or a study into wherever the command ran.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def whole_number(expected: str) -> Callable[[str], int]:
    """An option's type: its text as an integer, else a refusal that says what the option
    expects (argparse alone says "invalid int value: '1e3'", with no range). The range itself
    is checked where the option is used, so a library call meets the same check."""

    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number: expected {expected}"
            ) from None

    return parse


def a_path(text: str) -> Path:
    """An option's type for a path: any text but an empty one."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a path: expected a file or folder (an empty text would mean the "
            "current directory; write . for that)"
        )
    return Path(text)


class ToolParser(argparse.ArgumentParser):
    def add_argument(self, *args, **kwargs):
        if kwargs.get("type") is Path:  # every tool's paths refuse an empty text
            kwargs["type"] = a_path
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):
        words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._joined(words), namespace)

    def _joined(self, words: list[str]) -> list[str]:
        takes_one = {
            option
            for action in self._actions
            if action.nargs is None and action.option_strings and action.const is None
            for option in action.option_strings
        }
        options = {option for action in self._actions for option in action.option_strings}
        joined, i = [], 0
        while i < len(words):
            word = words[i]
            if word == "--":  # everything after it is positional
                return joined + words[i:]
            following = words[i + 1] if i + 1 < len(words) else None
            if (
                word in takes_one
                and following is not None
                and following.startswith("-")
                and following != "--"
                and following.split("=", 1)[0] not in options
            ):
                joined.append(f"{word}={following}")
                i += 2
                continue
            joined.append(word)
            i += 1
        return joined
