"""glidein-tracing why: the schedd's own reasons (transfer queue, cool-down, the user's running
cap), the one precedence of reasons docs/why-waiting.md writes down, answers in words (whether
waiting helps, who can act), the ways a user names a job, and where it looked when it found
nothing. Job ads and user records are read with classad2 from the text HTCondor's tools write."""

import json
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.instrumentation.instrumentor")
classad2 = pytest.importorskip("classad2")

from glidein_tracing.cli.main import main
from glidein_tracing.core import waiting_reasons as wr
from glidein_tracing.core.classads import parse_old_ads
from glidein_tracing.exporters.store import Store
from glidein_tracing.why import diagnosis as d
from glidein_tracing.why import sources, words
from tests.support import waiting_world as ww
from tests.support.frontend_cycles import stored_cycles

DOC = Path(__file__).resolve().parent.parent / "docs" / "why-waiting.md"
NOW = float(int(time.time()))


def ad(**extra):
    return parse_old_ads(ww.job_ad(200, 0, "QUEUE", ww.traceparent("QUEUE"), **extra))[0]


def user_ad(text):
    """A user record as `condor_qusers -l` prints it."""
    return parse_old_ads(text)[0]


@pytest.fixture(scope="module")
def queue_spans(tmp_path_factory):
    """The Frontend's job.waiting spans of the world's QUEUE submission (site_queue)."""
    tmp = tmp_path_factory.mktemp("world")
    store = stored_cycles(tmp, ww.world(tmp))
    return Store(store, read_only=True).trace(ww.trace_of("QUEUE"))


CAP = user_ad('User = "alice@example.org"\nMaxJobsRunning = 5\nNumRunning = 5\nNumIdle = 40\n')


def test_a_job_in_cooldown(queue_spans):
    item = d.diagnose(ad(JobCoolDownExpiration=int(NOW) + 600), queue_spans, now=NOW)
    assert item.reason == "cooldown" and item.helps == wr.HELPS_YES and item.actor == wr.ACTOR_NOBODY
    assert item.facts["cooldown_left_s"] == 600
    assert "cool-down until" in words.sentences(item) and "(in 10 min)" in words.sentences(item)
    # the Frontend's reason comes after it, and its spans stay the evidence
    assert item.facts["then"]["reason"] == "site_queue" and item.evidence[0].trace_id == ww.trace_of("QUEUE")
    # in its own words, with its entry and site
    assert ("(in 10 min). After that, the Frontend's reason: glideins for it were requested at QUEUE_CE"
            in words.sentences(item))
    assert "5 are still in the batch queue of QUEUE. Waiting helps" in words.sentences(item)
    expired = d.diagnose(ad(JobCoolDownExpiration=int(NOW) - 1), queue_spans, now=NOW)
    assert expired.reason == "site_queue"


def test_the_users_running_cap(queue_spans):
    item = d.diagnose(ad(), queue_spans, user=CAP, now=NOW)
    assert item.reason == "running_cap" and item.actor == wr.ACTOR_OPERATORS
    assert ("You already run 5 jobs at this schedd, as many as your user record allows (MaxJobsRunning 5)"
            in words.sentences(item))
    below = user_ad('User = "alice@example.org"\nMaxJobsRunning = 5\nNumRunning = 4\n')
    assert d.diagnose(ad(), queue_spans, user=below, now=NOW).reason == "site_queue"
    # no cap in the record (condor_qusers: "default"): the schedd's own limit only
    assert d.diagnose(ad(), queue_spans, user=user_ad('User = "alice@example.org"\n'), now=NOW).reason == "site_queue"


