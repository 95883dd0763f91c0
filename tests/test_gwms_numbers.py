"""GlideinWMS's numbers on the real recorded glideins (../shared/fixtures/glidein-run): the real
hooks close a journal over each glidein's real records, the Factory forwarder reads what
Condor-G returned (stdout, stderr with the journal) and writes the glidein table; its
GlideinWMS columns equal GlideinWMS's formulas (factory/glideFactoryMonitoring.py) applied to
the same stdout, read as its log parser reads it (tests/support/table_helpers.factory_view).
Two SIGTERM'd variants of the recorded SIGTERM glidein: one killed before condor_startup.sh
printed "=== Condor starting" (GlideinWMS: HTCondor never started), one whose job HTCondor
ended 20 s after the last script's record (GlideinWMS: HTCondor's own count)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from glidein_tracing.cli.main import main
from glidein_tracing.core.journal import format_line
from glidein_tracing.core.sections import JOURNAL_SECTION, encode_section
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.table import gwms, reader

from tests.support.factory_builders import settings_for
from tests.support.hook_support import config_get, dated_as_recorded, fixture_dir, glidein_at_cleanup
from tests.support.journal_builders import iso_epoch
from tests.support.table_helpers import factory_view

REPO = Path(__file__).resolve().parents[1]
GWMS_COLUMNS = tuple(gwms.quantities(gwms.GlideinRun(1, 1, 1, True, 9)))


def _condor_cut(stdout: str) -> str:
    """The recorded SIGTERM glidein's stdout had condor_startup.sh been killed before its
    "=== Condor starting" banner (it sets its signal traps only after printing it): nothing of
    HTCondor's is printed, glidein_startup.sh goes on to its cleanup and its end banner."""
    return re.sub(r"=== Condor starting.*?=== End Stats of \S+ ===\n", "", stdout, flags=re.DOTALL)


def _late_job(journal_lines: list, condor_start: float) -> list:
    """A job HTCondor ended 20 s after the last script's record did (SIGTERM during the job:
    glidein_startup.sh does not wait for the condor phase)."""
    return journal_lines + [
        format_line(condor_start + 1, "start", "job/4242.0", {"@name": "job", "@stage": "job", "@parent": "condor"}),
        format_line(condor_start + 23, "end", "job/4242.0", {"job.exit_by": "evict", "@status": "ERROR"})]


