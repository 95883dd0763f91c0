"""Run simulated glideins end to end and show their traces (no GlideinWMS, no server).

Users submit jobs that carry their own trace; a Frontend cycle requests glideins for them and
tells each user's trace why its jobs wait (the real job.waiting decision, frontend_hooks/waiting.py,
on the group's state, simulator/frontend_group.py), and a later cycle ends those waits once the
jobs ran; a Factory submits the glideins through a Condor-G stand-in (its
activity log, its returned outputs); each glidein runs in the simulator with the real hooks:
setup scripts, HTCondor phase, user jobs submitted by a jobsub-like user who traces them,
cleanup. Then the real forwarder sends every span, once, to --endpoint (OTLP/HTTP, e.g. a
Jaeger) or to the embedded store (default under your data dir). Outcomes vary: several jobs,
no job until the idle timeout, a failing validation script, a user job whose last phase fails
(with its log tail), a job with its own TRACEPARENT. The forwarder applies the example failure
rules shipped in glidein_tracing/failure_rules/examples/: the failing user job's last phase fails
as a missing CVMFS file does, and a rule classifies it as a `service` failure. Finally it prints
each trace with the failure domains it carries (and the rule that decided), and the tree of one
trace, of the failed job's glidein (its phases and log tail) and of a failed glidein (with the
log tail of its failed script).
"""

from __future__ import annotations

import secrets
import shlex
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core.errors import UserError
from ..exporters.result import DeliveringExporter, Delivery, deliver
from ..core import conventions as c, ids

from ..core.terminal import echo
from ..core.progress import bar, on_terminal

FACTORY = "gwms_demo_factory"
SCHEDD = "schedd_glideins2@factory.demo.example.org"
INSTANCE = "gwms_demo_instance"
ENTRY = "DEMO_ENTRY"
SITE = "DEMO_SITE"
USER_SCHEDD = "fake-submit.example.org"   # the simulated users' schedd (simulator's GlobalJobId)
RULES = Path(__file__).resolve().parents[1] / "failure_rules" / "examples"    # the example failure rules
# the failing user job: its VO wrapper's code for a missing input (rules/demo_vo.yaml), and
# what it prints, as a job reading a file of a stale CVMFS repository does
CVMFS_MISSING_EXIT = 66
CVMFS_MISSING_STDERR = ("ls: cannot access '/cvmfs/demo.example.org/conditions/v42/calib.db': "
                        "No such file or directory\nERROR: input file missing, exiting 66")
# a user job's script (POSIX sh) with phases (docs/user-phases.md): the last one fails, as a
# missing CVMFS file makes it fail
_MERGE = ('echo "merging 3 files"; '
          + "".join(f"echo {shlex.quote(line)} >&2; " for line in CVMFS_MISSING_STDERR.splitlines())
          + f"exit {CVMFS_MISSING_EXIT}")
PHASED_JOB = f'''P="$GLIDEIN_TRACING_PHASE"
echo "reconstructing run 42"
"$P" reco -- sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i + 1)); done; sleep 0.2'
"$P" mark "phase 1 complete"
"$P" merge -- sh -c {shlex.quote(_MERGE)}
'''


def add_arguments(parser):
    parser.add_argument("--glideins", type=int, default=5, help="how many glideins (default 5)")
    parser.add_argument("--store", help="store directory (default: under the user's data dir)")
    parser.add_argument("--endpoint", help="OTLP/HTTP base URL to send to instead of the store")
    parser.add_argument("--jaeger-ui", metavar="URL",
                        help="with --endpoint: Jaeger UI base URL (its query address) to print a trace's link on")
    parser.add_argument("--keep", metavar="DIR", help="keep the simulated Factory and glidein files here")
    parser.add_argument("--parallel", type=int, default=2, help="glideins run at once (default 2)")


