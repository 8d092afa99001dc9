"""Fixtures of the browser tests: Debian's headless Chromium driven by
Playwright against a real ``kun serve`` whose model is the loopback fake
provider.

Without ``/usr/bin/chromium`` (or ``$KUN_CHROMIUM``) the tests are skipped on a developer's
machine (with the reason) but fail under ``CI=true``: ``.ci/run`` installs
Chromium, so a missing browser there is a broken CI, not a reason to run
nothing. Playwright never downloads a browser: it drives Debian's.

Every test gets a ``shot(page, step)`` that saves a screenshot under
``$KUN_TEST_ARTIFACTS/browser/<test>/`` (else ``<pytest tmp>/screenshots``)
and prints its path; a failing test gets a last one, ``failed.png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import pytest

from kun.testing.fake_provider import FakeProvider
from tests.browser.kunserver import KunServer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path(os.environ.get("KUN_CHROMIUM") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
TIMEOUT_MS = 5_000
SHOT_TIMEOUT_MS = 30_000
FULL_PAGE_MAX_PX = 8_000

Shot = Callable[["Page", str], Path]
_saved: list[Path] = []


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{reason} (CI=true: .ci/run should have installed it)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is absent: apt-get install chromium to run the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def fake_provider() -> Iterator[FakeProvider]:
    """The fake provider, served from an event loop in its own thread (the
    sync Playwright API owns this one); one for the browser tests, as its address
    is in the server's config."""
    with anyio.from_thread.start_blocking_portal() as portal:
        fake = FakeProvider(format="chat_completions")
        with portal.wrap_async_context_manager(fake):
            yield fake


@pytest.fixture
def provider(fake_provider: FakeProvider) -> Iterator[FakeProvider]:
    """The fake provider with an empty script (``provider.enqueue`` adds
    answers): what a failed test left unread must not answer the next."""
    fake_provider._script.clear()
    yield fake_provider
    fake_provider._script.clear()


@pytest.fixture(scope="package")
def kun_server(
    tmp_path_factory: pytest.TempPathFactory, fake_provider: FakeProvider
) -> Iterator[KunServer]:
    """One ``kun serve`` for the browser tests: starting one costs more than most
    tests take. Each test makes its own threads."""
    server = KunServer(tmp_path_factory.mktemp("kun"), fake_provider.base_url)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def kun(kun_server: KunServer, provider: FakeProvider) -> Iterator[KunServer]:
    """The package's server, running (a test may have stopped it); the
    turns a test leaves running are interrupted after it."""
    kun_server.ensure_running()
    kun_server.created.clear()
    yield kun_server
    kun_server.ensure_running()
    kun_server.interrupt_created()


def _fits_one_shot(page: Page) -> bool:
    """A whole-page screenshot of a very long page (a thread of thousands of
    events) takes Chromium longer than any sensible timeout on a busy CI
    machine; such a page is shot at the viewport only."""
    height = page.evaluate("document.documentElement.scrollHeight")
    return isinstance(height, int) and height <= FULL_PAGE_MAX_PX


@pytest.fixture
def shot(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Shot:
    root = os.environ.get("KUN_TEST_ARTIFACTS")
    base = Path(root) / "browser" if root else tmp_path_factory.getbasetemp() / "screenshots"
    folder = base / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    count = 0

    def save(page: Page, step: str) -> Path:
        nonlocal count
        count += 1
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{count:02d}-{step}.png"
        page.screenshot(path=str(path), full_page=_fits_one_shot(page), timeout=SHOT_TIMEOUT_MS)
        print(f"screenshot: {path}")
        _saved.append(path)
        return path

    return save


@pytest.fixture
def page(
    browser: Browser, kun: KunServer, shot: Shot, request: pytest.FixtureRequest
) -> Iterator[Page]:
    context = browser.new_context(base_url=kun.origin)
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    try:
        yield opened
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            try:
                shot(opened, "failed")
            except Exception as exc:
                print(f"no screenshot of the failure: {exc}")
        context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _saved:
        folders = sorted({str(path.parent.parent) for path in _saved})
        terminalreporter.write_line(f"browser screenshots: {', '.join(folders)}")
