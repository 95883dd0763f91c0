"""Running a command as an unprivileged user, as the service user or a reader would run it
(root writes and reads anywhere): when the tests run as root, ``setpriv`` drops to nobody."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

import pytest

NOBODY = 65534


@functools.lru_cache(maxsize=None)
def _python_runs_as_nobody() -> bool:
    done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           sys.executable, "-c", "pass"], capture_output=True, timeout=60)
    return done.returncode == 0


def as_nobody(cmd: list) -> list:
    """``cmd`` as nobody when the tests run as root (else as it is). Skips when ``setpriv`` is
    missing, or when ``cmd`` runs this Python and nobody cannot start it (an interpreter whose
    files only root may reach, as pyenv's under /root)."""
    if os.geteuid() != 0:
        return cmd
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to drop root")
    if cmd and cmd[0] == sys.executable and not _python_runs_as_nobody():
        pytest.skip(f"nobody cannot run {sys.executable} (its files are where only root may go)")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + cmd