def test_the_user_record_is_asked_as_the_bindings_answer():
    """The schedd cannot run here: a stand-in for htcondor2.Schedd.queryUserAds answers with
    classad2 ads, as the bindings do."""
    class Schedd:
        asked = None

        def queryUserAds(self, constraint="", projection=(), callback=None, limit=-1):
            Schedd.asked = (constraint, list(projection))
            return [classad2.ClassAd({"User": "alice@example.org", "MaxJobsRunning": 5, "NumRunning": 5})]

    record, why = sources.user_record(Schedd(), "alice@example.org")
    assert record["MaxJobsRunning"] == 5 and why == ""
    assert Schedd.asked[0] == 'User == "alice@example.org"' and "MaxJobsRunning" in Schedd.asked[1]

    class Old:
        def queryUserAds(self, **_kw):
            raise RuntimeError("Failed to get user ads")

    assert sources.user_record(Old(), "alice@example.org") == (
        None, "the schedd gave no user record (Failed to get user ads)")
    assert sources.user_record(Old(), None)[1] == "the job ad names no User"


def test_a_job_waiting_in_the_transfer_queue():
    item = d.diagnose(ad(status=2, TransferringInput="true", TransferQueued="true"), (), now=NOW)
    assert item.reason == "transfer_queue" and item.status == "running"
    assert "waits in the schedd's transfer queue" in words.sentences(item)
    moving = d.diagnose(ad(status=2, TransferringInput="true", TransferQueued="false"), (), now=NOW)
    assert moving.category == d.NOT_WAITING


def test_the_other_answers_read_as_sentences(queue_spans):
    """A running job in the transfer queue waits for no glidein (no Frontend reason after it);
    an evicted job that waits again gets that reason's own sentence (its site named); a job
    done is not waiting; HTCondor's hold reason is quoted without a doubled period."""
    queued = words.sentences(d.diagnose(ad(status=2, TransferringInput="true", TransferQueued="true"),
                                        queue_spans, now=NOW))
    assert "After that" not in queued and "site queue" not in queued
    evicted = words.sentences(d.diagnose(ad(NumJobStarts=1, VacateReasonCode=1002, VacateReason='"startd shut down"'),
                                         queue_spans, now=NOW))
    assert ('It ran once and was evicted by a system problem (the glidein or the site went away), not by the job '
            '("startd shut down"). Now it waits again. Glideins for it were requested at QUEUE_CE') in evicted
    assert "5 are still in the batch queue of QUEUE." in evicted
    done = words.sentences(d.diagnose(ad(status=4), queue_spans, now=NOW))
    assert done == "Job 200.0 is completed. It is not waiting to start. Waiting does not help; nothing to do."
    held = words.sentences(d.diagnose(ad(status=5, HoldReasonCode=34, HoldReason='"over memory limit."'), (), now=NOW))
    assert 'HTCondor says: "over memory limit." Waiting does not help' in held


# one case per step of the precedence: the job ad (and user record) where both reasons hold
PRECEDENCE_CASES = [
    ("held", "cooldown", dict(status=5, HoldReasonCode=1, JobCoolDownExpiration=int(NOW) + 600), CAP),
    ("transfer_queue", "cooldown", dict(status=2, TransferringInput="true", TransferQueued="true",
                                        JobCoolDownExpiration=int(NOW) + 600), CAP),
    ("cooldown", "running_cap", dict(JobCoolDownExpiration=int(NOW) + 600), CAP),
    ("running_cap", "site_queue", {}, CAP),
]


@pytest.mark.parametrize("first,second,extra,user", PRECEDENCE_CASES, ids=[c[0] for c in PRECEDENCE_CASES])
def test_the_earlier_reason_wins(first, second, extra, user, queue_spans):
    assert wr.PRECEDENCE.index(first) < wr.PRECEDENCE.index(second)
    item = d.diagnose(ad(**extra), queue_spans, user=user, now=NOW)
    assert (item.reason or item.category) == first


def test_the_documented_precedence_is_the_one_applied():
    text = DOC.read_text()
    section = text[text.index("## Which reason is given"):]
    listed = re.findall(r"^\d+\. `([a-z_]+)`", section, re.M)
    assert tuple(listed) == wr.PRECEDENCE


