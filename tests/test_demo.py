"""`glidein-tracing demo`, run as a user runs it: what lands in the store is whole, and the
links lead from the Frontend request to the glidein, to each job, to the user's trace."""

import json
import subprocess
import sys
import time
from collections import Counter

import pytest

from glidein_tracing.exporters.store import read_store
from tests.support.span_nesting import outside_parent


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "demo", "--glideins", "5",
                           "--store", str(store)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return store, proc.stdout, read_store(store)


def glidein_traces(traces):
    return {t: spans for t, spans in traces.items()
            if any(s["attributes"].get("glidein.stage") == "glidein" for s in spans)}


def stage(spans, name):
    return [s for s in spans if s["attributes"].get("glidein.stage") == name
            and not s["attributes"].get("glidein.user_view")]


def test_five_whole_glidein_traces(demo_store):
    _, stdout, traces = demo_store
    glideins = glidein_traces(traces)
    assert len(glideins) == 5
    for trace_id, spans in glideins.items():
        assert trace_id in stdout
        assert len(stage(spans, "glidein")) == 1
        ids = [s["span_id"] for s in spans]
        assert len(ids) == len(set(ids))
        by_id = {s["span_id"]: s for s in spans}
        root = stage(spans, "glidein")[0]
        for span in spans:  # one tree: every parent is in the trace
            if span is not root:
                assert span["parent_span_id"] in by_id
        assert stage(spans, "validation") and stage(spans, "setup") and stage(spans, "teardown")
        assert stage(spans, "factory.submit") and stage(spans, "factory.queue")
        assert root["start_ns"] == min(s["start_ns"] for s in spans)  # from submission on
        assert outside_parent(spans) == []
        # resources only where readings were taken inside the stage: the whole life (from
        # the zero at glidein_startup.sh's start to cleanup's reading) and teardown (cleanup
        # reads at its start and end); never a wider window's figures on a short script
        for whole in (root, stage(spans, "teardown")[0]):
            assert {"glidein.resource.cpu_user_s", "glidein.resource.max_rss_bytes"} <= set(whole["attributes"])
        for span in spans:
            attrs = span["attributes"]
            if "glidein.resource.window_s" in attrs and attrs["glidein.stage"] != "job":
                assert attrs["glidein.resource.window_s"] * 1e9 <= span["end_ns"] - span["start_ns"] + 1e3
        assert not [s for s in stage(spans, "validation")
                    if any(k.startswith("glidein.resource.") for k in s["attributes"])]
        assert root["resource"]["service.name"] == "glidein"
        assert root["resource"]["host.name"]


def test_outcomes_and_error_types(demo_store):
    _, _, traces = demo_store
    outcomes = Counter(stage(spans, "glidein")[0]["attributes"]["glidein.outcome"]
                       for spans in glidein_traces(traces).values())
    assert outcomes == Counter({"ok": 4, "validation_failed": 1})
    for spans in glidein_traces(traces).values():
        root = stage(spans, "glidein")[0]
        if root["attributes"]["glidein.outcome"] == "validation_failed":
            (failed,) = [s for s in stage(spans, "validation") if s["status_code"] == 2]
            assert failed["name"] == "main/check_wn_drainstate.sh"
            assert failed["attributes"]["error.type"] == "WN_Resource"
            assert not stage(spans, "job")
        else:
            assert stage(spans, "condor.start") and stage(spans, "idle")
    all_jobs = [j for spans in glidein_traces(traces).values() for j in stage(spans, "job")]
    assert len(all_jobs) == 5
    assert sum(1 for j in all_jobs if j["status_code"] == 2) == 1
    no_job = [spans for spans in glidein_traces(traces).values()
              if stage(spans, "condor.start") and not stage(spans, "job")]
    (idle,) = stage(no_job[0], "idle")
    assert idle["attributes"]["glidein.idle.kind"] == "no_job"
    assert stage(no_job[0], "condor.start")[0]["attributes"]["glidein.shutdown.reason"] == "max_idle"


