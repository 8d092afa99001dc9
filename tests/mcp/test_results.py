"""What the model reads of an MCP ``tools/call`` result."""

from __future__ import annotations

import base64
from pathlib import Path

from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from kun.mcp.media import save_images
from kun.mcp.tools import MAX_OUTPUT_CHARS, to_output
from kun.tools.builtin.read_file import MAX_IMAGE_BYTES


def test_blocks_become_text_and_binary_blocks_a_line_naming_them() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            ImageContent(data=png, mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.md", text="# notes")),
            ResourceLink(uri="file:///big.bin", name="big"),
        ]
    )
    output = to_output(result)
    assert not output.is_error
    assert output.output.splitlines() == [
        "first",
        "[image image/png, 100 bytes, not shown]",
        "# notes",
        "[resource file:///big.bin]",
    ]


def test_is_error_is_an_error_result_and_structured_content_is_json() -> None:
    failed = to_output(CallToolResult(content=[TextContent(text="no such row")], is_error=True))
    assert (failed.is_error, failed.code, failed.output) == (True, "mcp_tool_error", "no such row")
    structured = to_output(CallToolResult(content=[], structured_content={"rows": 2}))
    assert structured.output == '{"rows":2}'


def test_a_huge_result_is_cut_with_a_note() -> None:
    output = to_output(CallToolResult(content=[TextContent(text="x" * (MAX_OUTPUT_CHARS + 10))]))
    assert output.output.endswith(f"[output cut at {MAX_OUTPUT_CHARS} characters]")
    assert len(output.output) < MAX_OUTPUT_CHARS + 100


def test_images_that_providers_take_are_saved_once_and_attached(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 92
    encoded = base64.b64encode(png).decode()
    content = [
        TextContent(text="two views"),
        ImageContent(data=encoded, mime_type="image/png"),
        ImageContent(data=encoded, mime_type="image/png"),
        ImageContent(data=base64.b64encode(b"not an image").decode(), mime_type="image/png"),
        ImageContent(data="!!not base64!!", mime_type="image/png"),
    ]
    attached = save_images(content, tmp_path / "thread")
    assert sorted(attached) == [1, 2] and attached[1] == attached[2]
    assert [p.read_bytes() for p in (tmp_path / "thread").iterdir()] == [png]
    output = to_output(CallToolResult(content=content), attached)
    assert output.attachments == (attached[1], attached[2])
    assert output.output.splitlines() == [
        "two views",
        "[image image/png, 100 bytes, attached]",
        "[image image/png, 100 bytes, attached]",
        "[image image/png, 12 bytes, not shown]",
        "[image image/png, not valid base64, not shown]",
    ]


def test_an_image_over_the_limit_is_not_attached(tmp_path: Path) -> None:
    big = b"\x89PNG\r\n\x1a\n" + bytes(MAX_IMAGE_BYTES)
    content = [ImageContent(data=base64.b64encode(big).decode(), mime_type="image/png")]
    assert save_images(content, tmp_path) == {}
    assert not any(tmp_path.iterdir())
