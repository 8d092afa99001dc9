"""Tool schemas rewritten into the JSON Schema Moonshot's validator accepts.

Moonshot checks a tool's ``parameters`` more strictly than JSON Schema
does, and answers 400 to schemas every other provider takes (the enum-only
properties MCP servers emit, pydantic's ``$defs``). Kosong rewrites them
before sending (``normalizeKimiToolSchema``: expand ``$ref``, fill missing
``type``, fix type-contradictory schemas); kun does the same, here, as a
pure function of the schema, so the bytes sent for one tool never change
between requests (the prefix cache) and a schema that needs nothing keeps
its bytes exactly.

The rules, in order:

1. **Local references are inlined.** ``{"$ref": "#/$defs/X"}`` (or
   ``#/definitions/X``, any JSON pointer into the schema, ``~0``/``~1``
   escapes decoded) becomes the target, with the referring node's other
   keys laid over it. A reference already being expanded (a cycle) stays a
   ``$ref``; so does a remote or dangling one. ``$defs``/``definitions`` are
   dropped once no reference into them is left.
2. **``type`` moves off ``anyOf``/``oneOf``.** Moonshot refuses ``type``
   beside them ("type should be defined in anyOf items"): the parent's
   type goes into every branch that has none, and leaves the parent.
3. **Every nested schema gets a ``type``**, unless it is a combinator
   (``anyOf``, ``oneOf``, ``allOf``, ``not``, ``if``/``then``/``else``) or a
   ``$ref`` left in place. Inferred from, first match: ``enum`` (the values'
   one type; integers with numbers are ``number``; values of several types
   become an ``anyOf`` of one typed ``enum`` per type, so nothing is
   narrowed), ``const``, object keywords (``properties``, ``required``...),
   array keywords (``items``...), string keywords (``pattern``,
   ``format``...), numeric keywords (``minimum``...), else ``string`` (what
   an unconstrained MCP property is in practice).
4. **The root is an object**: ``type: object`` when it says no type (and is
   not a union).
5. **``required`` names only declared properties**: Moonshot refuses a
   name missing from ``properties``; dropping it only widens what the wire
   accepts (the tool validates its own arguments anyway).

Left out: flattening a union at the root (``anyOf`` of objects as the
whole parameter schema) into one object, which Kosong's newer normalizer
does; such a schema is sent with its branches typed and may still be
refused.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import msgspec

__all__ = ["kimi_parameters", "normalize_kimi_schema"]

_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref")
_UNIONS = ("anyOf", "oneOf")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SINGLES = (
    "additionalProperties",
    "additionalItems",
    "contains",
    "contentSchema",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
)
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_OBJECT_KEYS = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
    }
)
_ARRAY_KEYS = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "contains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "unevaluatedItems",
    }
)
_STRING_KEYS = frozenset(
    {"pattern", "format", "minLength", "maxLength", "contentEncoding", "contentMediaType"}
)
_NUMBER_KEYS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_BUCKETS = ("$defs", "definitions")


def normalize_kimi_schema(schema: Any) -> Any:
    """``schema`` rewritten by the module's rules; a new value, ``schema``
    untouched. Anything but an object is returned as is."""
    if not isinstance(schema, dict):
        return schema
    root = _deref(schema, schema, ())
    if not isinstance(root, dict):
        return root
    for bucket in _BUCKETS:
        if bucket in root and not _refers_into(root, f"#/{bucket}/"):
            del root[bucket]
    _walk(root, nested=False)
    if "type" not in root and not any(key in root for key in _UNIONS):
        root["type"] = "object"
    return root


@lru_cache(maxsize=512)
def _normalized_bytes(raw: bytes) -> bytes | None:
    """The rewritten schema's bytes; ``None`` when nothing changed."""
    try:
        schema = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    normalized = normalize_kimi_schema(schema)
    return None if normalized == schema else msgspec.json.encode(normalized)


