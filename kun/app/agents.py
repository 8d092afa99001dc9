"""The sub-agents a runtime offers: ``[agents.NAME]`` profiles and the
``[runtime]`` bounds, made into the service's delegation
(:mod:`kun.runtime.delegation`)."""

from __future__ import annotations

from kun.app.selection import Router, choose_model
from kun.config import Config
from kun.model.port import ModelClient
from kun.runtime.delegation import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_PARALLEL,
    AgentProfile,
    Delegation,
)
from kun.runtime.service import TurnService

__all__ = ["agent_profiles", "delegation_for"]


def agent_profiles(config: Config | None) -> dict[str, AgentProfile]:
    if config is None:
        return {}
    return {
        name: AgentProfile(
            name=name,
            description=table.description,
            provider=table.provider,
            model=table.model,
            system_prompt=table.system_prompt,
            tools=None if table.tools is None else tuple(table.tools),
            approval_policy=table.approval_policy,
        )
        for name, table in config.agents.items()
    }


def delegation_for(
    service: TurnService, config: Config | None, router: Router | None
) -> Delegation | None:
    """The delegation of ``service``'s turns; ``None`` when ``[runtime]
    max_agent_depth`` is 0 (no ``delegate_task``). A profile's provider and
    model are chosen through ``router`` (without one, sub-agents run on
    their parent's model)."""
    runtime = config.runtime if config is not None else None
    depth = runtime.max_agent_depth if runtime is not None else None
    if depth == 0:
        return None
    parallel = runtime.max_parallel_agents if runtime is not None else None

    def model_for(provider: str | None, model: str | None) -> ModelClient:
        assert router is not None
        return choose_model(router, provider=provider, model=model)

    return Delegation(
        service,
        agents=agent_profiles(config),
        models=model_for if router is not None else None,
        max_parallel=parallel or DEFAULT_MAX_PARALLEL,
        max_depth=depth if depth is not None else DEFAULT_MAX_DEPTH,
    )
