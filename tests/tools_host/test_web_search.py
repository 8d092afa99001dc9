"""``$web_search`` hands Moonshot's arguments back verbatim, whatever they
are, through the host (validation, scrubbing) like any tool; and it is
offered only when a provider asks for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.app.session import tool_host
from kun.config import parse_config
from kun.tools.base import ToolContext
from kun.tools.builtin.web_search import NAME, WebSearch
from kun.tools.host import ToolHost

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)
ARGUMENTS = st.dictionaries(st.text(max_size=12), JSON, max_size=4)


def run(host: ToolHost, arguments: bytes) -> str:
    ctx = ToolContext(workspace=Path("/nonexistent"), thread_id="t", turn_id="u", call_id="c")

    async def main() -> str:
        return (await host.execute(NAME, arguments, ctx)).output

    return anyio.run(main)


@settings(max_examples=200, deadline=None)
@given(ARGUMENTS)
def test_the_result_is_the_arguments(arguments: dict[str, Any]) -> None:
    raw = msgspec.json.encode(arguments)
    assert run(ToolHost([WebSearch()]), raw).encode() == raw


def test_moonshots_own_arguments_come_back_byte_for_byte() -> None:
    raw = b'{"search_result":{"search_id":"7f1d-2b"},"usage":{"total_tokens":1536}}'
    assert run(ToolHost([WebSearch()]), raw).encode() == raw


def test_offered_only_when_a_provider_asks() -> None:
    plain = parse_config("[providers.moonshotai]\n", "kun.toml")
    asked = parse_config("[providers.moonshotai]\nweb_search = true\n", "kun.toml")
    assert NAME not in {spec.name for spec in tool_host(plain, {}).specs()}
    assert NAME in {spec.name for spec in tool_host(asked, {}).specs()}
