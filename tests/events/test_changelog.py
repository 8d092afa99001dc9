"""``events/CHANGELOG.md`` documents every kind, item type and golden log."""

from __future__ import annotations

from typing import get_args

import pytest

from kun.contracts.events import KINDS
from kun.contracts.items import Item
from kun.testing.golden_threads import THREADS
from tests.events.scripts import ROOT

CHANGELOG = (ROOT / "events" / "CHANGELOG.md").read_text(encoding="utf-8")
ITEM_TYPES = sorted(str(t.__struct_config__.tag) for t in get_args(Item))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_has_a_row(kind: str) -> None:
    assert f"| `{kind}` |" in CHANGELOG, f"events/CHANGELOG.md does not describe `{kind}`"


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_every_item_type_has_a_row(item_type: str) -> None:
    assert f"| `{item_type}` |" in CHANGELOG, f"events/CHANGELOG.md does not describe `{item_type}`"


@pytest.mark.parametrize("name", sorted(THREADS))
def test_every_golden_log_is_listed(name: str) -> None:
    assert f"| `{name}` |" in CHANGELOG, f"events/CHANGELOG.md does not list golden log `{name}`"
