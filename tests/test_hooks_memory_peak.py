"""The glidein's memory peak as the kernel keeps it: cgroup v2 memory.peak, used only when the
glidein is alone in its cgroup (gt_cgroup_peak), and every reading's VmHWM sum (gt_tree_snap).
The cgroup is a directory laid out like /sys/fs/cgroup (this host has a cgroup v1 hierarchy);
the processes are real."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

HOOKS = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks"
SOURCE = f'. "{HOOKS}/gconditional_TRACING_lib.sh"; . "{HOOKS}/gconditional_TRACING_stages.sh"; '


def bash(script: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", SOURCE + script], capture_output=True, text=True,
                          timeout=30, env={"PATH": "/usr/bin:/bin", **env})


@pytest.fixture
def glidein_tree():
    """A real process tree: a 'glidein_startup.sh' (bash) with a child, and a stranger."""
    glidein = subprocess.Popen(["bash", "-c", "sleep 60 & wait"])
    stranger = subprocess.Popen(["sleep", "60"])
    yield glidein, stranger
    for proc in (glidein, stranger):
        subprocess.run(["pkill", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()


def cgroup(tmp_path: Path, procs, peak="123456789", lines=("0::/job_42",)) -> tuple[Path, Path]:
    root = tmp_path / "sys-fs-cgroup"
    group = root / "job_42"
    group.mkdir(parents=True)
    if peak is not None:
        (group / "memory.peak").write_text(peak + "\n")
    (group / "cgroup.procs").write_text("".join(f"{p}\n" for p in procs))
    membership = tmp_path / "cgroup"
    membership.write_text("".join(f"{line}\n" for line in lines))
    return membership, root


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def peak_file(membership, root, pid) -> str:
    out = bash(f'gt_cgroup_peak "{membership}" "{root}" {pid} && printf %s "$GT_V"')
    return out.stdout


def test_the_cgroup_peak_is_used_when_the_glidein_is_alone_in_its_cgroup(tmp_path, glidein_tree):
    glidein, _ = glidein_tree
    time.sleep(0.2)
    procs = [glidein.pid] + children(glidein.pid)
    membership, root = cgroup(tmp_path, procs)
    assert peak_file(membership, root, glidein.pid) == str(root / "job_42" / "memory.peak")
    # and every reading then carries it, with the VmHWM sum of the tree
    out = bash(f'GT_MPEAK_FILE="{root}/job_42/memory.peak"; gt_tree_snap {glidein.pid}; '
               'echo "$GT_R_MPEAK $GT_R_HWM $GT_R_RSS $GT_R_N"')
    mpeak, hwm, rss, count = out.stdout.split()
    assert mpeak == "123456789" and int(count) == 2 and int(hwm) >= int(rss) > 0


def test_no_cgroup_peak_when_shared_v1_or_not_kept(tmp_path, glidein_tree):
    glidein, stranger = glidein_tree
    procs = [glidein.pid] + children(glidein.pid)
    shared = cgroup(tmp_path / "shared", procs + [stranger.pid])
    assert peak_file(*shared, glidein.pid) == ""                     # someone else's process
    hybrid = cgroup(tmp_path / "v1", procs, lines=("4:memory:/job_42", "0::/job_42"))
    assert peak_file(*hybrid, glidein.pid) == ""                     # a v1 memory controller
    old_kernel = cgroup(tmp_path / "old", procs, peak=None)
    assert peak_file(*old_kernel, glidein.pid) == ""                 # no memory.peak (< 5.19)
    garbage = cgroup(tmp_path / "garbage", procs, peak="max; rm -rf /")
    assert peak_file(*garbage, glidein.pid) == ""