def kimi_parameters(parameters: msgspec.Raw) -> msgspec.Raw:
    """A tool's raw ``parameters`` as Moonshot accepts them: the same bytes
    when nothing needed rewriting (and the same bytes for the same schema on
    every request: the result is cached by the input's bytes)."""
    normalized = _normalized_bytes(bytes(parameters))
    return parameters if normalized is None else msgspec.Raw(normalized)


def _deref(node: Any, root: dict[str, Any], expanding: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_deref(child, root, expanding) for child in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref not in expanding:
        found, target = _pointer(root, ref)
        if found:
            resolved = _deref(target, root, (*expanding, ref))
            if not isinstance(resolved, dict):
                return resolved
            siblings = {k: _deref(v, root, expanding) for k, v in node.items() if k != "$ref"}
            return {**resolved, **siblings}
    return {key: _deref(child, root, expanding) for key, child in node.items()}


def _pointer(root: dict[str, Any], ref: str) -> tuple[bool, Any]:
    """The value a local JSON pointer (``#``, ``#/a/b``) names in ``root``."""
    if ref == "#":
        return True, root
    if not ref.startswith("#/"):
        return False, None
    current: Any = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def _refers_into(node: Any, prefix: str) -> bool:
    if isinstance(node, list):
        return any(_refers_into(child, prefix) for child in node)
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(prefix):
        return True
    return any(_refers_into(child, prefix) for child in node.values())


def _walk(node: dict[str, Any], *, nested: bool) -> None:
    """Rules 2, 3 and 5 on ``node`` and every schema below it, in place."""
    _hoist(node)
    if nested and "type" not in node and not any(key in node for key in _COMBINATORS):
        _complete(node)
    properties = node.get("properties")
    required = node.get("required")
    if isinstance(properties, dict) and isinstance(required, list):
        kept = [name for name in required if isinstance(name, str) and name in properties]
        if kept:
            node["required"] = kept
        else:
            del node["required"]
    for child in _children(node):
        _walk(child, nested=True)


def _hoist(node: dict[str, Any]) -> None:
    if "type" not in node or not any(isinstance(node.get(key), list) for key in _UNIONS):
        return
    kind = node.pop("type")
    for key in _UNIONS:
        for branch in node.get(key) or ():
            if isinstance(branch, dict) and "type" not in branch and "$ref" not in branch:
                branch["type"] = kind


def _complete(node: dict[str, Any]) -> None:
    """Rule 3 for one typeless node."""
    values = node.get("enum")
    if isinstance(values, list) and values:
        kinds = sorted({_value_type(value) for value in values})
        if kinds == ["integer", "number"]:
            kinds = ["number"]
        if len(kinds) == 1:
            node["type"] = kinds[0]
        else:
            del node["enum"]
            node["anyOf"] = [
                {"type": kind, "enum": [v for v in values if _value_type(v) == kind]}
                for kind in kinds
            ]
        return
    keys = node.keys()
    if "const" in node:
        node["type"] = _value_type(node["const"])
    elif not _OBJECT_KEYS.isdisjoint(keys):
        node["type"] = "object"
    elif not _ARRAY_KEYS.isdisjoint(keys):
        node["type"] = "array"
    elif not _STRING_KEYS.isdisjoint(keys):
        node["type"] = "string"
    elif not _NUMBER_KEYS.isdisjoint(keys):
        node["type"] = "number"
    else:
        node["type"] = "string"


def _children(node: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in _MAPS:
        mapping = node.get(key)
        if isinstance(mapping, dict):
            out += (child for child in mapping.values() if isinstance(child, dict))
    dependencies = node.get("dependencies")
    if isinstance(dependencies, dict):
        out += (child for child in dependencies.values() if isinstance(child, dict))
    for key in _SINGLES:
        child = node.get(key)
        if isinstance(child, dict):
            out.append(child)
    items = node.get("items")
    if isinstance(items, dict):
        out.append(items)
    elif isinstance(items, list):
        out += (child for child in items if isinstance(child, dict))
    for key in _LISTS:
        children = node.get(key)
        if isinstance(children, list):
            out += (child for child in children if isinstance(child, dict))
    return out


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
