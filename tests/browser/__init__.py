"""Browser tests: the web view in headless Chromium against a real ``kun
serve``. ``pages`` holds assertions shared by the tests, so pytest rewrites
them too (its failures show what differed)."""

import pytest

pytest.register_assert_rewrite("tests.browser.pages")
