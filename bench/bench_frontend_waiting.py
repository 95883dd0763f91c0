"""Benchmark: what job.waiting adds to a Frontend group cycle (docs/frontend.md).

A group with 100,000 idle jobs in 5,000 submissions (20 jobs each, one TraceParent each) over
50 entries, its configuration the one GlideinWMS wrote in ../shared/fixtures/gwms-frontend
(the multicore policy's clause in its match expression), run through the element stand-in's real code paths (tests/support/
frontend_standin*.py: the schedd query's result parsed with classad2 from a ``condor_q -l``
file, countMatch with the group's match expression, the per-entry loop), each cycle a fresh
element as in GlideinWMS's process per cycle, its spans through a BatchSpanProcessor whose
exporter encodes them as OTLP protobuf (the OTLP exporter's work without the network).
CPU time of the process (all threads) per cycle, in the same run, alternating:

- off: not instrumented;
- query: not instrumented, but the job query asks job.waiting's attributes too (their cost
  alone: parsing them, here with classad2, as the Frontend's query child does);
- requests: the instrumentor without job.waiting (frontend.cycle / frontend.request only);
- waiting, first: job.waiting on, no history (every submission new: 200 spans, the cap);
- waiting, steady: job.waiting on, the history holding every submission (no reason changed).

Cycle-to-cycle noise on a shared machine is several per cent, more than the effect, so
job.waiting's own work (``Reporter.run``: grouping the jobs, deciding, sending the spans,
the state) is also timed inside each cycle.

The stand-in's cycle does less than GlideinWMS's (one job type matched, not six; no
advertising), so the ratios overstate the share of a real cycle. Also measured: what the
attributes added to the job query cost (bytes of the query's result as the fork child
pickles it to the parent, and that pickling's time).

    python -m bench.bench_frontend_waiting [--submissions 5000 --jobs 20 --entries 50 --repeat 3]
"""

from __future__ import annotations

import argparse
import pickle
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench import quick

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from frontend_hooks import GlideinFrontendInstrumentor, waiting
from tests.support import frontend_standin as standin
from tests.support import frontend_standin_interface as interface
from tests.support import frontend_standin_lib as lib
from tests.support import waiting_world as ww
from tests.support.fixtures import GWMS_FRONTEND


class EncodingExporter(SpanExporter):
    """The OTLP exporter's encoding, without sending."""

    def __init__(self):
        self.spans = 0

    def export(self, spans):
        encode_spans(spans).SerializeToString()
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def build_world(tmp: Path, submissions: int, jobs: int, entries: int, seed: int = 1) -> dict:
    rng = random.Random(seed)
    sites = [f"S{i:02d}" for i in range(entries)]
    kinds = [",".join(rng.sample(sites, 3)) for _ in range(100)]
    with open(tmp / "jobs.ads", "w") as out:
        for sub in range(submissions):
            trace = f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01"
            desired = kinds[sub % len(kinds)]
            memory = 4000 if sub % 7 == 0 else 2000
            for proc in range(jobs):
                out.write(ww.job_ad(1000 + sub, proc, desired, trace, memory=memory) + "\n")
    world_entries, slots = [], []
    for number, site in enumerate(sites):
        extra = {}
        if number % 5 == 0:
            extra["factory_monitor"] = {"StatusIdle": rng.randint(1, 50), "StatusRunning": rng.randint(0, 20)}
        if number % 11 == 0:
            extra["in_downtime"] = True
        world_entries.append(ww.entry(site, **extra))
        for n in range(4):
            slots.append(ww.slot(f"slot{n}@{site}", site, rng.choice([1500, 2500, 8000]),
                                 state="Unclaimed" if n < 2 else "Claimed"))
    return {"entries": world_entries, "schedds": {ww.SCHEDD: str(tmp / "jobs.ads")}, "slots": slots,
            "config": str(GWMS_FRONTEND)}


def one_cycle(work: Path, world: dict, mode: str, fresh_history: bool) -> tuple:
    """(CPU seconds of one cycle, spans exported) in ``mode``: off, requests or waiting."""
    if fresh_history:
        shutil.rmtree(work / "group_main", ignore_errors=True)
    exporter = EncodingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentor = GlideinFrontendInstrumentor()
    original_query = lib.getCondorQ
    if mode == "query":
        def with_attributes(schedd_names, constraint=None, format_list=None, *rest, **kwargs):
            return original_query(schedd_names, constraint,
                                  waiting.add_attributes(format_list, waiting.JOB_ATTRIBUTES), *rest, **kwargs)
        lib.getCondorQ = with_attributes
    if mode not in ("off", "query"):
        instrumentor.instrument(tracer_provider=provider, element_module=standin, interface_module=interface,
                                lib_module=lib, watch_main=False, waiting=(mode == "waiting"))
    try:
        started = time.process_time()
        element = standin.glideinFrontendElement(1, str(work), "main", "run", world=world)
        assert element.main() == 0
        provider.force_flush()
        used = time.process_time() - started
    finally:
        lib.getCondorQ = original_query
        if mode not in ("off", "query"):
            instrumentor.uninstrument()
        provider.shutdown()
    return used, exporter.spans


