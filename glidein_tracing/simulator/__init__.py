"""A glidein simulator, faithful to GlideinWMS's conventions (docs/hooks.md), for tests and demos.

GlideinWMS and HTCondor cannot run here, so ``glidein_startup_sim.sh`` stands in for
``glidein_startup.sh`` and ``gwms/condor_startup.sh`` for the condor phase (a stand-in
master and starter that run real jobs through the real generated job wrapper, with real
job ads, the configured job-exit hook and a StartdHistoryLog). Everything of ours that
runs in it (``glidein_tracing/node/hooks``) is the real thing, staged the way an operator's
Factory config lists it. Time is compressed; every timestamp is real.

    result = simulate_glidein(tmp_path, Scenario(jobs=[Job(duration_s=0.5)]))
    events, report = read_journal(result.journal_path)
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..factory.config import CLEANUP_FILE, HOOK_FILES
from ..core.sections import JOURNAL_SECTION, find_sections

HERE = Path(__file__).resolve().parent
HOOKS_DIR = HERE.parent / "node" / "hooks"
GWMS_DIR = HERE / "gwms"
SIM_SCRIPT = HERE / "glidein_startup_sim.sh"

# GlideinWMS's -param_ value escaping (the inverse of glidein_startup.sh's params_decode)
_PARAM_ESCAPES = [("\\", ".backslash,"), (" ", ".nbsp,"), (";", ".semicolon,"), (":", ".colon,"),
                  ("~", ".tilde,"), ("!", ".not,"), ("?", ".question,"), ("*", ".star,"),
                  ("$", ".dollar,"), ("#", ".comment,"), ("]", ".sclose,"), ("[", ".sopen,"),
                  ("}", ".gclose,"), ("{", ".gopen,"), (")", ".close,"), ("(", ".open,"),
                  (">", ".gt,"), ("<", ".lt,"), ("-", ".minus,"), ("+", ".plus,"), ("=", ".eq,"),
                  ("'", ".singquot,"), ('"', ".quot,"), ("`", ".fork,"), ("|", ".pipe,"),
                  ("&", ".amp,"), (",", ".comma,"), (".", ".dot,")]


def escape_param(value: str) -> str:
    """Encode a -param_ value the way the Factory does ('.' -> '.dot,', ...)."""
    out = []
    table = dict(_PARAM_ESCAPES)
    for char in str(value):
        out.append(table.get(char, char))
    return "".join(out)


@dataclass
class Job:
    """One user job the simulated schedd hands to the glidein."""

    duration_s: float = 0.5
    exit_code: int = 0
    stderr: str = ""                     # what the job prints on its stderr before it exits
    traceparent: str | None = None      # the user's own context (ad attribute + environment)
    extra_ad: dict = field(default_factory=dict)   # raw ClassAd values, e.g. {"Foo": '"bar"'}
    burn_cpu_s: float = 0.0
    idle_before_s: float = 0.2           # idle time of the slot before this job starts
    owner: str = "fakeuser"
    global_id: str | None = None         # default: fake-submit.example.org#C.P#QDATE
    script: str | None = None            # the job's own shell code (replaces the CPU burn and sleep)
    shell: str = "/bin/sh"               # what runs job.sh (the job's executable is a script)


@dataclass
class Scenario:
    """What happens to one simulated glidein."""

    factory: str = "gwms_test_factory"
    name: str = "gwms_test_instance"
    entry: str = "TEST_ENTRY"
    schedd: str = "schedd_glideins2@localhost"
    cluster: int = 1234
    proc: int = 0
    client: str = "vofrontend_service.main"
    group: str = ""
    site: str = "GWMS_TEST_SITE"
    multi_index: int | None = None       # -multirestart N (None: a single glidein)
    jobs: list = field(default_factory=list)
    job_cluster: int = 4242
    fail_script: tuple | None = None     # (script name, GlideinWMS failure type[, "main"|"after"])
    max_idle_s: float = 1.0              # GLIDEIN_Max_Idle, compressed
    max_tail_s: float = 0.5              # GLIDEIN_Max_Tail, compressed
    fail_sleep_s: float = 1.0            # the ~20 min sleep after a validation failure
    sigterm_at_s: float | None = None    # SIGTERM this long after the condor phase starts
    sigterm_at_stage: str | None = None  # "setup": SIGTERM to glidein_startup.sh after our setup hook
    sigkill_at_stage: str | None = None  # "setup" (after our setup hook) or "condor"
    tracing: bool = True                 # GLIDEIN_USE_TRACING
    knobs: dict = field(default_factory=dict)  # GLIDEIN_TRACING_* -> value (as -param_)
    params: dict = field(default_factory=dict)  # any other -param_
    keep_workdir: bool = True
    timeout_s: float = 120.0


@dataclass
class GlideinResult:
    exit_code: int | None
    stdout_path: Path
    stderr_path: Path
    start_dir: Path
    stage_dir: Path
    queue_dir: Path
    work_dir: Path | None
    journal_path: Path | None
    killed: bool = False
    leftovers: list = field(default_factory=list)   # "PID COMM" of processes alive after its exit

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def sections(self) -> dict:
        return decode_sections(self.stderr_path.read_bytes())

    def journal_from_stderr(self) -> bytes | None:
        return self.sections().get(JOURNAL_SECTION)

    def job_env(self, index: int) -> dict:
        """The environment job number ``index`` (0-based) saw, as the job wrote it."""
        path = self.queue_dir / f"job_{index + 1}" / "job_env.txt"
        env = {}
        for line in path.read_text(errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                env[key] = value
        return env


def decode_sections(stderr: bytes) -> dict:
    """The named gzip+base64 sections of a glidein's stderr: {NAME: decoded bytes}; a cut or
    damaged section is left out, as the Factory tools do."""
    text = stderr.decode("utf-8", "replace")
    return {section.name: section.data for section in find_sections(text) if not section.error}


def _file_line(name: str, kind: str, real: str | None = None) -> str:
    # target_fname real_fname type period prefix cond_download config_out (file_list format)
    return f"{name} {real or name} {kind} 0 GLIDEIN_PS_ TRUE FALSE\n"


def stage_factory_files(stage_dir, entry: str = "TEST_ENTRY", *, site: str = "GWMS_TEST_SITE",
                        fail_script: tuple | None = None, hooks_dir=HOOKS_DIR,
                        main_consts: dict | None = None, entry_consts: dict | None = None) -> Path:
    """Build a Factory staging area: GlideinWMS stand-ins plus our hooks, in the order an
    operator's Factory config lists them (cleanup first among ours, setup early in the
    main list, the wrapper, the job-exit hook as a plain file). Lists as GlideinWMS's
    creation code stages them: a user file marked ``after_entry`` goes to the main
    after_file_list *before* GlideinWMS's own after-list scripts (check_proxy ...
    glidein_cpus_setup ... smart_partitionable), so no user file runs last; a failing
    script asked for in the "after" list is such a user file."""
    stage = Path(stage_dir)
    main = stage / "main"
    entry_dir = stage / f"entry_{entry}"
    main.mkdir(parents=True, exist_ok=True)
    entry_dir.mkdir(parents=True, exist_ok=True)
    for src in GWMS_DIR.iterdir():
        shutil.copy2(src, main / src.name)
    shutil.copy2(GWMS_DIR / "cat_consts.sh", entry_dir / "cat_consts.sh")
    shutil.copy2(GWMS_DIR / "check_blacklist.sh", entry_dir / "check_blacklist.sh")
    hooks = Path(hooks_dir)
    for src in hooks.glob("gconditional_TRACING_*"):
        shutil.copy2(src, main / src.name)

    fail_line, fail_list = "", None
    if fail_script:
        name, kind = fail_script[0], fail_script[1]
        fail_list = fail_script[2] if len(fail_script) > 2 else "main"
        script = main / name
        script.write_text(
            "#!/bin/bash\n# a validation script that fails (glidein_tracing simulator)\n"
            'glidein_config="$1"\n'
            f'echo "{name}: checking the worker node"\n'
            f'echo "{name}: ERROR: the check failed on $(hostname) (simulated)" >&2\n'
            "error_gen=$(grep -m1 '^ERROR_GEN_PATH ' \"$glidein_config\" | cut -d ' ' -f 2-)\n"
            f'"$error_gen" -error "{name}" "{kind}" "Simulated validation failure in {name}" '
            '"sim_probe" "forced_failure"\nexit 1\n')
        script.chmod(0o755)
        fail_line = _file_line(name, "exec")

    # ours in the order and with the types the Factory config lists them (cleanup first: in
    # place before anything can fail)
    ours_main = "".join(_file_line(f.name, "exec" if f.executable else "wrapper" if f.wrapper else "regular")
                        for f in HOOK_FILES)
    (main / "file_list.lst").write_text(
        _file_line("setup_script.sh", "exec") + _file_line("cat_consts.sh", "exec")
        + _file_line("condor_platform_select.sh", "exec") + _file_line("condor_startup.sh", "exec")
        + ours_main + (fail_line if fail_list == "main" else "")
        + _file_line("cvmfs_umount.sh", "exec"))
    (entry_dir / "file_list.lst").write_text(
        _file_line("cat_consts.sh", "exec") + _file_line("check_blacklist.sh", "exec"))
    (main / "precvmfs_file_list.lst").write_text(_file_line("cvmfs_setup.sh", "exec"))
    (main / "at_file_list.lst").write_text(_file_line("singularity_setup.sh", "exec"))
    (main / "after_file_list.lst").write_text(
        (fail_line if fail_list == "after" else "")                   # user after_entry files
        + _file_line("check_proxy.sh", "exec") + _file_line("validate_node.sh", "exec")
        + _file_line("setup_network.sh", "exec") + _file_line("glidein_cpus_setup.sh", "exec")
        + _file_line("smart_partitionable.sh", "exec"))

    consts = {"USE_CCB": "True", "USE_MATCH_AUTH": "True", "GLIDEIN_SINGULARITY_REQUIRE": "NEVER"}
    consts.update(main_consts or {})
    (main / "constants.cfg").write_text("".join(f"{k}\t{v}\n" for k, v in consts.items()))
    econsts = {"GLIDEIN_Site": site, "GLIDEIN_Gatekeeper": "localhost localhost:9619",
               "GLIDEIN_GridType": "condor", "GLIDEIN_REQUIRE_VOMS": "False",
               "GLIDEIN_SlotsLayout": "partitionable"}
    econsts.update(entry_consts or {})
    (entry_dir / "constants.cfg").write_text("".join(f"{k}\t{v}\n" for k, v in econsts.items()))
    # NAME TYPE DEFAULT CONDOR_NAME REQUIRED PUBLISH_STARTD USER_JOB_ENV (GlideinWMS format)
    (main / "condor_vars.lst").write_text(
        "GLIDEIN_Factory S - + Y Y @\nGLIDEIN_Name S - + Y Y @\nGLIDEIN_Entry_Name S - + Y Y @\n"
        "GLIDECLIENT_Name S - + N Y @\nCONDORG_CLUSTER I - GLIDEIN_ClusterId Y Y @\n"
        "CONDORG_SUBCLUSTER I - GLIDEIN_ProcId Y Y @\nCONDORG_SCHEDD S - GLIDEIN_Schedd Y Y @\n"
        "GLIDEIN_Site S - + N Y @\nGLIDEIN_Max_Idle I 1200 + N Y -\nGLIDEIN_Max_Tail I 400 + N Y -\n")
    (entry_dir / "condor_vars.lst").write_text("")
    return stage


def _write_queue(queue: Path, scenario: Scenario) -> None:
    """The simulated schedd: one directory per job (ad, command, environment, idle gap)."""
    queue.mkdir(parents=True, exist_ok=True)
    qdate = int(time.time())
    for index, job in enumerate(scenario.jobs):
        jobdir = queue / f"job_{index + 1}"
        jobdir.mkdir()
        cluster, proc = scenario.job_cluster, index
        gid = job.global_id or f"fake-submit.example.org#{cluster}.{proc}#{qdate}"
        ad = {"MyType": '"Job"', "ClusterId": str(cluster), "ProcId": str(proc),
              "GlobalJobId": f'"{gid}"', "Owner": f'"{job.owner}"', "Cmd": '"/bin/sh"',
              "JobUniverse": "5", "RequestCpus": "1", "RequestMemory": "2048",
              "RequestDisk": "1000000", "QDate": str(qdate), "NumJobStarts": "0",
              "AccountingGroup": f'"group_sim.{job.owner}"', "Iwd": f'"/home/{job.owner}"'}
        env_lines = []
        if job.traceparent:
            ad["TraceParent"] = f'"{job.traceparent}"'
            ad["Environment"] = f'"TRACEPARENT={job.traceparent}"'
            env_lines.append(f"TRACEPARENT={job.traceparent}")
        ad.update(job.extra_ad)
        (jobdir / "job.ad").write_text("".join(f"{k} = {v}\n" for k, v in ad.items()))
        (jobdir / "job.env").write_text("".join(line + "\n" for line in env_lines))
        (jobdir / "idle_before").write_text(f"{job.idle_before_s}\n")
        (jobdir / "job.shell").write_text(job.shell + "\n")
        body = job.script if job.script is not None else (
            f'end=$(( $(date +%s) + {int(round(job.burn_cpu_s))} ))\n'
            'i=0; while [ "$(date +%s)" -lt "$end" ]; do i=$((i + 1)); done\n'
            f"sleep {job.duration_s}\n"
            + "".join(f"echo {shlex.quote(line)} >&2\n" for line in job.stderr.splitlines())
            + f"exit {int(job.exit_code)}\n")
        (jobdir / "job.sh").write_text(
            "# a simulated user job\n"
            f'env | sort > "{jobdir}/job_env.txt"\n' + body)


def _glidein_args(scenario: Scenario, stage: Path) -> list:
    params = {"GLIDEIN_Client": scenario.client, "GLIDEIN_Collector": "127.0.0.1:9618",
              "GLIDEIN_Report_Failed": "NEVER", "CONDOR_OS": "default", "CONDOR_ARCH": "default",
              "CONDOR_VERSION": "default", "GLIDEIN_CLEANUP_SCRIPT": CLEANUP_FILE,
              "GLIDEIN_Max_Idle": f"{scenario.max_idle_s:g}",
              "GLIDEIN_Max_Tail": f"{scenario.max_tail_s:g}"}
    if scenario.tracing:
        params["GLIDEIN_USE_TRACING"] = "True"
    params.update(scenario.knobs)
    params.update(scenario.params)
    args = ["-v", "std", "-name", scenario.name, "-entry", scenario.entry,
            "-clientname", scenario.client]
    if scenario.group:
        args += ["-clientgroup", scenario.group]
    args += ["-schedd", scenario.schedd, "-proxy", "None", "-factory", scenario.factory,
             "-web", str(stage), "-sign", "0" * 40, "-signentry", "0" * 40, "-signtype", "sha1",
             "-descript", "description.sim.cfg", "-descriptentry", "description.sim.cfg",
             "-dir", ".", "-submitcredid", "sim_cred_id", "-slotslayout", "partitionable"]
    for key, value in params.items():
        args += [f"-param_{key}", escape_param(value)]
    args += ["-cluster", str(scenario.cluster), "-subcluster", str(scenario.proc)]
    if scenario.multi_index is not None:
        args += ["-multirestart", str(scenario.multi_index)]
    return args


def _condor_started(stdout_path: Path) -> bool:
    try:
        return b"=== Condor starting" in stdout_path.read_bytes()
    except OSError:
        return False


def _setup_started(start_dir: Path) -> bool:
    """True once the journal shows setup open *and* a later record (e.g. a resource sample).

    The setup span is dated at glidein_startup.sh's own start, so a kill right after its start
    line would leave no later time to close it at; waiting for one more record makes the kill
    land inside setup on fast and slow machines alike.
    """
    for journal in start_dir.glob("glide_*/glidein_tracing/journal.gtj"):
        try:
            data = journal.read_bytes()
        except OSError:
            continue
        at = data.find(b"\tstart\tsetup\t")
        later = data.find(b"\ngtj1\t", at) if at >= 0 else -1
        if later >= 0 and data.find(b"\n", later + 1) >= 0:   # a whole line after setup's
            return True
    return False


def simulate_glidein(workdir_root, scenario: Scenario | None = None) -> GlideinResult:
    """Run one simulated glidein under ``workdir_root``; return where everything is."""
    scenario = scenario or Scenario()
    root = Path(workdir_root)
    root.mkdir(parents=True, exist_ok=True)
    stage = stage_factory_files(root / "stage", scenario.entry, site=scenario.site,
                                fail_script=scenario.fail_script)
    queue = root / "schedd_queue"
    _write_queue(queue, scenario)
    start_dir = root / "execute" / f"dir_{scenario.cluster}"
    start_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = root / "glidein_stdout.txt", root / "glidein_stderr.txt"
    # a batch-like environment (the glidein exports GLIDEIN_Name/UUID itself)
    env = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": "/usr/local/bin:/usr/bin:/bin",
           "LANG": "C", "USER": os.environ.get("USER", "nobody"),
           "LOGNAME": os.environ.get("USER", "nobody"), "SHELL": "/bin/bash",
           "GLIDEIN_SIM_QUEUE": str(queue), "GLIDEIN_SIM_FAIL_SLEEP": f"{scenario.fail_sleep_s:g}"}
    if scenario.keep_workdir:
        env["GLIDEIN_SIM_KEEP_WORKDIR"] = "1"
    killed = False
    leftovers: list = []
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(["bash", str(SIM_SCRIPT)] + _glidein_args(scenario, stage),
                                cwd=start_dir, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + scenario.timeout_s
        condor_seen_at = None
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    raise TimeoutError(f"simulated glidein still running after {scenario.timeout_s} s")
                if condor_seen_at is None and _condor_started(stdout_path):
                    condor_seen_at = time.monotonic()
                stage_reached = (
                    (scenario.sigkill_at_stage == "setup" and _setup_started(start_dir))
                    or (scenario.sigkill_at_stage == "condor" and condor_seen_at is not None))
                if stage_reached:
                    os.killpg(proc.pid, signal.SIGKILL)   # kill -9 of the whole glidein
                    killed = True
                    proc.wait()
                    break
                if scenario.sigterm_at_stage == "setup" and _setup_started(start_dir):
                    proc.send_signal(signal.SIGTERM)    # the batch system ends it while it validates
                    scenario = _without_sigterm(scenario)
                if (scenario.sigterm_at_s is not None and condor_seen_at is not None
                        and time.monotonic() - condor_seen_at >= scenario.sigterm_at_s):
                    proc.send_signal(signal.SIGTERM)    # the site's batch system ends the pilot
                    scenario = _without_sigterm(scenario)
                time.sleep(0.05)
            if not killed:
                # the glidein has exited: anything of its process group still running
                # outlived it (batch systems treat that as a fault)
                leftovers = _group_members(proc.pid)
        finally:
            _reap_group(proc.pid)
    work = sorted(start_dir.glob("glide_*"))
    work_dir = work[0] if work else None
    journal = work_dir / "glidein_tracing" / "journal.gtj" if work_dir else None
    if journal is not None and not journal.exists():
        journal = None
    return GlideinResult(exit_code=proc.returncode, stdout_path=stdout_path,
                         stderr_path=stderr_path, start_dir=start_dir, stage_dir=stage,
                         queue_dir=queue, work_dir=work_dir, journal_path=journal, killed=killed,
                         leftovers=leftovers)


def _without_sigterm(scenario: Scenario) -> Scenario:
    copy = Scenario(**{k: getattr(scenario, k) for k in scenario.__dataclass_fields__})
    copy.sigterm_at_s = copy.sigterm_at_stage = None
    return copy


def _group_members(pgid: int) -> list:
    """Live (not zombie) processes of process group ``pgid``, as "PID COMM"."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.find("(") + 1:text.rfind(")")]
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            found.append(f"{stat.parent.name} {comm}")
    return found


def _reap_group(pgid: int) -> None:
    """End what the glidein left behind in its own process group (orphan jobs, sampler)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
