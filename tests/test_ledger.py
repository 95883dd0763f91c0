"""The forwarder's ledger keeps each glidein's Factory-side events typed, across restarts and
from ledgers written when it kept them as journal lines."""

import sqlite3

from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.journal import Event, format_line

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


def test_a_ledger_holding_journal_lines_is_migrated_without_losing_events(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE activity (gkey TEXT, seq INTEGER, line TEXT, PRIMARY KEY (gkey, seq))")
    db.executemany("INSERT INTO activity VALUES (?,?,?)",
                   [("g", i, format_line(e.time, e.op, e.key, e.fields, e.links)) for i, e in enumerate(EVENTS)])
    db.commit()
    db.close()
    ledger = Ledger(path)
    back = ledger.factory_events("g")
    assert [(e.op, e.key, e.links) for e in back] == [(e.op, e.key, e.links) for e in EVENTS]
    # the text format could not hold a tab: the typed rows no longer lose it
    assert back[1].fields == {"factory.hold_reason": "Error connecting", "factory.return_value:i": "137"}
    assert not ledger.db.execute("SELECT 1 FROM sqlite_master WHERE name='activity'").fetchone()