REPORTER_CPU: list = []   # CPU seconds of each Reporter.run (job.waiting's own work), timed inside


def _timed_run(run):
    def timed(self):
        started = time.process_time()
        try:
            return run(self)
        finally:
            REPORTER_CPU.append(time.process_time() - started)
    return timed


def query_cost(world: dict) -> tuple:
    """(bytes without, bytes with, pickle+unpickle seconds without, with) of the job query's
    result with the group's format list and with job.waiting's attributes added."""
    lib.JOB_AD_FILES.update(world["schedds"])
    base = standin.ElementMergedDescript(world["config"], "main").merged_data["JobMatchAttrs"] + [("x509userproxy", "s")]
    out = []
    for format_list in (base, waiting.add_attributes(base, waiting.JOB_ATTRIBUTES)):
        result = {s: q.fetchStored() for s, q in lib.getCondorQ([ww.SCHEDD], "True", format_list).items()}
        started = time.process_time()
        data = pickle.dumps(result)
        pickle.loads(data)
        out.append((len(data), time.process_time() - started))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=20, help="idle jobs per submission")
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = quick.parse_args(parser, argv, submissions=20, jobs=2, entries=3, repeat=1)
    if not GWMS_FRONTEND.exists():
        parser.error(f"needs the Frontend configuration GlideinWMS wrote: {GWMS_FRONTEND} is absent")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = build_world(tmp, args.submissions, args.jobs, args.entries)
        works = {name: tmp / name for name in ("off", "query", "requests", "first", "steady")}
        for work in works.values():
            work.mkdir()
        # the steady history: every submission already has its period
        limit = waiting.MAX_SUBMISSIONS_PER_CYCLE
        waiting.MAX_SUBMISSIONS_PER_CYCLE = 10 ** 9
        one_cycle(works["steady"], world, "waiting", True)
        waiting.MAX_SUBMISSIONS_PER_CYCLE = limit
        times: dict = {name: [] for name in works}
        waiting.Reporter.run = _timed_run(waiting.Reporter.run)
        reporter: dict = {"first": [], "steady": []}
        spans: dict = {}
        for _ in range(args.repeat):
            for name, mode, fresh in (("off", "off", True), ("query", "query", True),
                                      ("requests", "requests", True),
                                      ("first", "waiting", True), ("steady", "waiting", False)):
                REPORTER_CPU.clear()
                used, spans[name] = one_cycle(works[name], world, mode, fresh)
                times[name].append(used)
                if name in reporter:
                    reporter[name].append(sum(REPORTER_CPU))
        base = statistics.median(times["off"])
        jobs = args.submissions * args.jobs
        print(f"{jobs:,} idle jobs in {args.submissions:,} submissions over {args.entries} entries; "
              f"CPU per cycle, median of {args.repeat}:")
        query = statistics.median(times["query"])
        print("| variant | CPU s/cycle | added vs off | of the cycle | beyond the query's attributes | spans |")
        print("|---|---|---|---|---|---|")
        for name in works:
            med = statistics.median(times[name])
            beyond = f"{(med - query) / base * 100:+.2f} %" if name in ("first", "steady") else ""
            print(f"| {name} | {med:.3f} | {med - base:+.3f} s | {(med - base) / base * 100:+.2f} % | "
                  f"{beyond} | {spans[name]} |")
        for name, values in reporter.items():
            med = statistics.median(values)
            print(f"job.waiting's own work (Reporter.run, timed inside the cycle), {name}: {med:.3f} s "
                  f"= {med / base * 100:.2f} % of the cycle off")
        without, with_, t_without, t_with = query_cost(world)
        print(f"job query result, pickled as the fork child sends it: {without / 1e6:.1f} MB -> "
              f"{with_ / 1e6:.1f} MB (+{(with_ - without) / jobs:.0f} bytes a job); pickle+unpickle "
              f"{t_without:.3f} s -> {t_with:.3f} s")


if __name__ == "__main__":
    main()
