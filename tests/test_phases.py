"""A user job's phases and a failed job's log tail (issue 23), with real jobs run through the
real wrapper and job-exit hook (the simulator): the phase command under bash and dash, nested
and failing phases, marks, the user's own OpenTelemetry program inside a phase, the spans in
the glidein's and the user's trace, live export taking phases with their job."""

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from glidein_tracing.node import live
from glidein_tracing.core.converter import convert
from glidein_tracing.core.journal import format_line, parse_lines, read_journal
from glidein_tracing.simulator import Job, Scenario, simulate_glidein

from tests.support.hook_support import HOOKS
from tests.support.journal_builders import root_lines
from tests.support.otlp_receiver import CountingCollector, counting_collector
from tests.support.span_nesting import outside_parent
from tests.support.waiting import HANG_S, wait_until

PHASE = str(HOOKS / "gconditional_TRACING_phase.sh")
USER_TRACE = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
USER_SPAN = "bbbbbbbbbbbbbbbb"
USER_TP = f"00-{USER_TRACE}-{USER_SPAN}-01"
DASH = shutil.which("dash")

# the user's own OpenTelemetry program: one span under the TRACEPARENT it was given
USER_OTEL = r'''
import os, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1] + "/v1/traces")))
ctx = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
with provider.get_tracer("user").start_as_current_span("fit", context=ctx):
    pass
provider.shutdown()
'''

# a job script (POSIX sh): nested phases, marks, a failing phase, then a failing exit
PHASES_JOB = '''P="$GLIDEIN_TRACING_PHASE"
"$P" mark "job started"
"$P" reco -- sh -c '"$GLIDEIN_TRACING_PHASE" unpack -- sleep 0.1; "$GLIDEIN_TRACING_PHASE" mark "phase 1 complete"'
{extra}
"$P" merge -- sh -c 'echo merging; echo "merge: error, password=hunter2" >&2; exit 4'
echo "merge said $?"
exit {code}
'''

# a job that never calls the phase command; its stdout has an encoded block (as a job that
# prints a file base64-encoded): its log tail shows one line for it
PLAIN_JOB = '''echo "begin-base64 644 result.tgz"
i=0; while [ $i -lt 20 ]; do echo "{line}"; i=$((i + 1)); done
echo "===="
echo "no phases"; exit 5
'''.replace("{line}", "QUJD" * 19)


def _phase_spans(spans, trace=None):
    return [s for s in spans if s.attributes.get("glidein.stage") == "job.phase"
            and (trace is None or format(s.context.trace_id, "032x") == trace)]


def _events(span, name):
    return [dict(e.attributes) for e in span.events if e.name == name]


@pytest.fixture(scope="module")
def phased_glidein(tmp_path_factory):
    """One glidein, three jobs: bash with the user's context, its own OTel program and a log
    tail; dash without a context; one that never calls the phase command."""
    if DASH is None:
        pytest.skip("dash is not installed")
    root = tmp_path_factory.mktemp("phases")
    with counting_collector() as url:
        user_otel = root / "user_otel.py"
        user_otel.write_text(USER_OTEL)
        fit = f'"$P" fit -- {sys.executable} {user_otel} {url}'
        jobs = [Job(script=PHASES_JOB.format(extra=fit, code=3), shell="/bin/bash", traceparent=USER_TP),
                Job(script=PHASES_JOB.format(extra="", code=0), shell=DASH),
                Job(script=PLAIN_JOB, shell=DASH)]
        result = simulate_glidein(root, Scenario(jobs=jobs, knobs={"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES": "5"}))
        received = dict(CountingCollector.arrived)
    events, report = read_journal(result.journal_path)
    spans = convert(events, report)
    return result, events, spans, received


def _jobs(spans):
    jobs = sorted((s for s in spans if s.attributes.get("glidein.stage") == "job" and s.name == "job"),
                  key=lambda s: s.start_time)
    assert len(jobs) == 3
    return jobs


