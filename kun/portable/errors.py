"""What an export or import refuses, each a one-line user-facing message."""

from __future__ import annotations

from pathlib import Path

from kun.errors import UserMistake

__all__ = ["BundleRefused", "ImportChanged", "ImportConflict", "SourceRefused"]


class BundleRefused(UserMistake):
    """A file that is not a bundle kun made, or one altered since."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"bundle {path}: {reason}")


class SourceRefused(UserMistake):
    """A session file of another agent that cannot be read as one."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ImportConflict(UserMistake):
    """The thread an import would create exists with other content."""

    def __init__(self, thread_id: str, hint: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"thread {thread_id} already exists with other content; {hint}")


class ImportChanged(UserMistake):
    """The source was imported before and differs now (``reason`` says how,
    and what the kun thread did since); ``hint`` names the ways on."""

    def __init__(self, thread_id: str, reason: str, hint: str) -> None:
        self.thread_id = thread_id
        self.reason = reason
        super().__init__(f"thread {thread_id}: {reason}; {hint}")
