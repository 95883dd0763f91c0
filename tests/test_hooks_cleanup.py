"""The cleanup hook on the per-script records of real glideins (fixtures success/ and fail/):
one `record` line per <OSGTestResult>, faithful to the XML; the journal closed with the right
outcome; and the journal always appended to stderr as a named gzip+base64 section."""

import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from glidein_tracing.core.sections import JOURNAL_SECTION
from glidein_tracing.core.converter import convert, parse_iso
from glidein_tracing.core.journal import parse_lines, read_journal
from glidein_tracing.simulator import decode_sections
from tests.support.hook_support import HOOKS, fixture_dir, fixture_work_dir, make_glidein, retime_glidein_start
from tests.support.hook_support import glidein_at_cleanup as at_cleanup
from tests.support.span_nesting import outside_parent
from tests.support.waiting import wait_until


@pytest.fixture
def glidein_at_cleanup(tmp_path):
    made = []

    def make(run):
        g, cleanup_dir = at_cleanup(tmp_path / run, run)
        made.append(g)
        return g, cleanup_dir
    yield make
    for g in made:
        g.stop()


def fixture_records(run):
    text = (fixture_dir(run) / "otr_outlist.list").read_text()
    root = ET.fromstring("<all>" + text + "</all>")
    out = []
    for rec in root.findall("OSGTestResult"):
        metrics = {m.get("name"): (m.text or "") for m in rec.findall("result/metric")}
        detail = rec.find("detail")
        out.append({
            "id": rec.get("id"),
            "tstart": rec.findtext("test/tStart"), "tend": rec.findtext("test/tEnd"),
            "status": rec.findtext("result/status"),
            "failure": metrics.pop("failure", None), "metrics": metrics,
            "detail": " ".join((detail.text or "").split()) if detail is not None else None,
        })
    return out


def run_cleanup(g, cleanup_dir):
    out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    out_main = None
    return out


@pytest.mark.parametrize("run", ["success", "fail"])
def test_records_match_the_glideins_own_xml(glidein_at_cleanup, run):
    g, cleanup_dir = glidein_at_cleanup(run)
    out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    assert out.returncode == 0 and out.stdout == ""
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0, report.summary()
    records = [e for e in events if e.op == "record"]
    expected = fixture_records(run)
    assert len(records) == len(expected)
    for got, exp in zip(records, expected):
        assert got.key == exp["id"]
        assert got.fields["@tstart"] == exp["tstart"] and got.fields["@tend"] == exp["tend"]
        assert got.fields["@status"] == exp["status"]
        assert got.fields.get("@failure") == exp["failure"]
        for name, value in exp["metrics"].items():
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            assert got.fields["m." + safe] == value.strip()
        if exp["detail"]:
            assert got.fields["@detail"] == exp["detail"]

    def one(op, key):
        found = [e for e in events if e.op == op and e.key == key]
        assert len(found) == 1, (op, key)
        return found[0]
    root_end = one("end", "glidein")
    teardown = one("end", "teardown")
    assert one("start", "teardown")
    if run == "success":
        assert root_end.fields["glidein.outcome"] == "ok" and root_end.fields["@status"] == "OK"
        condor = one("end", "condor")
        assert condor.fields["condor.duration_s:i"] == "5"
        assert condor.fields["condor.auto_shutdown"] == "True"
        assert one("start", "condor").fields["@stage"] == "condor.start"
        assert teardown.fields["glidein.exit_code:i"] == "0"
    else:
        assert root_end.fields["glidein.outcome"] == "validation_failed"
        assert root_end.fields["@status"] == "ERROR"
        assert root_end.fields["@error.type"] == "WN_Resource"
        assert teardown.fields["glidein.exit_code:i"] == "1"
        setup_end = one("end", "setup")     # cleanup closes setup at the failing record's end
        assert setup_end.fields["@status"] == "ERROR"
        assert "main/gwms_trace_setup.sh" in setup_end.fields["@error.detail"]
        assert not [e for e in events if e.key == "condor"]


@pytest.mark.parametrize("run", ["success", "fail"])
def test_stderr_section_decodes_to_the_journal(glidein_at_cleanup, run):
    g, cleanup_dir = glidein_at_cleanup(run)
    out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    lines = out.stderr.split("\n")
    at = lines.index(JOURNAL_SECTION)
    assert lines[at + 1] == "======== gzip | uuencode ============="
    assert lines[at + 2] == "begin-base64 644 -"
    end = lines.index("====", at)
    assert all(len(line) <= 76 for line in lines[at + 3:end])
    sections = decode_sections(out.stderr.encode())
    assert sections[JOURNAL_SECTION] == g.journal.read_bytes()
    events, report = parse_lines(sections[JOURNAL_SECTION])
    assert report.skipped_total == 0 and any(e.key == "glidein" and e.op == "end" for e in events)


