#!/usr/bin/env python3
"""A stand-in for the ``claude`` CLI that speaks the Agent SDK's stream-JSON protocol.

Why: kun's agent-sdk engine drives the real ``claude_agent_sdk``, which spawns
``claude``. Tests cannot reach the API, so this script takes the CLI's place
(``ClaudeAgentOptions(cli_path=...)``) and plays a scripted conversation while
speaking the same protocol the SDK speaks to the real CLI. Standard library
only, so any ``python3`` runs it.

Protocol (what the SDK does, what this script answers)
------------------------------------------------------
* Command line: ``--output-format stream-json --verbose ... --input-format
  stream-json``; option values mostly as one ``--flag=value`` argument
  (``--resume=ID``, ``--model=M``, ``--setting-sources=``,
  ``--permission-prompt-tool=stdio``), ``--mcp-config JSON`` and
  ``--settings VALUE`` as two. ``-v``/``--version`` prints the version (SDKs
  before 0.1.x ran it; this SDK reads ``claude_code_version`` from the
  ``system``/``init`` message instead).
* stdin: one JSON object per line: ``control_request`` (``initialize``,
  ``interrupt``, ``set_permission_mode``, ``set_model``, ``mcp_status``),
  ``control_response`` (answers to this script's requests), ``user`` prompts.
* stdout: one JSON object per line: ``control_response`` and
  ``control_request`` (``can_use_tool``, ``mcp_message``, ``hook_callback``), ``system`` (``init``
  at the start of each turn; ``session_state_changed`` with ``sdk_host_only``
  when ``CLAUDE_CODE_SDK_READS_SESSION_STATE`` is set), ``stream_event`` (with
  ``--include-partial-messages``), ``assistant``, ``user`` (tool results) and
  ``result``.
* Exit: on end of stdin; status 1 when the last result was an error, as the
  real CLI does.

Scenario (``KUN_FAKE_CLAUDE_SCENARIO`` names a JSON file)
---------------------------------------------------------
``{"turns": [TURN, ...]}`` or just ``[TURN, ...]``; the n-th prompt plays the
n-th turn (a prompt past the last turn gets an error result). A TURN is a list
of STEPs or ``{"steps": [STEP, ...], "usage": {...}, "total_cost_usd": 0.01,
"result": "text"}``. Without a scenario file every prompt is echoed back.
STEPs (``type`` picks one):

* ``{"type": "text", "text": "Hello", "deltas": ["He", "llo"], "partial": false}``
  stream the deltas (default: split at spaces), then an ``assistant`` text
  message; ``partial: true`` stops after the deltas (for an interrupt).
* ``{"type": "thinking", "thinking": "...", "signature": "sig"}``
* ``{"type": "tool_use", "name": "mcp__calc__add", "input": {"a": 1}, "id":
  "toolu_1", "result": "for tools not served by the SDK", "is_error": false}``
  an ``assistant`` tool_use; then permission (``can_use_tool`` over stdio when
  ``--permission-prompt-tool=stdio`` and the tool is not in
  ``--allowedTools``; denied outright when in ``--disallowedTools``, or not
  allowed with no way to ask; allowed under ``bypassPermissions``); then, for
  ``mcp__<server>__<tool>`` of an SDK server, a real ``tools/call`` through
  ``mcp_message`` (after ``initialize``, ``notifications/initialized`` and
  ``tools/list``); then a ``user`` tool_result.
  ``PreToolUse`` hooks registered through ``initialize`` are called first (a
  ``deny``/``block`` denies, an ``allow`` skips the prompt, ``updatedInput``
  replaces the input); ``PostToolUse`` hooks get the ``tool_response``.
* ``{"type": "sleep", "seconds": 0.1}`` (an interrupt ends the turn early)
* ``{"type": "wait_for_interrupt", "timeout": 5}`` the turn ends when an
  ``interrupt`` control request arrives: a ``[Request interrupted by user]``
  user message and an ``error_during_execution`` result with ``is_error``
  and ``terminal_reason: "aborted_streaming"``.
* ``{"type": "error", "subtype": "error_during_execution", "errors": ["..."],
  "result": "API Error: ...", "api_error_status": 529}`` ends the turn with an
  error result (all fields optional).

Example::

    {"turns": [
      {"steps": [{"type": "thinking", "thinking": "Add them."},
                 {"type": "tool_use", "name": "mcp__calc__add",
                  "input": {"a": 2, "b": 3}},
                 {"type": "text", "text": "It is 5."}],
       "usage": {"input_tokens": 12, "output_tokens": 7,
                 "cache_read_input_tokens": 3, "cache_creation_input_tokens": 1},
       "total_cost_usd": 0.0021},
      [{"type": "text", "text": "Counting 1 2 3", "partial": true},
       {"type": "wait_for_interrupt"}]
    ]}

Log (``KUN_FAKE_CLAUDE_LOG`` names a file): at exit, SIGTERM included, one
JSON line is appended with ``argv``, ``flags`` (parsed), ``env`` (names, not
values, starting ``ANTHROPIC_`` or ``CLAUDE_``), ``session_id`` (the
``--session-id`` or ``--resume`` id, a new one with ``--fork-session``),
``prompts``, ``control_requests`` (from the SDK), ``control_responses`` (to
this script's requests), ``mcp`` (JSON-RPC exchanges) and ``exit_code``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, NoReturn

VERSION = "2.1.337"
DEFAULT_MODEL = "claude-sonnet-4-5"
MCP_PROTOCOL_VERSION = "2025-06-18"
BUILTIN_TOOLS = ("Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch")
DEFAULT_USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
FLAGS_WITHOUT_VALUE = frozenset(
    {
        "verbose",
        "include-partial-messages",
        "include-hook-events",
        "continue",
        "strict-mcp-config",
        "fork-session",
        "session-mirror",
    }
)
INTERRUPTED_TEXT = "[Request interrupted by user]"

Json = dict[str, Any]


class Interrupted(Exception):
    """The SDK sent an ``interrupt`` while a turn was playing."""


class EndOfInput(Exception):
    """stdin closed while this script waited for an answer."""


def parse_flags(argv: list[str]) -> dict[str, Any]:
    """Read ``--flag=value``, ``--flag value`` and bare ``--flag`` as the CLI does.

    Repeated flags (``--add-dir``) keep every value, in order.
    """
    flags: dict[str, Any] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not arg.startswith("--"):
            continue
        name, has_value, value = arg[2:].partition("=")
        if not has_value:
            if name in FLAGS_WITHOUT_VALUE or index >= len(argv) or argv[index].startswith("--"):
                flags[name] = True
                continue
            value = argv[index]
            index += 1
        if name == "add-dir":
            flags[name] = [*flags.get(name, []), value]
        else:
            flags[name] = value
    return flags


def split_list(value: Any) -> list[str]:
    """A comma-separated flag value as a list (empty for a missing flag)."""
    if not isinstance(value, str) or not value:
        return []
    return [item.strip() for item in value.split(",") if item.strip()]


def load_turns(path: str | None) -> list[Json] | None:
    """The scenario's turns, each normalised to ``{"steps": [...], ...}``."""
    if not path:
        return None
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    turns = data["turns"] if isinstance(data, dict) else data
    return [turn if isinstance(turn, dict) else {"steps": turn} for turn in turns]


