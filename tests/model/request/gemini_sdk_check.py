"""A Gemini request body checked against Google's own request types.

The ``google-genai`` SDK's pydantic models (``google.genai.types``) are the
published shape of ``contents``, ``systemInstruction``, ``tools`` and
``generationConfig``. Their ``model_config`` already has ``extra='forbid'``,
but also ``populate_by_name=True`` (a snake_case key passes too, and
``model_validate(..., by_name=False)`` does not turn that off), and
``Schema`` has grown the JSON Schema fields newer API versions take
(``additionalProperties``, ``$defs``, ``$ref``) while kun sends the OpenAPI
subset every version and Vertex accept. So :func:`sdk_violations` checks in
two passes:

1. every key, at every depth, is the camelCase alias of a field of the model
   that types it (recursing through ``Optional``, ``list`` and ``dict``
   annotations), and none is in :data:`FORBIDDEN`;
2. each top-level field validates with the model's own
   ``model_validate_json`` (enums such as ``Type``, base64
   ``thoughtSignature`` bytes, integers), on the JSON bytes sent.
"""

from __future__ import annotations

import types as pytypes
import typing
from typing import Any

import msgspec
from google.genai import types
from pydantic import BaseModel, TypeAdapter

TOP: dict[str, Any] = {
    "systemInstruction": types.Content,
    "contents": list[types.Content],
    "tools": list[types.Tool],
    "generationConfig": types.GenerationConfig,
}
FORBIDDEN: dict[type[BaseModel], frozenset[str]] = {
    types.Schema: frozenset({"additional_properties", "defs", "ref"}),
    types.FunctionDeclaration: frozenset({"parameters_json_schema", "response_json_schema"}),
}
"""Fields outside what kun promises to send: JSON Schema in place of the
OpenAPI subset."""


def sdk_violations(body: dict[str, Any]) -> list[str]:
    """What Google's request types refuse in ``body`` (empty: accepted)."""
    wire = msgspec.json.decode(msgspec.json.encode(body))
    broken = [f"unknown top-level field {key!r}" for key in wire if key not in TOP]
    for key, annotation in TOP.items():
        if key not in wire:
            continue
        broken += _keys(annotation, wire[key], key)
        try:
            TypeAdapter(annotation).validate_json(msgspec.json.encode(wire[key]))
        except ValueError as exc:
            broken.append(f"{key}: {exc}")
    return broken


def _keys(annotation: Any, value: Any, where: str) -> list[str]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, pytypes.UnionType):
        broken: list[str] = []
        for arm in typing.get_args(annotation):
            if arm is not type(None):
                broken += _keys(arm, value, where)
        return broken
    if origin is list and isinstance(value, list):
        (inner,) = typing.get_args(annotation)
        return [e for n, item in enumerate(value) for e in _keys(inner, item, f"{where}[{n}]")]
    if origin is dict and isinstance(value, dict):
        inner = typing.get_args(annotation)[1]
        return [e for k, item in value.items() for e in _keys(inner, item, f"{where}.{k}")]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation, value, where)
    return []


def _model(model: type[BaseModel], value: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: expected an object for {model.__name__}"]
    fields = {(field.alias or name): (name, field) for name, field in model.model_fields.items()}
    forbidden = FORBIDDEN.get(model, frozenset())
    broken: list[str] = []
    for key, item in value.items():
        found = fields.get(key)
        if found is None:
            broken.append(f"{where}.{key}: not a field of {model.__name__}")
            continue
        name, field = found
        if name in forbidden:
            broken.append(f"{where}.{key}: outside the subset kun sends")
        broken += _keys(field.annotation, item, f"{where}.{key}")
    return broken
