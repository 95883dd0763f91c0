"""Hostile jobs against the phase spool and the log tail (issue 23, Bounds and bad input): a
spool or log symlinked to /etc/shadow, binary junk, forged trace and span ids, a huge name, a
million phases, a spool of another Unix user. Real jobs, the real wrapper and exit hook (the
simulator); each is bounded, rejected or ignored with a note, and the glidein, the job and the
converter carry on."""

import os
import shutil

import pytest

from glidein_tracing.core.converter import convert
from glidein_tracing.core.journal import read_journal
from glidein_tracing.simulator import Job, Scenario, simulate_glidein

from tests.support.span_nesting import outside_parent

DASH = shutil.which("dash") or "/bin/sh"
OTHER_TRACE = "cccccccccccccccccccccccccccccccc"

# the spool and the _condor_stderr replaced by links to a file the job must not read
SYMLINKS = '''D="${GLIDEIN_TRACING_PHASE%/*}"
ln -s /etc/shadow "$D/phases.gtp"
rm -f _condor_stderr; ln -s /etc/shadow _condor_stderr
echo "linked"; exit 1
'''

# junk, forged ids, a huge name, then a million phases, written straight into the spool
FORGED = r'''D="${GLIDEIN_TRACING_PHASE%/*}"; S="$D/phases.gtp"
tp=${TRACEPARENT#00-}; T=${tp%%-*}; ctx=${tp#*-}; ctx=${ctx%%-*}
root=${GLIDEIN_TraceParent#00-*-}; root=${root%%-*}
"$GLIDEIN_TRACING_PHASE" real -- true
printf 'gtp1\tstart\t\001\377junk\n\000\000garbage\n' >> "$S"
printf 'gtp1\tstart\t%s\t%s\t1111111111111111\t%s\tforged-trace\n' "$(date +%s)" "''' + OTHER_TRACE + r'''" "$ctx" >> "$S"
printf 'gtp1\tstart\t%s\t%s\t2222222222222222\tdddddddddddddddd\tforged-parent\n' "$(date +%s)" "$T" >> "$S"
printf 'gtp1\tstart\t%s\t%s\t%s\t%s\tforged-root\n' "$(date +%s)" "$T" "$root" "$ctx" >> "$S"
awk -v t="$(date +%s)" -v T="$T" -v c="$ctx" 'BEGIN {
    name = "n"; while (length(name) < 200000) name = name name
    print "gtp1\tstart\t" t "\t" T "\t3333333333333333\t" c "\t" name
    for (i = 1; i <= 1000000; i++)
        printf "gtp1\tstart\t%s\t%s\t%016x\t%s\tp%d\ngtp1\tend\t%s\t%s\t%016x\t0\t\t0\t0\t0\n", t, T, 65536 + i, c, i, t, T, 65536 + i
}' >> "$S"
exit 0
'''

# a job with its user's context forging the id the glidein gives its "job on glidein" span
FORGED_VIEW = r'''D="${GLIDEIN_TRACING_PHASE%/*}"; S="$D/phases.gtp"
tp=${TRACEPARENT#00-}; U=${tp%%-*}; ctx=${tp#*-}; ctx=${ctx%%-*}
gid=$(sed -n 's/^GlobalJobId = "\(.*\)"$/\1/p' "$_CONDOR_JOB_AD")
X=$(printf '%s\n%s\n' "$U" "glidein/$GLIDEIN_TraceId/job/$gid" | sha256sum | cut -c1-16)
"$GLIDEIN_TRACING_PHASE" real -- true
printf 'gtp1\tstart\t%s\t%s\t%s\t%s\tforged-view\n' "$(date +%s)" "$U" "$X" "$ctx" >> "$S"
'''

# a job whose ad names, as its stderr, a path through a link it made to the glidein's work dir
LINKED_ERR = '''ln -s ../.. workdir
echo "to stderr" >&2; exit 1
'''

OTHER_USER = '''"$GLIDEIN_TRACING_PHASE" mine -- true
chown 65534 "${GLIDEIN_TRACING_PHASE%/*}/phases.gtp"
'''


