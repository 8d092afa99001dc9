"""Replace a file's content atomically: a crash leaves the old content or the
new, never an empty, cut or mixed file.

:func:`replace_file` writes the new content to a temporary file in the same
directory (``.<name>.<random>.kun-tmp``, created exclusively and without
following links), gives it the original's permission bits (and owner, where
the process may), ``fsync``\\ s it, renames it over the name with ``rename``
relative to the directory's descriptor, then ``fsync``\\ s the directory so the
rename itself survives a power cut. Every step is relative to a directory
descriptor the caller opened beneath the workspace root
(:meth:`kun.tools.workspace.Workspace.locate`), so a symlink swapped in
meanwhile is replaced, never followed.

What a rename implies: the file gets a new inode, so a hard link to the old
one keeps the old content, and a process holding the old file open keeps
reading the old content. A crash between creating the temporary file and the
rename leaves that temporary file behind (the original is intact); it is
named so it is recognisable and safe to delete.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress

TEMP_SUFFIX = ".kun-tmp"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def replace_file(dir_fd: int, name: str, data: bytes) -> bool:
    """Make ``name`` in ``dir_fd`` hold exactly ``data``; ``True`` if it
    existed before. The caller has checked that it is a regular file if it
    exists."""
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    temp = f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    fd = os.open(temp, _CREATE, 0o666, dir_fd=dir_fd)
    try:
        try:
            if old is not None and stat.S_ISREG(old.st_mode):
                _keep_owner_and_mode(fd, old)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with suppress(OSError):
        os.fsync(dir_fd)
    return old is not None


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """The original's owner (when this process may set it) and permission
    bits, so an executable stays executable and a private file private."""
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        with suppress(PermissionError):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