def test_stages_follow_one_another_and_1us_spans_say_so(demo_store):
    """Siblings that follow one another are at least 1 us apart, the earlier ending first (Jaeger's
    critical path steps back only to a stage that ended strictly before the next began: docs/
    jaeger.md, Critical path); only a SIGTERM's HTCondor shutdown may overlap cleanup, and the
    demo has none. Every span drawn 1 us long says its time was placed (a phase shorter than
    its clock's 10 ms, such as the failed `merge` on an idle machine)."""
    _, _, traces = demo_store
    for spans in glidein_traces(traces).values():
        by_parent: dict = {}
        for span in spans:
            by_parent.setdefault((span["trace_id"], span["parent_span_id"]), []).append(span)
            if span["end_ns"] - span["start_ns"] == 1000:
                assert span["attributes"].get("glidein.time.placed") == "min_duration", span["name"]
        for siblings in by_parent.values():
            if any(s["attributes"].get("glidein.stage") == "job" for s in siblings):
                siblings = [s for s in siblings if s["attributes"].get("glidein.stage") != "job"
                            or not any(o is not s and o["attributes"].get("glidein.stage") == "job"
                                       and o["start_ns"] < s["end_ns"] and s["start_ns"] < o["end_ns"]
                                       for o in siblings)]   # jobs in other slots may run side by side
            siblings.sort(key=lambda s: s["start_ns"])
            for earlier, later in zip(siblings, siblings[1:]):
                assert earlier["end_ns"] < later["start_ns"], \
                    f"{earlier['name']} ends at or after {later['name']} begins"


def test_links_lead_from_request_to_glidein_to_job_to_user_and_back(demo_store):
    _, _, traces = demo_store
    everything = {(s["trace_id"], s["span_id"]): s for spans in traces.values() for s in spans}
    (request,) = [s for s in everything.values() if s["attributes"].get("glidein.stage") == "frontend.request"]
    glideins = glidein_traces(traces)
    for spans in glideins.values():
        assert not stage(spans, "glidein")[0]["links"]     # the root carries none (docs/jaeger.md)
        submit = stage(spans, "factory.submit")[0]
        kinds = {l["attributes"]["glidein.link.kind"]: l for l in submit["links"]}
        assert (kinds["frontend_request"]["trace_id"], kinds["frontend_request"]["span_id"]) == \
            (request["trace_id"], request["span_id"])
    user_jobs = [j for spans in glideins.values() for j in stage(spans, "job") if j["links"]]
    assert len(user_jobs) == 2
    for job in user_jobs:
        (link,) = job["links"]
        user_span = everything[(link["trace_id"], link["span_id"])]      # the user's own span
        assert user_span["name"] == "jobsub_submit"
        # under the user's span: where the job ran, and why it waited (QDate to start)
        under = [s for s in traces[link["trace_id"]] if s["parent_span_id"] == user_span["span_id"]]
        views = {s["name"]: s for s in under if s["name"] != "job.waiting"}
        assert set(views) == {"job on glidein", "job.wait"}
        for view in views.values():
            assert view["attributes"]["glidein.user_view"] is True
            back = view["links"][0]
            assert (back["trace_id"], back["span_id"]) == (job["trace_id"], job["span_id"])
            assert view["attributes"]["glidein.site"] == "DEMO_SITE"
        wait = views["job.wait"]
        assert wait["end_ns"] == views["job on glidein"]["start_ns"] and wait["start_ns"] < wait["end_ns"]
        # the user's trace starts at the submission: the job was queued (QDate) as it was made
        assert wait["start_ns"] == user_span["start_ns"] <= user_span["end_ns"] < wait["start_ns"] + 10**9
        assert wait["attributes"]["job.wait.glidein"] in ("new", "idle")
        assert wait["attributes"]["job.num_job_starts"] == 0


