"""Processes a test session left behind (tests/conftest.py checks at the session's end).

A process is the session's when it descends from the pytest process, carries the session's
mark in its environment (``SESSION_MARK``, set at the session's start and inherited by every
child that keeps its parent's environment), or runs in or names one of the session's
temporary directories (an orphan whose parent died: a stand-in glidein, a hook's sampler).
multiprocessing's resource tracker and fork server are the interpreter's own and end with it.
Linux only (/proc); elsewhere nothing is found.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

SESSION_MARK = "GLIDEIN_TRACING_TEST_SESSION"
_INTERPRETERS_OWN = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _processes() -> dict:
    """pid -> (ppid, state, cmdline, cwd, environ) of every process this user may read."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat").decode(errors="replace")
        if ")" not in stat:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            cwd = ""
        cmdline = _read(f"/proc/{entry}/cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
        out[int(entry)] = (int(fields[1]), fields[0], cmdline, cwd, _read(f"/proc/{entry}/environ"))
    return out


def left_behind(session_pid: int, mark: str, dirs) -> dict:
    """pid -> a line describing it, for every live process of the session but the session's
    own process and those that end with the interpreter."""
    if not os.path.isdir("/proc"):
        return {}
    procs = _processes()
    children: dict = {}
    for pid, (ppid, *_rest) in procs.items():
        children.setdefault(ppid, []).append(pid)
    ours, stack = set(), list(children.get(session_pid, ()))
    while stack:
        pid = stack.pop()
        ours.add(pid)
        stack.extend(children.get(pid, ()))
    marker = f"{SESSION_MARK}={mark}".encode()
    roots = [str(Path(d)) for d in dirs if d]
    found = {}
    for pid, (ppid, state, cmdline, cwd, environ) in procs.items():
        if pid == session_pid or state == "Z" or any(own in cmdline for own in _INTERPRETERS_OWN):
            continue
        in_dirs = any(cwd == r or cwd.startswith(r + os.sep) or r + os.sep in cmdline for r in roots)
        if pid in ours or marker in environ.split(b"\0") or in_dirs:
            found[pid] = f"pid {pid} (parent {ppid}) in {cwd or '?'}: {cmdline[:200]}"
    return found


def check_and_end(session_pid: int, mark: str, dirs, grace_s: float = 10.0) -> list:
    """The processes the session left behind, described; they are then killed. A process on
    its way out gets ``grace_s`` to go (a bound, not a pace: the check passes as soon as
    none is left)."""
    deadline = time.monotonic() + grace_s
    found = left_behind(session_pid, mark, dirs)
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = left_behind(session_pid, mark, dirs)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return list(found.values())
