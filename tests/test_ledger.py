"""The forwarder's ledger keeps each glidein's Factory-side events typed, across restarts."""

import sqlite3

import pytest

from glidein_tracing.factory.ledger import Ledger, LedgerError
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


def test_a_ledger_of_another_layout_is_refused_with_the_policy_not_a_traceback(tmp_path):
    """Nothing converts a ledger an earlier development version wrote (docs/support-policy.md):
    one lacking a table is refused with a message, untouched, before anything reads it."""
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE table_pending")
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=r"earlier development version \(no table_pending table\).*"
                                          r"docs/support-policy.md"):
        Ledger(path)
    assert path.read_bytes() == before
