"""The ledger forgets a done glidein only once nothing on disk can show it again: its returned
output and the activity log that named it deleted by the Factory, past the Factory's own
retention (glideinWMS.xml's <log_retention>). The glidein table keeps it for good."""

import os
import sqlite3
import time
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from glidein_tracing.factory.factory_xml import default_log_retention, read_factory_xml
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.factory.stats import ForwardStats
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
from glidein_tracing.table import reader

from tests.support.factory_builders import SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for

GLIDEINWMS_XML = """<glidein factory_name="gwms_demo_factory" glidein_name="gwms_demo_instance" schedd_name="schedd_glideins2@factory.example.org">
  <log_retention>
    <condor_logs max_days="{days}" max_mbytes="100.0" min_days="{days}"/>
    <job_logs max_days="{days}" max_mbytes="100.0" min_days="{days}"/>
    <summary_logs max_days="31.0" max_mbytes="100.0" min_days="3.0"/>
  </log_retention>
  <entries/>
</glidein>
"""


def setup(tmp_path, days="1.0"):
    """A Factory whose glidein 300.0 ended at T0 + 30, days before now, kept ``days`` days."""
    layout = FactoryLayout(logs=tmp_path / "logs")
    log = CondorGLog(layout)
    run_glidein(log, layout, 300, 0, T0, returned_stderr(journal_text(layout, 300, 0, T0)))
    xml = tmp_path / "glideinWMS.xml"
    xml.write_text(GLIDEINWMS_XML.format(days=days))
    exporter = InMemorySpanExporter()
    ledger = Ledger(tmp_path / "ledger.sqlite")
    forwarder = build_forwarder(settings_for(layout, factory_config=str(xml), grace=5, schedd=SCHEDD,
                                             table=str(tmp_path / "table")),
                                exporter=exporter, ledger=ledger)
    forwarder.forgetting.every_s = 0          # a sweep every pass, not hourly
    return layout, forwarder, exporter


def roots_sent(exporter, layout):
    trace = int(identity(layout, 300, 0).trace_id, 16)
    return [s for s in exporter.get_finished_spans()
            if s.context.trace_id == trace and s.attributes.get("glidein.stage") == "glidein"]


def test_the_factorys_retention_is_read_from_glideinwms_xml_with_its_defaults(tmp_path):
    xml = tmp_path / "glideinWMS.xml"
    xml.write_text(GLIDEINWMS_XML.format(days="30.0"))
    assert read_factory_xml(xml).log_retention["job_logs"] == {"min_days": 30.0, "max_days": 30.0, "max_mbytes": 100.0}
    assert default_log_retention()["condor_logs"]["max_days"] == 14.0   # GlideinWMS's default
    xml.write_text(GLIDEINWMS_XML.format(days="a week"))
    try:
        read_factory_xml(xml)
    except ValueError as exc:
        assert "<log_retention><job_logs min_days='a week'> is not a number of days" in str(exc)
    else:
        raise AssertionError("a retention that is not a number of days was taken")


def test_a_glidein_whose_output_is_still_on_disk_is_never_forgotten(tmp_path):
    layout, forwarder, exporter = setup(tmp_path)
    assert forwarder.run_once().glideins_done == 1
    ledger = forwarder.ledger
    gkey = f"{layout.entry_dir.resolve()}|300.0"
    # past the Factory's retention, but every file that names it is still there
    for _ in range(2):
        assert forwarder.run_once().glideins_forgotten == 0
    assert ledger.knows(gkey)
    for kind in ("err", "out"):                 # one output left is enough to keep it
        layout.output(300, 0, kind).unlink()
        assert forwarder.run_once().glideins_forgotten == 0 and ledger.knows(gkey)
    # its outputs are gone, its activity log not yet: kept
    assert forwarder.run_once().glideins_forgotten == 0 and ledger.knows(gkey)
    # an entry directory the pass cannot see (an unmounted file system) forgets nothing
    os.rename(layout.logs, tmp_path / "mounted")
    layout.logs.mkdir()                          # the empty mount point
    forwarder.run_once()
    assert ledger.knows(gkey)
    layout.logs.rmdir()
    os.rename(tmp_path / "mounted", layout.logs)
    # the Factory's cleaner deletes the activity log: nothing can show the glidein again, once
    # that has lasted the log kind's min_days (1 here)
    layout.activity_log.unlink()
    assert forwarder.run_once().glideins_forgotten == 0 and ledger.knows(gkey)
    assert sweep(forwarder, layout, days=0.9) == 0 and ledger.knows(gkey)
    assert sweep(forwarder, layout, days=1.01) == 1
    assert not ledger.knows(gkey)
    assert ledger.log_paths() == []              # the deleted log's reader position goes too
    assert forwarder.run_once().spans_sent == 0
    assert len(roots_sent(exporter, layout)) == 1
    # the glidein table is the long-term record: the glidein's row stays
    (row,) = reader.read_rows(tmp_path / "table", "glideins")[0].to_pylist()
    assert row["trace_id"] == identity(layout, 300, 0).trace_id


