"""Upcasters: old event shapes to the current ones, on the raw mapping.

Changing an event's shape bumps its kind's version in :data:`CURRENT_VERSION`
and registers a function in :data:`UPCASTERS` under ``(kind, old_version)``
that turns the raw mapping of that version into the raw mapping of the next.
:func:`upcast` applies the chain at decode time, so logs written by every
released version replay forever. Upcasters are pure: they get a mapping and
return a new one (name them ``upcast_<kind>_v1_v2``).

The registry is empty today: every kind is at version 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kun.contracts.events import KINDS

__all__ = ["CURRENT_VERSION", "UPCASTERS", "Upcaster", "upcast"]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""``(kind, from_version)`` -> function returning the ``from_version + 1`` mapping."""

CURRENT_VERSION: dict[str, int] = dict.fromkeys(sorted(KINDS), 1)
"""The version of each kind this code writes and its Structs describe."""


def upcast(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring the raw mapping of an event up to its kind's current version.

    The version is ``raw["v"]`` (1 when absent). Each step calls the registered
    upcaster and then sets ``v`` to the next version itself, so an upcaster
    cannot loop forever by forgetting to. A mapping that is current, newer than
    current, or of an unknown kind is returned unchanged; a missing step raises
    ``LookupError``. The input mapping is never modified.
    """
    kind = raw.get("kind")
    if not isinstance(kind, str):
        return raw
    current = CURRENT_VERSION.get(kind)
    version = raw.get("v", 1)
    if current is None or not isinstance(version, int) or version >= current:
        return raw
    out = raw
    while version < current:
        step = UPCASTERS.get((kind, version))
        if step is None:
            raise LookupError(f"no upcaster for {kind!r} from version {version} to {version + 1}")
        out = dict(step(dict(out)))
        version += 1
        out["v"] = version
    return out
