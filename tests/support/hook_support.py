"""Helpers for the tests of the worker-node hooks (glidein_tracing/node/hooks): a glidein work
dir built from a recorded real glidein_config (../shared fixtures), with the hooks staged
the way glidein_startup.sh places them, and the real shells (bash, dash) to run them."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from glidein_tracing.core.converter import parse_iso
from glidein_tracing.core.ids import GlideinIdentity

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "glidein_tracing" / "node" / "hooks"
GWMS = REPO / "glidein_tracing" / "simulator" / "gwms"
FIXTURES = REPO.parent / "shared" / "fixtures" / "glidein-run"
SHELLS = [s for s in ("bash", "dash") if shutil.which(s)]


def fixture_dir(run: str) -> Path:
    path = FIXTURES / run
    if not path.is_dir():
        pytest.skip(f"fixture {path} not available")
    return path


def fixture_work_dir(run: str) -> str:
    """The work dir path the recorded glidein used (from its glidein_config)."""
    for line in (fixture_dir(run) / "glidein_config.at_custom_setup").read_text().splitlines():
        if line.startswith("GLIDEIN_WORKSPACE_ORIG "):
            return line.split(" ", 1)[1]
    raise AssertionError("no GLIDEIN_WORKSPACE_ORIG in the fixture")


def config_get(path: Path, key: str):
    value = None
    for line in Path(path).read_text().splitlines():
        if line.startswith(key + " "):
            value = line.split(" ", 1)[1]
        elif line == key:
            value = ""
    return value


@dataclass
class Glidein:
    work: Path
    startup: subprocess.Popen

    @property
    def config(self) -> Path:
        return self.work / "glidein_config"

    @property
    def main(self) -> Path:
        return self.work / "main"

    @property
    def journal(self) -> Path:
        return self.work / "glidein_tracing" / "journal.gtj"

    def run_hook(self, name: str, *args, env=None, cwd=None, timeout=30, shell="bash"):
        env_all = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C",
                   "HOME": "/nonexistent"}
        env_all.update(env or {})
        return subprocess.run([shell, str(self.main / name), *args], cwd=cwd or self.work,
                              env=env_all, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def stop(self):
        """The stand-in and everything it started (its own process group: its session)."""
        try:
            os.killpg(self.startup.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.startup.wait()

    def kill_sampler(self):
        """Test teardown: the sampler would leave by itself once the glidein is gone; do not
        wait for it."""
        pidfile = self.work / "glidein_tracing" / "sampler.pid"
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text().split()[0]), 9)
            except (ProcessLookupError, ValueError):
                pass


def make_glidein(root: Path, run: str = "success", drop_keys=(), multirestart=None,
                 extra_config=None, startup_script="sleep 300; :") -> Glidein:
    """A work dir like the recorded glidein's when its setup script ran, under ``root``;
    ``startup_script``: what the stand-in glidein_startup.sh (sh -c, in the work dir) runs."""
    work = Path(root) / "glide_test"
    (work / "main").mkdir(parents=True)
    for src in HOOKS.glob("gconditional_TRACING_*"):
        shutil.copy2(src, work / "main" / src.name)
    shutil.copy2(GWMS / "add_config_line.source", work / "add_config_line.source")
    shutil.copy2(GWMS / "error_gen.sh", work / "main" / "error_gen.sh")
    (work / "main" / "condor_vars.lst").write_text("")
    # read first: without the fixture the test skips here, with no stand-in process left behind
    text = (fixture_dir(run) / "glidein_config.at_custom_setup").read_text()
    # a stand-in glidein_startup.sh process, for the start time and -multirestart
    argv = ["/bin/sh", "-c", startup_script, "glidein_startup.sh", "-name", "x"]
    if multirestart is not None:
        argv += ["-multirestart", str(multirestart)]
    startup = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=work, start_new_session=True)
    text = text.replace(fixture_work_dir(run), str(work))
    lines = []
    for line in text.split("\n"):
        key = line.split(" ", 1)[0]
        if key in drop_keys:
            continue
        if key == "GLIDEIN_STARTUP_PID":
            line = f"GLIDEIN_STARTUP_PID {startup.pid}"
        lines.append(line)
    for key, value in (extra_config or {}).items():
        lines.append(f"{key} {value}")
    (work / "glidein_config").write_text("\n".join(lines).rstrip("\n") + "\n")
    return Glidein(work=work, startup=startup)


def recorded_start(run: str) -> float:
    """When the recorded glidein ``run`` started (its stdout XML's tStart)."""
    text = (fixture_dir(run) / "stdout_xml_description.xml").read_text()
    return parse_iso(re.search(r"<tStart>([^<]+)</tStart>", text).group(1))


def retime_glidein_start(g: Glidein, run: str):
    """The stand-in glidein_startup.sh started now, the recorded one hours ago: date the root
    and setup starts at the recorded glidein's start (its stdout XML), as the setup hook would
    have, so the recorded per-script records lie inside setup."""
    start = recorded_start(run)
    lines = []
    for line in g.journal.read_text().splitlines(keepends=True):
        fields = line.split("\t")
        if fields[2] == "start" and fields[3] in ("glidein", "setup"):
            fields[1] = f"{start:.6f}"
        lines.append("\t".join(fields))
    g.journal.write_text("".join(lines))


def dated_as_recorded(lines: list, run: str, began: float, cleanup_began: float, end: float) -> list:
    """A journal the real hooks wrote now over the recorded glidein ``run``'s records, dated as
    that glidein would have written it (a real glidein's hooks run during its life): a line
    written from ``began`` (before its setup hook ran) until ``cleanup_began`` moved by as much
    as the setup's start was (retime_glidein_start: from ``began`` to the recorded start); the
    lines the cleanup hook wrote moved so that the last is at ``end`` (the recorded glidein's
    end), or later when another line (a job the test ends late) is later: cleanup comes after
    everything else. Lines dated by the records (before ``began``) stay."""
    to_setup = recorded_start(run) - began
    times = [float(line.split("\t")[1]) for line in lines]
    late = [t for t in times if t >= cleanup_began]
    before = [t + to_setup if t >= began else t for t in times if t < cleanup_began]
    to_end = max(end - max(late), max(before) - min(late)) if late and before else 0.0
    out = []
    for line, at in zip(lines, times):
        if at >= began:
            fields = line.split("\t")
            fields[1] = f"{at + (to_end if at >= cleanup_began else to_setup):.6f}"
            line = "\t".join(fields)
        out.append(line)
    return out


def install_cleanup_hook(g: Glidein) -> Path:
    """Where GlideinWMS runs the cleanup hook from: it copies the script to exec/cleanup."""
    cleanup_dir = g.work / ".gwms.d" / "exec" / "cleanup"
    cleanup_dir.mkdir(parents=True)
    shutil.copy2(g.main / "gconditional_TRACING_cleanup.sh", cleanup_dir)
    return cleanup_dir


def glidein_at_cleanup(root: Path, run: str, *, extra_config=None, otr_text=None, retime=False):
    """(glidein, cleanup dir): the recorded glidein ``run`` after our setup hook, with its
    per-script records (``otr_text`` instead, when given) and the cleanup hook installed;
    ``retime``: its root and setup dated at the recorded start (retime_glidein_start)."""
    g = make_glidein(root, run, extra_config=extra_config)
    assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
    if retime:
        retime_glidein_start(g, run)
    text = otr_text if otr_text is not None else (fixture_dir(run) / "otr_outlist.list").read_text()
    (g.work / "otr_outlist.list").write_text(text)
    return g, install_cleanup_hook(g)


def world_readable_tmp() -> Path:
    """A temp dir another user can enter (for the tests that drop privileges)."""
    path = Path(tempfile.mkdtemp(prefix="gt-hooks-"))
    path.chmod(0o755)
    return path


def identity_from_job_environment(env: dict) -> GlideinIdentity:
    """A glidein's identity as a user job sees it (the STARTER_JOB_ENVIRONMENT names, docs/ids.md)."""
    return GlideinIdentity(factory=env.get("GLIDEIN_Factory", ""), name=env.get("GLIDEIN_Name", ""),
                           entry=env.get("GLIDEIN_Entry_Name", ""), schedd=env.get("GLIDEIN_Schedd", ""),
                           cluster=env.get("GLIDEIN_ClusterId", ""), proc=env.get("GLIDEIN_ProcId", ""),
                           index=env.get("GLIDEIN_TRACING_MULTI_INDEX", "0") or "0")