def forward_recorded(tmp_path, run, *, stdout=None, extra=None, returned_stdout=True, extra_config=None,
                     job_ad=None):
    """The recorded glidein ``run`` closed by the real hooks and forwarded: (its table row, the
    stdout Condor-G returned). The work dir holds glidein_startup.sh's copy of its stdout as
    it was at cleanup (before its end banner). ``extra_config``: glidein_config lines added
    before the setup hook ran; ``job_ad``: attributes of the 028 event after the submission."""
    began = time.time()
    g, cleanup_dir = glidein_at_cleanup(tmp_path / "node", run, retime=True, extra_config=extra_config)
    text = stdout if stdout is not None else (fixture_dir(run) / "glidein_stdout.txt").read_text()
    end, after = map(int, re.search(r"\((\d+)\) with code \d+ after (\d+) ===", text).groups())
    copy = g.work / config_get(g.config, "GLIDEIN_LOGDIR") / (config_get(g.config, "GLIDEIN_UUID") + ".out")
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text[:text.index("=== Glidein ending")])
    cleanup_began = time.time()
    try:
        out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    finally:
        g.stop()
    assert out.returncode == 0
    # the hooks ran now; the recorded glidein ran months ago, and its hooks during its life
    journal = g.journal.read_text().splitlines(keepends=True)
    if extra is not None:
        journal = extra(journal)
    journal = dated_as_recorded(journal, run, began, cleanup_began, end)
    config = fixture_dir(run) / "glidein_config.at_custom_setup"
    layout = FactoryLayout(logs=tmp_path / "logs", instance=config_get(config, "GLIDEIN_Name"),
                           entry=config_get(config, "GLIDEIN_Entry_Name"))
    log = CondorGLog(layout)
    cluster, proc = int(config_get(config, "CONDORG_CLUSTER")), int(config_get(config, "CONDORG_SUBCLUSTER"))
    log.submit(cluster, proc, when=end - after - 60)
    if job_ad:
        log.job_ad_information(cluster, proc, job_ad, when=end - after - 60)
    log.execute(cluster, proc, when=end - after - 1)
    stderr = (fixture_dir(run) / "glidein_stderr.txt").read_text()
    layout.output(cluster, proc, "err").write_text(stderr + encode_section(JOURNAL_SECTION, "".join(journal).encode()))
    kinds = ["err"]
    if returned_stdout:
        layout.output(cluster, proc, "out").write_text(text)
        kinds.append("out")
    old = time.time() - 3600
    for kind in kinds:
        os.utime(layout.output(cluster, proc, kind), (old, old))
    log.terminated(cluster, proc, 0, when=end + 4)
    ledger, store = Ledger(tmp_path / "ledger.sqlite"), tmp_path / "store"
    conf = settings_for(layout, factory=config_get(config, "GLIDEIN_Factory"),
                        schedd=config_get(config, "CONDORG_SCHEDD"), grace=5, table=str(tmp_path / "table"))
    forwarder = build_forwarder(conf,
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    stats = forwarder.run_once()
    assert stats.glideins_done == 1 and not stats.problems, stats.problems
    (row,) = reader.read_rows(tmp_path / "table", "glideins")[0].to_pylist()
    return row, text


@pytest.mark.parametrize("overload", [True, False])
def test_resource_name_and_overload_reach_the_table_as_glideinwms_writes_them(tmp_path, overload):
    """GLIDEIN_ResourceName from the glidein's glidein_config (read by the real setup hook) and
    GlideinOverloadEnabled from the Factory's activity log (the 028 event its submit file's
    job_ad_information_attrs makes) land in the glidein's row, what --compare overload and
    OSG's accounting join on."""
    row, _ = forward_recorded(tmp_path, "success", extra_config={"GLIDEIN_ResourceName": "UCSD_CE1"},
                              job_ad={"GlideinOverloadEnabled": str(overload).lower()})
    assert (row["resource_name"], row["overload_enabled"]) == ("UCSD_CE1", overload)


def test_a_glidein_that_says_neither_has_nulls_not_guesses(tmp_path):
    row, _ = forward_recorded(tmp_path, "success")
    assert (row["resource_name"], row["overload_enabled"]) == (None, None)


def test_the_glidein_version_is_the_startup_scripts_checksum_and_versions_compare_on_it(tmp_path, capsys):
    """Each recorded glidein ran its own build of glidein_startup.sh: its row's glidein_version
    is the md5 that script printed of itself, and ``--compare versions`` sets one against the
    other; a table of one version is refused with one line."""
    tables, versions = {}, []
    for run in ("success", "fail"):
        row, text = forward_recorded(tmp_path / run, run)
        assert row["glidein_version"] == re.search(r"script_checksum += '([0-9a-f]{32}) ", text).group(1)
        tables[run] = tmp_path / run / "table"
        versions.append(f"glidein_version={row['glidein_version']}")
    out = tmp_path / "c.json"
    assert main(["analyze", *map(str, tables.values()), "--quiet", "--compare", "versions", "--json", str(out)]) == 0
    p = json.loads(out.read_text())["populations"]
    assert sorted(s["given"] for s in p["selections"].values()) == sorted(versions)
    assert [p["populations"][k]["glideins"] for k in "ab"] == [1, 1]
    assert main(["analyze", str(tables["success"]), "--compare", "versions"]) == 2
    assert "fewer than two glidein versions" in capsys.readouterr().err


def _condor_record_start(run) -> float:
    text = (fixture_dir(run) / "otr_outlist.list").read_text()
    block = text[text.index('id="condor_startup.sh"'):]
    return iso_epoch(re.search(r"<tStart>([^<]+)</tStart>", block).group(1))


CASES = {
    "success": {},
    "fail": {},
    "sigterm": {},
    "sigterm before Condor starting": {"run": "sigterm", "stdout": _condor_cut},
    "sigterm during a job": {"run": "sigterm", "late_job": True},
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_tables_gwms_columns_are_the_factorys_formulas_on_the_same_stdout(tmp_path, case):
    spec = CASES[case]
    run = spec.get("run", case)
    stdout = (fixture_dir(run) / "glidein_stdout.txt").read_text()
    if "stdout" in spec:
        stdout = spec["stdout"](stdout)
    extra = (lambda lines: _late_job(lines, _condor_record_start(run))) if spec.get("late_job") else None
    row, text = forward_recorded(tmp_path, run, stdout=stdout, extra=extra)
    expected = gwms.quantities(factory_view(text))
    assert {k: row[k] for k in GWMS_COLUMNS} == expected
    if case == "sigterm before Condor starting":
        assert (row["gwms_condor_started"], row["gwms_condor_lasted_s"]) == (False, 0)
        assert row["condor_s"] is not None, "the trace still has the last script's condor span"
    if case == "sigterm during a job":
        assert row["gwms_condor_lasted_s"] == 3 and row["condor_s"] > 20


def test_without_the_returned_stdout_a_killed_condor_phase_counts_its_record_not_its_last_job(tmp_path):
    """No stdout came back: the spans alone say what they can. HTCondor's time is then its
    record's (tStart to tEnd, what glidein_startup.sh waited), not the span a late job
    stretched."""
    run = "sigterm"
    row, text = forward_recorded(tmp_path, run, returned_stdout=False,
                                 extra=lambda lines: _late_job(lines, _condor_record_start(run)))
    expected = factory_view(text)
    assert row["gwms_condor_started"] is True and row["condor_s"] > 20
    assert row["gwms_condor_lasted_s"] == expected.condor_s == 3


def test_without_the_returned_stdout_a_sigterm_before_condor_starting_is_no_condor_phase(tmp_path):
    """No stdout came back, but the cleanup hook read glidein_startup.sh's copy of it in the
    work dir: no "=== Condor starting", so HTCondor never started (``condor.started`` false on
    the condor span), as GlideinWMS says."""
    row, text = forward_recorded(tmp_path, "sigterm", stdout=_condor_cut(
        (fixture_dir("sigterm") / "glidein_stdout.txt").read_text()), returned_stdout=False)
    assert factory_view(text).condor_started is False
    assert (row["gwms_condor_started"], row["gwms_condor_lasted_s"], row["waste_badput_mill"]) == (False, 0, 1000)
    assert row["condor_s"] is not None


def test_a_glidein_cut_during_validation_leaves_the_factorys_view_alone(tmp_path):
    """A glidein cut during validation that its batch system reports as a normal exit (return
    value 0: no signal the Factory sees): no cleanup ran and no journal came back. The trace
    is the Factory's (root, submit, queue; outcome no_glidein_output) and the row is what
    GlideinWMS makes of that stdout: HTCondor never started, Lasted the activity log's execute
    to terminated (its "best guess"). With the signal reported, the outcome is killed (the
    next test, through the real hooks)."""
    run = "fail"
    config = fixture_dir(run) / "glidein_config.at_custom_setup"
    stdout = (fixture_dir(run) / "glidein_stdout.txt").read_text()
    stdout = stdout[:stdout.index("=== Glidein ending")]            # killed before its end banner
    # a glidein of a traced entry: GLIDEIN_USE_TRACING among its parameters (else it is untraced)
    stdout = re.sub(r"^(PARAM_LIST \S+)$", r"\1,GLIDEIN_USE_TRACING", stdout, count=1, flags=re.M)
    stderr = (fixture_dir(run) / "glidein_stderr.txt").read_text()
    stderr = stderr[:stderr.index("=== Validation error")]          # killed while validating
    layout = FactoryLayout(logs=tmp_path / "logs", instance=config_get(config, "GLIDEIN_Name"),
                           entry=config_get(config, "GLIDEIN_Entry_Name"))
    log = CondorGLog(layout)
    cluster = int(config_get(config, "CONDORG_CLUSTER"))
    start = 1795318000
    log.submit(cluster, 0, when=start - 60)
    log.execute(cluster, 0, when=start)
    layout.output(cluster, 0, "out").write_text(stdout)
    layout.output(cluster, 0, "err").write_text(stderr)
    old = time.time() - 3600
    for kind in ("out", "err"):
        os.utime(layout.output(cluster, 0, kind), (old, old))
    log.terminated(cluster, 0, 0, when=start + 47)
    ledger, store = Ledger(tmp_path / "ledger.sqlite"), tmp_path / "store"
    conf = settings_for(layout, factory=config_get(config, "GLIDEIN_Factory"),
                        schedd=config_get(config, "CONDORG_SCHEDD"), grace=5, table=str(tmp_path / "table"))
    forwarder = build_forwarder(conf,
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    assert forwarder.run_once().glideins_done == 1
    (spans,) = read_store(store).values()
    assert sorted(s["attributes"]["glidein.stage"] for s in spans) == ["factory.queue", "factory.submit", "glidein"]
    (row,) = reader.read_rows(tmp_path / "table", "glideins")[0].to_pylist()
    assert row["outcome"] == "no_glidein_output" and row["setup_s"] is None
    expected = gwms.quantities(factory_view(stdout))
    expected["gwms_lasted_s"] = 47                                  # GlideinWMS's best guess
    assert {k: row[k] for k in GWMS_COLUMNS} == expected
    assert (row["gwms_condor_started"], row["gwms_lasted_s"], row["waste_validation_mill"]) == (False, 47, 1000)


def test_a_sigterm_before_the_last_script_through_the_real_hooks_is_killed(tmp_path):
    """Issue 42: GlideinWMS traps SIGTERM only once its last script started, so a SIGTERM while
    it validates kills glidein_startup.sh by the signal: no cleanup script runs, no journal
    comes back, the work dir stays, and Condor-G reports the signal. The outcome is `killed`
    (a failure, with the signal as its reason: what docs/hooks.md says), and the setup hook's
    sampler leaves with its glidein."""
    from glidein_tracing.core.ids import GlideinIdentity
    from glidein_tracing.simulator import Job, Scenario, simulate_glidein

    scenario = Scenario(sigterm_at_stage="setup", jobs=[Job()])
    layout = FactoryLayout(logs=tmp_path / "logs", instance=scenario.name, entry=scenario.entry, utc_iso=True)
    log = CondorGLog(layout)
    log.submit(scenario.cluster, scenario.proc)
    log.execute(scenario.cluster, scenario.proc)
    result = simulate_glidein(tmp_path / "glidein", scenario)
    assert result.exit_code == -15 and "=== Condor starting" not in result.stdout()
    assert result.journal_from_stderr() is None and result.journal_path is not None   # left on the node
    log.return_outputs(scenario.cluster, scenario.proc, result.stdout_path, result.stderr_path)
    log.terminated(scenario.cluster, scenario.proc, signal=15)
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, factory=scenario.factory, schedd=scenario.schedd, grace=0),
                                exporter=JsonLinesStoreExporter(store), ledger=Ledger(tmp_path / "l.sqlite"),
                                settle_s=0)
    assert forwarder.run_once().glideins_done == 1
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    (root,) = [s for s in read_store(store)[trace] if s["attributes"]["glidein.stage"] == "glidein"]
    assert root["attributes"]["glidein.outcome"] == "killed"
    assert root["status_code"] == 2 and "signal 15" in root["status_message"]
    pid = int((result.work_dir / "glidein_tracing" / "sampler.pid").read_text().split()[0]) \
        if (result.work_dir / "glidein_tracing" / "sampler.pid").exists() else None
    assert pid is None or not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_the_documented_condor_start_delay_command_measures_the_recorded_glideins(tmp_path):
    """docs/span-conventions.md's command, run as written over returned stdouts: 1 s and 0 s
    for the recorded successful and SIGTERM'd glideins, nothing for the failed one."""
    doc = (REPO / "docs" / "span-conventions.md").read_text()
    block = re.search(r"<!-- condor-start-delay -->\n\n((?:    .*\n)+)", doc).group(1)
    command = "".join(line[4:] + "\n" for line in block.splitlines())
    for proc, run in enumerate(("success", "fail", "sigterm")):
        (tmp_path / f"job.9.{proc}.out").write_text((fixture_dir(run) / "glidein_stdout.txt").read_text())
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["1 job.9.0.out", "0 job.9.2.out"]


def test_a_simulated_glidein_with_jobs_has_the_factorys_numbers_with_its_starterlog_summary(tmp_path):
    """A glidein run by the simulator (real hooks), 2 cores, jobs that succeed and fail,
    through Condor-G and the forwarder: the StarterLog summary in its stdout (Total, goodZ,
    goodNZ) gives JobsNr, JobsLasted, JobsGoodput, JobsTerminated as GlideinWMS's."""
    from glidein_tracing.simulator import Job, Scenario
    from test_live_and_forward import run_through_factory
    scenario = Scenario(jobs=[Job(duration_s=2.2), Job(duration_s=1.4, exit_code=2), Job(duration_s=1.2)],
                        params={"GLIDEIN_CPUS": "2"}, max_tail_s=1.0)
    layout, result = run_through_factory(tmp_path, scenario)
    ledger, store = Ledger(tmp_path / "l.sqlite"), tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, factory=scenario.factory, grace=0,
                                table=str(tmp_path / "table")), exporter=JsonLinesStoreExporter(store), ledger=ledger, settle_s=0)
    assert forwarder.run_once().glideins_done == 1
    (row,) = reader.read_rows(tmp_path / "table", "glideins")[0].to_pylist()
    expected = gwms.quantities(factory_view(result.stdout()))
    assert expected["gwms_jobs_nr"] == 3 and expected["gwms_condor_lasted_s"] >= 5
    assert {k: row[k] for k in GWMS_COLUMNS} == expected
    (root,) = [sp for spans in read_store(store).values() for sp in spans if sp["attributes"]["glidein.stage"] == "glidein"]
    read = {k: v for k, v in root["attributes"].items() if k.startswith("glidein.gwms.")}
    run = factory_view(result.stdout())
    assert (read["glidein.gwms.jobs_nr"], read["glidein.gwms.jobs_s"], read["glidein.gwms.goodz_s"],
            read["glidein.gwms.goodnz_s"]) == tuple(run.summary)
    assert (read["glidein.gwms.validation_s"], read["glidein.gwms.condor_s"], read["glidein.gwms.glidein_s"]) == \
        (run.validation_s, run.condor_s, run.glidein_s)


