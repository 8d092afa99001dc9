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
settings.load_profile(os.environ.get("KUN_HYPOTHESIS_PROFILE", "default"))
"""Property tests have no deadline: CI machines are shared and noisy, and a
slow example is not a failure. ``KUN_HYPOTHESIS_PROFILE=thorough`` runs ten
times the examples."""


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``@pytest.mark.anyio``) run on asyncio."""
    return "asyncio"
