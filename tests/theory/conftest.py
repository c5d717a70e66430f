"""Hypothesis profiles for the theorem properties: `ci` (default: deterministic, bounded time)
and `thorough` (`pytest tests/theory --hypothesis-profile thorough`)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def pytest_configure(config):
    if config.getoption("hypothesis_profile", default=None) is None:
        settings.load_profile("ci")
