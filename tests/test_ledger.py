"""The forwarder's ledger keeps each glidein's Factory-side events typed, across restarts."""

from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.journal import Event

EVENTS = [Event(1795318000.25, "start", "glidein", {"@name": "glidein", "@stage": "glidein"}),
          Event(1795318010.5, "attr", "glidein", {"factory.hold_reason": "Error\tconnecting",
                                                  "factory.return_value:i": "137"},
                links=["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]),
          Event(1795318020.0, "end", "glidein", {"@status": "ERROR"})]


def test_events_come_back_as_they_went_in_and_in_order(tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    with ledger.transaction():
        ledger.append_events("g", EVENTS[:2])
        ledger.append_events("g", EVENTS[2:])
    ledger.close()
    back = Ledger(tmp_path / "l.sqlite").factory_events("g")      # a restarted forwarder
    assert [(e.time, e.op, e.key, e.fields, e.links) for e in back] == \
        [(e.time, e.op, e.key, e.fields, e.links) for e in EVENTS]
    assert [e.line_no for e in back] == [1, 2, 3]
