"""gin's private state is read in one module, and that module works with the gin installed."""

from __future__ import annotations

import re
from pathlib import Path

import gin

from registry import gin_state

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = re.compile(r"gin\.config\._\w|from gin\.config import _")


def test_only_gin_state_touches_gin_s_private_names():
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("components", "registry", "tools", "tests", "examples")
        for path in (ROOT / folder).rglob("*.py")
        if path != ROOT / "registry" / "gin_state.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert found == [], f"use registry/gin_state.py instead: {found}"


@gin.configurable("gin_state_probe")
def probe(value=0, other=1):
    return value + other


def test_each_reading_works_with_this_gin():
    gin.clear_config()
    try:
        with gin.unlock_config():
            gin.bind_parameter("gin_state_probe.value", 3)
            gin.bind_parameter("outer/gin_state_probe.other", 5)
        selector = gin_state.configurable("gin_state_probe").selector
        assert gin_state.bound_for("", selector) == {"value": 3}
        assert gin_state.bound_for("outer", selector) == {"other": 5}
        assert ((("", selector), {"value": 3})) in gin_state.bindings()
        with gin_state.record_of_calls_kept():
            assert probe() == 4
            assert (("", selector), {"value": 3, "other": 1}) in gin_state.built()
        assert all(key != ("", selector) for key, _ in gin_state.built())
        assert "gin_state_probe.value = 3" in gin_state.config_text({("", selector): {"value": 3}})
        assert isinstance(gin_state.search_path(), list)
        with gin_state.parse_scope() as context:
            assert hasattr(context, "imports")
        gin_state.add_imports([])
    finally:
        gin.clear_config()
