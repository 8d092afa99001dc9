"""Which model a turn runs on.

A thread remembers its provider and model in its settings, and keeps them:
a turn runs on the thread's model unless the user names another, and a
named change is recorded as a ``thread_updated`` event, so the log (and
``kun replay``, which shows each turn's model from its ``turn_started``)
tells which model answered when. ``--model`` alone names a model of the
provider in force: ``--provider`` if given, else the thread's, else the
configured default.

The service holds one model client; :class:`SwitchableModel` lets a
session change it between turns without rebuilding the service.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, Self

from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.contracts.threads import ThreadSettings
from kun.model.port import ModelClient

if TYPE_CHECKING:
    from kun.runtime.service import TurnService

__all__ = [
    "Router",
    "SwitchableModel",
    "changed_model",
    "choose_model",
    "continue_thread",
    "parse_target",
]


class Router(Protocol):
    """What model choice needs of :class:`~kun.model.router.MultiProviderClient`."""

    @property
    def provider(self) -> str: ...

    @property
    def providers(self) -> tuple[str, ...]: ...

    def select(self, provider_id: str | None = None) -> ModelClient: ...


def choose_model(
    router: Router,
    *,
    provider: str | None = None,
    model: str | None = None,
    settings: ThreadSettings | None = None,
) -> ModelClient:
    """The client a turn runs on: the names given, else the thread's, else
    the defaults. Raises the router's error for a provider that is not
    configured (a user mistake, one line)."""
    kept = settings if settings is not None and settings.provider else None
    name = provider or (kept.provider if kept is not None else None) or router.provider
    if model is None and provider is None and kept is not None:
        model = kept.model
    return router.select(f"{name}/{model}" if model else name)


def changed_model(settings: ThreadSettings, client: ModelClient) -> dict[str, Any]:
    """The ``thread_updated`` fields that make ``settings`` name ``client``'s
    model (empty when they already do)."""
    if (settings.provider, settings.model) == (client.provider, client.model):
        return {}
    return {"provider": client.provider, "model": client.model}


def parse_target(text: str) -> tuple[str | None, str | None]:
    """``provider/model``, ``provider/`` or ``model`` as typed by a user
    (``/model``): a name containing ``/`` starts with its provider."""
    text = text.strip()
    if "/" in text:
        provider, _, model = text.partition("/")
        return provider or None, model or None
    return None, text or None


class SwitchableModel:
    """A model client whose target can change between turns; everything
    else is the current client's."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client

    @property
    def provider(self) -> str:
        return self.client.provider

    @property
    def model(self) -> str:
        return self.client.model

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        return self.client.stream(request)

    def with_thinking(self, effort: str) -> Self:
        return type(self)(self.client.with_thinking(effort))

    def with_max_completion_tokens(self, n: int) -> Self:
        return type(self)(self.client.with_max_completion_tokens(n))


def _satisfies_the_port(model: SwitchableModel) -> ModelClient:
    return model


async def continue_thread(
    service: TurnService,
    router: Router,
    model: SwitchableModel,
    thread_id: str,
    *,
    provider: str | None,
    model_name: str | None,
    approval: str | None,
) -> None:
    """Open ``thread_id`` to run more turns, with ``model`` set to the
    thread's own model unless the user named another; a named model or
    approval policy that differs from the thread's is recorded as
    ``thread_updated``. The thread is claimed, so one another process
    writes is refused here at once (``ThreadLocked``), then released: the
    session waiting for its next message does not hold it."""
    state = await service.recorder.open(thread_id)
    model.client = choose_model(
        router, provider=provider, model=model_name, settings=state.settings
    )
    changes = changed_model(state.settings, model)
    if changes and (provider or model_name):
        await service.update_thread(thread_id, **changes)
    if approval is not None:
        await service.update_thread(thread_id, approval_policy=approval)
    await service.release_if_idle(thread_id)
