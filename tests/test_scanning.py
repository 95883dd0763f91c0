"""A pass looks only at what is new: settled outputs are not looked at again, and a
directory whose mtime has not moved is not listed; what comes later is still found."""

import os
import time

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import T0, journal_text, returned_stderr, run_glidein, settings_for


def age(path, seconds=3600):
    then = time.time() - seconds
    os.utime(path, (then, then))


def make(tmp_path):
    layout = FactoryLayout(logs=tmp_path / "logs")
    log = CondorGLog(layout)
    for n in range(3):
        run_glidein(log, layout, 400 + n, 0, T0, returned_stderr(journal_text(layout, 400 + n, 0, T0)))
    age(layout.entry_dir)
    return layout


def forwarder_on(layout, ledger, exporter):
    return build_forwarder(settings_for(layout, grace=5), exporter=exporter, ledger=ledger)


class CountingLedger(Ledger):
    """The real ledger, counting the glideins it is asked about one by one."""
    asked = 0

    def knows(self, gkey):
        CountingLedger.asked += 1
        return super().knows(gkey)

    def glidein(self, gkey):
        CountingLedger.asked += 1
        return super().glidein(gkey)


def test_settled_outputs_are_not_looked_at_again_and_new_ones_are_found(tmp_path):
    layout = make(tmp_path)
    ledger = CountingLedger(tmp_path / "ledger.sqlite")
    exporter = InMemorySpanExporter()
    forwarder = forwarder_on(layout, ledger, exporter)
    assert forwarder.run_once().glideins_done == 3
    CountingLedger.asked = 0
    forwarder.run_once()
    assert CountingLedger.asked == 0                       # nothing new: nothing asked
    # a restarted forwarder asks the ledger once for the directory, not once per output
    restarted = forwarder_on(layout, ledger, exporter)
    restarted.run_once()
    assert CountingLedger.asked == 0
    # an output whose activity log rotated away comes in: the directory's mtime moves, it is
    # listed again and only the new name is looked at, then adopted as an orphan
    layout.output(500, 0, "err").write_text(returned_stderr(journal_text(layout, 500, 0, T0)))
    age(layout.output(500, 0, "err"))
    age(layout.entry_dir, 1800)
    stats = restarted.run_once()
    assert restarted.run_once().glideins_done + stats.glideins_done == 1
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == 4


def test_an_activity_log_that_grew_is_read_and_a_new_one_is_found(tmp_path):
    layout = make(tmp_path)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    forwarder = forwarder_on(layout, ledger, InMemorySpanExporter())
    forwarder.run_once()
    log = CondorGLog(layout)
    log.submit(600, 0, when=T0)                           # the same log grows: dir mtime unchanged
    age(layout.entry_dir, 1800)
    assert forwarder.run_once().log_events == 1
    layout.log_nr = "20261123"                            # a new day's log: a new file
    CondorGLog(layout).submit(601, 0, when=T0)
    age(layout.entry_dir, 900)
    assert forwarder.run_once().log_events == 1
    assert forwarder.run_once().log_events == 0