def test_phases_nest_under_the_job_span_in_bash_and_dash(phased_glidein):
    result, _events_, spans, _ = phased_glidein
    glidein_trace = format(spans[0].context.trace_id, "032x")
    by_id = {(s.context.trace_id, s.context.span_id): s for s in spans}
    for job in _jobs(spans)[:2]:
        mine = [s for s in _phase_spans(spans, glidein_trace)
                if s.attributes["glidein.job_span_id"] == format(job.context.span_id, "016x")]
        names = {s.name: s for s in mine}
        assert set(names) >= {"reco", "unpack", "merge"}
        assert names["reco"].parent.span_id == job.context.span_id
        assert names["merge"].parent.span_id == job.context.span_id
        assert names["unpack"].parent.span_id == names["reco"].context.span_id
        assert by_id[(names["unpack"].context.trace_id, names["unpack"].parent.span_id)] is names["reco"]
        assert names["reco"].status.is_ok and names["unpack"].status.is_ok
        assert _events(names["reco"], "job.phase.mark") == [{"message": "phase 1 complete"}]
        assert _events(job, "job.phase.mark") == [{"message": "job started"}]
        # it sleeps 0.1 s; it may end 1 us sooner when reco, which it ends with, meets merge
        assert names["unpack"].end_time - names["unpack"].start_time >= 0.1e9 - 1000
        assert "glidein.resource.cpu_user_s" in names["reco"].attributes
    assert outside_parent(spans) == []


def test_a_failing_phase_is_an_error_and_its_exit_code_reaches_the_job(phased_glidein):
    result, _events_, spans, _ = phased_glidein
    for index, job in enumerate(_jobs(spans)[:2]):
        merge = [s for s in _phase_spans(spans) if s.name == "merge"
                 and s.attributes["glidein.job_span_id"] == format(job.context.span_id, "016x")]
        assert merge and all(not s.status.is_ok for s in merge)
        assert all(s.attributes["job.phase.exit_code"] == 4 for s in merge)
        # the command ran unchanged: its output and exit code are the job's own
        out = (result.work_dir / "execute").glob(f"dir_*_{index + 1}/_condor_stdout")
        assert "merging\nmerge said 4" in next(out).read_text()


def test_phases_appear_in_the_users_trace_with_the_ids_the_command_gave(phased_glidein):
    _result, _events_, spans, received = phased_glidein
    user = _phase_spans(spans, USER_TRACE)
    names = {s.name: s for s in user}
    assert set(names) == {"reco", "unpack", "merge", "fit"}
    (on_glidein,) = [s for s in spans if s.name == "job on glidein"]
    assert names["reco"].parent.span_id == on_glidein.context.span_id and not names["reco"].parent.is_remote
    assert on_glidein.parent.span_id == int(USER_SPAN, 16)
    assert names["unpack"].parent.span_id == names["reco"].context.span_id
    # the user's own OTel program, run inside the phase "fit", exported under the phase's id
    theirs = [span for (trace, _sid), (_t, span) in received.items() if trace == USER_TRACE]
    assert [s.name for s in theirs] == ["fit"]
    assert theirs[0].parent_span_id.hex() == format(names["fit"].context.span_id, "016x")
    # one tree in the user's trace: every span's parent is in it, or is the user's own span
    ids_in_trace = {format(s.context.span_id, "016x") for s in spans
                    if format(s.context.trace_id, "032x") == USER_TRACE}
    ids_in_trace |= {s.span_id.hex() for s in theirs}
    parents = {format(s.parent.span_id, "016x") for s in spans
               if format(s.context.trace_id, "032x") == USER_TRACE}
    parents |= {s.parent_span_id.hex() for s in theirs}
    assert parents <= ids_in_trace | {USER_SPAN}


def test_a_job_without_a_context_has_its_phases_once_in_the_glidein_trace(phased_glidein):
    _result, _events_, spans, _ = phased_glidein
    job = _jobs(spans)[1]
    mine = [s for s in _phase_spans(spans)
            if s.attributes["glidein.job_span_id"] == format(job.context.span_id, "016x")]
    assert sorted(s.name for s in mine) == ["merge", "reco", "unpack"]
    assert len({(s.context.trace_id, s.context.span_id) for s in spans}) == len(spans)