def prompt_text(message: Json) -> str:
    """The text of a ``user`` stdin message, whether its content is a string or blocks."""
    content = message.get("message", {}).get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def new_uuid() -> str:
    return str(uuid.uuid4())


@dataclass
class Record:
    """What the SDK sent, appended to ``KUN_FAKE_CLAUDE_LOG`` so tests can check it."""

    argv: list[str]
    flags: dict[str, Any]
    env: list[str]
    session_id: str
    prompts: list[str] = field(default_factory=list)
    control_requests: list[Json] = field(default_factory=list)
    control_responses: list[Json] = field(default_factory=list)
    mcp: list[Json] = field(default_factory=list)
    exit_code: int = 0

    def write(self, path: str | None) -> None:
        if not path:
            return
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(self.__dict__) + "\n")


class Channel:
    """The stdin/stdout pipes, with control requests answered as they arrive.

    A reader thread queues stdin lines, so while a turn waits (for a
    permission answer, an MCP reply, an interrupt) the SDK's own control
    requests are still answered and its next prompts are kept for later.
    """

    def __init__(self, record: Record, permission_mode: str) -> None:
        self.record = record
        self.permission_mode = permission_mode
        self.model: str | None = None
        self.hooks: dict[str, list[Json]] = {}
        self.prompts: deque[Json] = deque()
        self.responses: dict[str, Json] = {}
        self.interrupted = False
        self.eof = False
        self._inbox: queue.Queue[Json | None] = queue.Queue()
        threading.Thread(target=self._read_stdin, daemon=True).start()

    def _read_stdin(self) -> None:
        """Queue each JSON object on stdin; anything else is reported and skipped."""
        for line in sys.stdin:
            try:
                message = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                message = None
                print(f"fake claude: not JSON on stdin: {line[:200]!r}", file=sys.stderr)
            if isinstance(message, dict):
                self._inbox.put(message)
        self._inbox.put(None)

    def send(self, message: Json) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def pump(self, timeout: float | None) -> bool:
        """Handle one stdin message; False when none came within ``timeout``."""
        if self.eof:
            return False
        try:
            message = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return False
        if message is None:
            self.eof = True
        elif message.get("type") == "control_request":
            self._answer(message)
        elif message.get("type") == "control_response":
            response = message.get("response", {})
            self.record.control_responses.append(response)
            self.responses[response.get("request_id", "")] = response
        elif message.get("type") == "user":
            self.record.prompts.append(prompt_text(message))
            self.prompts.append(message)
        return True

    def _answer(self, message: Json) -> None:
        """Answer a control request from the SDK at once, as the CLI does."""
        request = message.get("request", {})
        self.record.control_requests.append(request)
        subtype = request.get("subtype")
        body: Json = {}
        if subtype == "initialize":
            self.hooks = request.get("hooks") or {}
            body = {
                "commands": [],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [],
                "account": {},
            }
        elif subtype == "interrupt":
            self.interrupted = True
        elif subtype == "set_permission_mode":
            self.permission_mode = request.get("mode", self.permission_mode)
        elif subtype == "set_model":
            self.model = request.get("model")
        elif subtype == "mcp_status":
            body = {"mcpServers": []}
        else:
            self.send(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "error",
                        "request_id": message.get("request_id"),
                        "error": f"Unsupported control request subtype: {subtype}",
                    },
                }
            )
            return
        self.send(
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": message.get("request_id"),
                    "response": body,
                },
            }
        )

    def request(self, body: Json, timeout: float = 30.0) -> Json:
        """Send a control request to the SDK and wait for its ``response`` object."""
        request_id = f"fake_{new_uuid()}"
        self.send({"type": "control_request", "request_id": request_id, "request": body})
        deadline = time.monotonic() + timeout
        while request_id not in self.responses:
            remaining = deadline - time.monotonic()
            if self.eof or remaining <= 0:
                raise EndOfInput(f"no answer to {body.get('subtype')}")
            self.pump(remaining)
        return self.responses.pop(request_id)

    def check_interrupt(self) -> None:
        """Take in what has arrived so far; raise if it was an interrupt."""
        while self.pump(0):
            pass
        if self.interrupted:
            raise Interrupted


