"""A tool's JSON Schema reduced to the OpenAPI subset Gemini's ``parameters`` accepts.

Gemini's function declarations take a ``Schema`` object, not JSON Schema: a
fixed set of fields, upper-case type names, string-only enums, no
references. A field it does not know is a 400 for the whole request, so
every tool a thread advertises has to pass, whatever its MCP server wrote.
The reduction (:func:`gemini_parameters`):

* ``$ref`` into ``$defs``/``definitions`` is inlined (a reference cycle is
  cut after :data:`MAX_DEPTH` levels, into a bare ``OBJECT``);
  ``$schema``, ``$id``, ``$defs``, ``additionalProperties``,
  ``patternProperties``, ``examples``, ``const``-less keywords such as
  ``not``/``if``/``then`` and everything else outside :data:`KEPT` are
  dropped.
* ``type`` is upper-cased; a list of types becomes ``nullable`` for
  ``null`` plus ``anyOf`` when more than one type is left. A missing type
  is inferred from ``properties`` (``OBJECT``), ``items`` (``ARRAY``) or a
  string ``enum`` (``STRING``).
* ``const`` becomes a one-value ``enum`` (strings only: Gemini's enums are
  strings); an enum with other values is dropped; ``oneOf`` becomes
  ``anyOf``; ``allOf`` is merged into its parent; a ``{"type": "null"}``
  branch of ``anyOf`` becomes ``nullable``.
* ``format`` is kept only where Gemini knows it (``enum``, ``date-time``,
  ``int32``, ``int64``, ``float``, ``double``); ``required`` keeps only
  names in ``properties``; an empty ``properties`` is left out (Gemini
  refuses an ``OBJECT`` with empty properties), and a tool whose
  parameters end up with none is declared without ``parameters``; an
  ``ARRAY`` without ``items`` gets string items (``items`` is required).

The result depends only on the schema, so the bytes sent stay the same
from request to request (the prefix cache).
"""

from __future__ import annotations

from typing import Any

__all__ = ["KEPT", "MAX_DEPTH", "gemini_parameters", "gemini_schema"]

MAX_DEPTH = 12
"""How deep references are followed, and schemas nested, before a cut."""

_STRINGS = frozenset({"description", "title", "pattern"})
_NUMBERS = frozenset({"minimum", "maximum"})
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)
_ANY = frozenset({"default", "example"})
KEPT = _STRINGS | _NUMBERS | _COUNTS | _ANY
"""Fields copied as they are (Gemini's ``Schema`` has them, same spelling),
when their value has the type Gemini wants (a string, a number, a count)."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_FORMATS = frozenset({"enum", "date-time", "int32", "int64", "float", "double"})


def gemini_parameters(schema: object) -> dict[str, Any] | None:
    """A tool's ``parameters``, or ``None`` when it takes none Gemini can be told of."""
    reduced = gemini_schema(schema)
    if not reduced.get("properties"):
        return None
    return reduced


def gemini_schema(schema: object) -> dict[str, Any]:
    """``schema`` (decoded JSON) reduced to Gemini's ``Schema`` (see the module docstring)."""
    if not isinstance(schema, dict):
        return {"type": "OBJECT"}
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            defs.update({f"#/{key}/{name}": value for name, value in found.items()})
    return _Reducer(defs).reduce(schema, 0)


class _Reducer:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs

    def reduce(self, schema: object, depth: int) -> dict[str, Any]:
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return {"type": "OBJECT"} if depth > MAX_DEPTH else {}
        schema = self._resolved(schema, depth)
        out: dict[str, Any] = {
            key: value for key, value in schema.items() if key in KEPT and _fits(key, value)
        }
        self._type(schema, out, depth)
        self._enum(schema, out)
        self._children(schema, out, depth)
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            out["format"] = fmt
        if "type" not in out and "anyOf" not in out:
            inferred = _inferred(out)
            if inferred is not None:
                out["type"] = inferred
        if out.get("type") == "ARRAY" and "items" not in out:
            out["items"] = {"type": "STRING"}
        return out

    def _resolved(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        """``schema`` with a ``$ref`` inlined and ``allOf`` merged into it."""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.defs.get(ref)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if isinstance(target, dict) and depth < MAX_DEPTH:
                schema = {**self._resolved(target, depth + 1), **rest}
            else:
                schema = {"type": "object", **rest}
        parts = schema.get("allOf")
        if isinstance(parts, list):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in parts:
                if isinstance(part, dict):
                    _merge(merged, self._resolved(part, depth + 1))
            schema = merged
        return schema

    def _type(self, schema: dict[str, Any], out: dict[str, Any], depth: int) -> None:
        kind = schema.get("type")
        names = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
        types = [n for n in names if isinstance(n, str) and n in _TYPES]
        if "null" in names or schema.get("nullable") is True:
            out["nullable"] = True
        if len(types) == 1:
            out["type"] = types[0].upper()
        elif len(types) > 1:
            out["anyOf"] = [{**self._typed(schema, t, depth)} for t in types]
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list) and "anyOf" not in out:
            kept: list[dict[str, Any]] = []
            for branch in branches:
                if isinstance(branch, dict) and branch.get("type") == "null":
                    out["nullable"] = True
                    continue
                reduced = self.reduce(branch, depth + 1)
                if reduced:
                    kept.append(reduced)
            if len(kept) == 1 and "type" not in out:
                out.update({k: v for k, v in kept[0].items() if k not in out})
            elif kept:
                out["anyOf"] = kept

    def _typed(self, schema: dict[str, Any], kind: str, depth: int) -> dict[str, Any]:
        """One branch of a multi-typed schema: the keywords that apply to ``kind``."""
        branch = {"type": kind}
        if kind == "object":
            branch.update({k: schema[k] for k in ("properties", "required") if k in schema})
        elif kind == "array" and "items" in schema:
            branch["items"] = schema["items"]
        return self.reduce(branch, depth + 1)

    def _enum(self, schema: dict[str, Any], out: dict[str, Any]) -> None:
        values = schema.get("enum")
        if "const" in schema:
            values = [schema["const"]]
        if not isinstance(values, list) or not values:
            return
        if all(isinstance(v, str) for v in values) and out.get("type", "STRING") == "STRING":
            out["type"] = "STRING"
            out["enum"] = list(values)

    def _children(self, schema: dict[str, Any], out: dict[str, Any], depth: int) -> None:
        if "anyOf" in out and "type" not in out:
            return
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            out["properties"] = {
                str(name): self.reduce(sub, depth + 1) for name, sub in properties.items()
            }
            required = schema.get("required")
            if isinstance(required, list):
                names = [n for n in required if isinstance(n, str) and n in out["properties"]]
                if names:
                    out["required"] = list(dict.fromkeys(names))
        items = schema.get("items")
        if isinstance(items, list):
            items = items[0] if items else None
        if isinstance(items, dict):
            out["items"] = self.reduce(items, depth + 1)


def _fits(key: str, value: object) -> bool:
    if key in _STRINGS:
        return isinstance(value, str)
    if key in _NUMBERS:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if key in _COUNTS:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return True


def _merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    """``allOf``: properties and required are unions, other keys first wins."""
    for key, value in part.items():
        if key == "properties" and isinstance(value, dict):
            into["properties"] = {**value, **(into.get("properties") or {})}
        elif key == "required" and isinstance(value, list):
            into["required"] = [*(into.get("required") or []), *value]
        else:
            into.setdefault(key, value)


def _inferred(out: dict[str, Any]) -> str | None:
    if "properties" in out:
        return "OBJECT"
    if "items" in out:
        return "ARRAY"
    if "enum" in out:
        return "STRING"
    return None