def test_validation_spans_agree_with_the_glideins_own_records(demo_store):
    _, _, traces = demo_store
    for spans in glidein_traces(traces).values():
        setup = stage(spans, "setup")[0]
        validations = stage(spans, "validation")     # in record order
        assert validations == sorted(validations, key=lambda s: s["start_ns"])
        for span in validations:
            assert span["parent_span_id"] == setup["span_id"]
            assert span["attributes"]["glidein.script.status"] in ("OK", "ERROR")
            # GlideinWMS records have 1 s resolution: placed inside their seconds, in order
            assert span["attributes"]["glidein.time.placed"] == "record_order"
            assert span["end_ns"] > span["start_ns"]


def test_analyze_reads_the_demos_table_as_the_demo_says(demo_store):
    """The demo prints the analyze command for its glidein table; run it: the five glideins
    (not the Frontend's or the users' traces), their outcomes, and the failed glidein's message,
    domain and trace id in the failures section."""
    _, stdout, traces = demo_store
    (command,) = [line.split(": ", 1)[1] for line in stdout.splitlines() if "glidein-tracing analyze " in line]
    table = command.split("glidein-tracing analyze ", 1)[1]
    proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "analyze", table, "--json", "-", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    roots = {t: stage(spans, "glidein")[0]["attributes"] for t, spans in glidein_traces(traces).items()}
    stats = report["stats"]
    assert stats["glideins"] == len(roots) == 5
    assert stats["outcomes"]["overall"] == dict(Counter(a["glidein.outcome"] for a in roots.values()))
    jobs = [j for spans in glidein_traces(traces).values() for j in stage(spans, "job")]
    assert stats["jobs"] == len(jobs) and stats["failed_jobs"] == sum(j["status_code"] == 2 for j in jobs) == 1
    (failed,) = [t for t, a in roots.items() if a["glidein.outcome"] == "validation_failed"]
    failures = report["failures"]
    assert failures["failed_glideins"] == 1 and failures["glideins_by_domain"] == {"site": 1}
    (message,) = failures["top_messages"]
    assert message["domain"] == "site" and message["examples"] == [failed]
    assert "check_wn_drainstate.sh" in message["message"]


def test_failures_carry_domain_log_tail_and_sleep_and_the_summary_names_them(demo_store):
    store, stdout, traces = demo_store
    failed_glideins, failed_jobs = {}, {}
    for trace, spans in glidein_traces(traces).items():
        root = stage(spans, "glidein")[0]
        if root["attributes"]["glidein.outcome"] == "validation_failed":
            failed_glideins[trace] = spans
        failed_jobs.update({trace: j for j in stage(spans, "job") if j["status_code"] == 2})
    (trace, spans), = failed_glideins.items()
    root = stage(spans, "glidein")[0]
    assert root["attributes"]["glidein.failure.domain"] == "site"
    assert root["attributes"]["glidein.failure.evidence"] == "error.type=WN_Resource"
    (script,) = [s for s in stage(spans, "validation") if s["status_code"] == 2]
    tails = {e["attributes"]["log.source"]: e["attributes"] for e in script["events"]
             if e["name"] == "glidein.log_tail"}
    err = next(v for k, v in tails.items() if k.endswith(".err"))
    assert "check_wn_drainstate.sh: ERROR: the check failed" in err["log.lines"]
    assert "=== Validation error in" in err["log.lines"]
    out = next(v for k, v in tails.items() if k.endswith(".out"))
    assert "check_wn_drainstate.sh: checking the worker node" in out["log.lines"]
    # stdout has only the failed script's own part, from glidein_startup.sh's announcement
    assert out["log.lines"].splitlines()[0].startswith("Executing (flags:")
    assert out["log.lines"].splitlines()[0].endswith("/check_wn_drainstate.sh")
    (sleep,) = stage(spans, "post_failure_sleep")
    assert sleep["attributes"]["glidein.sleep.reason"] == "validation_failed"
    (job_trace, job), = failed_jobs.items()
    # the failing job failed as a missing CVMFS file does: the demo's example rules say service
    assert job["attributes"]["job.failure.domain"] == "service"
    assert job["attributes"]["job.failure.service"] == "cvmfs"
    # its log tail (on in the demo) shows the CVMFS error: the common rule on it decides, before
    # the demo VO's exit-code rule (files in name order, the first match decides)
    assert job["attributes"]["job.failure.rule"] == "cvmfs-file-missing"
    assert job["attributes"]["job.failure.evidence"] == "job.failure.rule=" + job["attributes"]["job.failure.rule"]
    # the summary names each failure's domain; the demo prints the failed glidein's tail
    lines = {line.split()[0]: line for line in stdout.splitlines() if line.startswith("  ")
             and len(line.split()[0]) == 32}
    assert "glidein failure: site (error.type=WN_Resource)" in lines[trace]
    assert "job failure: service cvmfs (job.failure.rule=" in lines[job_trace]
    assert "check_wn_drainstate.sh: ERROR: the check failed" in stdout
    shown = subprocess.run([sys.executable, "-m", "glidein_tracing", "show", "--store", str(store), trace],
                           capture_output=True, text=True, check=True).stdout
    assert "log tail of logs/" in shown and "| check_wn_drainstate.sh: ERROR: the check failed" in shown