class McpClient:
    """Talks JSON-RPC to the SDK's in-process MCP servers over ``mcp_message``."""

    def __init__(self, channel: Channel, servers: list[str]) -> None:
        self.channel = channel
        self.servers = servers
        self.tools: dict[str, list[str]] = {}
        self._next_id = 0

    def _send(self, server: str, message: Json) -> Json:
        response = self.channel.request(
            {"subtype": "mcp_message", "server_name": server, "message": message}
        )
        reply: Json = response.get("response", {}).get("mcp_response", {})
        if response.get("subtype") == "error":
            reply = {"error": {"code": -32603, "message": response.get("error", "")}}
        self.channel.record.mcp.append({"server": server, "sent": message, "reply": reply})
        return reply

    def _call(self, server: str, method: str, params: Json) -> Json:
        self._next_id += 1
        return self._send(
            server, {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )

    def connect(self) -> None:
        """Handshake with every SDK server and list its tools, as the CLI does at start."""
        for server in self.servers:
            if server in self.tools:
                continue
            self._call(
                server,
                "initialize",
                {
                    "protocolVersion": MCP_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "claude-code", "version": VERSION},
                },
            )
            self._send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = self._call(server, "tools/list", {}).get("result", {})
            self.tools[server] = [tool["name"] for tool in listed.get("tools", [])]

    def split(self, name: str) -> tuple[str, str] | None:
        """``(server, tool)`` when ``name`` is ``mcp__<server>__<tool>`` of an SDK server."""
        for server in self.servers:
            prefix = f"mcp__{server}__"
            if name.startswith(prefix):
                return server, name[len(prefix) :]
        return None

    def call_tool(self, server: str, tool: str, arguments: Json) -> tuple[Any, bool]:
        """Run the tool in the SDK's process: its content blocks and whether it failed."""
        reply = self._call(server, "tools/call", {"name": tool, "arguments": arguments})
        if "error" in reply:
            return reply["error"].get("message", "MCP error"), True
        result = reply.get("result", {})
        return result.get("content", []), bool(result.get("isError"))


