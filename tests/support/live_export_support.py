"""Helpers for the live-export tests and benchmark: a glidein at cleanup set for live export,
endpoints that misbehave (one that accepts and never answers, a closed port), a PATH without
`timeout`, and a cleanup run that reports its wall time and any process it left behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .hook_support import fixture_dir, install_cleanup_hook, make_glidein


@contextmanager
def hung_endpoint(lifetime_s: float = 120):
    """A loopback port that accepts connections and never answers; it closes them and stops
    by itself after ``lifetime_s`` (or when the block ends)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held = []
    stop = threading.Event()
    give_up = time.monotonic() + lifetime_s

    def accept():
        while not stop.is_set() and time.monotonic() < give_up:
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
        for conn in held:
            conn.close()
        server.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)


def closed_port_endpoint() -> str:
    """A loopback URL whose port nothing listens on (connections are refused)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


def path_without_timeout(directory: Path) -> str:
    """A PATH of symlinks to every program on the current PATH except `timeout`."""
    directory.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = os.path.join(folder, name)
            link = directory / name
            if name == "timeout" or link.exists() or not os.access(target, os.X_OK):
                continue
            link.symlink_to(target)
    assert shutil.which("timeout", path=str(directory)) is None
    return str(directory)


def stuck_python(directory: Path) -> str:
    """A 'Python' that never answers (it sleeps), to play a node whose Python hangs."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "stuck-python"
    path.write_text("#!/bin/sh\nexec sleep 600\n")
    path.chmod(0o755)
    return str(path)


def glidein_for_live_export(root: Path, endpoint: str, bound_s: int, mode: str = "live",
                            python: str = sys.executable):
    """A glidein (recorded 'success' run) whose setup hook ran with live export configured;
    returns it and the folder GlideinWMS runs the cleanup script from."""
    g = make_glidein(root, "success", extra_config={
        "GLIDEIN_TRACING_EXPORT_MODE": mode, "GLIDEIN_TRACING_ENDPOINT": endpoint,
        "GLIDEIN_TRACING_EXPORT_TIMEOUT": str(bound_s), "GLIDEIN_TRACING_PYTHON": python,
        "GLIDEIN_TRACING_SAMPLE_PERIOD": "0"})
    setup = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    assert setup.returncode == 0, setup.stderr
    shutil.copy(fixture_dir("success") / "otr_outlist.list", g.work / "otr_outlist.list")
    return g, install_cleanup_hook(g)


def _session_members(sid: int) -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(f"{entry}: {cmd.strip()}")
    return out


def run_cleanup(g, cleanup_dir, path: str | None = None, env: dict | None = None):
    """Run the cleanup hook as glidein_startup.sh does, in a session of its own; returns
    (wall seconds, stderr text, processes of that session still there when it returned)."""
    env_all = {"PATH": path or os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C",
               "HOME": "/nonexistent"}
    env_all.update(env or {})
    start = time.monotonic()
    proc = subprocess.Popen(["bash", str(cleanup_dir / "gconditional_TRACING_cleanup.sh"), str(g.config)],
                            cwd=cleanup_dir, env=env_all, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    _, err = proc.communicate(timeout=120)
    wall = time.monotonic() - start
    left = _session_members(proc.pid)
    return wall, err.decode("utf-8", "replace"), left