def test_a_failed_job_shows_its_phases_and_its_log_tail(demo_store):
    store, stdout, traces = demo_store
    (trace, spans), = [(t, s) for t, s in glidein_traces(traces).items() if stage(s, "job.phase")]
    phases = {s["name"]: s for s in stage(spans, "job.phase")}
    assert phases["reco"]["status_code"] == 1 and phases["merge"]["status_code"] == 2
    # the merge phase fails as a missing CVMFS file does (the VO wrapper's exit code 66)
    assert phases["merge"]["attributes"]["job.phase.exit_code"] == 66
    (job,) = stage(spans, "job")
    assert job["attributes"]["job.exit_code"] == 66
    tails = {e["attributes"]["log.source"]: e["attributes"]["log.lines"] for e in job["events"]
             if e["name"] == "job.log_tail"}
    # the job's own stderr: the CVMFS error a rule can match (cvmfs-file-missing)
    assert tails["_condor_stderr"].splitlines() == [
        "ls: cannot access '/cvmfs/demo.example.org/conditions/v42/calib.db': No such file or directory",
        "ERROR: input file missing, exiting 66"]
    assert "merging 3 files" in tails["_condor_stdout"]
    shown = subprocess.run([sys.executable, "-m", "glidein_tracing", "show", "--store", str(store), trace],
                           capture_output=True, text=True, check=True).stdout
    merge_line = next(line for line in shown.splitlines() if "merge [job.phase]" in line)
    assert " ERROR " in merge_line
    assert "mark: phase 1 complete" in shown and "| ERROR: input file missing, exiting 66" in shown
    assert "| ERROR: input file missing, exiting 66" in stdout