@dataclass
class Turn:
    """One prompt's answer being played: the open model response and what it said."""

    message_id: str | None = None
    block_index: int = 0
    api_calls: int = 0
    last_text: str = ""
    denials: list[Json] = field(default_factory=list)


class FakeClaude:
    """Plays scenario turns for each prompt, in the CLI's message shapes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.flags = parse_flags(argv)
        resumed = None if "fork-session" in self.flags else self.flags.get("resume")
        self.session_id = str(self.flags.get("session-id") or resumed or new_uuid())
        self.record = Record(
            argv=argv,
            flags=self.flags,
            env=sorted(k for k in env if k.startswith(("ANTHROPIC_", "CLAUDE_"))),
            session_id=self.session_id,
        )
        self.channel = Channel(self.record, str(self.flags.get("permission-mode", "default")))
        self.mcp = McpClient(self.channel, self._sdk_servers())
        self.turns = load_turns(env.get("KUN_FAKE_CLAUDE_SCENARIO"))
        self.partial = "include-partial-messages" in self.flags
        self.report_state = env.get("CLAUDE_CODE_SDK_READS_SESSION_STATE", "") not in ("", "0")
        self.last_result_is_error = False
        self.turns_played = 0

    def _sdk_servers(self) -> list[str]:
        raw = self.flags.get("mcp-config")
        if not isinstance(raw, str) or not raw.startswith("{"):
            return []
        servers = json.loads(raw).get("mcpServers", {})
        return [name for name, config in servers.items() if config.get("type") == "sdk"]

    @property
    def model(self) -> str:
        return self.channel.model or str(self.flags.get("model") or DEFAULT_MODEL)

    def run(self) -> int:
        """Serve prompts until stdin ends."""
        while True:
            if self.channel.prompts:
                self._play(self.channel.prompts.popleft())
            elif not self.channel.pump(None):
                return 1 if self.last_result_is_error else 0

    def _emit(self, message: Json) -> None:
        self.channel.send({**message, "session_id": self.session_id, "uuid": new_uuid()})

    def _state(self, state: str) -> None:
        if self.report_state:
            self._emit(
                {
                    "type": "system",
                    "subtype": "session_state_changed",
                    "state": state,
                    "sdk_host_only": True,
                }
            )

    def _init_message(self) -> None:
        tools = split_list(self.flags.get("tools")) if "tools" in self.flags else BUILTIN_TOOLS
        mcp_tools = [f"mcp__{s}__{t}" for s, names in self.mcp.tools.items() for t in names]
        denied = set(split_list(self.flags.get("disallowedTools")))
        self._emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": os.getcwd(),
                "tools": [t for t in [*tools, *mcp_tools] if t not in denied],
                "mcp_servers": [{"name": s, "status": "connected"} for s in self.mcp.servers],
                "model": self.model,
                "permissionMode": self.channel.permission_mode,
                "slash_commands": [],
                "apiKeySource": "none",
                "claude_code_version": VERSION,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
            }
        )

    def _play(self, prompt: Json) -> None:
        """Answer one prompt: init, the turn's steps, then the result."""
        self.channel.interrupted = False
        self.turns_played += 1
        turn = Turn()
        started = time.monotonic()
        self._state("running")
        script = self._script_for(prompt_text(prompt))
        try:
            self.mcp.connect()
            self._init_message()
            if script is None:
                self._finish(turn, started, {}, error=self._no_turn_error())
                return
            for step in script.get("steps", []):
                self.channel.check_interrupt()
                self._step(turn, step)
            self._close_response(turn, "end_turn")
            self._finish(turn, started, script)
        except Interrupted:
            self._emit(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": INTERRUPTED_TEXT}],
                    },
                    "parent_tool_use_id": None,
                }
            )
            error = {"subtype": "error_during_execution", "terminal_reason": "aborted_streaming"}
            self._finish(turn, started, script or {}, error=error)
        except TurnError as failure:
            self._finish(turn, started, script or {}, error=failure.fields)
        except EndOfInput as failure:
            self._finish(turn, started, script or {}, error={"errors": [str(failure)]})

    def _script_for(self, text: str) -> Json | None:
        if self.turns is None:
            return {"steps": [{"type": "text", "text": f"echo: {text}"}]}
        if self.turns_played > len(self.turns):
            return None
        return self.turns[self.turns_played - 1]

    def _no_turn_error(self) -> Json:
        count = len(self.turns or [])
        return {
            "errors": [
                f"fake claude: prompt {self.turns_played} but the scenario has {count} turns"
            ]
        }

    def _step(self, turn: Turn, step: Json) -> None:
        kind = step.get("type")
        if kind == "text":
            self._text(turn, step)
        elif kind == "thinking":
            self._thinking(turn, step)
        elif kind == "tool_use":
            self._tool_use(turn, step)
        elif kind == "sleep":
            self._wait(float(step.get("seconds", 0.1)), until_interrupt=False)
        elif kind == "wait_for_interrupt":
            self._wait(float(step.get("timeout", 5.0)), until_interrupt=True)
        elif kind == "error":
            raise TurnError({k: v for k, v in step.items() if k != "type"})
        else:
            raise TurnError({"errors": [f"fake claude: unknown step type {kind!r}"]})

    def _wait(self, seconds: float, until_interrupt: bool) -> None:
        """Sleep while still answering control requests; an interrupt cuts it short."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0 and not self.channel.eof:
            self.channel.pump(remaining)
            if self.channel.interrupted:
                raise Interrupted
        if until_interrupt:
            raise TurnError({"errors": [f"fake claude: no interrupt within {seconds} s"]})

    def _stream(self, event: Json) -> None:
        if self.partial:
            self._emit({"type": "stream_event", "event": event, "parent_tool_use_id": None})

    def _open_block(self, turn: Turn, block: Json) -> int:
        """Start a content block, starting a model response first if none is open."""
        if turn.message_id is None:
            turn.message_id = f"msg_{uuid.uuid4().hex[:24]}"
            turn.block_index = 0
            turn.api_calls += 1
            self._stream(
                {"type": "message_start", "message": self._message([], None, turn.message_id)}
            )
        index = turn.block_index
        turn.block_index += 1
        self._stream({"type": "content_block_start", "index": index, "content_block": block})
        return index

    def _message(self, content: list[Json], stop_reason: str | None, msg_id: str = "") -> Json:
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": DEFAULT_USAGE["input_tokens"], "output_tokens": 1},
        }

    def _finish_block(self, turn: Turn, index: int, block: Json) -> None:
        """Close a streamed block and emit it as an ``assistant`` message, as the CLI does."""
        self._stream({"type": "content_block_stop", "index": index})
        self._emit(
            {
                "type": "assistant",
                "message": self._message([block], None, turn.message_id or ""),
                "parent_tool_use_id": None,
            }
        )

    def _close_response(self, turn: Turn, stop_reason: str) -> None:
        if turn.message_id is None:
            return
        self._stream(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": DEFAULT_USAGE["output_tokens"]},
            }
        )
        self._stream({"type": "message_stop"})
        turn.message_id = None

    def _text(self, turn: Turn, step: Json) -> None:
        deltas = step.get("deltas") or split_words(str(step.get("text", "")))
        text = "".join(deltas)
        index = self._open_block(turn, {"type": "text", "text": ""})
        for delta in deltas:
            self.channel.check_interrupt()
            self._stream(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": delta},
                }
            )
        if step.get("partial"):
            return
        turn.last_text = text
        self._finish_block(turn, index, {"type": "text", "text": text})

    def _thinking(self, turn: Turn, step: Json) -> None:
        thinking = str(step.get("thinking", ""))
        signature = str(step.get("signature", "fake-signature"))
        index = self._open_block(turn, {"type": "thinking", "thinking": "", "signature": ""})
        for delta, kind, key in (
            (thinking, "thinking_delta", "thinking"),
            (signature, "signature_delta", "signature"),
        ):
            self._stream(
                {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: delta}}
            )
        block = {"type": "thinking", "thinking": thinking, "signature": signature}
        self._finish_block(turn, index, block)

    def _tool_use(self, turn: Turn, step: Json) -> None:
        """Announce the call, settle permission, run it, and report its result."""
        name = str(step["name"])
        tool_input: Json = dict(step.get("input", {}))
        tool_id = str(step.get("id") or f"toolu_{uuid.uuid4().hex[:24]}")
        index = self._open_block(
            turn, {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
        )
        self._stream(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
            }
        )
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        self._finish_block(turn, index, block)
        self._close_response(turn, "tool_use")
        allowed, tool_input, denial = self._permission(name, tool_input, tool_id)
        if allowed:
            content, is_error = self._run_tool(name, tool_input, step)
            self._hooks("PostToolUse", name, tool_id, tool_input, {"tool_response": content})
        else:
            content, is_error = denial, True
            turn.denials.append(
                {"tool_name": name, "tool_use_id": tool_id, "tool_input": tool_input}
            )
        result_block = {
            "type": "tool_result",
            "tool_use_id": tool_id,
            "content": content,
            "is_error": is_error,
        }
        self._emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [result_block]},
                "parent_tool_use_id": None,
                "tool_use_result": content,
            }
        )

    def _run_tool(self, name: str, tool_input: Json, step: Json) -> tuple[Any, bool]:
        target = self.mcp.split(name)
        if target is not None:
            return self.mcp.call_tool(target[0], target[1], tool_input)
        return step.get("result", "ok"), bool(step.get("is_error", False))

    def _is_allowed(self, name: str) -> bool:
        target = self.mcp.split(name)
        rules = set(split_list(self.flags.get("allowedTools")))
        if name in rules:
            return True
        return target is not None and bool({f"mcp__{target[0]}", f"mcp__{target[0]}__*"} & rules)

    def _hooks(
        self, event: str, name: str, tool_id: str, tool_input: Json, extra: Json
    ) -> list[Json]:
        """Call the SDK's hook callbacks registered for ``event`` whose matcher takes ``name``."""
        outputs: list[Json] = []
        for matcher in self.channel.hooks.get(event, []):
            pattern = matcher.get("matcher")
            if pattern not in (None, "", "*") and not re.fullmatch(str(pattern), name):
                continue
            for callback_id in matcher.get("hookCallbackIds", []):
                hook_input = {
                    "session_id": self.session_id,
                    "transcript_path": "",
                    "cwd": os.getcwd(),
                    "permission_mode": self.channel.permission_mode,
                    "hook_event_name": event,
                    "tool_name": name,
                    "tool_input": tool_input,
                    "tool_use_id": tool_id,
                    **extra,
                }
                response = self.channel.request(
                    {
                        "subtype": "hook_callback",
                        "callback_id": callback_id,
                        "input": hook_input,
                        "tool_use_id": tool_id,
                    }
                )
                outputs.append(response.get("response") or {})
        return outputs

    def _pre_tool_hooks(self, name: str, tool_id: str, tool_input: Json) -> tuple[str, Json, str]:
        """PreToolUse hooks' verdict: "allow", "deny" or "" (no opinion), input, reason."""
        verdict, reason = "", ""
        for output in self._hooks("PreToolUse", name, tool_id, tool_input, {}):
            specific = output.get("hookSpecificOutput") or {}
            tool_input = dict(specific.get("updatedInput") or tool_input)
            decision = specific.get("permissionDecision")
            if decision == "deny" or output.get("decision") == "block":
                reason = specific.get("permissionDecisionReason") or output.get("reason") or ""
                return "deny", tool_input, reason or f"Blocked by hook: {name}"
            if decision == "allow":
                verdict = "allow"
        return verdict, tool_input, reason

    def _permission(self, name: str, tool_input: Json, tool_id: str) -> tuple[bool, Json, str]:
        """Whether the call may run, its (possibly updated) input, and the denial text.

        Order as in the CLI: deny rules, PreToolUse hooks, allow rules and
        mode, then the ``can_use_tool`` prompt.
        """
        if name in split_list(self.flags.get("disallowedTools")):
            return False, tool_input, f"Permission to use {name} has been denied."
        verdict, tool_input, reason = self._pre_tool_hooks(name, tool_id, tool_input)
        if verdict == "deny":
            return False, tool_input, reason
        mode = self.channel.permission_mode
        if verdict == "allow" or mode == "bypassPermissions" or self._is_allowed(name):
            return True, tool_input, ""
        if self.flags.get("permission-prompt-tool") != "stdio" or mode == "dontAsk":
            return (
                False,
                tool_input,
                f"Claude requested permissions to use {name}, but you haven't granted it yet.",
            )
        self._state("requires_action")
        response = self.channel.request(
            {
                "subtype": "can_use_tool",
                "tool_name": name,
                "input": tool_input,
                "permission_suggestions": None,
                "blocked_path": None,
                "tool_use_id": tool_id,
            }
        )
        self._state("running")
        if response.get("subtype") == "error":
            return False, tool_input, str(response.get("error", "permission error"))
        answer = response.get("response", {})
        if answer.get("behavior") == "allow":
            return True, dict(answer.get("updatedInput") or tool_input), ""
        if answer.get("interrupt"):
            self.channel.interrupted = True
            raise Interrupted
        return False, tool_input, str(answer.get("message", "denied"))

    def _finish(self, turn: Turn, started: float, script: Json, error: Json | None = None) -> None:
        """Emit the turn's ``result`` (and "idle" after it)."""
        usage = {**DEFAULT_USAGE, **script.get("usage", {})}
        cost = float(script.get("total_cost_usd", 0.0))
        elapsed = int((time.monotonic() - started) * 1000)
        result: Json = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": elapsed,
            "duration_api_ms": elapsed,
            "num_turns": max(turn.api_calls, 1),
            "result": script.get("result", turn.last_text),
            "stop_reason": "end_turn",
            "total_cost_usd": cost,
            "usage": usage,
            "modelUsage": {
                self.model: {
                    "inputTokens": usage["input_tokens"],
                    "outputTokens": usage["output_tokens"],
                    "cacheReadInputTokens": usage["cache_read_input_tokens"],
                    "cacheCreationInputTokens": usage["cache_creation_input_tokens"],
                    "webSearchRequests": 0,
                    "costUSD": cost,
                    "contextWindow": 200000,
                }
            },
            "permission_denials": turn.denials,
            "terminal_reason": "completed",
        }
        if error is not None:
            result.update(
                {"subtype": "error_during_execution", "is_error": True, "stop_reason": None}
            )
            result.pop("result")
            result.pop("terminal_reason")
            result.update(error)
        self.last_result_is_error = bool(result["is_error"])
        self._emit(result)
        self._state("idle")


class TurnError(Exception):
    """A step ended the turn with an error result carrying ``fields``."""

    def __init__(self, fields: Json) -> None:
        super().__init__(fields)
        self.fields = fields


def split_words(text: str) -> list[str]:
    """Deltas for a text: each word with the space that follows it."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []


def stop(signum: int, _frame: object) -> NoReturn:
    """SIGTERM from the SDK's close(): exit through ``finally`` so the log is written."""
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    if "-v" in argv or "--version" in argv:
        print(f"{VERSION} (Claude Code)")
        return 0
    flags = parse_flags(argv)
    if flags.get("output-format") != "stream-json" or flags.get("input-format") != "stream-json":
        print("fake claude: needs --output-format and --input-format stream-json", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, stop)
    fake = FakeClaude(argv, dict(os.environ))
    try:
        fake.record.exit_code = fake.run()
    except SystemExit as exit_:
        fake.record.exit_code = int(exit_.code or 0)
    finally:
        fake.record.write(os.environ.get("KUN_FAKE_CLAUDE_LOG"))
    return fake.record.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
