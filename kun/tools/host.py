"""The tool host: the catalogue the model sees and the one place a call runs.

:meth:`ToolHost.execute` never raises, except cancellation. Every outcome is
a :class:`~kun.tools.base.ToolOutput` the model can read and act on — the
three layers of SPEC §6.3 as far as the host is concerned:

1. Recoverable dispatch errors: an unknown name (``unknown_tool``, listing
   the tools there are and the closest name), arguments that are not a JSON
   object or that argument repair could not parse (``{"__raw": ...}``), and
   schema violations (``invalid_arguments``, naming each field path and the
   rule it broke, then the tool's parameters). A tool's own
   :class:`~kun.tools.errors.ToolError` keeps its code.
2. A crashing tool: any other exception becomes ``tool_execution_failed``
   with the exception's type and message; the turn lives on. A missing file
   when the workspace itself is gone (removed during the turn) is
   ``workspace_missing``, saying so instead.
3. Cancellation (``anyio.get_cancelled_exc_class()``) propagates untouched.

Arguments are validated with ``jsonschema`` (Draft 2020-12) against the
tool's own ``spec.parameters``; each tool's validator is built once, when
the host is, so a tool with a broken schema fails at start-up, not mid-turn.
The catalogue is sorted by name so the bytes sent to the model are the same
on every request (a reordered tool list breaks the provider's prefix cache).
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import anyio
import msgspec
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]
from msgspec.structs import replace

from kun.contracts.model import ToolSpec
from kun.tools.base import Tool, ToolContext, ToolEffect, ToolOutput
from kun.tools.builtin import builtin_tools
from kun.tools.builtin.user_input import NAME as USER_INPUT
from kun.tools.environment import ToolEnvironment
from kun.tools.errors import (
    INVALID_ARGUMENTS,
    TOOL_EXECUTION_FAILED,
    UNKNOWN_TOOL,
    WORKSPACE_MISSING,
    ToolError,
)

_MAX_REPORTED_ERRORS = 5
_MAX_MESSAGE_CHARS = 300
_RAW_EXCERPT_CHARS = 200


class ToolHost:
    """A set of tools, their specs and validators.

    ``redact`` scrubs every result before it is returned to be recorded
    (kun's known secrets, :func:`kun.app.session.tool_host`): whatever a tool
    read or a command printed, the log, the screen and the provider never
    get a secret that kun knows of. ``refresh``, when given, returns the
    whole new set of tools when it changed (an MCP server announced a new
    tool list), else ``None``; :meth:`refresh` asks it between steps."""

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        redact: Callable[[str], str] | None = None,
        refresh: Callable[[], Awaitable[Iterable[Tool] | None]] | None = None,
    ) -> None:
        self._redact = redact
        self._refresh = refresh
        self._catalogue = _Catalogue(tools)

    def specs(self, *, user_input: bool = True) -> tuple[ToolSpec, ...]:
        """The catalogue, sorted by name; without ``request_user_input`` for
        an unattended turn."""
        return self._catalogue.specs if user_input else self._catalogue.specs_unattended

    async def refresh(self) -> bool:
        """Take the new set of tools, if it changed; ``True`` then. Called
        between steps only, so a request never sees a list change under it.
        The catalogue is replaced in place: a view of this host (kun.observe)
        sees the new one too."""
        tools = await self._refresh() if self._refresh is not None else None
        if tools is None:
            return False
        self._catalogue.load(tools)
        return True

    def get(self, name: str) -> Tool | None:
        return self._catalogue.tools.get(name)

    def effect(self, name: str) -> ToolEffect | None:
        tool = self._catalogue.tools.get(name)
        return None if tool is None else tool.effect

    async def execute(self, name: str, arguments: bytes, ctx: ToolContext) -> ToolOutput:
        """Validate and run one call; see the module docstring for the
        outcomes. Raises only cancellation."""
        output = await self._execute(name, arguments, ctx)
        if self._redact is None:
            return output
        scrubbed, diff = self._redact(output.output), self.redact(output.diff)
        if scrubbed == output.output and diff == output.diff:
            return output
        return replace(output, output=scrubbed, diff=diff)

    def redact(self, text: str) -> str:
        """``text`` without the secrets this host scrubs from results (a
        diff shown at an approval is recorded too)."""
        return text if self._redact is None or not text else self._redact(text)

    async def _execute(self, name: str, arguments: bytes, ctx: ToolContext) -> ToolOutput:
        tool = self._catalogue.tools.get(name)
        if tool is None:
            return self._unknown(name, user_input=ctx.ask_user is not None)
        args = _parse(name, arguments)
        if isinstance(args, ToolOutput):
            return args
        problem = self._check(name, args)
        if problem is not None:
            return problem
        try:
            return await tool.run(args, ctx)
        except anyio.get_cancelled_exc_class():
            raise
        except ToolError as exc:
            return ToolOutput(output=exc.message, is_error=True, code=exc.code)
        except Exception as exc:
            if isinstance(exc, FileNotFoundError) and not await anyio.Path(ctx.workspace).is_dir():
                return ToolOutput(
                    output=f"The tool {name} failed: the workspace {ctx.workspace} does not "
                    "exist (removed or moved during the turn); no tool can work in it.",
                    is_error=True,
                    code=WORKSPACE_MISSING,
                )
            return ToolOutput(
                output=f"The tool {name} failed: {type(exc).__name__}: {exc}",
                is_error=True,
                code=TOOL_EXECUTION_FAILED,
            )

    def _unknown(self, name: str, *, user_input: bool) -> ToolOutput:
        names = [s.name for s in self.specs(user_input=user_input)]
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return ToolOutput(
            output=f"There is no tool named {name!r}.{hint} Available tools: "
            f"{', '.join(names)}. Call one of these by its exact name.",
            is_error=True,
            code=UNKNOWN_TOOL,
        )

    def _check(self, name: str, args: dict[str, Any]) -> ToolOutput | None:
        """``None`` for valid arguments, else the report the model reads.
        ``is_valid`` first: it stops at the first failure and builds no error
        objects, so the common (valid) call never pays for the report."""
        validator = self._catalogue.validators[name]
        if validator.is_valid(args):
            return None
        errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.path])
        schema = self._catalogue.schemas[name]
        lines = [f"Invalid arguments for {name}; the call did not run:"]
        lines.extend(f"- {_describe(e, schema)}" for e in errors[:_MAX_REPORTED_ERRORS])
        if len(errors) > _MAX_REPORTED_ERRORS:
            lines.append(f"- ... and {len(errors) - _MAX_REPORTED_ERRORS} more")
        lines.append(f"Parameters: {_parameters(schema)}. Fix the arguments and call again.")
        return ToolOutput(output="\n".join(lines), is_error=True, code=INVALID_ARGUMENTS)


class _Catalogue:
    """The tools by name, their schemas, validators and specs, built once
    per set of tools (a broken schema fails here, at start-up)."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.load(tools)

    def load(self, tools: Iterable[Tool]) -> None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            name = tool.spec.name
            if name in by_name:
                raise ValueError(f"two tools are named {name!r}")
            by_name[name] = tool
        schemas = {name: _schema(t.spec) for name, t in sorted(by_name.items())}
        validators = {name: _validator(name, s) for name, s in schemas.items()}
        self.tools = {name: by_name[name] for name in schemas}
        self.schemas, self.validators = schemas, validators
        self.specs = tuple(t.spec for t in self.tools.values())
        self.specs_unattended = tuple(s for s in self.specs if s.name != USER_INPUT)


def default_host(
    environment: ToolEnvironment | None = None, *, redact: Callable[[str], str] | None = None
) -> ToolHost:
    """A host with every built-in tool; ``environment`` and ``redact`` keep
    kun's secrets from the commands and out of the results."""
    return ToolHost(builtin_tools(environment), redact=redact)


def _schema(spec: ToolSpec) -> dict[str, Any]:
    schema = msgspec.json.decode(spec.parameters)
    if not isinstance(schema, dict):
        raise ValueError(f"the parameters of tool {spec.name!r} are not a JSON object schema")
    return schema


def _validator(name: str, schema: dict[str, Any]) -> Any:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(
            f"the parameters of tool {name!r} are not a valid schema: {exc.message}"
        ) from exc
    return Draft202012Validator(schema)


def _parse(name: str, arguments: bytes) -> dict[str, Any] | ToolOutput:
    """The arguments as a dict, or the ``invalid_arguments`` result saying
    why they are not one."""
    if not arguments.strip():
        return {}
    try:
        value = msgspec.json.decode(arguments)
    except msgspec.DecodeError as exc:
        return _malformed(name, f"{exc}; the text was {_excerpt(arguments)}")
    if isinstance(value, dict) and set(value) == {"__raw"}:
        return _malformed(name, f"the text was {_excerpt(value['__raw'])}")
    if not isinstance(value, dict):
        return _malformed(name, f"they were a JSON {_json_type(value)}, not an object")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "array"


def _malformed(name: str, detail: str) -> ToolOutput:
    return ToolOutput(
        output=f"The arguments for {name} were malformed JSON, so the call did not run "
        f"({detail}). Send the arguments as one JSON object matching the tool's parameters.",
        is_error=True,
        code=INVALID_ARGUMENTS,
    )


def _excerpt(text: object) -> str:
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    if len(raw) > _RAW_EXCERPT_CHARS:
        return f"{raw[:_RAW_EXCERPT_CHARS]!r}... ({len(raw)} characters)"
    return repr(raw)


def _describe(error: Any, schema: Mapping[str, Any]) -> str:
    """``field: what is wrong (rule: keyword)`` for one schema violation."""
    field = _field(error.absolute_path)
    rule = error.validator
    if rule == "required" and isinstance(error.instance, dict):
        missing = [r for r in error.validator_value if r not in error.instance]
        prefix = f"{field}." if field else ""
        return f"{', '.join(prefix + m for m in missing)}: missing (rule: required)"
    if rule == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        extra = sorted(k for k in error.instance if k not in known)
        prefix = f"{field}." if field else ""
        return f"{', '.join(prefix + k for k in extra)}: not a parameter (rule: {rule})"
    message = str(error.message)
    if len(message) > _MAX_MESSAGE_CHARS:
        message = f"{message[:_MAX_MESSAGE_CHARS]}..."
    return f"{field or '(arguments)'}: {message} (rule: {rule})"


def _field(path: Iterable[object]) -> str:
    """A JSON path as ``todos[1].status``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _parameters(schema: Mapping[str, Any]) -> str:
    """``path (string, required), start_line (integer)``: the top-level
    parameters, for a model that got them wrong."""
    required = set(schema.get("required", ()))
    parts = []
    for key, sub in schema.get("properties", {}).items():
        kind = _kind(sub)
        parts.append(f"{key} ({kind}, required)" if key in required else f"{key} ({kind})")
    return ", ".join(parts) or "none"


def _kind(schema: Mapping[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    if "enum" in schema:
        return "one of " + "/".join(map(str, schema["enum"]))
    return "any"
