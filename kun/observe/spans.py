"""The span interface the traces drive, so :mod:`kun.observe.trace` never
imports OpenTelemetry: :class:`kun.observe.otel.OtelSpans` implements it
when tracing is on, and nothing does when it is off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Spans"]


class Spans(Protocol):
    """Opens a span when its work starts and closes it with the work's
    JSON-line record (:mod:`kun.observe.trace`), which carries every
    attribute the span needs."""

    def turn(self, record: dict[str, Any], caller: Mapping[str, str] | None = None) -> Any:
        """``caller``: W3C trace headers the turn's span is a child of."""
        ...

    def headers(self, span: Any) -> dict[str, str]:
        """The W3C trace headers naming ``span``, to send with its request."""
        ...

    def model_call(self, parent: Any, record: dict[str, Any]) -> Any: ...

    def tool_call(self, parent: Any, record: dict[str, Any]) -> Any: ...

    def wait(self, parent: Any, record: dict[str, Any]) -> Any: ...

    def end(self, span: Any, record: dict[str, Any]) -> None: ...

    def close(self) -> None: ...
