"""One forwarder per ledger: a lock held for the forwarder process's life.

Two forwarders on one Factory tree (a pass by hand beside the service) would each read the
same returned glideins and send almost every span twice. ``hold`` takes an exclusive
``flock`` on ``<ledger>.lock`` beside the ledger and writes who holds it (pid, host, since);
a second forwarder refuses at once with those named. The kernel drops the lock when the
process ends, however it ends (kill -9 included), so a stale lock cannot outlive its holder.
Readers (`status`, `show`) never take it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from ..core.nospace import is_no_space
from .ledger import LedgerError


class LedgerInUse(LedgerError):
    """Another forwarder holds the ledger's lock."""


def lock_path(ledger_path) -> Path:
    path = Path(ledger_path)
    return path.with_name(path.name + ".lock")


def hold(ledger_path) -> int:
    """Take the ledger's lock for this process's life (the returned descriptor keeps it:
    never closed); LedgerInUse naming the holder when another process has it."""
    path = lock_path(ledger_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if is_no_space(exc):
            raise
        raise LedgerError(f"cannot take the forwarder's lock {path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise LedgerInUse(f"another forwarder is running on {ledger_path}: {holder}; stop it first "
                          "(two forwarders would send each span twice)") from None
    except OSError:
        os.close(fd)
        raise
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode() + b"\n", 0)
    return fd


def holder_of(ledger_path) -> str | None:
    """Who holds the ledger's lock now, in words (None: nobody), without taking it for long
    nor making the lock file: for --check-config."""
    path = lock_path(ledger_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None          # no lock file (no forwarder ever ran here) or not ours to read
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd)
    finally:
        os.close(fd)         # closing lets go of a lock taken here
    return None


def _holder(fd: int) -> str:
    """Who holds the lock, in words, from what it wrote in the lock file."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(info["since"])))
        return f"pid {int(info['pid'])} on host {info['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"