def _notes(span):
    return [e.attributes["message"] for e in span.events if e.name == "glidein_tracing.note"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_phases")
    jobs = [Job(script=SYMLINKS, shell=DASH), Job(script=FORGED, shell=DASH),
            Job(script=FORGED_VIEW, shell=DASH, traceparent="00-" + "e" * 32 + "-" + "f" * 16 + "-01"),
            Job(script=LINKED_ERR, shell=DASH, extra_ad={"Err": '"workdir/glidein_config"'})]
    if os.geteuid() == 0:
        jobs.append(Job(script=OTHER_USER, shell=DASH))
    result = simulate_glidein(root, Scenario(jobs=jobs, knobs={"GLIDEIN_TRACING_JOB_LOG_TAIL_LINES": "20"},
                                             timeout_s=300))
    events, report = read_journal(result.journal_path)
    spans = convert(events, report)
    jobs = sorted((s for s in spans if s.name == "job"), key=lambda s: s.start_time)
    return result, result.journal_path.read_bytes(), spans, jobs


def test_the_glidein_and_every_job_carry_on(hostile):
    _result, _journal, spans, jobs = hostile
    root = spans[0]     # the root first, whatever order the journal's lines came in
    assert root.attributes["glidein.stage"] == "glidein" and root.attributes["glidein.outcome"] == "ok"
    assert len(jobs) == (5 if os.geteuid() == 0 else 4)
    assert outside_parent(spans) == []


def test_a_spool_or_log_linked_to_etc_shadow_is_not_read(hostile):
    _result, journal, _spans, jobs = hostile
    assert "job phases ignored: the spool is a symbolic link" in _notes(jobs[0])
    tails = {e.attributes["log.source"]: e.attributes for e in jobs[0].events if e.name == "job.log_tail"}
    assert tails["_condor_stderr"]["log.note"] == "a symbolic link: not read"
    assert tails["_condor_stdout"]["log.lines"] == "linked"
    if os.access("/etc/shadow", os.R_OK):
        first = open("/etc/shadow", "rb").readline().split(b":")[0]
        assert first and b"\t" + first + b":" not in journal and first + b":" not in journal


def test_forged_ids_junk_and_a_million_phases_are_bounded_and_counted(hostile):
    _result, _journal, spans, jobs = hostile
    job = jobs[1]
    attrs = job.attributes
    assert attrs["job.phases"] == 500
    assert attrs["job.phases.cut"] > 10000                 # counted within what was read
    assert attrs["job.phases.spool_cut_bytes"] == 4000000
    assert attrs["job.phases.rejected_lines"] >= 2         # the junk
    assert attrs["job.phases.names_cut"] == 1
    assert any(n.startswith("job phases left out: ") and "1 parent not in the job" in n
               and "1 span id of another span" in n and "1 trace id not the job's" in n for n in _notes(job))
    mine = [s for s in spans if s.attributes.get("glidein.stage") == "job.phase"
            and s.attributes.get("glidein.job_span_id") == format(job.context.span_id, "016x")]
    assert len(mine) == 500 - 3
    assert all(format(s.context.trace_id, "032x") != OTHER_TRACE for s in spans)
    assert all(len(s.name) <= 128 for s in mine)
    assert len({(s.context.trace_id, s.context.span_id) for s in spans}) == len(spans)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file of another user needs root")
def test_a_spool_of_another_user_is_ignored_with_a_note(hostile):
    _result, _journal, spans, jobs = hostile
    assert "job phases ignored: the spool belongs to another user" in _notes(jobs[4])
    assert "job.phases" not in jobs[4].attributes


def test_a_log_named_through_a_link_out_of_the_scratch_dir_is_not_read(hostile):
    _result, journal, _spans, jobs = hostile
    tails = {e.attributes["log.source"]: e.attributes for e in jobs[3].events if e.name == "job.log_tail"}
    assert tails["_condor_stderr"]["log.lines"] == "to stderr"
    assert not any("workdir" in source for source in tails)
    assert b"GLIDEIN_Factory" not in journal


def test_a_phase_cannot_take_the_id_of_the_jobs_span_in_the_users_trace(hostile):
    _result, _journal, spans, jobs = hostile
    assert "job phases left out: 1 span id of another span" in _notes(jobs[2])
    view = [s for s in spans if s.name == "job on glidein" and format(s.context.trace_id, "032x") == "e" * 32]
    assert len(view) == 1
    assert sorted(s.name for s in spans if format(s.context.trace_id, "032x") == "e" * 32
                  and s.attributes.get("glidein.stage") == "job.phase") == ["real"]


def test_a_forged_journal_cannot_make_phases_without_bound(tmp_path):
    """What reaches the Factory is untrusted too: a journal naming 300 jobs' worth of phases
    and marks for one real job, and phases of jobs that never ran, gives a bounded span set."""
    from glidein_tracing.core.journal import format_line, parse_line, JournalReport
    from tests.support.journal_builders import root_lines
    trace = "d" * 32
    job = "job/schedd#1.0#1"
    lines = root_lines(100.0, trace)
    lines.append(format_line(101.0, "start", job, {"@name": "job", "@stage": "job", "@parent": "setup"}))
    from glidein_tracing.core import ids
    ctx = ids.span_id(trace, job)
    for i in range(1, 1200):
        key = f"phase/{i:016x}/{job}"
        lines.append(format_line(101.5, "start", key, {"@name": f"p{i}", "@phase.trace": trace,
                                                        "@phase.parent": ctx}))
        lines.append(format_line(101.6, "note", key, {"@phase.trace": trace, "@phase.mark": "m"}))
    for n in range(200):   # phases of jobs that never ran
        lines.append(format_line(101.5, "start", f"phase/{n + 1:016x}/job/ghost{n}",
                                 {"@name": "ghost", "@phase.trace": trace, "@phase.parent": ctx}))
    lines.append(format_line(102.0, "end", job, {"@status": "OK"}))
    report = JournalReport()
    events = [e for n, line in enumerate(lines) if (e := parse_line(line.rstrip("\n").encode(), n, report))]
    spans = convert(events, report)
    phases = [s for s in spans if s.attributes.get("glidein.stage") == "job.phase"]
    assert len(phases) == 500
    assert all(s.attributes["glidein.job_span_id"] == ctx for s in phases)
    (job_span,) = [s for s in spans if s.name == "job"]
    assert any("699 beyond the phases a job may have" in n and "699 marks beyond" in n for n in _notes(job_span))
    assert sum(len(s.events) for s in phases) == 500


def test_forged_figures_and_secret_names_do_not_reach_a_span_as_they_are():
    from glidein_tracing.core.journal import format_line, parse_line, JournalReport
    from tests.support.journal_builders import root_lines
    from glidein_tracing.core import ids
    trace, job = "d" * 32, "job/schedd#1.0#1"
    ctx = ids.span_id(trace, job)
    key = f"phase/{7:016x}/{job}"
    lines = root_lines(100.0, trace) + [
        format_line(101.0, "start", job, {"@name": "job", "@stage": "job", "@parent": "setup"}),
        format_line(101.5, "start", key, {"@name": "fetch token=abcdef123456", "@phase.trace": trace,
                                          "@phase.parent": ctx}),
        format_line(101.7, "end", key, {"@status": "OK", "job.phase.exit_code:i": "9" * 30,
                                        "r.utime": "1e300", "r.rss_peak": "9" * 40}),
        format_line(102.0, "end", job, {"@status": "OK"})]
    report = JournalReport()
    events = [e for n, line in enumerate(lines) if (e := parse_line(line.rstrip("\n").encode(), n, report))]
    (phase,) = [s for s in convert(events, report) if s.attributes.get("glidein.stage") == "job.phase"]
    assert phase.name == "fetch token=REDACTED" == phase.attributes["job.phase.name"]
    assert not {"job.phase.exit_code", "glidein.resource.cpu_user_s", "glidein.resource.max_rss_bytes"} \
        & set(phase.attributes)


def test_two_jobs_cannot_give_two_phases_one_span_id():
    """Jobs of one glidein share a user trace (jobsub gives a cluster's jobs one context): a
    span id one job forged after another's phase is left out, so no span id is used twice."""
    from glidein_tracing.core.journal import format_line, parse_line, JournalReport
    from tests.support.journal_builders import root_lines
    trace, user_trace, user_span = "d" * 32, "e" * 32, "f" * 16
    context = f"00-{user_trace}-{user_span}-01"
    lines = root_lines(100.0, trace)
    for n in (0, 1):
        job = f"job/schedd#1.{n}#1"
        lines += [format_line(101.0, "start", job, {"@name": "job", "@stage": "job", "@parent": "setup"},
                              links=[context]),
                  format_line(101.5 + n, "start", f"phase/{7:016x}/{job}",
                              {"@name": f"p{n}", "@phase.trace": user_trace, "@phase.parent": user_span}),
                  format_line(103.0, "end", job, {"@status": "OK"})]
    report = JournalReport()
    events = [e for n, line in enumerate(lines) if (e := parse_line(line.rstrip("\n").encode(), n, report))]
    spans = convert(events, report)
    assert len({(s.context.trace_id, s.context.span_id) for s in spans}) == len(spans)
    assert sorted(s.name for s in spans if s.attributes.get("glidein.stage") == "job.phase") == ["p0", "p0"]