def test_a_hostile_stdout_gives_no_number_it_does_not_hold():
    """The stdout is the node's: 16 MiB of near-banners (a block never closed, banner starts by
    the million on long lines, numbers beyond any duration) give only what real banners say."""
    from glidein_tracing.factory.glidein_stdout import MAX_STDOUT_BYTES, stdout_facts
    long_lines = (b"=== Last script starting " * 40 + b"\n") * 5000
    near = b"=== Condor starting x ===\n=== Condor ended x after 7 ===\n=== Stats of main ===\n" + \
        b"Total jobs 1 x" * 18 + b"\n"
    end = b"\n=== End Stats of main ===\n"
    text = (long_lines + near * 60000)[:MAX_STDOUT_BYTES - len(end)] + end
    assert stdout_facts(text) == {"glidein.gwms.condor_started": True, "glidein.gwms.condor_s": 7}
    huge = b"=== Last script starting x (1) after validating for 99999999999999 ===\n=== Glidein ending x with code 0 after 5 ===\n"
    assert stdout_facts(huge) == {"glidein.gwms.condor_started": False, "glidein.gwms.exit_code": 0,
                                  "glidein.gwms.glidein_s": 5}


@pytest.mark.parametrize("text, want", [
    (b"Starting glidein_startup.sh at x\nscript_checksum   = '" + b"ab" * 16 + b"  ./glidein_startup.sh'\n", "ab" * 16),
    (b"script_checksum   = '" + b"ab" * 17 + b"  ./glidein_startup.sh'\n", None),       # not an md5
    (b"script_checksum   = '" + b"AB" * 16 + b"';rm -rf /  ./glidein_startup.sh'\n", None),
    (b"x" * 5000 + b"\nscript_checksum   = '" + b"ab" * 16 + b"  ./glidein_startup.sh'\n", None),  # past the header
])
def test_the_glidein_version_is_read_only_as_glidein_startup_prints_it(text, want):
    from glidein_tracing.factory.glidein_stdout import stdout_facts
    assert stdout_facts(text).get("glidein.gwms.startup_md5") == want


