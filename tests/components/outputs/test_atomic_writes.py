"""Files written whole-or-not-at-all get the permissions any file made here gets (0o666 less
the umask), not the temporary file's 0o600: a run, record or report shared with a group stays
readable to it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.outputs.run_dir import atomic_file, atomic_write_all, atomic_write_bytes


def _write_each_way(folder: Path) -> list[Path]:
    atomic_write_bytes(folder / "one", b"1")
    atomic_write_all({folder / "two": b"2", folder / "three": b"3"})
    with atomic_file(folder / "four") as f:
        f.write(b"4")
    return [folder / name for name in ("one", "two", "three", "four")]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_an_atomic_write_gets_the_mode_open_would_give(tmp_path, umask):
    before = os.umask(umask)
    try:
        written = _write_each_way(tmp_path)
        with open(tmp_path / "by_open", "wb"):
            pass
    finally:
        os.umask(before)
    expected = os.stat(tmp_path / "by_open").st_mode & 0o777
    assert expected == 0o666 & ~umask
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in written} == {
        p.name: oct(expected) for p in written
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["by_open", "one", "two", "three", "four"]
    )  # no temporary file left beside them
