"""Tools: what the model can do, and the rules it does them under.

* :mod:`kun.tools.base` — the :class:`Tool` protocol, :class:`ToolContext`,
  :class:`ToolOutput`, :data:`ToolEffect`.
* :mod:`kun.tools.host` — :class:`ToolHost`: the catalogue, argument
  validation, and :meth:`ToolHost.execute`, which turns every failure but
  cancellation into a result the model can read.
* :mod:`kun.tools.approval` — the approval policies as a pure table.
* :mod:`kun.tools.workspace` — confinement of file tools to the workspace.
* :mod:`kun.tools.builtin` — the built-in tools, one module each.

Depends on :mod:`kun.contracts` only; the loop (``kun.runtime``) depends on
this package, never the other way round.
"""

from __future__ import annotations

from kun.tools.approval import Decision, can_prompt, decide
from kun.tools.base import Tool, ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.errors import InvalidArguments, OutsideWorkspace, ToolError, ToolTimeout
from kun.tools.host import ToolHost, default_host
from kun.tools.workspace import Workspace

__all__ = [
    "Decision",
    "InvalidArguments",
    "OutsideWorkspace",
    "Tool",
    "ToolContext",
    "ToolEffect",
    "ToolError",
    "ToolHost",
    "ToolOutput",
    "ToolTimeout",
    "Workspace",
    "can_prompt",
    "decide",
    "default_host",
    "make_spec",
]