def test_failed_jobs_carry_their_log_tail_redacted_on_both_spans(phased_glidein):
    _result, _events_, spans, _ = phased_glidein
    bash_job, dash_job, plain_job = _jobs(spans)
    tails = {t["log.source"]: t["log.lines"] for t in _events(bash_job, "job.log_tail")}
    assert tails["_condor_stdout"].endswith("merging\nmerge said 4")
    assert "password=REDACTED" in tails["_condor_stderr"] and "hunter2" not in tails["_condor_stderr"]
    user_view = next(s for s in spans if s.name == "job on glidein")
    assert _events(user_view, "job.log_tail") == _events(bash_job, "job.log_tail")
    assert _events(dash_job, "job.log_tail") == []          # it exited 0
    plain = {t["log.source"]: t for t in _events(plain_job, "job.log_tail")}
    assert plain["_condor_stdout"]["log.lines"] == \
        "[glidein_tracing: 22 lines of encoded data left out]\nno phases"
    assert plain["_condor_stderr"]["log.note"] == "empty"


def test_a_job_that_never_calls_the_command_costs_nothing(phased_glidein):
    _result, events, spans, _ = phased_glidein
    plain = _jobs(spans)[2]
    assert "job.phases" not in plain.attributes
    key = next(e.key for e in events if e.op == "start" and e.key.startswith("job/")
               and e.time * 1e9 >= plain.start_time - 1e6)
    assert not [e for e in events if e.key.endswith(key) and e.key.startswith("phase/")]


def test_the_log_tail_is_off_by_default(tmp_path):
    result = simulate_glidein(tmp_path, Scenario(jobs=[Job(script="echo secret-ish output; exit 2\n")]))
    events, report = read_journal(result.journal_path)
    job = next(s for s in convert(events, report) if s.name == "job")
    assert not job.status.is_ok and _events(job, "job.log_tail") == []


def test_live_export_sends_phases_with_their_job(phased_glidein):
    _result, events, spans, _ = phased_glidein
    sent = live.ended_stages(spans, events)
    sent_phases = [s for s in sent if s.attributes.get("glidein.stage") == "job.phase"]
    assert len(sent_phases) == len(_phase_spans(spans)) > 0


# -- the command itself, as a job's shell meets it ---------------------------------------

@pytest.fixture(params=["bash", "dash"])
def shell(request):
    path = shutil.which(request.param)
    if path is None:
        pytest.skip(f"{request.param} is not installed")
    return path


@pytest.fixture
def job_copy(tmp_path):
    """The phase command as the wrapper leaves it in a job's scratch dir."""
    d = tmp_path / ".glidein_tracing" / "Zq3xT0pL8vKa"
    d.mkdir(parents=True)
    shutil.copy(PHASE, d / "phase")
    (d / "phase").chmod(0o755)
    return d / "phase"


def _run(shell, job_copy, script, **kw):
    env = {"PATH": os.environ["PATH"], "TRACEPARENT": USER_TP, "GLIDEIN_TRACING_PHASE": str(job_copy)}
    return subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=30, **kw)


def test_the_command_passes_stdin_stdout_stderr_and_exit_code(shell, job_copy):
    done = _run(shell, job_copy, '"$GLIDEIN_TRACING_PHASE" copy -- sh -c "cat; echo err >&2; exit 7"',
                input="from stdin\n")
    assert (done.returncode, done.stdout, done.stderr) == (7, "from stdin\n", "err\n")
    lines = (job_copy.parent / "phases.gtp").read_text().splitlines()
    assert [line.split("\t")[1] for line in lines] == ["start", "end"]
    assert lines[1].split("\t")[5] == "7"


def test_a_signal_to_the_command_reaches_the_phase_and_kills_it_alike(shell, job_copy):
    env = {"PATH": os.environ["PATH"], "TRACEPARENT": USER_TP}
    proc = subprocess.Popen([shell, str(job_copy), "wait", "--", "sleep", "30"], env=env)
    # the command runs (its traps are set before it starts)
    assert wait_until(lambda: subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "sleep"],
                                             capture_output=True).returncode == 0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=HANG_S) == -signal.SIGTERM
    end = (job_copy.parent / "phases.gtp").read_text().splitlines()[-1].split("\t")
    assert end[1] == "end" and end[6] == "15"


