"""A full disk, however it shows: ENOSPC or EDQUOT from a write, SQLite's "database or disk
is full". Writers turn it into NoSpaceError (the CLI's one message and exit code for it)
instead of a failure that looks like a collector being down."""

from __future__ import annotations

import errno
import sqlite3

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class NoSpaceError(OSError):
    """No space left where we write (``where``: the directory or file)."""

    def __init__(self, where):
        super().__init__(errno.ENOSPC, "no space left on device", str(where))


def is_no_space(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in NO_SPACE_ERRNOS
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)        # Python >= 3.11
        return code == getattr(sqlite3, "SQLITE_FULL", 13) or "disk is full" in str(exc)
    return False