def test_a_submission_matching_several_entries_gets_the_most_hopeful(tmp_path, capsys):
    jobs = [ww.job_ad(300, 0, "BROKEN,QUEUE,NEW", ww.traceparent("BROKEN"))]
    stored_cycles(tmp_path, ww.world(tmp_path, jobs=jobs))
    assert main(["why", str(tmp_path / "jobs.ads"), "--store", str(tmp_path / "store"), "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["jobs"]
    assert job["reason"] == "site_queue"          # before requested and validation
    assert wr.RANK["site_queue"] < wr.RANK["requested"] < wr.RANK["validation"]


def test_every_answer_says_whether_waiting_helps_and_who_can_act(tmp_path, capsys):
    stored_cycles(tmp_path, ww.world(tmp_path))
    assert main(["why", str(tmp_path / "jobs.ads"), "--store", str(tmp_path / "store"), "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    helps_words = {"yes": "Waiting helps;", "no": "Waiting does not help;", "unknown": "Waiting may not help;"}
    for job in jobs:
        assert job["helps"] in helps_words and helps_words[job["helps"]] in job["text"]
        assert job["actor"] in ("you", "the operators", "nobody")
        assert ("nothing to do." in job["text"]) == (job["actor"] == "nobody")
    assert main(["why", str(tmp_path / "jobs.ads"), "--store", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    # facts in words: no Python dict, list or repr anywhere in the text (but in the group's
    # match expression, quoted as GlideinWMS wrote it)
    for job in jobs:
        assert job["text"] in out
        text = job["text"].replace(job["facts"].get("match_expr", ""), "")
        assert not re.search(r"[{}\[\]]|'[a-z_]+':|None|True|False", text), text
    by_job = {job["job"]: job["text"] for job in jobs}
    # the site named as the entry's ad names it (GLIDEIN_Site), not "the site"
    assert ("Glideins for it were requested at QUEUE_CE just now; 5 are still in the batch queue of QUEUE."
            in by_job[f"100.0@{ww.SCHEDD}"])
    assert "(4 glideins running at BROKEN)" in by_job[f"104.0@{ww.SCHEDD}"]
    # unusable idle glideins: the group's PartGlideinMinMemory quoted
    assert ("it asks for 4,000 MB of memory, the largest idle glidein has 1,500 MB; the group's "
            "PartGlideinMinMemory is 2,500 MB." in by_job[f"103.0@{ww.SCHEDD}"])
    # no entry matches: the evidence (the expression, the job's values, the entries tried)
    nowhere = by_job[f"90.0@{ww.SCHEDD}"]
    assert "The job's values: RequestCpus=1 and DESIRED_Sites=NOWHERE." in nowhere
    assert "The entries tried: BROKEN_CE@gfactory_instance@OSG: GLIDEIN_Site=BROKEN;" in nowhere
    assert "getGlideinCpusNum(glidein)" in nowhere


def test_downtime_requested_and_not_requested_each_have_their_sentence():
    def said(reason):
        span = {"name": "job.waiting", "start_ns": int((NOW - 3600) * 1e9), "trace_id": "a" * 32, "span_id": "b" * 16,
                "attributes": {"job.waiting.reason": reason, "job.waiting.state": "current",
                               "job.waiting.reason_entries": ["ENTRY_B@g@f"]}}
        return words.reason_sentence(d.from_waiting_span("1.0@s", "idle", span, now=NOW))

    sentences = {reason: said(reason) for reason in ("downtime", "requested", "not_requested")}
    # a period that began this cycle: not "for 0 s"
    span = {"name": "job.waiting", "start_ns": int((NOW - 5) * 1e9), "attributes": {
        "job.waiting.reason": "downtime", "job.waiting.state": "current", "job.waiting.reason_entries": ["E@g@f"]}}
    assert words.reason_sentence(d.from_waiting_span("1.0@s", "idle", span, now=NOW)) == (
        "E is in downtime: the Frontend requests no glideins there until it ends; your job has waited on it "
        "for less than a minute.")
    assert len(set(sentences.values())) == 3
    assert sentences["downtime"] == ("ENTRY_B is in downtime: the Frontend requests no glideins there until it "
                                     "ends; your job has waited on it for 1 h.")
    assert sentences["requested"].startswith("The Frontend requested glideins for it at ENTRY_B 1 h ago")
    assert sentences["not_requested"].startswith("The Frontend has requested no glideins at ENTRY_B for 1 h")


@pytest.mark.parametrize("seconds,text", [(0, "0 s"), (45, "45 s"), (60, "1 min"), (7800, "2 h 10 min"),
                                          (7200, "2 h"), (273600, "3 d 4 h")])
def test_durations_in_words(seconds, text):
    assert words.duration(seconds) == text


def test_a_malformed_traceparent_is_named_malformed(tmp_path):
    item = d.diagnose(ad(TraceParent='"00-XYZ-0000000000000001-01"'), [], looked=f"the store {tmp_path}", now=NOW)
    assert item.category == d.NO_RECORD and "TraceParent is malformed (00-XYZ-0000000000000001-01)" in item.meaning


def test_a_whole_traceparent_is_taken_as_the_submission(tmp_path, capsys):
    stored_cycles(tmp_path, ww.world(tmp_path))
    assert main(["why", ww.traceparent("LIMIT"), "--store", str(tmp_path / "store"), "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["jobs"]
    assert job["job"] == ww.trace_of("LIMIT") and job["reason"] == "limit"
    assert main(["why", "00-" + "0" * 32 + "-" + "1" * 16 + "-01", "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert "malformed TRACEPARENT" in err and len(err.strip().splitlines()) == 1


def test_with_no_store_and_no_jaeger_it_says_so(tmp_path, capsys):
    (tmp_path / "jobs.ads").write_text(ww.job_ad(5, 0, "QUEUE", ww.traceparent("QUEUE")))
    assert main(["why", str(tmp_path / "jobs.ads"), "--store", str(tmp_path / "nowhere")]) == 0
    out = capsys.readouterr().out
    assert f"Its trace could not be read: no Jaeger given (--jaeger) and no store at {tmp_path / 'nowhere'}" in out
    assert "no job.waiting span" not in out


def test_an_unreachable_jaeger_stops_only_the_answers_that_need_it(tmp_path, capsys):
    import socket
    with socket.socket() as probe:          # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    ads = [ww.job_ad(7, 0, "QUEUE", ww.traceparent("QUEUE"), status=5, HoldReasonCode=34),
           ww.job_ad(7, 1, "QUEUE", ww.traceparent("QUEUE"))]
    (tmp_path / "jobs.ads").write_text("\n".join(ads))
    assert main(["why", str(tmp_path / "jobs.ads"), "--jaeger", url, "--json"]) == 0
    held, idle = json.loads(capsys.readouterr().out)["jobs"]
    assert held["category"] == d.HELD and held["facts"]["hold_code_name"] == "JobOutOfResources"
    assert idle["category"] == d.NO_RECORD and f"its trace could not be read: Jaeger at {url} did not answer" in idle["meaning"]


def test_a_job_id_without_schedd_asks_the_local_schedd(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(tmp_path / "no-condor-config"))
    assert d.parse_job_id("100.0") == (100, 0, None)
    assert main(["why", "100.0", "--store", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "cannot ask the local schedd for job 100.0" in err and len(err.strip().splitlines()) == 1
    assert ".;" not in err                      # the bindings' sentence, then ours


def test_a_mistyped_table_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "jobs.ads").write_text(ww.job_ad(5, 0, "QUEUE", ww.traceparent("QUEUE")))
    assert main(["why", str(tmp_path / "jobs.ads"), "--table", str(tmp_path / "no-table")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == (
        f"glidein-tracing why: --table {tmp_path / 'no-table'}: no such directory (give the glidein table's directory)")


def test_jaegers_array_attributes_are_decoded():
    span = {"attributes": {"job.waiting.reason_entries": '["A_CE@g@f","B_CE@g@f"]', "job.waiting.limits": "[]",
                           "job.waiting.detail": "[not a list"}}
    decoded = sources.decoded_arrays(span)["attributes"]
    assert decoded["job.waiting.reason_entries"] == ["A_CE@g@f", "B_CE@g@f"] and decoded["job.waiting.limits"] == []
    assert decoded["job.waiting.detail"] == "[not a list"


def test_unknown_says_the_match_could_not_be_evaluated():
    span = {"name": "job.waiting", "start_ns": int((NOW - 120) * 1e9), "trace_id": "a" * 32, "span_id": "b" * 16,
            "attributes": {"job.waiting.reason": "unknown", "job.waiting.state": "current",
                           "job.waiting.match_error": "NameError: name 'getGlideinCpusNum' is not defined",
                           "job.waiting.job_values": ["RequestCpus=8"]}}
    item = d.from_waiting_span("1.0@s", "idle", span, now=NOW)
    assert item.reason == "unknown" and item.helps == wr.HELPS_UNKNOWN and item.actor == wr.ACTOR_OPERATORS
    text = words.sentences(item)
    assert ("could not evaluate its group's match expression on the job (NameError: name 'getGlideinCpusNum' is "
            "not defined), so whether any entry can run it is not known") in text
    assert "The job's values: RequestCpus=8." in text and "condor_rm" not in text


def test_another_owners_jobs_with_a_copied_traceparent_do_not_change_the_answer(tmp_path, capsys):
    """Anyone can read a TraceParent with condor_q -l: 50 jobs of another owner that match
    nothing, carrying the victim's TraceParent and lower cluster ids, leave the victim's answer
    as it is, even when their span is the trace's latest."""
    victim = ww.traceparent("QUEUE")
    jobs = [ww.job_ad(10 + n, 0, "NOWHERE", victim, Owner='"mallory"') for n in range(50)]
    jobs += [ww.job_ad(500, 0, "QUEUE", victim)]
    stored_cycles(tmp_path, ww.world(tmp_path, jobs=jobs))
    spans = Store(tmp_path / "store", read_only=True).trace(ww.trace_of("QUEUE"))
    waiting = [s for s in spans if s["name"] == "job.waiting"]
    assert {s["attributes"]["job.owner"] for s in waiting} == {"alice", "mallory"}
    for span in waiting:                      # mallory's span the latest
        if span["attributes"]["job.owner"] == "mallory":
            span["start_ns"] += 10**9
            span["end_ns"] += 10**9
    mine = d.diagnose(parse_old_ads(jobs[-1])[0], spans, now=NOW)
    assert mine.reason == "site_queue" and mine.facts["idle_jobs"] == 1
    # asked by the trace alone: the asker's own jobs; someone else asking is told to give a job
    assert d.diagnose(None, spans, job="t", asker="alice", now=NOW).reason == "site_queue"
    other = d.diagnose(None, spans, job="t", asker="eve", now=NOW)
    assert other.category == d.NO_RECORD and "several owners (alice, mallory)" in other.meaning


def test_a_queue_file_is_read_one_lean_ad_at_a_time(tmp_path):
    """The ads of a file are read one at a time with only the attributes why reads; their trace
    ids are found first (attribute names in any case), and an ad whose TraceParent is no plain
    string still has its own trace read."""
    queue = ww.traceparent("QUEUE")
    ads = [ww.job_ad(1, 0, "QUEUE", queue, Cmd='"/bin/sleep"'),
           ww.job_ad(1, 1, "QUEUE").replace("ClusterId", "clusterid") + f'traceparent  =  "{ww.traceparent("LIMIT")}"\n',
           ww.job_ad(1, 2, "QUEUE") + f'TraceParent = strcat("{queue[:20]}", "{queue[20:]}")\n']
    (tmp_path / "q.ads").write_text("\n".join(ads))
    reader = sources.AdFile(tmp_path / "q.ads")
    assert reader.trace_ids() == {ww.trace_of("QUEUE"), ww.trace_of("LIMIT")}
    read = list(reader)
    assert [a["ProcId"] for a in read] == [0, 1, 2] and "Cmd" not in read[0] and read[0]["Owner"] == "alice"
    assert set(read[0]) <= set(sources.JOB_ATTRIBUTES) and read[2]["TraceParent"] == queue