def scenarios(count: int, user_contexts, first_cluster: int = 1000):
    """Varied outcomes, in a fixed cycle, so every run shows each of them."""
    from ..simulator import Job, Scenario
    base = dict(factory=FACTORY, name=INSTANCE, entry=ENTRY, schedd=SCHEDD, site=SITE,
                client="vofrontend_service.main", keep_workdir=False)
    out = []
    for index in range(count):
        kind = index % 5
        common = dict(base, cluster=first_cluster + index // 50, proc=index % 50,
                      job_cluster=5000 + index)
        if kind == 0:    # several jobs, one traced by its user (jobsub_lite TRACEPARENT)
            jobs = [Job(duration_s=0.6, burn_cpu_s=0.3, traceparent=user_contexts(index, 0)),
                    Job(duration_s=0.4, idle_before_s=0.3), Job(duration_s=0.5, idle_before_s=0.2)]
            out.append(("several jobs", Scenario(jobs=jobs, **common)))
        elif kind == 1:  # no job came: the idle timeout ends it
            out.append(("no job until GLIDEIN_Max_Idle", Scenario(jobs=[], max_idle_s=1.5, **common)))
        elif kind == 2:  # a validation script fails
            out.append(("validation failure", Scenario(fail_script=("check_wn_drainstate.sh", "WN_Resource"),
                                                       fail_sleep_s=1.5, **common)))
        elif kind == 3:  # a user job with phases fails in its last phase (a missing CVMFS file: a
            # service failure); its log tail is on
            out.append(("user job fails in a phase (CVMFS file missing)", Scenario(
                jobs=[Job(script=PHASED_JOB)], knobs={"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES": "10"}, **common)))
        else:            # a job that brought its own context
            out.append(("job with its own TRACEPARENT",
                        Scenario(jobs=[Job(duration_s=0.5, traceparent=user_contexts(index, 0))], **common)))
    return out


class DemoSpans:
    """The spans of the parties we simulate with the OTel SDK: the Frontend and the users."""

    def __init__(self, exporter):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

        class Shared(SpanExporter):
            """The demo's one exporter, used by several providers: they must not close it."""

            def export(self, spans):
                return exporter.export(spans)

            def shutdown(self):
                pass

        exporter_for_providers = Shared()
        self.providers = []
        self.tracers = {}
        for service in ("gwms-frontend", "jobsub_lite"):
            provider = TracerProvider(resource=Resource({c.SERVICE_NAME: service}))
            provider.add_span_processor(SimpleSpanProcessor(exporter_for_providers))
            self.providers.append(provider)
            self.tracers[service] = provider.get_tracer("glidein_tracing.demo")
        self.user_roots = {}
        self.queued = {}   # a user's traceparent -> the QDate the schedd gave the job
        self.group_history = {}   # the Frontend group's history file, kept between its cycles

    def frontend_cycle(self, number: int, glideins: int, idle_jobs: dict) -> str | None:
        """One Frontend cycle of the group, over the users' jobs idle now (``idle_jobs``:
        schedd -> {(cluster, proc): job}), with a request of ``glideins`` for our entry when
        there are any; returns the request's context. At its end, the real job.waiting
        decision (frontend_hooks/waiting.py) on the group's state (simulator/frontend_group.py)
        tells each user's trace why their jobs wait, and ends the wait of those that started."""
        from frontend_hooks import conventions as fc
        from frontend_hooks import waiting
        from frontend_hooks.instrumentor import traceparent_of

        from ..simulator.frontend_group import FrontendGroup
        tracer = self.tracers["gwms-frontend"]
        request_name = f"{ENTRY}@{INSTANCE}@{FACTORY}"
        facts, context = {}, None
        with tracer.start_as_current_span(fc.CYCLE_SPAN, attributes={
                fc.STAGE: fc.CYCLE_SPAN, fc.FRONTEND_NAME: "vofrontend_service", fc.FRONTEND_GROUP: "main",
                fc.CYCLE_NUMBER: number, fc.CYCLE_ENTRIES: 1 if glideins else 0}) as cycle:
            if glideins:
                requested = {fc.REQ_IDLE_GLIDEINS: glideins, fc.EFFECTIVE_IDLE_MC: glideins * 2,
                             fc.GLIDEINS_TOTAL: 0, fc.IDLE_GLIDEINS: 0}
                with tracer.start_as_current_span(fc.REQUEST_SPAN, attributes={
                        fc.STAGE: fc.REQUEST_SPAN, fc.ENTRY: ENTRY, fc.FACTORY: FACTORY,
                        fc.GLIDEIN_NAME: INSTANCE, fc.IDLE_JOBS: glideins * 2,
                        fc.EFFECTIVE_IDLE: glideins * 2, fc.REQ_MAX_GLIDEINS: glideins * 2,
                        fc.RUNNING_GLIDEINS: 0, **requested}) as request:
                    context = traceparent_of(request)
                facts[request_name] = dict(requested, _span_context=request.get_span_context())
            group = FrontendGroup("vofrontend_service", "main", request_name, SITE, idle_jobs, self.group_history)
            sent = waiting.Reporter(tracer, group, facts, cycle.get_span_context()).run()
            cycle.set_attribute(fc.CYCLE_WAITING_SPANS, sent or 0)
        return context

    def idle_jobs(self, plan) -> dict:
        """The users' jobs of ``plan`` as the Frontend's idle job query returns them (schedd ->
        {(cluster, proc): the attributes job.waiting reads})."""
        jobs = {}
        for _, scenario in plan:
            for proc, job in enumerate(scenario.jobs):
                if job.traceparent in self.queued:
                    qdate = self.queued[job.traceparent]
                    jobs[(scenario.job_cluster, proc)] = {
                        "TraceParent": job.traceparent, "Owner": job.owner, "JobStatus": 1, "RequestCpus": 1,
                        "RequestMemory": 2048, "QDate": qdate, "EnteredCurrentStatus": qdate}
        return {USER_SCHEDD: jobs}

    def user_context(self, index: int, job: int) -> str:
        """A jobsub_lite-like submission of one job: its span's context goes into the job. The
        schedd queues the job during the submission: its QDate (whole seconds) is the second
        the span starts at, so the user's ``job.wait`` begins with ``jobsub_submit``."""
        from frontend_hooks.instrumentor import traceparent_of
        tracer = self.tracers["jobsub_lite"]
        qdate = int(time.time())
        span = tracer.start_span("jobsub_submit", attributes={"jobsub.group": "demo", "job.index": job},
                                 start_time=qdate * 1_000_000_000)
        span.end()
        self.user_roots[(index, job)] = span
        context = traceparent_of(span)
        self.queued[context] = qdate
        return context

    def queue_dates(self, plan) -> None:
        """Give each job the users submitted its QDate (the simulator's default is when the
        glidein starts, seconds later: a gap in the user's trace nothing would explain)."""
        for _, scenario in plan:
            for job in scenario.jobs:
                if job.traceparent in self.queued:
                    job.extra_ad = {**job.extra_ad, "QDate": str(self.queued[job.traceparent])}

    def shutdown(self):
        for provider in self.providers:
            provider.shutdown()