def test_a_failed_glideins_waterfall_page_in_headless_chromium(demo_store, tmp_path):
    """`show --html --jaeger-ui` of the demo's failed glideins, as an operator opens them: the
    verdict (domain, evidence; for the failing job the rule, its label, advice and service) and
    the log tail in plain sight, a time axis, the link to the trace in Jaeger."""
    from tests.support.browser import WATERFALL_PROBE, browser, dom, screenshot
    path = browser()
    store, _, traces = demo_store
    jaeger = "http://127.0.0.1:16686"
    for trace_id, spans in glidein_traces(traces).items():
        failed_job = [s for s in stage(spans, "job") if s["status_code"] == 2]
        root = stage(spans, "glidein")[0]
        if root["attributes"]["glidein.outcome"] != "validation_failed" and not failed_job:
            continue
        page = tmp_path / f"{trace_id}.html"
        proc = subprocess.run([sys.executable, "-m", "glidein_tracing", "show", trace_id, "--store", str(store),
                               "--html", str(page), "--jaeger-ui", jaeger], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        found = dom(path, page, tmp_path, WATERFALL_PROBE)
        shown = dict(found["verdict"])
        assert found["links"] == {"jaeger": f"{jaeger}/trace/{trace_id}"}
        assert len(found["ticks"]) >= 3 and found["ticks"][0]["label"] == "0"
        assert found["tails"], "the log tail is in plain sight"
        if failed_job:     # the example rules decided: the rule is named with its advice
            assert shown["failure domain"] == "service" and shown["service"] == "cvmfs"
            assert shown["rule"] == "cvmfs-file-missing" and shown["advice"]
            assert any("calib.db': No such file or directory" in t for t in found["tails"])
        else:
            assert shown["failure domain"] == "site" and shown["evidence"] == "error.type=WN_Resource"
            assert any("check_wn_drainstate.sh: ERROR" in t for t in found["tails"])
        assert screenshot(path, page, tmp_path / f"{trace_id}.png", tmp_path).stat().st_size > 10_000


def test_the_frontends_job_waiting_spans_tell_each_user_why_it_waited(demo_store):
    """The demo's Frontend decides with the real job.waiting code (frontend_hooks/waiting.py):
    at its first cycle each user's submission waits because glideins were requested for it
    (linked to that request and cycle), and its second cycle, after the jobs ran, ends the wait."""
    _, _, traces = demo_store
    everything = {(s["trace_id"], s["span_id"]): s for spans in traces.values() for s in spans}
    (request,) = [s for s in everything.values() if s["attributes"].get("glidein.stage") == "frontend.request"]
    users = sorted({s["trace_id"] for spans in traces.values() for s in spans if s["name"] == "jobsub_submit"})
    assert len(users) == 2
    for trace_id in users:
        (submit,) = [s for s in traces[trace_id] if s["name"] == "jobsub_submit"]
        waiting = sorted((s for s in traces[trace_id] if s["name"] == "job.waiting"),
                         key=lambda s: s["attributes"]["job.waiting.state"])
        assert [s["attributes"]["job.waiting.state"] for s in waiting] == ["current", "ended"]
        current, ended = waiting
        for span in waiting:
            assert span["parent_span_id"] == submit["span_id"] and span["attributes"]["job.owner"] == "fakeuser"
            assert span["attributes"]["job.waiting.reason"] == "requested"
        assert (request["trace_id"], request["span_id"]) in {(l["trace_id"], l["span_id"]) for l in current["links"]}
        assert ended["attributes"]["job.waiting.end"] == "no_idle_jobs"
        assert ended["start_ns"] == current["start_ns"] < ended["end_ns"]
        (wait,) = [s for s in traces[trace_id] if s["name"] == "job.wait"]
        assert submit["start_ns"] <= current["start_ns"] < wait["end_ns"] <= ended["end_ns"]


def test_why_on_the_demos_user_traces_says_their_jobs_started(demo_store, capsys):
    """A user asking `why` by trace id about a submission whose job ran is told it started and
    since when, and what the Frontend saw it wait for before: nothing to do."""
    from glidein_tracing.cli.main import main
    store, stdout, traces = demo_store
    users = sorted({s["trace_id"] for spans in traces.values() for s in spans if s["name"] == "job.wait"})
    assert len(users) == 2
    # the command the demo prints, as it prints it
    (command,) = [line.split(": ", 1)[1] for line in stdout.splitlines() if "glidein-tracing why " in line]
    assert command == f"glidein-tracing why {users[0]} --store {store}"
    for trace_id in users:
        (ended,) = [s for s in traces[trace_id] if s["attributes"].get("job.waiting.end") == "no_idle_jobs"]
        assert main(["why", trace_id, "--store", str(store), "--json"]) == 0
        (job,) = json.loads(capsys.readouterr().out)["jobs"]
        since = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ended["end_ns"] / 1e9))
        assert job["text"].startswith(f"Submission {trace_id}: The submission has had no idle job since {since}: "
                                      "its jobs started")
        assert "the Frontend saw it wait: glideins requested at DEMO_ENTRY@" in job["text"]
        assert (job["helps"], job["actor"]) == ("no", "nobody") and job["text"].endswith("nothing to do.")