def test_the_command_gives_each_phase_its_traceparent(shell, job_copy):
    done = _run(shell, job_copy, '"$GLIDEIN_TRACING_PHASE" outer -- sh -c \'echo "$TRACEPARENT"\'')
    start = (job_copy.parent / "phases.gtp").read_text().splitlines()[0].split("\t")
    assert done.stdout.strip() == f"00-{USER_TRACE}-{start[4]}-01"
    assert start[5] == USER_SPAN


def test_an_evicted_job_that_exited_0_still_gets_its_log_tail(phased_glidein):
    """The starter runs the exit hook with `evict` (or `hold`, `remove`): a job that did not end
    by itself failed, whatever its exit code says."""
    result, _events_, _spans, _ = phased_glidein
    scratch = next((result.work_dir / "execute").glob("dir_*_2"))
    journal = result.journal_path
    before = journal.read_bytes()
    try:
        subprocess.run([str(result.work_dir / "glidein_tracing" / "job_exit_hook"), "evict"],
                       input=(scratch / ".final.ad").read_bytes(), cwd=scratch, check=True, timeout=30,
                       env=dict(os.environ, _CONDOR_SCRATCH_DIR=str(scratch)))
        added = journal.read_bytes()[len(before):].decode()
    finally:
        journal.write_bytes(before)
    assert "@log.source=_condor_stdout" in added and "job.exit_by=evict" in added


def test_the_command_keeps_a_closed_stdin_and_the_callers_fd_9(shell, job_copy, tmp_path):
    given = tmp_path / "given.txt"
    given.write_text("through fd 9\n")
    closed = _run(shell, job_copy, '"$GLIDEIN_TRACING_PHASE" closed -- sh -c "read x || echo no stdin" <&-')
    fd9 = _run(shell, job_copy, f'"$GLIDEIN_TRACING_PHASE" fd9 -- sh -c "cat <&9" 9<"{given}"')
    assert (closed.returncode, closed.stdout) == (0, "no stdin\n")
    assert (fd9.returncode, fd9.stdout) == (0, "through fd 9\n")
    ends = [line for line in (job_copy.parent / "phases.gtp").read_text().splitlines() if "\tend\t" in line]
    assert len(ends) == 2