def test_nothing_is_forgotten_within_the_factorys_retention(tmp_path):
    layout, forwarder, exporter = setup(tmp_path, days="3650")
    forwarder.run_once()
    for path in (layout.output(300, 0, "err"), layout.output(300, 0, "out"), layout.activity_log):
        path.unlink()
    assert forwarder.run_once().glideins_forgotten == 0
    assert forwarder.ledger.knows(f"{layout.entry_dir.resolve()}|300.0")


def sweep(forwarder, layout, days: float, stats=None) -> int:
    """A retention sweep ``days`` from now: the glideins it forgot."""
    return forwarder.forgetting.sweep([str(layout.entry_dir.resolve())], stats or ForwardStats(),
                                      now=time.time() + days * 86400)


def moved(layout, away: Path, back=False):
    """The entry directory's files moved aside (a restore, an rsync to a new host), or back."""
    if back:
        for path in away.iterdir():
            os.rename(path, layout.entry_dir / path.name)
        return
    away.mkdir(exist_ok=True)
    for path in layout.entry_dir.iterdir():
        os.rename(path, away / path.name)


def test_files_moved_aside_for_less_than_min_days_are_not_forgotten_nor_sent_again(tmp_path):
    """Issue 42: retention forgot a glidein at the first pass its files were missing; moved
    back, all 791 of 791 spans went again. Absent for less than min_days, nothing is forgotten,
    and a file seen again starts the count afresh."""
    layout, forwarder, exporter = setup(tmp_path)
    forwarder.run_once()
    gkey = f"{layout.entry_dir.resolve()}|300.0"
    moved(layout, tmp_path / "aside")
    assert sweep(forwarder, layout, days=0) == 0                 # absent from now
    assert sweep(forwarder, layout, days=0.9) == 0 and forwarder.ledger.knows(gkey)
    moved(layout, tmp_path / "aside", back=True)
    assert sweep(forwarder, layout, days=0.95) == 0              # back: absent no more
    moved(layout, tmp_path / "aside")
    assert sweep(forwarder, layout, days=1.5) == 0               # absent again from 1.5 days on
    assert sweep(forwarder, layout, days=2.4) == 0 and forwarder.ledger.knows(gkey)
    moved(layout, tmp_path / "aside", back=True)
    fresh = build_forwarder(forwarder.settings, exporter=exporter, ledger=forwarder.ledger)   # a restarted forwarder
    assert fresh.run_once().spans_sent == 0
    assert len(roots_sent(exporter, layout)) == 1


def test_a_forgotten_glidein_whose_files_come_back_is_recognised_not_sent_again(tmp_path):
    """Forgotten after its files stayed away, a glidein whose files are restored is known by
    the compact record of forgotten ids, kept for the retention window and no longer."""
    layout, forwarder, exporter = setup(tmp_path)
    forwarder.run_once()
    gkey = f"{layout.entry_dir.resolve()}|300.0"
    moved(layout, tmp_path / "aside")
    sweep(forwarder, layout, days=0)
    assert sweep(forwarder, layout, days=1.01) == 1 and not forwarder.ledger.knows(gkey)
    assert forwarder.ledger.log_paths() == []                    # the log's position forgotten too
    moved(layout, tmp_path / "aside", back=True)
    fresh = build_forwarder(forwarder.settings, exporter=exporter, ledger=forwarder.ledger)   # a restarted forwarder
    stats = fresh.run_once()
    assert stats.spans_sent == 0 and stats.problems == {"forgotten_glidein_seen_again": 1}
    assert len(roots_sent(exporter, layout)) == 1 and not forwarder.ledger.knows(gkey)
    # the record lasts the retention window (max_days: 1 here), then goes: no growth with history
    assert forwarder.ledger.forgotten(gkey) is not None
    sweep(fresh, layout, days=2.1)
    assert forwarder.ledger.forgotten(gkey) is None


