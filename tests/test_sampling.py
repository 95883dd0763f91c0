"""Sampling (GLIDEIN_TRACING_SAMPLING_RATIO) is decided once per glidein: the ratio it ran with
travels in its journal; live export on the node and the forwarder at the Factory keep the same
glideins by trace id, and every failed one."""

import time

from glidein_tracing.cli.main import main as cli
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.sampling import threshold
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import (
    SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)
from tests.support.hook_support import make_glidein

RATIO = 0.1
GLIDEINS = 1000


def _failed_validation():
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(T0 + 5))
    return [{"id": "main/check_disk.sh", "tstart": iso, "tend": iso, "status": "ERROR",
             "metrics": {"failure": "WN_Resource"}, "detail": "not enough disk"}]


def factory_with_glideins(tmp_path, glideins, ratio, failed_every=7):
    """``glideins`` returned glideins whose journals say they ran with ``ratio``; every
    ``failed_every``-th failed its validation. (layout, {trace id: journal}, failed trace ids)"""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    journals, failed = {}, set()
    for proc in range(glideins):
        records = _failed_validation() if proc % failed_every == 0 else None
        trace = identity(layout, 100, proc).trace_id
        if records:
            failed.add(trace)
        journals[trace] = journal_text(layout, 100, proc, T0, records,
                                       root_fields={"@sampling_ratio": str(ratio)})
        run_glidein(log, layout, 100, proc, T0, returned_stderr(journals[trace]))
    return layout, journals, failed


def forwarded(tmp_path, layout, **kwargs):
    store = tmp_path / "factory_store"
    stats = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=5, **kwargs),
                            exporter=JsonLinesStoreExporter(store), ledger=Ledger(tmp_path / "l.sqlite")).run_once()
    return stats, set(read_store(store))


def test_the_ratio_in_the_journal_keeps_a_tenth_of_the_healthy_glideins_and_every_failed_one(tmp_path):
    layout, journals, failed = factory_with_glideins(tmp_path, GLIDEINS, RATIO)
    stats, kept = forwarded(tmp_path, layout)      # no ratio given to the forwarder
    healthy = set(journals) - failed
    assert failed <= kept
    share = len(kept & healthy) / len(healthy)
    assert 0.08 <= share <= 0.12, share
    assert kept & healthy == {t for t in healthy if int(t[:8], 16) < threshold(RATIO)}
    assert stats.glideins_done == GLIDEINS and stats.spans_sampled_out > 0

    # the node decides the same for the same glideins: `glidein-tracing export`, as the
    # cleanup hook runs it for live export (no ratio on its command line: the journal's)
    node_kept = set()
    for trace, text in journals.items():
        path = tmp_path / "journal.gtj"
        path.write_text(text)
        code = cli(["export", "--journal", str(path), "--store", str(tmp_path / "node_store")])
        assert code in (0, 4)          # 4: sampled out, nothing exported
        if code == 0:
            node_kept.add(trace)
    assert node_kept == kept == set(read_store(tmp_path / "node_store"))


def test_the_forwarders_own_ratio_is_an_explicit_override(tmp_path):
    layout, journals, failed = factory_with_glideins(tmp_path, 40, 0.0, failed_every=4)
    _, kept = forwarded(tmp_path, layout)
    assert kept == failed                          # ratio 0 on the node: only the failed ones
    _, kept_all = forwarded(tmp_path / "again", layout, sampling_ratio=1.0)
    assert kept_all == set(journals)


def test_the_setup_hook_writes_the_ratio_the_glidein_runs_with(tmp_path):
    from glidein_tracing.core.converter import convert
    from glidein_tracing.core.journal import read_journal
    g = make_glidein(tmp_path, "success", extra_config={"GLIDEIN_TRACING_SAMPLING_RATIO": "0.25"})
    try:
        assert g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main").returncode == 0
        events, report = read_journal(g.journal)
    finally:
        g.kill_sampler()
        g.stop()
    (start,) = [e for e in events if e.op == "start" and e.key == "glidein"]
    assert start.fields["@sampling_ratio"] == "0.25"
    assert convert(events, report)[0].attributes["glidein_tracing.sampling_ratio"] == 0.25