class FailureSummary(DeliveringExporter):
    """Passes the forwarder's spans on to the demo's exporter and remembers, per trace, the
    failure domains they carry (what the demo's summary prints, whatever the backend)."""

    def __init__(self, inner):
        self.inner = inner
        self.failures: dict = {}

    def deliver(self, spans) -> Delivery:
        for span in spans:
            attrs = span.attributes or {}
            for who in ("glidein", "job"):
                domain = attrs.get(f"{who}.failure.domain")
                if domain:
                    evidence = attrs.get(f"{who}.failure.evidence", "")
                    service = attrs.get(f"{who}.failure.service")
                    label = attrs.get(f"{who}.failure.label")
                    self.failures.setdefault(ids.trace_hex(span.context.trace_id), []).append(
                        f"{who} failure: {domain}{' ' + service if service else ''} ({evidence})"
                        + (f": {label}" if label else ""))
        return deliver(self.inner, spans)

    def shutdown(self):
        pass   # the demo shuts its exporter down itself

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def run_one(root: Path, number: int, label: str, scenario, condor_g):
    from ..simulator import simulate_glidein
    c, p = scenario.cluster, scenario.proc
    condor_g.submit(c, p)
    time.sleep(0.2)
    condor_g.grid_submit(c, p)
    time.sleep(0.3 + 0.2 * (number % 3))  # waiting at the site
    condor_g.execute(c, p)
    result = simulate_glidein(root / f"glidein_{number}", scenario)
    condor_g.return_outputs(c, p, result.stdout_path, result.stderr_path)
    condor_g.terminated(c, p, return_value=result.exit_code or 0)
    return label, scenario, result


