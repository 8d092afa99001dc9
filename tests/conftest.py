"""Fixtures and settings shared by every test package."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=1000)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile(
    os.environ.get("KUN_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
)
"""Property tests have no deadline: CI machines are shared and noisy, and a
slow example is not a failure. Under CI the examples are derandomized, so a
submission is judged on the same examples it was checked with; developers'
runs explore new ones each time, and ``KUN_HYPOTHESIS_PROFILE=thorough`` runs
ten times as many."""


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``@pytest.mark.anyio``) run on asyncio."""
    return "asyncio"
