"""``forward --redo ENTRY --since T --until T``: forward again the glideins of an entry that
ended in a time range, once a configuration mistake is fixed (a wrong Factory name or schedd,
a missing glideinWMS.xml). They are made new in the ledger, with their Factory events read
again from their activity logs (the ledger dropped them when the glidein was done), and the
next pass converts them under today's settings. Each keeps the trace id it was sent under,
so the export asks the backend (``--query``, or the store) what it already holds and sends
only the rest: every span once. Under a new trace id (a fixed name) every span is new; what
went under the old one stays there, and so does its row in the glidein table.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from .activity import read_activity_log

log = logging.getLogger("glidein_tracing.forward")


def redo(ledger, entry: str, since: float, until: float) -> int:
    """Make ``entry``'s glideins that ended in [since, until) new again; how many."""
    rows = ledger.finished_between(entry, since, until)
    by_log = defaultdict(list)
    for gkey, cluster, proc, activity_log in rows:
        by_log[activity_log].append((gkey, int(cluster), int(proc)))
    for path, glideins in by_log.items():
        activities = {}
        if path is not None:
            try:
                activities = read_activity_log(path)[0]
            except Exception as exc:  # noqa: BLE001 (a log gone or damaged: as scanning.read_log)
                log.warning("redo: cannot read activity log %s (%s): its glideins are redone from their outputs",
                            path, exc)
        with ledger.transaction():
            for gkey, cluster, proc in glideins:
                ledger.reopen(gkey, activities.get((cluster, proc)))
    return len(rows)