def test_a_ledger_without_this_versions_columns_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE glideins DROP COLUMN activity_log")
    try:
        Ledger(path)
    except Exception as exc:
        assert "earlier development version (no glideins.activity_log column)" in str(exc)
        assert "docs/support-policy.md" in str(exc)
    else:
        raise AssertionError("a ledger of an earlier layout was used")


def test_an_open_glidein_whose_log_and_output_are_gone_is_forgotten_after_the_retention(tmp_path):
    """A glidein whose activity log the Factory deleted before its end was read never ends
    here: every pass would look at it for years. Once the ledger has known it longer than the
    Factory keeps its files, and nothing of it is on disk, it is forgotten with a warning."""
    import time

    from glidein_tracing.factory.stats import ForwardStats
    layout, forwarder, _ = setup(tmp_path)
    log = CondorGLog(layout)
    log.submit(301, 0, when=T0)
    log.execute(301, 0, when=T0 + 60)            # no end: still running, as the ledger sees it
    forwarder.run_once()
    ledger, gkey = forwarder.ledger, f"{layout.entry_dir.resolve()}|301.0"
    assert ledger.glidein(gkey)["status"] == "open"
    entry_dirs, later = [str(layout.entry_dir.resolve())], time.time() + 2 * 86400
    assert forwarder.forgetting.sweep(entry_dirs, ForwardStats(), now=time.time()) == 0   # known for less than a day
    layout.output(301, 0, "err").write_text("")   # an output on disk: it may still end
    layout.activity_log.unlink()
    assert forwarder.forgetting.sweep(entry_dirs, ForwardStats(), now=later) == 0
    assert ledger.knows(gkey)
    layout.output(301, 0, "err").unlink()
    assert forwarder.forgetting.sweep(entry_dirs, ForwardStats(), now=later) == 0   # absent from now: min_days
    stats = ForwardStats()
    assert forwarder.forgetting.sweep(entry_dirs, stats, now=later + 1.01 * 86400) == 1
    assert not ledger.knows(gkey) and stats.glideins_forgotten == 1
    assert ledger.with_status("open") == [] and ledger.factory_events(gkey) == []


def test_a_glidein_forgotten_while_open_that_then_ends_has_a_root_around_its_factory_stages(tmp_path):
    """Issue 42: a glidein forgotten while open whose end a later activity log then names got a
    root that did not contain its Factory stages already sent. Its first Factory event is kept
    with its forgotten id: the root starts there."""
    layout, forwarder, exporter = setup(tmp_path)
    log = CondorGLog(layout)
    log.submit(301, 0, when=T0)
    log.grid_submit(301, 0, when=T0 + 10)
    log.execute(301, 0, when=T0 + 60)
    assert forwarder.run_once().early_spans_sent >= 1                  # factory.submit, while it runs
    gkey = f"{layout.entry_dir.resolve()}|301.0"
    layout.activity_log.unlink()                                       # rotated away before its end
    sweep(forwarder, layout, days=2)
    assert sweep(forwarder, layout, days=3.5) == 1 and not forwarder.ledger.knows(gkey)
    layout.log_nr = "20261123"                                         # the next day's activity log
    layout.output(301, 0, "err").write_text(returned_stderr(journal_text(layout, 301, 0, T0 + 60)))
    log.terminated(301, 0, 0, when=T0 + 600)
    forwarder.run_once()
    trace = int(identity(layout, 301, 0).trace_id, 16)
    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == trace]
    (root,) = [s for s in spans if s.attributes.get("glidein.stage") == "glidein"]
    factory = [s for s in spans if s.attributes.get("glidein.stage", "").startswith("factory.")]
    assert factory and all(root.start_time <= s.start_time and s.end_time <= root.end_time for s in spans)
    assert root.start_time == int(T0 * 1e9)
