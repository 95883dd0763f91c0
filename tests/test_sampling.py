"""Sampling (GLIDEIN_TRACING_SAMPLING_RATIO): a glidein is kept or dropped by its trace id, the
same way on the node (`glidein-tracing export`) and at the Factory (the forwarder); a glidein
that failed is always kept."""

import time

from glidein_tracing.cli.main import main as cli
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.forwarder import Forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.sampling import threshold
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from factory_builders import FACTORY, T0, identity, journal_text, returned_stderr, run_glidein

RATIO = 0.5
GLIDEINS = 16


def _failed_validation():
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(T0 + 5))
    return [{"id": "main/check_disk.sh", "tstart": iso, "tend": iso, "status": "ERROR",
             "metrics": {"failure": "WN_Resource"}, "detail": "not enough disk"}]


def test_node_and_factory_keep_the_same_glideins_and_every_failed_one(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    journals, failed = {}, set()
    for proc in range(GLIDEINS):
        records = _failed_validation() if proc % 3 == 0 else None
        trace = identity(layout, 100, proc).trace_id
        if records:
            failed.add(trace)
        journals[trace] = journal_text(layout, 100, proc, T0, records)
        run_glidein(log, layout, 100, proc, T0, returned_stderr(journals[trace]))
    by_ratio = {t for t in journals if int(t[:8], 16) < threshold(RATIO)}
    expected = by_ratio | failed
    assert by_ratio and failed - by_ratio and set(journals) - expected, "every case is present"

    store = tmp_path / "factory_store"
    stats = Forwarder([layout.logs], JsonLinesStoreExporter(store), Ledger(tmp_path / "l.sqlite"), FACTORY,
                      grace_s=5, sampling_ratio=RATIO).run_once()
    assert set(read_store(store)) == expected
    assert stats.spans_sampled_out > 0 and stats.glideins_done == GLIDEINS

    node_kept = set()
    for trace, text in journals.items():
        path = tmp_path / f"{trace}.gtj"
        path.write_text(text)
        code = cli(["export", "--journal", str(path), "--store", str(tmp_path / "node_store"),
                    "--sampling-ratio", str(RATIO)])
        assert code in (0, 4)          # 4: sampled out, nothing exported
        if code == 0:
            node_kept.add(trace)
    assert node_kept == expected == set(read_store(tmp_path / "node_store"))