def test_an_unsampled_context_stays_unsampled(shell, job_copy):
    env = {"PATH": os.environ["PATH"], "TRACEPARENT": USER_TP[:-2] + "00"}
    done = subprocess.run([shell, str(job_copy), "p", "--", "sh", "-c", 'echo "$TRACEPARENT"'], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.strip().endswith("-00")


def test_the_command_keeps_stderr_when_it_succeeds_or_fails(shell, job_copy):
    done = _run(shell, job_copy, '"$GLIDEIN_TRACING_PHASE" a -- sh -c "echo one >&2"; '
                                 '"$GLIDEIN_TRACING_PHASE" b -- sh -c "echo two >&2; exit 1"; echo after >&2')
    assert done.stderr == "one\ntwo\nafter\n"


def test_each_job_gets_its_own_copy_of_the_command_in_its_scratch_dir(phased_glidein):
    result, _events_, _spans, _ = phased_glidein
    copies = set()
    for index in range(3):
        env = result.job_env(index)
        path = env["GLIDEIN_TRACING_PHASE"]
        # in a directory of the wrapper's own, its name random
        assert re.fullmatch(re.escape(env["_CONDOR_SCRATCH_DIR"]) + r"/\.glidein_tracing/[A-Za-z0-9]{12}/phase", path)
        copies.add(path)
    assert len(copies) == 3
    # the glidein's own copy is what condor_vars published (startd ad and job environment)
    config = (result.work_dir / "condor_config").read_text()
    assert f'GLIDEIN_TRACING_PHASE="{result.work_dir}/glidein_tracing/phase"' in config
    assert os.access(result.work_dir / "glidein_tracing" / "phase", os.X_OK)


def test_jobs_sharing_one_traceparent_keep_their_phases_under_their_own_job_in_the_users_trace():
    """jobsub_lite gives every job of a submission the same TRACEPARENT: in the user's trace
    each job's phases hang under that job's own span (``job on glidein``), not side by side
    under the user's span."""
    lines = root_lines(1000.0) + [format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"})]
    for n in range(3):
        job = f"job/s#1.{n}#9"
        lines += [format_line(1011 + 10 * n, "start", job, {"@stage": "job", "@name": "job", "@parent": "condor"},
                              links=[USER_TP])]
        for p, name in enumerate(("reco", "merge")):
            sid = f"{n:02x}{p:02x}" + "c" * 12
            fields = {"@name": name, "@phase.trace": USER_TRACE, "@phase.parent": USER_SPAN}
            lines += [format_line(1012 + 10 * n + 3 * p, "start", f"phase/{sid}/{job}", fields),
                      format_line(1014 + 10 * n + 3 * p, "end", f"phase/{sid}/{job}", {"@status": "OK"})]
        lines += [format_line(1019 + 10 * n, "end", job, {"job.exit_by": "exit", "job.exit_code:i": "0"})]
    lines += [format_line(1050, "end", "condor", {}), format_line(1051, "end", "glidein", {})]
    spans = convert(*parse_lines("".join(lines).encode()))
    on_glidein = {s.links[0].context.span_id: s for s in spans if s.name == "job on glidein"}
    assert len(on_glidein) == 3
    user_phases = _phase_spans(spans, USER_TRACE)
    assert len(user_phases) == 6
    for phase in user_phases:
        job_span_id = int(phase.attributes["glidein.job_span_id"], 16)
        assert phase.parent.span_id == on_glidein[job_span_id].context.span_id
        assert on_glidein[job_span_id].start_time <= phase.start_time <= phase.end_time <= on_glidein[job_span_id].end_time


def test_a_phase_measured_as_lasting_nothing_is_drawn_1us_long_and_says_so():
    """A phase shorter than its clock's 10 ms (start and end read alike) lasts 1 us, in both
    traces, marked ``glidein.time.placed=min_duration`` as every such span is."""
    job = "job/s#1.0#9"
    sid = "0101" + "c" * 12
    lines = root_lines(1000.0) + [
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1011, "start", job, {"@stage": "job", "@name": "job", "@parent": "condor"}, links=[USER_TP]),
        format_line(1012, "start", f"phase/{sid}/{job}",
                    {"@name": "merge", "@phase.trace": USER_TRACE, "@phase.parent": USER_SPAN}),
        format_line(1012, "end", f"phase/{sid}/{job}", {"@status": "ERROR", "phase.exit_code:i": "1"}),
        format_line(1019, "end", job, {"job.exit_by": "exit", "job.exit_code:i": "1"}),
        format_line(1050, "end", "condor", {}), format_line(1051, "end", "glidein", {})]
    phases = [s for s in convert(*parse_lines("".join(lines).encode()))
              if s.attributes["glidein.stage"] == "job.phase"]
    assert len(phases) == 2     # the glidein's copy and the user's
    for phase in phases:
        assert phase.end_time - phase.start_time == 1000
        assert phase.attributes["glidein.time.placed"] == "min_duration"


def test_phases_one_after_another_are_1us_apart():
    """A phase that ends when the next begins (their clock has 10 ms) ends 1 us sooner, so
    Jaeger's critical path steps back from the second to the first (docs/span-conventions.md,
    Times); the spans in the user's trace alike."""
    job = "job/s#1.0#9"
    lines = root_lines(1000.0) + [
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1011, "start", job, {"@stage": "job", "@name": "job", "@parent": "condor"}, links=[USER_TP])]
    for p, name in enumerate(("reco", "merge")):
        sid = f"01{p:02x}" + "c" * 12
        fields = {"@name": name, "@phase.trace": USER_TRACE, "@phase.parent": USER_SPAN}
        lines += [format_line(1012 + 2 * p, "start", f"phase/{sid}/{job}", fields),
                  format_line(1014 + 2 * p, "end", f"phase/{sid}/{job}", {"@status": "OK"})]
    lines += [format_line(1019, "end", job, {"job.exit_by": "exit", "job.exit_code:i": "0"}),
              format_line(1050, "end", "condor", {}), format_line(1051, "end", "glidein", {})]
    spans = convert(*parse_lines("".join(lines).encode()))
    for trace in (None, USER_TRACE):
        phases = {s.name: s for s in _phase_spans(spans, trace)}
        assert phases["reco"].end_time == 1014 * 10**9 - 1000 and phases["merge"].start_time == 1014 * 10**9
