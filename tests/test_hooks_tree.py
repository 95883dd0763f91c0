"""Which processes a reading counts (gt_tree_snap): glidein_startup.sh and its live descendants,
found from the kernel's lists of children, a child forked by a thread other than the main one
included, and nobody else; the figures are those /proc gives for exactly those processes, under
bash and dash, and the same when the kernel keeps no lists of children (every /proc/PID/stat
read). The processes are real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_lib.sh"
# a Python whose second thread starts a sleep: that child is on the thread's list, not the main one's
THREADED = ("import subprocess, threading, time\n"
            "threading.Thread(target=lambda: subprocess.run(['sleep', '60']), daemon=True).start()\n"
            "time.sleep(60)\n")


@pytest.fixture
def tree():
    """(root pid, pids of the root and its descendants, a stranger's pid)."""
    root = subprocess.Popen(["bash", "-c", f'sleep 60 & ( sleep 60 & wait ) & "{sys.executable}" -c "$T" & wait'],
                            env={**os.environ, "T": THREADED})
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        deadline = time.monotonic() + 10
        while True:      # bash, sleep, subshell, its sleep, python, the thread's sleep
            members = descendants(root.pid)
            if len(members) == 6 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(members) == 6, members
        yield root.pid, members, stranger.pid
    finally:
        for pid in descendants(root.pid)[1:]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        for proc in (root, stranger):
            proc.kill()
            proc.wait()


def stat_fields(pid: int) -> list[str]:
    """proc(5) stat fields from the 3rd on (the comm cut off)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()


def descendants(root: int) -> list[int]:
    """root and every process whose parents lead to it, from every /proc/PID/stat."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                pass
    out = []
    for pid in parent:
        up = pid
        while up != root and up in parent:
            up = parent[up]
        if up == root:
            out.append(pid)
    return sorted(out, key=lambda p: p != root)


def expected(pids) -> tuple:
    """(utime, stime, rss, count, VmHWM sum) of pids as gt_tree_snap reports them."""
    ut = st = rss = hwm = 0
    for pid in pids:
        f = stat_fields(pid)
        ut += int(f[11]) + int(f[13])
        st += int(f[12]) + int(f[14])
        own = int(f[21]) * 4096
        rss += own
        peak = next(int(line.split()[1]) * 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("VmHWM:"))
        hwm += max(own, peak)
    return f"{ut // 100}.{ut % 100:02d}", f"{st // 100}.{st % 100:02d}", rss, len(pids), hwm


def reading(shell: str, root: int, no_lists: bool = False) -> tuple:
    override = "gt_tree_stats() { return 1; }; " if no_lists else ""
    out = subprocess.run([shell, "-c", f'. "{LIB}"; {override}GT_HZ=100 GT_PAGE=4096; gt_tree_snap {root} && '
                          'echo "$GT_R_UT $GT_R_ST $GT_R_RSS $GT_R_N $GT_R_HWM"'],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    ut, st, rss, count, hwm = out.stdout.split()
    return ut, st, int(rss), int(count), int(hwm)


@pytest.mark.parametrize("shell", ["bash", "dash"])
@pytest.mark.parametrize("no_lists", [False, True], ids=["children lists", "every process"])
def test_a_reading_counts_the_tree_and_nothing_else(tree, shell, no_lists):
    if not shutil.which(shell):
        pytest.skip(f"no {shell}")
    root, members, stranger = tree
    if not no_lists and not Path(f"/proc/{root}/task/{root}/children").exists():
        pytest.skip("this kernel keeps no lists of children")
    assert stranger not in members
    assert reading(shell, root, no_lists) == expected(members)


def test_a_reading_of_a_gone_process_is_none():
    gone = subprocess.Popen(["true"])
    gone.wait()
    out = subprocess.run(["bash", "-c", f'. "{LIB}"; gt_tree_snap {gone.pid}; echo "$?:$GT_R_N:$GT_R_RSS"'],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "1::"
