"""Files a user names, opened for reading only when they are files.

A FIFO given where a file belongs blocks a reader forever (nothing ever writes it), and a
device never ends (/dev/zero) or has side effects when opened. ``open_input`` refuses every
path that is not a regular file with one message naming what it is, before reading a byte:
the path is checked, then opened without blocking and checked again (it may have been
swapped in between).
"""

from __future__ import annotations

import os
import stat

from .errors import UserError


class NotAFileError(UserError, OSError):
    """A path given as a file that is a directory, a FIFO, a device or a socket. An OSError
    too, so readers that report unreadable files report this one alike."""

    def __init__(self, path, what: str):
        self.path, self.what = str(path), what
        super().__init__(f"{path} is {what}, not a file")

    def __str__(self):
        return f"{self.path} is {self.what}, not a file"

    @property
    def strerror(self):       # read by messages built as `exc.strerror or exc`
        return f"{self.what}, not a file"


def kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def check_input(path) -> None:
    """NotAFileError when ``path`` exists and is not a regular file (symlinks followed);
    a missing path is left to the reader's own message."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    what = kind_of(mode)
    if what:
        raise NotAFileError(path, what)


def open_input(path, mode: str = "rb", **kwargs):
    """``open(path, mode)`` for reading, refusing what is not a regular file (NotAFileError);
    OSError as ``open`` raises it otherwise."""
    if any(c in mode for c in "wax+"):
        raise ValueError(f"open_input reads only, not {mode!r}")
    check_input(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        what = kind_of(os.fstat(fd).st_mode)
        if what:
            raise NotAFileError(path, what)
        os.set_blocking(fd, True)
        return open(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def read_input(path, limit: int | None = None) -> bytes:
    """The bytes of a file a user named (at most ``limit + 1`` when a limit is given, so a
    caller can tell a file over its bound)."""
    with open_input(path) as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


def file_stamp(path) -> tuple | None:
    """What tells that a file a user named changed, for the readers that read it again when it
    does (a JWKS file, glideinWMS.xml): its inode, size and modification time. None when no
    path is given or it cannot be looked at."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
