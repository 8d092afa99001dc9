"""The wire tag of a tagged-union member (msgspec keeps it on the class)."""

from __future__ import annotations

from kun.contracts.events import EventBase
from kun.contracts.items import ItemBase


def item_type(item: ItemBase) -> str:
    return str(type(item).__struct_config__.tag)


def event_kind(event: EventBase) -> str:
    return str(type(event).__struct_config__.tag)