def test_sampler_is_stopped(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("success")
    pid = int((g.work / "glidein_tracing" / "sampler.pid").read_text().split()[0])
    assert os.path.exists(f"/proc/{pid}")
    g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"), \
        "sampler still running"


def test_history_records_from_startd_history_log(glidein_at_cleanup):
    import base64
    g, cleanup_dir = glidein_at_cleanup("success")
    log = g.work / "log"
    log.mkdir()
    ads = []
    for proc in range(3):
        ad = (f'ClusterId = 4242\nProcId = {proc}\nGlobalJobId = "sub#4242.{proc}#1"\n'
              f'Owner = "fakeuser"\nExitCode = {proc}\nRemoteUserCpu = 1.5\n'
              f'TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"\n'
              + "".join(f"Junk{i} = {'x' * 50}\n" for i in range(100)))
        ads.append(ad + f'*** Offset = {proc * 100} ClusterId = 4242 ProcId = {proc} Owner = "fakeuser" '
                        f'CompletionDate = 1795318570\n')
    (log / "StartdHistoryLog").write_text("".join(ads))
    (log / "StartdLog").write_text("11/22/26 03:36:07 No resources have been claimed for 400 seconds\n")
    g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir)
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0
    hist = [e for e in events if e.op == "history"]
    assert [e.key for e in hist] == [f"job/sub#4242.{p}#1" for p in range(3)]
    text = base64.b64decode(hist[2].fields["@ad"]).decode()
    assert 'GlobalJobId = "sub#4242.2#1"' in text and "ExitCode = 2" in text
    assert "TraceParent = " in text and "Junk" not in text
    condor_end = [e for e in events if e.op == "end" and e.key == "condor"][0]
    assert condor_end.fields["glidein.shutdown.reason"] == "max_idle"
    assert condor_end.fields["glidein.shutdown.idle_s:i"] == "400"


def test_cleanup_without_tracing_is_silent(tmp_path):
    g = make_glidein(tmp_path / "plain")
    try:
        out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config))
        assert out.returncode == 0 and out.stderr == "" and out.stdout == ""
    finally:
        g.stop()


def _at_cleanup_config(g, run):
    """glidein_config as the recorded glidein had it at cleanup, plus the keys our setup hook
    added (before the last script's marker, where the setup hook wrote them)."""
    ours = [line for line in g.config.read_text().splitlines()
            if line.startswith(("GLIDEIN_TRACING_", "STARTER_DEFAULT_JOB_HOOK_KEYWORD "))]
    text = (fixture_dir(run) / "glidein_config.at_cleanup").read_text()
    text = text.replace(fixture_work_dir(run), str(g.work))
    lines, marker = text.splitlines(), "# --- Last Script values ---"
    at = lines.index(marker) if marker in lines else len(lines)
    g.config.write_text("\n".join(lines[:at] + ours + lines[at:]) + "\n")


@pytest.mark.parametrize("run", ["success", "fail", "sigterm"])
def test_real_glideins_setup_ends_where_glideinwms_setup_ends(glidein_at_cleanup, run):
    g, cleanup_dir = glidein_at_cleanup(run)
    shutil.copy(fixture_dir(run) / "otr_outlist.list", g.work / "otr_outlist.list")
    _at_cleanup_config(g, run)
    retime_glidein_start(g, run)
    assert run_cleanup(g, cleanup_dir).returncode == 0
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0, report.summary()
    records = fixture_records(run)
    condor = [r for r in records if r["id"] == "condor_startup.sh"]
    # setup ends when the last script started, or with no condor phase at the last record's end
    expected_end = parse_iso(condor[0]["tstart"] if condor else records[-1]["tend"])
    (end,) = [e for e in events if e.op == "end" and e.key == "setup"]
    assert end.time == expected_end
    spans = convert(events, report)
    assert outside_parent(spans) == []
    by_name = {s.name: s for s in spans}
    setup = by_name["setup"]
    validations = [s for s in spans if s.attributes["glidein.stage"] == "validation"]
    assert len(validations) == len(records) - len(condor)
    for span in validations:     # every validation span inside setup (records: 1 s resolution)
        assert setup.start_time - 1e9 <= span.start_time and span.end_time <= setup.end_time
    (root,) = [s for s in spans if s.attributes["glidein.stage"] == "glidein"]
    # values known only at the end of setup (GLIDEIN_CPUS comes from an after-list script)
    if run != "fail":
        assert root.attributes["glidein.site"] == "GWMS_TEST_SITE"
        assert root.attributes["glidein.cpus"] == 1
    else:   # failed in the main list: before the entry constants and glidein_cpus_setup.sh
        assert "glidein.site" not in root.attributes and "glidein.cpus" not in root.attributes


def test_a_zombie_sampler_counts_as_gone():
    """Cleanup waits until the sampler is gone. An orphan's zombie may wait seconds for init
    to reap it; `gt_alive` takes it as gone (and a reused pid, another start time, as not ours)."""
    def start_ticks(pid):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[19]

    def alive(pid, ticks):
        return subprocess.run(["bash", "-c", f'. "{HOOKS}/gconditional_TRACING_lib.sh"; gt_alive {pid} {ticks}'],
                              timeout=30).returncode == 0

    running = subprocess.Popen(["sleep", "30"])
    exited = subprocess.Popen(["true"])
    try:
        ticks = start_ticks(exited.pid)
        while Path(f"/proc/{exited.pid}/stat").read_text().rsplit(") ", 1)[1].split()[0] != "Z":
            time.sleep(0.01)                     # exited, not reaped: a zombie
        assert alive(running.pid, start_ticks(running.pid))
        assert not alive(running.pid, int(start_ticks(running.pid)) + 1)
        assert not alive(exited.pid, ticks)
    finally:
        running.kill()
        running.wait()
        exited.wait()
