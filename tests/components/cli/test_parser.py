"""The tools' parser hands a value beginning with '-' to the option that expects it, and
nothing else changes: flags, options followed by options, and words after `--`."""

from __future__ import annotations

import pytest

from components.cli.parser import ToolParser, whole_number


def parser() -> ToolParser:
    p = ToolParser(prog="tool")
    p.add_argument("--shard")
    p.add_argument("--workers", type=int)
    p.add_argument("--out")
    p.add_argument("--debug", action="store_true")
    p.add_argument("paths", nargs="*")
    return p


def test_a_value_beginning_with_a_minus_reaches_its_option():
    args = parser().parse_args(["--shard", "-1/2", "--workers", "-3", "--out", "-x"])
    assert (args.shard, args.workers, args.out) == ("-1/2", -3, "-x")


def test_an_option_followed_by_an_option_is_not_joined():
    with pytest.raises(SystemExit):  # argparse's own refusal: --out has no value
        parser().parse_args(["--out", "--debug"])
    with pytest.raises(SystemExit):
        parser().parse_args(["--out", "--workers=2"])


def test_flags_positionals_and_words_after_a_double_dash_are_left_alone():
    args = parser().parse_args(["--debug", "--shard=0/2", "--", "a", "-b"])
    assert (args.debug, args.shard, args.paths) == (True, "0/2", ["a", "-b"])


@pytest.mark.parametrize("text", ["1e3", "1.5", "two", "0x10", "", "3/2"])
def test_a_number_that_is_not_whole_is_refused_with_what_the_option_expects(text, capsys):
    p = ToolParser(prog="tool")
    p.add_argument("--workers", type=whole_number("1 to 4,096"))
    with pytest.raises(SystemExit) as stopped:
        p.parse_args(["--workers", text])
    assert stopped.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        message
        == f"tool: error: argument --workers: {text!r} is not a whole number: expected 1 to 4,096"
    )


def test_a_whole_number_passes_unchanged_to_the_range_check():
    p = ToolParser(prog="tool")
    p.add_argument("--workers", type=whole_number("1 to 4,096"))
    assert p.parse_args(["--workers", "-3"]).workers == -3  # its range is checked where it is used
    assert p.parse_args(["--workers", "12"]).workers == 12
