"""The glidein's memory peak as the kernel keeps it: cgroup v2 memory.peak, used only when the
glidein is alone in its cgroup (gt_cgroup_peak), and every reading's VmHWM sum (gt_tree_snap).
The cgroup is a directory laid out like /sys/fs/cgroup (this host has a cgroup v1 hierarchy);
the processes are real."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

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
    assert wait_until(lambda: children(glidein.pid))      # its child runs
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
    assert peak_file(*hybrid, glidein.pid) == ""       # a v1 memory controller: no v2 peak read
    whole_machine = cgroup(tmp_path / "root", procs, lines=("0::/",))
    assert peak_file(*whole_machine, glidein.pid) == ""
    # a stranger in a cgroup below the glidein's: its memory counts in the glidein's peak
    membership, root = cgroup(tmp_path / "below", procs)
    (root / "job_42" / "other").mkdir()
    (root / "job_42" / "other" / "cgroup.procs").write_text(f"{stranger.pid}\n")
    assert peak_file(membership, root, glidein.pid) == ""


def cgroup_v1(tmp_path: Path, procs, lines=("12:pids:/job_42", "4:cpu,memory:/job_42", "0::/")):
    """A host whose memory controller is cgroup v1 (EL8's default): the peak is
    memory.max_usage_in_bytes under the memory hierarchy."""
    root = tmp_path / "sys-fs-cgroup"
    group = root / "memory" / "job_42"
    group.mkdir(parents=True)
    (group / "memory.max_usage_in_bytes").write_text("987654321\n")
    (group / "cgroup.procs").write_text("".join(f"{p}\n" for p in procs))
    membership = tmp_path / "cgroup"
    membership.write_text("".join(f"{line}\n" for line in lines))
    return membership, root


def test_a_cgroup_v1_memory_controller_gives_its_max_usage(tmp_path, glidein_tree):
    glidein, stranger = glidein_tree
    procs = [glidein.pid] + children(glidein.pid)
    membership, root = cgroup_v1(tmp_path / "alone", procs)
    assert peak_file(membership, root, glidein.pid) == str(root / "memory" / "job_42" / "memory.max_usage_in_bytes")
    assert peak_file(*cgroup_v1(tmp_path / "shared", procs + [stranger.pid]), glidein.pid) == ""
    assert peak_file(*cgroup_v1(tmp_path / "top", procs, lines=("4:memory:/",)), glidein.pid) == ""
    old_kernel = cgroup(tmp_path / "old", procs, peak=None)
    assert peak_file(*old_kernel, glidein.pid) == ""                 # no memory.peak (< 5.19)
    garbage = cgroup(tmp_path / "garbage", procs, peak="max; rm -rf /")
    assert peak_file(*garbage, glidein.pid) == ""


# A stand-in glidein_startup.sh whose child, once told (a `go` file naming the case), holds
# 40 MiB in a bash variable and lets it go: `short` ends there, between two readings, as a
# validation script would; `lasting` stays alive (asleep) until cleanup's reading. The child
# writes its own VmHWM (the kernel's count) to burst.hwm; its `exit 0` keeps bash from exec'ing
# its last command (an exec starts a new VmHWM).
BURST = ('x=$(head -c 41943040 /dev/zero | tr "\\0" a); [ ${#x} -eq 41943040 ] || exit 1; '
         'while read -r k v u; do [ "$k" != VmHWM: ] || echo $((v * 1024)) > burst.hwm; done '
         '< /proc/self/status; unset x; [ "$0" = lasting ] || exit 0; touch burst.ready; sleep 300; exit 0')
STARTUP = (f"n=0; while [ ! -e go ] && [ $n -lt 6000 ]; do sleep 0.05; n=$((n + 1)); done; "   # never for ever
           f"read -r mode < go || exit 1; B='{BURST}'; "
           'if [ "$mode" = lasting ]; then bash -c "$B" lasting & '
           'else bash -c "$B" short; touch burst.ready; fi; sleep 300')
MIB40 = 40 * 1024 * 1024


def root_after_burst(tmp_path: Path, case: str, cgroup_peak: bool = False) -> dict:
    """The root's attributes, converted from the journal the real setup and cleanup hooks wrote
    around a burst (the sampler off, so setup's and cleanup's are the only readings).
    ``cgroup_peak``: the glidein alone in a cgroup v2 whose memory.peak the setup hook found
    (a file standing in for the kernel's: the burst's own VmHWM)."""
    from glidein_tracing.core.converter import convert
    from glidein_tracing.core.journal import parse_lines
    from tests.support.hook_support import (fixture_dir, install_cleanup_hook, make_glidein,
                                            retime_glidein_start)
    g = make_glidein(tmp_path, "success", startup_script=STARTUP,
                     extra_config={"GLIDEIN_TRACING_SAMPLE_PERIOD": "0"})
    try:
        assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
        retime_glidein_start(g, "success")
        (g.work / "otr_outlist.list").write_text((fixture_dir("success") / "otr_outlist.list").read_text())
        cleanup_dir = install_cleanup_hook(g)
        (g.work / "go.new").write_text(case + "\n")
        (g.work / "go.new").rename(g.work / "go")          # whole, when the glidein sees it
        assert wait_until(lambda: (g.work / "burst.ready").exists() or g.startup.poll() is not None)
        assert (g.work / "burst.ready").exists(), "the burst did not run"
        hwm = int((g.work / "burst.hwm").read_text())
        assert hwm >= MIB40          # the child really held 40 MiB
        if cgroup_peak:
            peak = tmp_path / "sys-fs-cgroup" / "glidein" / "memory.peak"
            peak.parent.mkdir(parents=True)
            peak.write_text(f"{hwm}\n")
            with g.config.open("a") as config:
                config.write(f"GLIDEIN_TRACING_MEMORY_PEAK {peak}\n")
        out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
        assert out.returncode == 0, out.stderr
        spans = convert(*parse_lines(g.journal.read_bytes()))
        return dict(next(s for s in spans if s.attributes["glidein.stage"] == "glidein").attributes)
    finally:
        g.stop()            # the stand-in's whole group: the burst's child and its sleep too
        g.kill_sampler()


def test_a_burst_between_readings_is_in_the_roots_peak_when_the_cgroup_keeps_it(tmp_path):
    root = root_after_burst(tmp_path, "short", cgroup_peak=True)
    assert root["glidein.resource.max_rss_bytes"] >= MIB40
    assert root["glidein.resource.max_rss_source"] == "cgroup.memory.peak"
    assert root["glidein.resource.max_rss_kind"] == "exact"


def test_a_burst_of_a_process_still_alive_at_a_reading_counts_by_its_own_peak(tmp_path):
    root = root_after_burst(tmp_path, "lasting")
    assert root["glidein.resource.max_rss_bytes"] >= MIB40          # VmHWM kept the spike
    assert root["glidein.resource.rss_max_sampled_bytes"] < MIB40   # no reading saw it
    assert (root["glidein.resource.max_rss_source"], root["glidein.resource.max_rss_kind"]) \
        == ("proc.vmhwm", "estimate")


def test_without_a_cgroup_a_process_that_ended_between_readings_is_not_claimed(tmp_path):
    """bash and coreutils read no reaped child's peak: the root says its figure is no exact
    peak, and the figure is what the readings saw, not the burst."""
    root = root_after_burst(tmp_path, "short")
    assert root["glidein.resource.max_rss_bytes"] < MIB40
    assert root["glidein.resource.max_rss_kind"] != "exact"
