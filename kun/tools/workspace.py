"""Confinement of file tools to the thread's workspace.

Every path a model gives a file tool is first checked by
:meth:`Workspace.resolve`:

* a relative path is taken from the workspace root;
* an absolute path is allowed only if it lies inside the workspace;
* the decision is made on the *real* path (every symlink followed, ``..``
  applied after the links), so ``../x``, ``/etc/passwd``, a symlink inside
  the workspace that points out, and a new file under a symlinked directory
  that points out are all refused with ``outside_workspace``. For a path that
  does not exist yet, the existing part is resolved and the rest appended.
  A symlink that points inside is followed.

Then it is *used* without trusting that check: :meth:`Workspace.open_dir`,
:meth:`Workspace.open_file` and :meth:`Workspace.locate` open the real path
one component at a time, each relative to the descriptor of the one before
and starting from a descriptor of the root, with ``O_NOFOLLOW`` on every
component. A real path has no symlink in it, so meeting one means the tree
changed after the check (a swapped symlink): the check runs again on the new
tree, a few times, then the call fails with ``path_changed``. So what is
opened is beneath the root's descriptor, whatever is swapped meanwhile.

What still holds outside this module's reach, on purpose: a directory
*moved* (renamed, not swapped for a link) out of the workspace while a call
holds it open is used where it now is; ``grep`` and ``glob`` walk below
their starting directory by name (ripgrep, which never follows a symlink it
meets but can be raced by a directory swapped mid-walk); and ``bash`` runs
anything. This is a guard against a model's mistakes and overreach, not a
sandbox; ``exec`` is gated by the approval policy instead.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kun.tools.errors import InvalidArguments, OutsideWorkspace, ToolError

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Directories a search never enters: version-control internals are noise to
a search and can be huge."""

PATH_CHANGED = "path_changed"
_ATTEMPTS = 8
"""Times a path is checked again after the tree changed under a call."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""``O_NONBLOCK``: opening a FIFO for reading must not wait for a writer (it
is refused right after, by its type)."""


class _Changed(Exception):
    """The tree no longer matches the checked real path."""


@dataclass(frozen=True)
class Located:
    """Where a path leads: ``dir_fd`` is an open descriptor of the directory
    that holds it, ``name`` its last component (``None`` when the path is
    the root itself, whose descriptor ``dir_fd`` then is), ``real`` its real
    path and ``shown`` the path as the model should see it. Valid only
    inside the ``with`` that produced it."""

    dir_fd: int
    name: str | None
    real: Path
    shown: str


@dataclass(frozen=True)
class OpenFile:
    """A regular file open for reading (``fd``), with the directory that
    holds it (``dir_fd``, ``name``) so a writer can replace it in place.
    Valid only inside the ``with`` that produced it."""

    fd: int
    dir_fd: int
    name: str
    real: Path
    shown: str


class Workspace:
    """A workspace root and the rules for paths inside it."""

    __slots__ = ("root",)

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (which need not exist), or
        :class:`~kun.tools.errors.OutsideWorkspace` naming the path and the
        workspace. An empty path is the root. A check only: use the path
        through :meth:`locate`, :meth:`open_file` or :meth:`open_dir`."""
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

    @contextmanager
    def locate(self, path: str, *, create_parents: bool = False) -> Iterator[Located]:
        """``path`` checked, with its parent directory held open beneath the
        root (created first, one directory at a time, if ``create_parents``).
        The last component itself is not opened: it may not exist, and a
        writer replaces it by name in ``dir_fd``. Raises ``not_found`` or
        ``not_a_directory`` for a missing or non-directory parent."""
        for _ in range(_ATTEMPTS):
            real = self.resolve(path)
            shown = self.relative(real)
            parts = real.relative_to(self.root).parts
            with ExitStack() as stack:
                try:
                    parent = self._descend(parts[:-1], shown, stack, create=create_parents)
                except _Changed:
                    continue
                name = parts[-1] if parts else None
                if name is not None and _is_symlink(parent, name):
                    continue
                yield Located(parent, name, real, shown)
                return
        raise _changed(path)

    @contextmanager
    def open_dir(self, path: str) -> Iterator[Located]:
        """``path``, which must be a directory, held open: ``dir_fd`` is the
        directory itself and ``name`` is ``None``."""
        for _ in range(_ATTEMPTS):
            real = self.resolve(path)
            shown = self.relative(real)
            with ExitStack() as stack:
                try:
                    fd = self._descend(real.relative_to(self.root).parts, shown, stack)
                except _Changed:
                    continue
                yield Located(fd, None, real, shown)
                return
        raise _changed(path)

    @contextmanager
    def open_file(self, path: str, tool: str) -> Iterator[OpenFile]:
        """``path``, which must be a regular file, open for reading. Anything
        else (a directory, a FIFO, a device) is ``not_a_file`` naming what it
        is; a missing file is ``not_found``."""
        for _ in range(_ATTEMPTS):
            with self.locate(path) as where:
                if where.name is None:
                    raise not_a_file(where.shown, "a directory", tool)
                try:
                    fd = os.open(where.name, _FILE_FLAGS, dir_fd=where.dir_fd)
                except FileNotFoundError:
                    raise ToolError("not_found", f"{where.shown} does not exist.") from None
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        continue
                    raise
                try:
                    mode = os.fstat(fd).st_mode
                    if not stat.S_ISREG(mode):
                        raise not_a_file(where.shown, file_kind(mode), tool)
                    os.set_blocking(fd, True)
                    yield OpenFile(fd, where.dir_fd, where.name, where.real, where.shown)
                finally:
                    os.close(fd)
                return
        raise _changed(path)

    def _descend(
        self, parts: tuple[str, ...], shown: str, stack: ExitStack, *, create: bool = False
    ) -> int:
        """A descriptor of ``root/parts``, opened component by component with
        ``O_NOFOLLOW``; every descriptor is closed by ``stack``."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        stack.callback(os.close, fd)
        for i, part in enumerate(parts):
            try:
                fd = _open_dir(fd, part, create=create)
            except FileNotFoundError:
                missing = "/".join(parts[: i + 1])
                raise ToolError("not_found", f"{missing} does not exist.") from None
            except NotADirectoryError:
                where = "/".join(parts[: i + 1])
                raise ToolError(
                    "not_a_directory", f"{where} is not a directory{_use(where, shown)}."
                ) from None
            stack.callback(os.close, fd)
        return fd


def _open_dir(parent: int, name: str, *, create: bool) -> int:
    """Open the directory ``name`` in ``parent`` without following a link
    (:class:`_Changed` if it is one now), creating it first if asked."""
    if create:
        try:
            os.mkdir(name, dir_fd=parent)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_symlink(parent, name)):
            raise _Changed from exc
        raise


def _use(where: str, shown: str) -> str:
    return "; use read_file for files" if where == shown else f", so {shown} cannot be used"


def _is_symlink(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symlink"),
    )
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def not_a_file(shown: str, kind: str, tool: str) -> ToolError:
    hint = "; use list_dir for directories" if kind == "a directory" and "read" in tool else ""
    return ToolError("not_a_file", f"{shown} is {kind}; {tool} works on regular files only{hint}.")


def _changed(path: str) -> ToolError:
    return ToolError(
        PATH_CHANGED,
        f"The path {path!r} kept changing while kun opened it (a symlink on it was "
        "replaced again and again); try again once it is stable.",
    )
