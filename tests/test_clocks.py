"""A worker node's clock may be off by seconds to an hour (a VM without NTP, a site's drift):
its journal is still the glidein's. The Factory reconciles such a node (its stages moved after
the execute event, the root saying by how much) and leaves out only lines no skew explains
(core/converter/clocks.py; the forged ones: tests/test_hostile_job.py)."""

from __future__ import annotations

import pytest

from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein, settings_for


def _forward_skewed(tmp_path, skew: float):
    """A glidein of 30 s (execute to terminate) whose node clock reads ``skew`` seconds off."""
    layout = FactoryLayout(logs=tmp_path / "logs")
    layout.entry_dir.mkdir(parents=True)
    run_glidein(CondorGLog(layout), layout, 7, 0, T0, returned_stderr(journal_text(layout, 7, 0, T0 + 2 + skew)))
    store = tmp_path / "store"
    stats = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD), exporter=JsonLinesStoreExporter(store),
                            ledger=Ledger(tmp_path / "ledger.sqlite")).run_once()
    spans = read_store(store)[identity(layout, 7, 0).trace_id]
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    return stats, spans, root["attributes"]


@pytest.mark.parametrize("skew", [-3600.0, -1800.0, -45.0])
def test_a_node_clock_behind_by_up_to_an_hour_is_reconciled_not_dropped(tmp_path, skew):
    stats, spans, root = _forward_skewed(tmp_path, skew)
    assert stats.glideins_done == 1 and "lines_outside_life" not in stats.problems
    assert "glidein_tracing.input.outside_life" not in root
    assert {"setup", "teardown"} <= {s["attributes"]["glidein.stage"] for s in spans}
    assert root["glidein.clock.shift_s"] == pytest.approx(-skew - 2)   # after the execute event, as measured
    (setup,) = [s for s in spans if s["attributes"]["glidein.stage"] == "setup"]
    assert setup["start_ns"] >= T0 * 1e9


@pytest.mark.parametrize("skew", [3600.0, 1800.0])
def test_a_node_clock_ahead_by_up_to_an_hour_keeps_its_journal(tmp_path, skew):
    stats, spans, root = _forward_skewed(tmp_path, skew)
    assert stats.glideins_done == 1 and "lines_outside_life" not in stats.problems
    assert "glidein_tracing.input.outside_life" not in root
    assert {"setup", "teardown"} <= {s["attributes"]["glidein.stage"] for s in spans}
    assert "glidein.clock.shift_s" not in root                       # it started after the execute event


def test_a_node_clock_a_day_off_is_no_skew_its_lines_are_left_out(tmp_path):
    stats, spans, root = _forward_skewed(tmp_path, -86400.0)
    assert stats.problems["lines_outside_life"] == root["glidein_tracing.input.outside_life"] > 0
    assert not [s for s in spans if s["attributes"]["glidein.stage"] == "setup"]
