from __future__ import annotations

import platform

from components.runtime import tune_allocator


def test_tune_allocator_reports_whether_it_applied():
    applied = tune_allocator()
    assert isinstance(applied, bool)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert applied
