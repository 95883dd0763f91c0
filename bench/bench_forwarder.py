"""Benchmark: forwarder throughput (spans/s per core) against the naive SDK path, same run.

Ours: `Forwarder.run_once()` over a Factory log tree of returned glidein outputs and an
activity log (journal sections -> converter -> the SDK's OTLP/HTTP exporter, ledger updates).
Naive: the same spans created with an SDK tracer and exported by a BatchSpanProcessor with
its defaults (queue 2048, batch 512) to the same OTLP/HTTP exporter, as fast as they come.

Both send to one loopback OTLP/HTTP sink running in its own process, which counts the spans
it receives: "dropped" is what was produced and never arrived. CPU time is this process's
(the sink's is not counted), so spans per CPU second is spans per second per core.

    python -m bench.bench_forwarder [--glideins 400] [--jobs 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.core.converter import convert  # noqa: E402
from glidein_tracing.factory.build import build_forwarder  # noqa: E402
from glidein_tracing.factory.settings import ForwarderSettings  # noqa: E402
from glidein_tracing.core.journal import format_line, parse_lines  # noqa: E402
from glidein_tracing.core.sections import JOURNAL_SECTION, encode_section  # noqa: E402
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout  # noqa: E402

from bench.calibration import calibrate  # noqa: E402
from bench import quick  # noqa: E402

FACTORY, SCHEDD = "bench_factory", "schedd@bench"


def forwarder_settings(layout, endpoint: str, work: Path, table: str = "none") -> ForwarderSettings:
    """The benchmarked forwarder's settings: the default batches, a short grace, spans to
    ``endpoint``, its ledger in ``work``."""
    return ForwarderSettings(logs=(str(layout.logs),), factory=FACTORY, grace=1, batch_spans=2000, endpoint=endpoint,
                             timeout=30, state=str(work / "ledger.sqlite"), table=table)
SCRIPTS = ["main/setup_script.sh", "main/cat_consts.sh", "main/condor_platform_select.sh",
           "main/singularity_wrapper.sh", "main/collector_setup.sh", "main/setup_x509.sh",
           "main/gconditional_TRACING_setup.sh", "entry/cat_consts.sh", "main/cvmfs_setup.sh",
           "main/singularity_setup.sh", "main/check_proxy.sh", "main/validate_node.sh",
           "main/setup_network.sh", "main/glidein_memory_setup.sh", "main/glidein_cpus_setup.sh",
           "main/smart_partitionable.sh"]


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))


def glidein_journal(layout, cluster, proc, start, jobs):
    lines = [format_line(start, "start", "glidein", {
        "@name": "glidein", "@stage": "glidein", "glidein.factory": FACTORY,
        "glidein.name": layout.instance, "glidein.entry": layout.entry, "glidein.schedd": SCHEDD,
        "glidein.cluster:i": cluster, "glidein.proc:i": proc, "res.host.name": f"wn{proc}.example.org"}),
        format_line(start, "start", "setup", {"@name": "setup", "@stage": "setup", "r.utime": "0.1"})]
    t = start
    for script in SCRIPTS:
        lines.append(format_line(t + 1, "record", script, {"@tstart": iso(t), "@tend": iso(t + 1),
                                                          "@status": "OK", "m.NrAttributes": "6"}))
        t += 1
    lines.append(format_line(t, "end", "setup", {"r.utime": "2.0"}))
    lines.append(format_line(t, "start", "condor", {"@name": "condor", "@stage": "condor.start"}))
    for j in range(jobs):
        key = f"job/submit.example.org#{cluster + 1000}.{j}#1"
        lines.append(format_line(t + 5, "start", key, {"@name": "job", "@stage": "job", "@parent": "condor",
                                                       "job.owner": "user", "job.cluster_id:i": cluster}))
        lines.append(format_line(t + 65, "end", key, {"@status": "OK", "job.exit_code:i": 0,
                                                      "r.utime": "55.0", "r.stime": "1.0"}))
        lines.append(format_line(t + 65, "sample", "-", {"r.utime": str(60 * (j + 1)), "r.rss": "200000000"}))
        t += 70
    lines.append(format_line(t + 100, "end", "condor", {}))
    lines.append(format_line(t + 100, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}))
    lines.append(format_line(t + 101, "end", "teardown", {}))
    lines.append(format_line(t + 101, "end", "glidein", {}))
    return "".join(lines)


def returned_glidein(log: CondorGLog, layout: FactoryLayout, cluster: int, proc: int, start: float, jobs: int):
    """A glidein submitted 200 s before ``start``, running from then, whose output came back:
    its activity-log events up to execute, its stderr with the journal, an empty stdout."""
    log.submit(cluster, proc, when=start - 200)
    log.grid_submit(cluster, proc, when=start - 190)
    log.execute(cluster, proc, when=start)
    stderr = "glidein stderr\n" + encode_section(
        JOURNAL_SECTION, glidein_journal(layout, cluster, proc, start, jobs).encode())
    layout.output(cluster, proc, "err").write_text(stderr)
    layout.output(cluster, proc, "out").write_text("")


def build_tree(root: Path, glideins: int, jobs: int, entry: str = "BENCH_ENTRY") -> FactoryLayout:
    layout = FactoryLayout(logs=root / "logs", instance="bench", entry=entry)
    log = CondorGLog(layout)
    start = time.time() - 86400
    for proc in range(glideins):
        cluster = 100 + proc // 50
        returned_glidein(log, layout, cluster, proc, start, jobs)
        log.terminated(cluster, proc, 0, when=start + 2000)
    old = time.time() - 3600
    for path in layout.entry_dir.glob("job.*"):
        os.utime(path, (old, old))
    return layout


class Sink(BaseHTTPRequestHandler):
    counter = None

    def do_POST(self):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        n = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        with Sink.counter.get_lock():
            Sink.counter.value += n
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def run_sink(counter, port_value, ready):
    Sink.counter = counter
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    port_value.value = server.server_port
    ready.set()
    server.serve_forever()


def start_sink():
    """(its span counter, its endpoint, its process): the counting sink in a process of its own."""
    counter = multiprocessing.Value("q", 0)
    port = multiprocessing.Value("i", 0)
    ready = multiprocessing.Event()
    sink = multiprocessing.Process(target=run_sink, args=(counter, port, ready), daemon=True)
    sink.start()
    ready.wait(10)
    return counter, f"http://127.0.0.1:{port.value}", sink


def measure(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def wait_for(counter, expected, seconds=20.0):
    deadline = time.monotonic() + seconds
    while counter.value < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    return counter.value


def naive_spans(layout):
    """The same span content as the forwarder makes, per glidein (journal sections only)."""
    from glidein_tracing.core.sections import journal_sections
    for path in sorted(layout.entry_dir.glob("job.*.err")):
        for section in journal_sections(path.read_text()):
            events, _ = parse_lines(section.data)
            yield convert(events)


def naive_send(groups, endpoint):
    """Every span through an SDK tracer + BatchSpanProcessor with its defaults."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import set_span_in_context

    provider = TracerProvider(resource=Resource({"service.name": "glidein"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
    tracer = provider.get_tracer("naive")
    produced = 0
    for spans in groups:
        by_id = {}
        for span in spans:
            parent = by_id.get(span.parent.span_id) if span.parent else None
            ctx = set_span_in_context(parent) if parent is not None else None
            live = tracer.start_span(span.name, context=ctx, attributes=span.attributes,
                                     links=span.links, start_time=span.start_time)
            live.set_status(span.status)
            live.end(end_time=span.end_time)
            by_id[span.context.span_id] = live
            produced += 1
    provider.shutdown()
    return produced


def one_round(work: Path, glideins: int, jobs: int, counter, endpoint: str) -> dict:
    """Each path once over a fresh Factory tree: {path: (spans, wall, cpu, received)}."""
    layout = build_tree(work, glideins, jobs)
    forwarder = build_forwarder(forwarder_settings(layout, endpoint, work))
    counter.value = 0
    stats, wall, cpu = measure(forwarder.run_once)
    out = {"forwarder": (stats.spans_sent, wall, cpu, wait_for(counter, stats.spans_sent))}
    counter.value = 0
    produced, wall, cpu = measure(lambda: naive_send(naive_spans(layout), endpoint))
    out["naive SDK"] = (produced, wall, cpu, wait_for(counter, produced))
    # the naive path again with the backlog already in memory (only the SDK part timed):
    # production outruns the exporter, and the BatchSpanProcessor's queue (2048) drops
    backlog = list(naive_spans(layout))
    counter.value = 0
    produced, wall, cpu = measure(lambda: naive_send(backlog, endpoint))
    out["naive SDK, backlog in memory"] = (produced, wall, cpu, wait_for(counter, produced))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3,
                        help="repeat every path; the best round (least CPU) is the figure, as timeit "
                             "does: on a shared VM the others measure the neighbours")
    args = quick.parse_args(parser, glideins=10, jobs=2, rounds=1)
    counter, endpoint, sink = start_sink()
    rounds = []
    calibration_before = calibrate()
    try:
        for index in range(args.rounds):
            work = Path(tempfile.mkdtemp(prefix="gt-bench-fwd-"))
            try:
                rounds.append(one_round(work, args.glideins, args.jobs, counter, endpoint))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        sink.terminate()
    print(f"glideins: {args.glideins}, jobs each: {args.jobs}, cores: {os.cpu_count()}, rounds: {args.rounds}")
    print(f"machine speed (bench/calibration.py, lower is faster): {calibration_before:.0f} ms before, "
          f"{calibrate():.0f} ms after")
    best = {}
    for path in rounds[0]:
        runs = sorted((r[path] for r in rounds), key=lambda run: run[2])
        spans, wall, cpu, received = best[path] = runs[0]
        rates = sorted(run[0] / run[2] for run in runs)
        print(f"{path:29s}: {spans} spans, {wall:.2f} s wall, {cpu:.2f} s CPU, "
              f"{spans / cpu:,.0f} spans/s per core (median of rounds {rates[len(rates) // 2]:,.0f}), "
              f"received {received}, dropped {spans - received} "
              f"(most dropped in a round: {max(run[0] - run[3] for run in runs)})")
    ours, naive = best["forwarder"], best["naive SDK"]
    ours_rate = ours[0] / ours[2]
    print(f"ratio (forwarder / naive spans per CPU second): {ours_rate / (naive[0] / naive[2]):.2f}")
    lossless = all(r["forwarder"][0] == r["forwarder"][3] for r in rounds)
    # issue 45's target (issue 12 had asked for 2x)
    print(f"target at least 1.4x the naive SDK path with zero drops: "
          f"{'met' if ours_rate >= 1.4 * naive[0] / naive[2] and lossless else 'NOT met'}")


if __name__ == "__main__":
    main()
