"""Errors of the tool host.

::

    KunError (kun.errors)
    └── ToolError(code, message)   one call failed in a way the model can act on.
        │                          The host turns it into an ``is_error`` tool
        │                          result carrying ``code``; it never reaches
        │                          the loop.
        ├── InvalidArguments       the arguments are not usable      invalid_arguments
        │                          (malformed JSON, a schema
        │                          violation, a bad regex, an empty
        │                          range)
        ├── OutsideWorkspace       a path resolves outside the       outside_workspace
        │                          thread's workspace (absolute,
        │                          ``..``, or through a symlink)
        └── ToolTimeout            a command ran past its timeout    timeout
                                   and was killed

Other codes a built-in raises as a plain ``ToolError``: ``not_found``,
``not_a_file`` (a directory, FIFO, socket or device where a regular file is
needed), ``not_a_directory``, ``binary_file``, ``edit_no_match``,
``edit_ambiguous``, ``file_too_large`` (over what ``edit_file`` holds in
memory), ``path_changed`` (a symlink on the path kept being
swapped while it was opened), ``search_unavailable`` (ripgrep is missing),
``user_input_unavailable``, ``todos_unavailable``, ``sandbox_unavailable``
(``bash`` is to run sandboxed and ``bwrap`` is missing or cannot start:
the command is not run; :mod:`kun.tools.sandbox`). The host
itself adds ``unknown_tool`` and ``tool_execution_failed`` (any other
exception a tool raises).

Why ``ToolError`` sits directly under :class:`~kun.errors.KunError` and in
none of the three families: it is neither the caller's mistake nor a kun
failure nor control flow. It is the *outcome* of one call, consumed at the
host boundary and handed to the model as data. The loop classifies results by
``ToolOutput.code``, never by catching these and never by message text.
"""

from __future__ import annotations

from kun.errors import KunError

UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
TOOL_EXECUTION_FAILED = "tool_execution_failed"
OUTSIDE_WORKSPACE = "outside_workspace"
WORKSPACE_MISSING = "workspace_missing"
TIMEOUT = "timeout"
SANDBOX_UNAVAILABLE = "sandbox_unavailable"


class ToolError(KunError):
    """A recoverable failure of one call. ``message`` is written for the model:
    it says what went wrong and what to do instead."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class InvalidArguments(ToolError):
    """The arguments cannot be used as given."""

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_ARGUMENTS, message)


class OutsideWorkspace(ToolError):
    """A path resolves outside the workspace."""

    def __init__(self, message: str) -> None:
        super().__init__(OUTSIDE_WORKSPACE, message)


class ToolTimeout(ToolError):
    """A command ran past its timeout and was killed."""

    def __init__(self, message: str) -> None:
        super().__init__(TIMEOUT, message)
