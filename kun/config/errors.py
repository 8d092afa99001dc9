"""Configuration errors, and how a msgspec failure becomes one a person can act on.

::

    UserMistake (kun.errors)
    └── ConfigError     kun.toml (or the environment standing in for it) is
                        wrong: a file named on purpose is missing, the TOML is
                        malformed, a key is unknown or has the wrong type, a
                        literal API key is written down, an API key variable
                        is not set. Names the file, the TOML key path and
                        what was expected.

msgspec reports where decoding failed as a path with dict keys elided
(``$.providers[...].models[...].max_tokens``): the provider and model names
are exactly what a person needs. :func:`explain` finds them again by walking
the raw document along the Structs' types, trying each entry of an elided
dict until one fails the same way. Unknown keys are found by the same walk,
structurally: a key that is not a field, with the fields that would be
accepted, or, for a key that looks like a credential (``api_key``,
``token``...), the advice to name an environment variable instead. No value
from the file is ever quoted back but an invalid choice (``endpoint_format``):
a value may be a secret in the wrong place.
"""

from __future__ import annotations

import re
import shlex
import types
import typing
from collections.abc import Iterable
from typing import Any

import msgspec

from kun.errors import UserMistake

__all__ = ["ConfigError", "UntrustedKey", "explain", "key_path"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\.\.\.|\d+)\]")
_SECRET_KEY = re.compile(
    r"(?:^|[_-])(?:api_?key|key|token|secret|password|passwd|credential|bearer|authorization)s?$",
    re.IGNORECASE,
)
_NONE = type(None)
_TOML_TYPES = {"object": "table", "str": "string", "int": "integer", "float": "number"}

_EXPECTED_TEXT = {
    "api_key_env": (
        "expected the name of an environment variable (letters, digits and _), not the key itself"
    ),
    "base_url": "expected an http:// or https:// URL",
    "proxy": "expected an http:// or https:// URL",
    "reasoning_effort": "expected a level in lowercase letters: off, on, low, medium, high...",
    "system_prompt": "expected some text (leave it out for kun's own)",
}


class ConfigError(UserMistake):
    """The configuration is wrong. ``file`` is the file (or ``environment``),
    ``key`` the TOML key path (empty for the file as a whole), ``expected``
    what was expected, in words."""

    def __init__(self, file: str, key: str, expected: str) -> None:
        self.file = file
        self.key = key
        self.expected = expected
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {expected}")


class UntrustedKey(ConfigError):
    """A key that runs a program, sends a credential or widens the sandbox,
    in a project ``kun.toml`` the user has not trusted (:mod:`kun.config.trust`)."""

    def __init__(self, file: str, key: str) -> None:
        super().__init__(
            file,
            "",
            f"{key} is not taken from a kun.toml found in the project until you trust it: "
            f"kun trust {shlex.quote(file)} (after reading it)",
        )
        self.key = key


