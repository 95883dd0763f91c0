"""A Factory's client log tree for tests: activity-log events and returned glidein stderr
holding a journal section (what the forwarder reads)."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager

from glidein_tracing.core import ids
from glidein_tracing.core.journal import format_line
from glidein_tracing.core.sections import JOURNAL_SECTION, encode_section

from .journal_builders import record_lines

FACTORY, SCHEDD = "gwms_demo_factory", "schedd_glideins2@factory.example.org"
T0 = 1795318000.0


def identity(layout, cluster, proc):
    return ids.GlideinIdentity(FACTORY, layout.instance, layout.entry, SCHEDD, str(cluster), str(proc))


def journal_text(layout, cluster, proc, start, records=None, extra=(), root_fields=None):
    fields = {"@name": "glidein", "@stage": "glidein",
              "@trace_id": identity(layout, cluster, proc).trace_id,
              "glidein.factory": FACTORY, "glidein.name": layout.instance,
              "glidein.entry": layout.entry, "glidein.schedd": SCHEDD,
              "glidein.cluster:i": str(cluster), "glidein.proc:i": str(proc),
              "res.host.name": "wn.example.org", **(root_fields or {})}
    lines = [format_line(start, "start", "glidein", fields),
             format_line(start, "start", "setup", {"@name": "setup", "@stage": "setup", "r.utime": "0.1"})]
    lines += record_lines(records or [])
    lines += [format_line(start + 20, "end", "setup", {"r.utime": "1.0"}),
              format_line(start + 20, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}),
              format_line(start + 22, "end", "teardown", {}),
              format_line(start + 22, "end", "glidein", {})]
    lines += list(extra)
    return "".join(lines)


def returned_stderr(journal: str, noise="Started glidein\n"):
    return noise + encode_section("GlideinLog", b"glidein log text\n") + \
        encode_section(JOURNAL_SECTION, journal.encode())


def run_glidein(log, layout, cluster, proc, start, stderr_text, outcome="terminated"):
    log.submit(cluster, proc, when=start - 120)
    log.grid_submit(cluster, proc, when=start - 110)
    log.execute(cluster, proc, when=start)
    layout.output(cluster, proc, "out").write_text("<glidein/>\n")
    layout.output(cluster, proc, "err").write_text(stderr_text)
    old = time.time() - 3600
    for kind in ("out", "err"):
        os.utime(layout.output(cluster, proc, kind), (old, old))
    log.terminated(cluster, proc, 0, when=start + 30)




def settings_for(layout, **values):
    """The settings of a forwarder reading ``layout``'s client logs as Factory FACTORY, writing
    no glidein table unless ``table`` is given (``values`` over these)."""
    from glidein_tracing.factory.settings import ForwarderSettings
    return ForwarderSettings(**{"logs": (str(layout.logs),), "factory": FACTORY, "table": "none", **values})


def forwarder_arguments(layout, kwargs: dict, **values) -> tuple:
    """(settings, the other keyword arguments of build_forwarder): ``kwargs`` split between the
    settings (over ``values``) and what is not one (reconcile, failure_attribution, ...)."""
    from glidein_tracing.factory.settings import SETTINGS
    values.update({k: v for k, v in kwargs.items() if k in SETTINGS})
    return settings_for(layout, **values), {k: v for k, v in kwargs.items() if k not in SETTINGS}


_HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO counters(name, value) VALUES ('held', 1)")
print("holding", flush=True)
time.sleep(120)
"""


@contextmanager
def ledger_held_by_another_process(ledger):
    """A process (no forwarder) holding the ledger's write lock, as a copy or a query of it
    would; yields it (the messages name its pid) and kills it on leaving."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(ledger)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        yield holder
    finally:
        holder.kill()
        holder.wait()
