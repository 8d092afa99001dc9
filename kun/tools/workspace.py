"""Confinement of file tools to the thread's workspace.

Every path a model gives a file tool goes through :meth:`Workspace.resolve`:

* a relative path is taken from the workspace root;
* an absolute path is allowed only if it lies inside the workspace;
* the decision is made on the *real* path (every symlink followed, ``..``
  applied after the links), so ``../x``, ``/etc/passwd``, a symlink inside
  the workspace that points out, and a new file under a symlinked directory
  that points out are all refused with ``outside_workspace``. For a path that
  does not exist yet, the existing part is resolved and the rest appended.

Why real paths: a lexical check alone lets ``link/secret`` through when
``link -> /``. Why not more: this is a guard against a model's mistakes and
overreach, not a sandbox. A symlink swapped in between the check and the use,
or a ``bash`` command, can still reach outside; ``exec`` is gated by the
approval policy instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kun.tools.errors import InvalidArguments, OutsideWorkspace

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Directories a walk never enters: version-control internals are noise to a
search and can be huge."""


class Workspace:
    """A workspace root and the rules for paths inside it."""

    __slots__ = ("root",)

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (which need not exist), or
        :class:`~kun.tools.errors.OutsideWorkspace` naming the path and the
        workspace. An empty path is the root."""
        if "\x00" in path:
            raise InvalidArguments(f"The path {path!r} contains a NUL character.")
        given = Path(path or ".")
        candidate = given if given.is_absolute() else self.root / given
        real = Path(os.path.realpath(candidate))
        if self.contains(real):
            return real
        lexical = Path(os.path.normpath(candidate))
        how = "through a symlink" if self.contains(lexical) else "which is"
        raise OutsideWorkspace(
            f"The path {path!r} resolves to {real}, {how} outside the workspace "
            f"{self.root}. Only paths inside the workspace can be used; "
            "relative paths start at the workspace root."
        )

    def contains(self, real: Path) -> bool:
        """Whether a real (already resolved) path is the root or under it."""
        return real == self.root or real.is_relative_to(self.root)

    def relative(self, path: Path) -> str:
        """``path`` as the model should see it: relative to the root, with
        ``/`` separators; ``.`` for the root; absolute if it is outside."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return path.as_posix()
        return rel.as_posix() if rel.parts else "."

    def walk(self, start: Path) -> Iterator[Path]:
        """Files under ``start`` (or ``start`` itself if it is a file), each
        directory's files in name order. Version-control directories are
        skipped, symlinked directories are not entered and symlinked files
        that point outside the workspace are left out."""
        if not start.is_dir():
            if start.is_file():
                yield start
            return
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            base = Path(dirpath)
            for name in sorted(filenames):
                file = base / name
                if file.is_symlink() and not self.contains(Path(os.path.realpath(file))):
                    continue
                yield file
