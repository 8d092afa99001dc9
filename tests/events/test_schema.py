"""``events/schema.json`` is generated from the Structs and must stay current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import msgspec
import pytest

from kun.contracts.events import EVENT_TYPES, KINDS, EventBase
from kun.domain.upcast import CURRENT_VERSION
from kun.testing.golden_threads import THREADS
from tests.events.scripts import load_script

make_schema = load_script("make_schema")
make_golden = load_script("make_golden")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(make_schema.SCHEMA_PATH.read_bytes())
    return loaded


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)


def test_schema_file_is_current() -> None:
    assert not make_schema.is_stale(), (
        f"events/schema.json is stale: the event Structs changed. "
        f"Regenerate it with `{make_schema.COMMAND}` and commit the result."
    )


def test_rendering_is_deterministic_and_ends_with_a_newline() -> None:
    first = make_schema.render_schema()
    assert first == make_schema.render_schema()
    assert first.endswith(b"}\n")


def test_a_missing_or_edited_file_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    assert make_schema.is_stale(path)
    path.write_bytes(make_schema.render_schema())
    assert not make_schema.is_stale(path)
    path.write_bytes(make_schema.render_schema().replace(b'"seq"', b'"sequence"'))
    assert make_schema.is_stale(path)


def test_schema_dispatches_on_every_kind(schema: dict[str, Any]) -> None:
    assert schema["discriminator"]["propertyName"] == "kind"
    assert set(schema["discriminator"]["mapping"]) == KINDS


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
def test_structs_write_their_kinds_current_version(event_type: type[EventBase]) -> None:
    """A kind whose shape changed must also default ``v`` to its new version,
    or writers would stamp the new shape with the old ``v`` and readers would
    upcast it a second time."""
    (v,) = [f for f in msgspec.structs.fields(event_type) if f.name == "v"]
    assert v.default == CURRENT_VERSION[str(event_type.__struct_config__.tag)]


@pytest.mark.parametrize("name", sorted(THREADS))
def test_every_line_of_a_current_golden_log_validates(
    validator: jsonschema.Draft202012Validator, name: str
) -> None:
    """Readers in other languages get the schema only; the logs this version
    writes must satisfy it."""
    log = make_golden.GOLDEN_DIR / f"{name}{make_golden.LOG_SUFFIX}"
    for number, line in enumerate(log.read_bytes().split(b"\n")[:-1], 1):
        errors = [e.message for e in validator.iter_errors(json.loads(line))]
        assert not errors, f"{log.name} line {number}: {errors}"
