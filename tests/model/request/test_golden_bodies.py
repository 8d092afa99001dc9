"""Golden request bodies: every history of :mod:`.histories` in every wire
format, byte for byte. Regenerate with ``python -m tests.model.request.make_golden``
and review the diff."""

from __future__ import annotations

import pytest

from kun.contracts.model import WireFormat
from tests.model.request.histories import CASES, FORMATS
from tests.model.request.make_golden import GOLDEN, golden_path, render

PAIRS = [(case, fmt) for case in CASES for fmt in FORMATS]


@pytest.mark.parametrize(("case", "fmt"), PAIRS, ids=[f"{c}.{f}" for c, f in PAIRS])
def test_body_matches_golden(case: str, fmt: WireFormat) -> None:
    path = golden_path(case, fmt)
    assert path.is_file(), f"missing {path.name}: run python -m tests.model.request.make_golden"
    assert render(case, fmt) == path.read_bytes(), (
        f"{path.name} is stale: run python -m tests.model.request.make_golden and review the diff"
    )


def test_every_golden_file_has_a_case() -> None:
    expected = {golden_path(case, fmt).name for case, fmt in PAIRS}
    assert {path.name for path in GOLDEN.glob("*.json")} == expected


def test_rendering_is_deterministic() -> None:
    assert render("multi_step_tools", "messages") == render("multi_step_tools", "messages")
