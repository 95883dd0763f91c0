"""After a validation failure the glidein keeps its slot ~20 min (GLIDEIN_ToDie): the Factory
forwarder makes that a `post_failure_sleep` stage from the end of cleanup to the glidein's exit
(the Factory's terminated event), and `analyze` of the glidein table the forwarder wrote counts
it as validation waste and names the real failed glidein in its failures section."""

import json
import os
import time

import pytest

from glidein_tracing.cli.main import main
from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import identity, journal_text, returned_stderr, settings_for
from tests.support.fixtures import fixture_path
from tests.support.journal_builders import iso_epoch, parse_otr_records

SLEEP_S = 1200.0


def forwarded(tmp_path, run, ends_after_s):
    """The glidein forwarded; it started just before its real records (its journal's ``t0``)
    and the Factory saw it exit ``ends_after_s`` later."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    records = parse_otr_records(fixture_path("glidein-run", run, "otr_outlist.list").read_text())
    T0 = iso_epoch(records[0]["tstart"]) - 1     # the real records lie inside this glidein's setup
    log.submit(400, 0, when=T0 - 120)
    log.grid_submit(400, 0, when=T0 - 110)
    log.execute(400, 0, when=T0)
    layout.output(400, 0, "err").write_text(returned_stderr(journal_text(layout, 400, 0, T0, records)))
    old = time.time() - 3600
    os.utime(layout.output(400, 0, "err"), (old, old))
    log.terminated(400, 0, 1, when=T0 + ends_after_s)
    ledger, store = Ledger(tmp_path / "ledger.sqlite"), tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, grace=5, table=str(tmp_path / "table")),
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    assert forwarder.run_once().glideins_done == 1
    spans = read_store(tmp_path / "store")[identity(layout, 400, 0).trace_id]
    return {s["attributes"]["glidein.stage"]: s for s in spans}, spans, T0


def test_validation_failure_sleep_is_a_stage_until_the_factory_saw_the_exit(tmp_path):
    stages, spans, T0 = forwarded(tmp_path, "fail", 22 + SLEEP_S)
    sleep = stages["post_failure_sleep"]
    # from teardown's end on; teardown ends 1 us before it (docs/span-conventions.md, Times)
    assert sleep["start_ns"] == stages["teardown"]["end_ns"] + 1000
    assert sleep["end_ns"] == stages["glidein"]["end_ns"] == int((T0 + 22 + SLEEP_S) * 1e9)
    assert sleep["attributes"]["glidein.sleep.reason"] == "validation_failed"
    assert sleep["attributes"]["glidein.sleep.end_source"] == "factory.terminated"
    assert sleep["parent_span_id"] == stages["glidein"]["span_id"]
    assert not [k for k in sleep["attributes"] if k.startswith("glidein.resource.")]

    # analyze the table: the glidein's validation waste is its whole life, the sleep included,
    # and the real failed glidein is in the failures section with its domain
    out = tmp_path / "a.json"
    assert main(["analyze", str(tmp_path / "table"), "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    waste = report["stats"]["waste_core_hours"]["overall"]
    assert waste["validation"] == pytest.approx((22 + SLEEP_S) / 3600, abs=0.01)
    assert report["stats"]["outcomes"]["overall"] == {"validation_failed": 1}
    domain = stages["glidein"]["attributes"]["glidein.failure.domain"]
    failures = report["failures"]
    assert failures["failed_glideins"] == 1 and failures["glideins_by_domain"] == {domain: 1}
    (message,) = failures["top_messages"]
    assert message["domain"] == domain and message["examples"] == [stages["glidein"]["trace_id"]]


def test_a_glidein_that_ran_has_no_sleep(tmp_path):
    stages, _, _ = forwarded(tmp_path, "success", 22 + SLEEP_S)
    assert "post_failure_sleep" not in stages
