"""What a surface draws from the interface's answers and needs from the
layers under :mod:`kun.app`: the lines of a files restore, the size of a
compaction's summary, a bundle's default name, an import's refusal. Each imports its layer only
when called, so a command that never draws one stays fast to start."""

from __future__ import annotations

from pathlib import Path

from kun.app.refusals import Refused
from kun.contracts.events import FilesRestore
from kun.contracts.items import Compaction
from kun.errors import UserMistake

__all__ = ["bundle_name", "import_refusal", "restore_lines", "summary_tokens"]


def restore_lines(done: FilesRestore | None, *, undo: bool = False) -> list[str]:
    """What a rewind (or its ``undo``) did to the files, for the CLI and
    the session: a summary that says what is not tracked, then one line
    per file; nothing when no files were asked for."""
    from kun.runtime.checkpoints import describe_restore

    return describe_restore(done, undo=undo)


def summary_tokens(summary: Compaction) -> int:
    """About how many tokens the compaction's summary is."""
    from kun.domain.compaction import text_tokens

    return text_tokens(summary.summary)


def bundle_name(thread_id: str) -> str:
    """Where ``kun export`` writes the thread's bundle by default."""
    from kun.portable.bundle import default_bundle_name

    return default_bundle_name(thread_id)


def import_refusal(refusal: Refused, file: Path) -> UserMistake:
    """A server's refusal of an import in the words the in-process import
    uses: the bundle or session named by this machine's ``file``, the way to
    replace a changed thread given as options rather than query fields."""
    from kun.portable.reimport import CHANGED_HINT, HTTP_HINT

    if refusal.code == "bundle_refused":
        return UserMistake(f"bundle {file}: {refusal.message}")
    if refusal.code == "source_refused":
        return UserMistake(f"{file}: {refusal.message}")
    if refusal.code == "import_changed":
        changed = UserMistake(refusal.message.replace(HTTP_HINT, CHANGED_HINT))
        changed.suggests = ("restore",)
        return changed
    return refusal