def key_path(parts: Iterable[str | int]) -> str:
    """A TOML key path: ``providers.openai.models."gpt-4.1".max_tokens``;
    an integer is an array index (``statuses[1]``)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        name = part if _BARE_KEY.fullmatch(part) else msgspec.json.encode(part).decode()
        out = f"{out}.{name}" if out else name
    return out


def explain(
    error: msgspec.ValidationError, data: bytes | str, root: type, source: str
) -> ConfigError:
    """The :class:`ConfigError` for ``error``, raised decoding ``data`` (TOML
    that parsed) as ``root``."""
    raw = msgspec.toml.decode(data)
    unknown = _unknown_key(raw, root, ())
    if unknown is not None:
        path, accepted = unknown
        return ConfigError(source, key_path(path), _unknown_text(path, accepted))
    text, _, at = str(error).rpartition(" - at `")
    if not at:
        text, at = str(error), "$`"
    path, leaf = _locate(raw, root, at.rstrip("`"))
    return ConfigError(source, key_path(path), _expected(text, path, leaf))


def _unknown_key(
    raw: object, tp: Any, path: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], tuple[str, ...]] | None:
    """The first key of ``raw`` that its Struct type does not have, with the
    keys it does have."""
    tp = _unwrap(tp)
    if not isinstance(raw, dict):
        return None
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        fields = {f.encode_name: f.type for f in msgspec.structs.fields(tp)}
        for key, value in raw.items():
            if key not in fields:
                return (*path, key), tuple(fields)
            found = _unknown_key(value, fields[key], (*path, key))
            if found is not None:
                return found
    elif typing.get_origin(tp) is dict:
        value_type = typing.get_args(tp)[1]
        for key, value in raw.items():
            found = _unknown_key(value, value_type, (*path, key))
            if found is not None:
                return found
    return None


def _unknown_text(path: tuple[str | int, ...], accepted: tuple[str, ...]) -> str:
    name = str(path[-1])
    if _SECRET_KEY.search(name):
        provider = str(path[1]) if len(path) > 2 and path[0] == "providers" else "openai"
        variable = re.sub(r"[^A-Za-z0-9]+", "_", provider).upper() + "_API_KEY"
        return (
            "an API key is never written in kun.toml: put it in an environment variable "
            f'and name the variable in the provider\'s table, e.g. api_key_env = "{variable}"'
        )
    return f"unknown key; expected one of: {', '.join(accepted)}"


def _locate(raw: object, root: type, at: str) -> tuple[tuple[str | int, ...], Any]:
    """msgspec's path ``at`` (``$.a[...].b[0]``) in ``raw``, with the elided
    dict keys found again; and the type expected at its end (``None`` when
    the walk could not follow msgspec: the path found so far is kept)."""
    path: list[str | int] = []
    value: object = raw
    tp: Any = root
    for field, index in _SEGMENT.findall(at.removeprefix("$")):
        tp = _unwrap(tp)
        try:
            if field:
                tp = {f.encode_name: f.type for f in msgspec.structs.fields(tp)}[field]
                value = value.get(field) if isinstance(value, dict) else None
                path.append(field)
            elif index == "...":
                tp = typing.get_args(tp)[1]
                key = _failing_key(value, tp)
                if key is None or not isinstance(value, dict):
                    return tuple(path), None
                value = value[key]
                path.append(key)
            else:
                tp = typing.get_args(tp)[0]
                value = value[int(index)] if isinstance(value, list) else None
                path.append(int(index))
        except (KeyError, TypeError, IndexError):
            return tuple(path), None
    return tuple(path), _unwrap(tp)


def _failing_key(entries: object, tp: Any) -> str | None:
    """The first key of ``entries`` whose value is not a ``tp``."""
    if not isinstance(entries, dict):
        return None
    for key, value in entries.items():
        try:
            msgspec.convert(value, tp)
        except msgspec.ValidationError:
            return str(key)
    return None


def _expected(text: str, path: tuple[str | int, ...], leaf: Any) -> str:
    """What was expected at ``path``, in TOML's words."""
    if typing.get_origin(leaf) is typing.Literal:
        choices = ", ".join(str(choice) for choice in typing.get_args(leaf))
        return f"expected one of: {choices}"
    if "matching regex" in text and path and str(path[-1]) in _EXPECTED_TEXT:
        return _EXPECTED_TEXT[str(path[-1])]
    text = text.replace(" | null", "")
    for msgspec_name, toml_name in _TOML_TYPES.items():
        text = text.replace(f"`{msgspec_name}`", f"`{toml_name}`")
    return text[:1].lower() + text[1:]


def _unwrap(tp: Any) -> Any:
    """``tp`` without ``Annotated`` constraints and without ``| None``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            rest = [arg for arg in typing.get_args(tp) if arg is not _NONE]
            if len(rest) != 1:
                return tp
            tp = rest[0]
        else:
            return tp