def test_the_stdout_reader_reads_as_glideinwms_patterns_do():
    """Random lines of the summary's and banners' words: the reader (each pattern on one line
    from its literal, the summary line in two parts) gives what GlideinWMS's patterns give on
    the same text; bench/bench_hostile.py times it on hostile outputs."""
    import random
    from glidein_tracing.factory import glidein_stdout as gs
    summary = re.compile(rb"Total(.*)jobs ([0-9]+) .*utilization ([0-9]+)")
    ending = re.compile(rb"=== Glidein ending .* with code ([0-9]+) after ([0-9]+) ===")
    words = [b"Total", b" ", b"jobs ", b"1", b"23", b"utilization ", b"goodZ", b"goodNZ", b"(-%)", b"x",
             b"=== Glidein ending ", b" with code ", b" after ", b"===", b" ==="]
    rng = random.Random(7)
    for _ in range(3000):
        line = b"".join(rng.choice(words) for _ in range(rng.randint(1, 14)))
        text = b"=== Condor starting ===\n=== Condor ended after 9 ===\n=== Stats of main ===\n" + line + \
            b"\n=== End Stats of main ===\n" + line + b"\n"
        facts = gs.stdout_facts(text)
        found = summary.search(line)
        kind = (found.group(1).strip().decode() or "Total") if found else None
        if kind in ("Total", "goodZ", "goodNZ"):
            assert facts[gs._STATS[kind][1]] == int(found.group(3)), line
        else:
            assert not set(facts) & {name for _, name in gs._STATS.values()}, line
        end = ending.search(line)
        assert facts.get("glidein.gwms.glidein_s") == (int(end.group(2)) if end else None), line
