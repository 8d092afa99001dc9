"""Fixtures and settings shared by every test package."""

from __future__ import annotations

import importlib.util
import os
import secrets
from collections.abc import Iterator
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

from tests.pg_server import PgServer, start_server

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


def _unavailable(reason: str) -> NoReturn:
    """Skip with ``reason`` on a developer's machine; fail under ``CI=true``,
    where ``.ci/run`` installs what is missing."""
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{reason} (CI=true: .ci/run should have installed it)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL server (:mod:`tests.pg_server`), one per
    xdist worker, started when a test first asks for it."""
    if importlib.util.find_spec("psycopg") is None:
        _unavailable("psycopg is not installed: pip install -e '.[test]'")
    try:
        server: PgServer | str = start_server()
    except FileNotFoundError:
        server = (
            "no initdb on PATH nor under /usr/lib/postgresql/*/bin: "
            "apt-get install postgresql to run the PostgreSQL tests"
        )
    except RuntimeError as exc:
        server = f"cannot start a throwaway PostgreSQL server: {exc}"
    if isinstance(server, str):
        _unavailable(server)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PgServer) -> Iterator[str]:
    """The URL of a new, empty database on the throwaway server, dropped
    after the test."""
    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield postgres_server.database_url(name)
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
