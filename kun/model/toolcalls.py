"""One tool-call state table for every stream decoder.

Providers stream tool calls in many broken ways; all three decoders feed
the same table, so a rule learnt from one relay protects the others.

State: the pending calls keyed by call id, and the provider's ``index`` ->
pending call. An index is an opaque key (it need not start at 0 or be an
int: Responses uses item ids). A delta is claimed, in this order, by:

1. its explicit id, when that id is pending (an id repeated on every chunk
   is set once, never concatenated);
2. its index. A pending call there whose id was synthesized takes the late
   real id, keeping its arguments. One with a different real id takes the
   new id too (some servers send a second id after the first chunk), unless
   the delta names another tool, or names any tool once arguments have
   started: relays put every parallel call on index 0, so that is a new call;
3. without an index, the call that received the previous delta (or the
   single pending call); with an index never seen and nothing but
   arguments, the single pending call;
4. nothing: a new call, named ``__kun_stream_tool_call_index_<index>`` until
   its real id arrives.

A name on a delta whose call already has arguments opens a new call (no
``write_filewrite_file``, no ``{"a":1}{"b":2}``) unless the delta names the
call by its own id; a name before any arguments is appended (names split
across deltas) unless it repeats the name already known.

Protocol errors (:class:`StreamProtocolError`): an id that is not a string,
holds control characters or exceeds 256 characters; a real id arriving for
the index of a synthesized call while another pending call holds that id; a
delta for a call already settled. ``None`` and ``""`` mean "no id".
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import msgspec

from kun.contracts.model import ToolCallCompleteChunk, ToolCallDeltaChunk
from kun.model.arguments import repair_arguments
from kun.model.errors import StreamProtocolError

__all__ = ["MAX_CALL_ID_LENGTH", "SYNTHETIC_ID_PREFIX", "ToolCallTable"]

MAX_CALL_ID_LENGTH = 256
SYNTHETIC_ID_PREFIX = "__kun_stream_tool_call_index_"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class _Call:
    """Scratch state of one pending call (mutable, never handed out)."""

    __slots__ = ("call_id", "has_args", "keys", "name", "ordinal", "parts", "real")

    def __init__(self, call_id: str, real: bool, ordinal: int) -> None:
        self.call_id = call_id
        self.real = real
        self.ordinal = ordinal
        self.name = ""
        self.parts: list[str] = []
        self.has_args = False
        self.keys: list[Hashable] = []


class ToolCallTable:
    """Accumulates tool-call deltas and settles them into complete chunks.

    :meth:`delta` returns the ``tool_call_delta`` chunk to emit (or ``None``
    when the delta carried nothing new); :meth:`complete` settles one call
    (Responses, Anthropic); :meth:`settle_all` settles every pending call
    (chat completions, end of stream). A call that never got a name cannot
    be run: settling drops it and counts it in ``dropped``.
    """

    __slots__ = ("_by_index", "_calls", "_last", "_ordinal", "_settled", "completed", "dropped")

    def __init__(self) -> None:
        self._calls: dict[str, _Call] = {}
        self._by_index: dict[Hashable, _Call] = {}
        self._settled: set[str] = set()
        self._last: _Call | None = None
        self._ordinal = 0
        self.completed = 0
        self.dropped = 0

    @property
    def has_named_pending(self) -> bool:
        """Whether a pending call has a name (and so would run if settled)."""
        return any(call.name for call in self._calls.values())

    def delta(
        self,
        *,
        call_id: object = None,
        index: object = None,
        name: object = None,
        arguments: object = None,
    ) -> ToolCallDeltaChunk | None:
        """Apply one streamed fragment; raise StreamProtocolError when the
        stream is beyond repair."""
        cid = _checked_id(call_id)
        key = _checked_index(index)
        name_text = _text(name, "name")
        args = _arguments_text(arguments)
        if cid is None and not name_text and not args:
            return None
        call = self._claim(cid, key, name_text)
        self._last = call
        name_part = ""
        if name_text and name_text != call.name and not call.has_args:
            call.name += name_text
            name_part = name_text
        if args:
            call.parts.append(args)
            call.has_args = True
        if not name_part and not args:
            return None
        return ToolCallDeltaChunk(
            call_id=call.call_id, name=name_part, arguments=args, index=call.ordinal
        )

    def complete(
        self,
        *,
        call_id: object = None,
        index: object = None,
        name: object = None,
        arguments: object = None,
    ) -> ToolCallCompleteChunk | None:
        """Settle the call named by ``call_id`` or ``index``. ``arguments``,
        when given, is the provider's authoritative full text and replaces
        what the deltas built. A call not seen before is created, if named."""
        cid = _checked_id(call_id)
        key = _checked_index(index)
        name_text = _text(name, "name")
        call = self._calls.get(cid) if cid is not None else None
        if call is None and key is not None:
            call = self._by_index.get(key)
            if call is not None and cid is not None and cid != call.call_id:
                self._migrate(call, cid)
        if call is None:
            if not name_text or (cid is not None and cid in self._settled):
                return None
            call = self._open(cid, key)
        if name_text and not call.name:
            call.name = name_text
        return self._settle(call, _arguments_text(arguments) if arguments is not None else None)

    def settle_all(self) -> list[ToolCallCompleteChunk]:
        """Settle every pending call, in the order they were opened."""
        out: list[ToolCallCompleteChunk] = []
        for call in sorted(self._calls.values(), key=lambda c: c.ordinal):
            chunk = self._settle(call, None)
            if chunk is not None:
                out.append(chunk)
        return out

    def _claim(self, cid: str | None, key: Hashable | None, name: str) -> _Call:
        if cid is not None:
            call = self._calls.get(cid)
            if call is not None:
                self._check_collision(call, key)
                return call
            if cid in self._settled:
                raise StreamProtocolError(f"tool call {cid!r} received a delta after it completed")
        target = self._by_index.get(key) if key is not None else None
        if target is None and key is None:
            target = self._current()
        elif target is None and cid is None and not name:
            target = self._current(sole=True)
        if target is None:
            return self._open(cid, key)
        if name and target.has_args:
            return self._open(cid, key)
        if cid is not None:
            if target.real and name and name != target.name:
                return self._open(cid, key)
            self._migrate(target, cid)
        return target

    def _current(self, *, sole: bool = False) -> _Call | None:
        if not sole and self._last is not None and self._last.call_id in self._calls:
            return self._last
        if len(self._calls) == 1:
            return next(iter(self._calls.values()))
        return None

    def _check_collision(self, call: _Call, key: Hashable | None) -> None:
        if key is None:
            return
        other = self._by_index.get(key)
        if other is None:
            self._by_index[key] = call
            call.keys.append(key)
        elif other is not call and not other.real:
            raise StreamProtocolError(
                f"late tool call id {call.call_id!r} for index {key!r} collides with "
                "another pending call"
            )

    def _open(self, cid: str | None, key: Hashable | None) -> _Call:
        ordinal = self._ordinal
        self._ordinal += 1
        if cid is None:
            cid = f"{SYNTHETIC_ID_PREFIX}{key if key is not None else ordinal}"
            if cid in self._calls or cid in self._settled:
                cid = f"{cid}_{ordinal}"
            call = _Call(cid, False, ordinal)
        else:
            call = _Call(cid, True, ordinal)
        self._calls[cid] = call
        if key is not None:
            self._by_index[key] = call
            call.keys.append(key)
        return call

    def _migrate(self, call: _Call, cid: str) -> None:
        if cid in self._calls:
            raise StreamProtocolError(
                f"late tool call id {cid!r} collides with another pending call"
            )
        if cid in self._settled:
            raise StreamProtocolError(f"tool call {cid!r} received a delta after it completed")
        del self._calls[call.call_id]
        call.call_id = cid
        call.real = True
        self._calls[cid] = call

    def _settle(self, call: _Call, final: str | None) -> ToolCallCompleteChunk | None:
        del self._calls[call.call_id]
        self._settled.add(call.call_id)
        for key in call.keys:
            if self._by_index.get(key) is call:
                del self._by_index[key]
        if not call.name:
            self.dropped += 1
            return None
        text = "".join(call.parts) if final is None else final
        repaired = repair_arguments(text)
        self.completed += 1
        return ToolCallCompleteChunk(
            call_id=call.call_id,
            name=call.name,
            arguments=msgspec.Raw(repaired.json),
            repair=repaired.method,
            arguments_text=text,
            index=call.ordinal,
        )


def _checked_id(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise StreamProtocolError(f"tool call id is a {type(value).__name__}, not a string")
    if len(value) > MAX_CALL_ID_LENGTH:
        raise StreamProtocolError(
            f"tool call id is {len(value)} characters long (limit {MAX_CALL_ID_LENGTH})"
        )
    if _CONTROL.search(value) is not None:
        raise StreamProtocolError(f"tool call id {value!r} contains control characters")
    return value


def _checked_index(value: object) -> Hashable | None:
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise StreamProtocolError(f"tool call index is a {type(value).__name__}")


def _text(value: object, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise StreamProtocolError(f"tool call {what} is a {type(value).__name__}, not a string")


def _arguments_text(value: object) -> str:
    """Argument fragments are strings; a few relays send the whole object."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()
