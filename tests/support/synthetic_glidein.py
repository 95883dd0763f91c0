"""A synthetic glidein, written as the node hooks write its journal (docs/journal.md), for
end-to-end tests: root, setup with GlideinWMS per-script records, condor with jobs (one
linked to its user's trace), teardown. Span ids come from glidein_tracing.core.ids.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from glidein_tracing.core import ids
from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.otlp import make_otlp_exporter
from glidein_tracing.core.journal import format_line, parse_lines
from opentelemetry.sdk.trace.export import SpanExportResult

SERVICE = "glidein-e2e"
USER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
USER_SPAN = "00f067aa0ba902b7"
USER_TRACEPARENT = f"00-{USER_TRACE}-{USER_SPAN}-01"


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="seconds")


class Glidein:
    """A synthetic glidein journal, written line by line as the node hooks would."""

    def __init__(self, name: str, t0: float, *, cluster: int = 4711, proc: int = 0):
        self.identity = ids.GlideinIdentity(
            factory="gfactory_e2e", name=name, entry="TEST_ENTRY_E2E",
            schedd="schedd_glideins2@factory.example.org", cluster=str(cluster),
            proc=str(proc))
        self.trace_id = self.identity.trace_id
        self.t0 = t0
        self.lines: list[str] = []

    def sid(self, key: str) -> str:
        return ids.span_id(self.trace_id, key)

    def add(self, dt: float, op: str, key: str, fields=None, links=()):
        self.lines.append(format_line(self.t0 + dt, op, key, fields or {}, links))

    def record(self, start: float, end: float, rid: str, status: str = "OK", *,
               failure: str = "", detail: str = "", metrics=None):
        fields = {"@tstart": iso(self.t0 + start), "@tend": iso(self.t0 + end),
                  "@status": status}
        if failure:
            fields["@failure"] = failure
        if detail:
            fields["@detail"] = detail
        fields.update({f"m.{k}": v for k, v in (metrics or {}).items()})
        self.add(end, "record", rid, fields)

    def start_root(self):
        self.add(0, "start", "glidein", {
            "@name": "glidein", "@stage": "glidein", "@trace_id": self.trace_id,
            "glidein.factory": self.identity.factory, "glidein.name": self.identity.name,
            "glidein.entry": self.identity.entry, "glidein.schedd": self.identity.schedd,
            "glidein.cluster:i": self.identity.cluster, "glidein.proc:i": self.identity.proc,
            "glidein.multi_index:i": "0", "glidein.client": "vo_frontend_e2e",
            "glidein.client_group": "main", "glidein.uuid": "7c0f1a52-e2e0-4d3e-9f00-0000000000e2",
            "res.service.name": SERVICE, "res.host.name": "wn042.site.example.org",
            "res.host.arch": "amd64", "res.host.cpu.logical_count:i": "8",
            "res.os.type": "linux",
            "r.utime": "0.10", "r.stime": "0.02", "r.rss": "4000000",
            "r.disk_free": "90000000000", "r.load1": "0.50"})

    def setup_ok(self, end: float = 60.0):
        self.add(1, "start", "setup", {"@name": "setup", "@stage": "setup", "r.utime": "0.2",
                                       "r.stime": "0.05", "r.rss": "5000000"})
        self.record(2, 5, "main/check_proxy.sh", metrics={"proxy_lifetime": "86000"})
        self.record(5, 20, "entry/check_cvmfs.sh", metrics={"cvmfs_repos": "4"})
        self.record(20, 40, "client/vo_setup.sh")
        self.record(40, 55, "client_group/gpu_probe.sh", metrics={"gpus": "0"})
        self.add(end - 1, "attr", "glidein", {"glidein.site": "TEST_SITE_E2E"})
        self.add(end, "end", "setup", {"@status": "OK", "r.utime": "3.5", "r.stime": "0.9",
                                       "r.rss": "60000000", "r.disk_free": "89000000000",
                                       "r.load1": "1.25"})

    def condor_with_jobs(self, start: float = 60.0, end: float = 1800.0, *, jobs=None):
        self.add(start, "start", "condor", {"@name": "condor", "@stage": "condor.start"})
        jobs = jobs if jobs is not None else [(120.0, 700.0, "1001.0", (USER_TRACEPARENT,)),
                                              (760.0, 1500.0, "1002.0", ())]
        for j_start, j_end, job_id, links in jobs:
            key = f"job/submit.example.org#{job_id}#1795300000"
            cluster, proc = job_id.split(".")
            fields = {"@name": "job", "@stage": "job", "@parent": "condor",
                      "job.global_id": key[4:], "job.cluster_id:i": cluster,
                      "job.proc_id:i": proc, "job.owner": "alice", "job.slot": "slot1_1",
                      "job.request_cpus:i": "1"}
            if links:
                fields["job.user_traceparent"] = links[0]
            self.add(j_start, "start", key, fields, links)
            self.add(j_end, "end", key, {"@status": "OK", "job.exit_code:i": "0",
                                         "job.exit_by": "exit", "r.utime": "500.5",
                                         "r.stime": "10.25"})
        self.add(end, "end", "condor", {"@status": "OK", "condor.exit_code:i": "99",
                                        "glidein.shutdown.reason": "max_idle"})
        self.record(start, end, "condor_startup.sh")

    def teardown(self, start: float, end: float, outcome: str = "ok", exit_code: int = 0):
        self.add(start, "start", "teardown", {"@name": "teardown", "@stage": "teardown"})
        self.add(end, "end", "teardown", {"glidein.exit_code:i": str(exit_code),
                                          "glidein.outcome": outcome})
        self.add(end, "end", "glidein", {"r.utime": "4.0", "r.stime": "1.0"})

    def events(self, upto: int | None = None):
        data = "".join(self.lines[:upto] if upto is not None else self.lines).encode()
        events, report = parse_lines(data)
        assert report.skipped_total == 0, report.summary()
        return events

    def spans(self, upto: int | None = None):
        return convert(self.events(upto))


def in_trace(spans, trace_id: str) -> list:
    """The spans of one trace (convert() also makes a span in each linked user's trace)."""
    return [s for s in spans if format(s.context.trace_id, "032x") == trace_id]


def export(jaeger, spans):
    """Send spans to a running harness Jaeger with the project's OTLP/HTTP exporter."""
    exporter = make_otlp_exporter(jaeger.otlp_endpoint, 10.0)
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def hexid(span) -> str:
    return format(span.context.span_id, "016x")


def parent_hexid(span):
    return format(span.parent.span_id, "016x") if span.parent else None


def unique_name(tag: str) -> str:
    return f"glidein_e2e_{tag}_{time.time_ns()}"


def full_glidein(tag: str, t0: float | None = None) -> Glidein:
    g = Glidein(unique_name(tag), t0 if t0 is not None else time.time() - 7200)
    g.start_root()
    g.setup_ok()
    g.condor_with_jobs()
    g.teardown(1800.0, 1815.5)
    return g
