"""A glidein that fails in GlideinWMS's main scripts has not read its entry's constants, so
its journal names no site; the forwarder, given glideinWMS.xml (``factory_config``), puts the
entry's GLIDEIN_Site on its root span and table row, so failures count against their site. A
journal that names its site keeps it."""

import pyarrow.parquet as pq
import pytest

from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import (
    SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for)


@pytest.mark.parametrize("journal_site, expected", [(None, "Factory_Site"), ("Node_Site", "Factory_Site")])
def test_the_factory_names_the_site_a_journal_does_not(tmp_path, journal_site, expected):
    """The site is the Factory's when glideinWMS.xml names one: a journal saying another (a
    job can append to it) is left out (issue 33)."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_test_instance", entry="TEST_ENTRY")
    root = {"glidein.site": journal_site} if journal_site else {}
    run_glidein(CondorGLog(layout), layout, 300, 0, T0, returned_stderr(journal_text(layout, 300, 0, T0, root_fields=root)))
    ledger, store = Ledger(tmp_path / "ledger.sqlite"), tmp_path / "store"
    factory_xml = tmp_path / "glideinWMS.xml"
    factory_xml.write_text("<glidein><attrs><attr name='GLIDEIN_Site' value='Global_Site'/></attrs><entries>"
                           "<entry name='TEST_ENTRY'><attrs><attr name='GLIDEIN_Site' value='Factory_Site'/></attrs>"
                           "</entry><entry name='OTHER'/></entries></glidein>")
    conf = settings_for(layout, schedd=SCHEDD, grace=1, factory_config=str(factory_xml), table=str(tmp_path / "table"))
    forwarder = build_forwarder(conf,
                                exporter=JsonLinesStoreExporter(store), ledger=ledger)
    assert forwarder.run_once().glideins_done == 1
    spans = read_store(store)[identity(layout, 300, 0).trace_id]
    (glidein,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    assert glidein["attributes"]["glidein.site"] == expected
    rows = pq.read_table(tmp_path / "table" / "glideins").to_pylist()
    assert [r["site"] for r in rows] == [expected]
