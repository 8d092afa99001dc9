"""The verification suggestion reaches the model: after a source change the
next request carries it after the history; a check run settles it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.items import ToolResult
from kun.domain.verification import VERIFICATION_SUGGESTION
from kun.model.scripted import text_reply
from tests.runtime.support import calls, harness

pytestmark = pytest.mark.anyio


async def test_the_step_after_a_source_change_suggests_checks_until_one_runs(
    tmp_path: Path,
) -> None:
    script = [
        calls(("write_file", {"path": "c.py", "content": "x = 1\n"})),
        calls(("bash", {"command": "python -c 'print(1)' && ruff --version"})),
        text_reply("done"),
    ]
    async with harness(tmp_path, script, policy="full-auto") as h:
        turn = await h.run("add c.py")
        assert turn.status == "completed"
        notes = [r.context_instructions or "" for r in h.model.requests]
        assert VERIFICATION_SUGGESTION not in notes[0]
        assert VERIFICATION_SUGGESTION in notes[1]
        assert VERIFICATION_SUGGESTION not in notes[2]
        assert isinstance(h.model.requests[1].history[-1], ToolResult)


async def test_writing_docs_never_suggests_checks(tmp_path: Path) -> None:
    script = [calls(("write_file", {"path": "NOTES.md", "content": "hi\n"})), text_reply("ok")]
    async with harness(tmp_path, script, policy="full-auto") as h:
        await h.run("write notes")
        assert all(
            VERIFICATION_SUGGESTION not in (r.context_instructions or "") for r in h.model.requests
        )