def run(args):
    from ..exporters.otlp import make_otlp_exporter
    from ..exporters.store import JsonLinesStoreExporter, read_store
    from ..failure_rules.attribution import FailureAttribution
    from ..factory.build import build_forwarder
    from ..factory.delivery import store_span_ids
    from ..factory.settings import ForwarderSettings
    from ..core.ids import GlideinIdentity
    from ..failure_rules.files import RuleBook
    from ..simulator.condor_g import CondorGLog, FactoryLayout
    from ..viewers.tree import render

    if args.glideins < 1:
        raise UserError("--glideins must be at least 1")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="glidein-tracing-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    if args.endpoint:
        exporter, where = make_otlp_exporter(args.endpoint, 10.0), args.endpoint
    else:
        exporter = JsonLinesStoreExporter(args.store)
        where = str(exporter.directory)
    demo = DemoSpans(exporter)
    # each run is a new submission (new cluster ids, so new traces): the store keeps every
    # span once, so a rerun with the same ids would add nothing, and two demos started in the
    # same second (ids from the clock) showed each other's glideins. The users submit, then
    # the Frontend's cycle sees their jobs idle and requests glideins for them.
    plan = scenarios(args.glideins, demo.user_context, first_cluster=100_000 + secrets.randbelow(900_000))
    request = demo.frontend_cycle(1, args.glideins, demo.idle_jobs(plan))
    for _, scenario in plan:
        scenario.params["GLIDEIN_TRACING_REQUEST_TRACEPARENT"] = request
    demo.queue_dates(plan)
    # the Factory logs with DEFAULT_USERLOG_FORMAT_OPTIONS = ISO_DATE UTC SUB_SECOND, so the
    # compressed waits of the demo are visible
    layout = FactoryLayout(logs=root / "factory" / "client_logs", instance=INSTANCE, entry=ENTRY,
                           utc_iso=True)
    condor_g = CondorGLog(layout)
    echo(f"running {len(plan)} simulated glideins in {root} ...", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool, \
            bar(len(plan), desc="demo: glideins run", unit="glidein", enabled=on_terminal()) as shown:
        results = []
        for result in pool.map(lambda item: run_one(root, item[0], *item[1], condor_g), enumerate(plan)):
            results.append(result)
            shown.update(1)
    for label, scenario, result in results:
        echo(f"  glidein {scenario.cluster}.{scenario.proc}: {label} (exit code {result.exit_code})",
              file=sys.stderr)
    demo.frontend_cycle(2, 0, {USER_SCHEDD: {}})   # the users' jobs ran: none idle, their waits end
    summary = FailureSummary(exporter)
    # the Factory's configuration, the one source of its facts: its name, the entry's schedd,
    # site and tracing switch (factory/factory_xml.py)
    factory_xml = root / "factory" / "glideinWMS.xml"
    factory_xml.write_text(f'<glidein factory_name="{FACTORY}" glidein_name="{INSTANCE}" schedd_name="{SCHEDD}">'
                           f'<entries><entry name="{ENTRY}"><attrs><attr name="GLIDEIN_Site" value="{SITE}"/>'
                           '<attr name="GLIDEIN_USE_TRACING" value="1"/></attrs></entry></entries></glidein>\n')
    # spans go through the summary to where the demo sends them; the ledger and the glidein
    # table (glidein-table beside it) in the simulated Factory
    conf = ForwarderSettings(logs=(str(layout.logs),), factory_config=str(factory_xml), grace=0.0,
                             endpoint=args.endpoint,
                             store=None if args.endpoint else where, state=str(root / "factory" / "forwarder.sqlite"))
    forwarder = build_forwarder(conf, exporter=summary, settle_s=0.0, progress=on_terminal(),
                                reconcile=None if args.endpoint else store_span_ids(exporter.directory),
                                failure_attribution=FailureAttribution(RuleBook(RULES, classifiers=False)))
    stats = forwarder.run_once()
    demo.shutdown()
    exporter.shutdown()
    echo(f"forwarder: {stats.summary()}", file=sys.stderr)
    ids = [GlideinIdentity(FACTORY, INSTANCE, ENTRY, SCHEDD, str(s.cluster), str(s.proc)).trace_id
           for _, s, _ in results]
    echo(f"\n{len(ids)} glidein traces sent to {where}:")
    for (label, scenario, _), trace in zip(results, ids):
        failures = summary.failures.get(trace)
        echo(f"  {trace}  {label}" + (f"  -> {'; '.join(failures)}" if failures else ""))
    if args.endpoint:
        if args.jaeger_ui:
            echo(f"\nopen them in Jaeger: {args.jaeger_ui.rstrip('/')}/trace/{ids[0]}")
        else:   # the UI's address is the query's, which the OTLP endpoint does not tell
            echo(f"\nopen them in Jaeger's UI at /trace/{ids[0]} (--jaeger-ui URL prints the link)")
        return 1 if stats.export_failures else 0
    traces = read_store(exporter.directory)
    echo()
    echo(render(traces.get(ids[0], [])))
    phased = next((t for (label, _, _), t in zip(results, ids) if "phase" in label), None)
    if phased:   # a failed job: its phases, the failing one, and the job's own log tail
        echo()
        echo(render(traces.get(phased, [])))
    failed = next((t for t in ids if any("glidein failure" in f for f in summary.failures.get(t, ()))), None)
    if failed:   # a failed glidein: its domain, and the log tail of the stage that failed
        echo()
        echo(render(traces.get(failed, [])))
    echo(f"\nshow any of them: glidein-tracing show TRACE_ID --store {exporter.directory}")
    echo(f"their rows (docs/glidein-table.md): {forwarder.table.directory}/glideins/*/*.parquet")
    echo(f"analyze them (docs/analysis.md): glidein-tracing analyze {forwarder.table.directory}")
    users = sorted({format(span.context.trace_id, "032x") for span in demo.user_roots.values()})
    if users:   # a user's own trace: how their job waited, and what why answers
        echo(f"why a user's job waited (docs/why-waiting.md): glidein-tracing why {users[0]} "
             f"--store {exporter.directory}")
    return 1 if stats.export_failures else 0
