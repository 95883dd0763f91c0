"""glidein-tracing why: a diagnosis per job from its ad (read with classad2 from a file as
`condor_q -l` writes it) and the job.waiting spans the instrumented Frontend stand-in put in
the users' traces (through the real SDK into the embedded store)."""

import json

import pytest

pytest.importorskip("opentelemetry.instrumentation.instrumentor")
pytest.importorskip("classad2")

from glidein_tracing.cli.main import main
from glidein_tracing.core import waiting_reasons as wr
from glidein_tracing.why import diagnosis as d
from glidein_tracing.why import holdcodes
from tests.support import waiting_world as ww
from tests.support.frontend_cycles import stored_cycles


@pytest.fixture
def frontend_store(tmp_path):
    """A Frontend cycle over the world where every reason happens; its spans in a store."""
    store_dir = stored_cycles(tmp_path, ww.world(tmp_path))
    return store_dir


def why(capsys, *argv):
    code = main(["why", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_reason_is_diagnosed_from_the_users_trace(frontend_store, tmp_path, capsys):
    code, out, _ = why(capsys, tmp_path / "jobs.ads", "--store", frontend_store, "--json")
    assert code == 0
    jobs = {j["job"]: j for j in json.loads(out)["jobs"]}
    for number, (site, (reason, _)) in enumerate(ww.SITES.items(), start=100):
        job = jobs[f"{number}.0@{ww.SCHEDD}"]
        assert job["reason"] == reason
        assert job["category"] == wr.BY_VALUE[reason].category
        assert job["evidence"][0]["trace_id"] == ww.trace_of(site)
        assert any(e["span_id"] for e in job["evidence"][1:])      # the Frontend's decision, linked
    assert jobs[f"90.0@{ww.SCHEDD}"]["category"] == wr.NO_GLIDEIN_COULD_EXIST
    queued = jobs[f"100.0@{ww.SCHEDD}"]["facts"]          # how many, since when, for how long
    assert queued["queued_glideins"] == 5 and queued["since"] and queued["for_s"] >= 0
    # does not fit: the job's request against the largest idle glidein's
    fit = jobs[f"{100 + list(ww.SITES).index('SMALL')}.0@{ww.SCHEDD}"]["facts"]["fit"]
    assert fit["memory_mb"] == {"job": 4000, "largest_idle_glidein": 1500, "fits": False}
    assert fit["unusable_idle_glideins"] == {"memory": 2, "retiring": 1}
    # a job without TraceParent: no span, still answered
    assert jobs[f"91.0@{ww.SCHEDD}"]["category"] == d.NO_RECORD
    assert "no TraceParent" in jobs[f"91.0@{ww.SCHEDD}"]["meaning"]


def test_the_summary_counts_jobs_per_reason(frontend_store, tmp_path, capsys):
    code, out, _ = why(capsys, tmp_path / "jobs.ads", "--store", frontend_store)
    assert code == 0
    summary = out[out.index("CATEGORY [REASON]"):].splitlines()[1:]
    rows = {line.split(None, 1)[1]: int(line.split(None, 1)[0]) for line in summary}
    assert rows[f"{wr.WAITING_SITE_QUEUE} [site_queue]"] == 2
    assert rows[f"{wr.NO_GLIDEIN_COULD_EXIST} [no_matching_entry]"] == 1
    assert sum(rows.values()) == 2 * len(ww.SITES) + 2


def test_by_trace_id(frontend_store, capsys):
    code, out, _ = why(capsys, ww.trace_of("LIMIT"), "--store", frontend_store, "--json")
    (job,) = json.loads(out)["jobs"]
    assert code == 0 and job["reason"] == "limit" and job["facts"]["limits"] == ["IdleGlideinsPerEntry"]


def test_a_held_job_gets_its_hold_codes_meaning_and_action(tmp_path, capsys):
    ad = ww.job_ad(7, 0, "QUEUE", status=5, HoldReasonCode=34, HoldReasonSubCode=0,
                   HoldReason='"Job has gone over memory limit of 2048 megabytes."')
    (tmp_path / "held.ad").write_text(ad)
    code, out, _ = why(capsys, tmp_path / "held.ad", "--store", tmp_path / "none", "--json")
    (job,) = json.loads(out)["jobs"]
    assert code == 0 and job["category"] == d.HELD
    assert job["facts"]["hold_code_name"] == "JobOutOfResources"
    assert job["meaning"] == holdcodes.HOLD_CODES[34].meaning and "RequestMemory" in job["action"]
    assert holdcodes.hold_code(999).name == "code 999"


def test_an_evicted_job_vacate_code_says_whose_problem(tmp_path, capsys):
    ads = [ww.job_ad(8, 0, "QUEUE", NumJobStarts=1, VacateReasonCode=1001, VacateReason='"startd went away"'),
           ww.job_ad(8, 1, "QUEUE", NumJobStarts=1, VacateReasonCode=21)]
    (tmp_path / "evicted.ads").write_text("\n".join(ads))
    code, out, _ = why(capsys, tmp_path / "evicted.ads", "--store", tmp_path / "none", "--json")
    jobs = json.loads(out)["jobs"]
    assert [j["category"] for j in jobs] == [d.EVICTED, d.EVICTED]
    assert [j["facts"]["system_problem"] for j in jobs] == [True, False]
    assert "retry may succeed" in jobs[0]["action"]


def test_by_job_id_without_traceparent(tmp_path, capsys, monkeypatch):
    # the schedd cannot run here: its answer is the job's ad, as condor_q -l wrote it
    from glidein_tracing.core.classads import parse_old_ads
    from glidein_tracing.why import sources
    monkeypatch.setattr(sources, "ad_from_schedd",
                        lambda cluster, proc, schedd: (parse_old_ads(ww.job_ad(cluster, proc, "QUEUE"))[0], None,
                                                       "the schedd has no user record of alice"))
    code, out, _ = why(capsys, f"91.0@{ww.SCHEDD}", "--store", tmp_path / "none")
    assert code == 0 and out.startswith("Job 91.0 has been idle for 10 min. It has no TraceParent")
    assert "running-job cap at the schedd was not checked: the schedd has no user record of alice" in out


@pytest.mark.parametrize("argv", [["not-a-job"], ["12.0@"], ["0" * 31], ["12.0@schedd.example.org"]])
def test_wrong_input_gets_one_line_and_exit_2(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CONDOR_CONFIG", str(tmp_path / "no-condor-config"))
    code, out, err = why(capsys, *argv, "--store", tmp_path / "none")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_a_file_that_is_no_job_ad(tmp_path, capsys):
    (tmp_path / "x.ad").write_text("this is [ not a classad\n")
    code, _, err = why(capsys, tmp_path / "x.ad")
    assert code == 2 and "no job ad" in err and len(err.strip().splitlines()) == 1


def test_the_glidein_table_adds_the_entrys_recent_outcomes(frontend_store, tmp_path, capsys):
    import datetime
    import time as _time

    from glidein_tracing.table import writer
    today = _time.strftime("%Y-%m-%d", _time.gmtime())
    old = "2020-01-01"     # outside the last two days: not read
    broken = ww.request_name("BROKEN").split("@")[0]
    ended = datetime.datetime.utcfromtimestamp(_time.time() - 600)
    rows = {today: [{"entry": broken, "outcome": "validation_failed", "ended_at": ended}] * 3
            + [{"entry": broken, "outcome": "ok", "ended_at": ended}],
            old: [{"entry": broken, "outcome": "ok", "ended_at": datetime.datetime(2020, 1, 1, 12)}] * 5}
    writer.write_days(tmp_path / "table", "glideins", rows, "t1")
    code, out, _ = why(capsys, ww.trace_of("BROKEN"), "--store", frontend_store, "--table", tmp_path / "table")
    assert code == 0 and "none joins the pool: they have failed validation" in out
    assert f"glideins at {ww.request_name('BROKEN')} in the last 2 days: ok 1, validation_failed 3" in out
    # one glidein delivered there: too few for an estimate, and the answer says so
    assert "No estimate of when it starts: only 0 glideins at BROKEN_CE in the last 7 days delivered a job" in out


def test_a_submission_whose_jobs_started_is_not_waiting(tmp_path, capsys):
    """The Frontend ended the period (no idle jobs): asked by trace id, why says so."""
    stored_cycles(tmp_path, lambda: ww.world(tmp_path),
                  lambda: ww.world(tmp_path, jobs=[ww.job_ad(106, p, "NEW", ww.traceparent("NEW"), status=2)
                                                   for p in (0, 1)]))
    code, out, _ = why(capsys, ww.trace_of("NEW"), "--store", tmp_path / "store", "--json")
    (job,) = json.loads(out)["jobs"]
    assert code == 0 and job["category"] == d.NOT_WAITING and "no idle job since" in job["meaning"]
    # and what it waited for before, as the Frontend last said it
    assert job["facts"]["waited_for"] in wr.RANK and "the Frontend saw it wait: " in job["meaning"]


def test_an_unreadable_ad_among_good_ones_is_named_and_left_out(tmp_path, capsys):
    (tmp_path / "mixed.ads").write_text(ww.job_ad(5, 0, "QUEUE") + "\nthis is [ not a classad\n\n"
                                        + ww.job_ad(5, 1, "QUEUE"))
    code, out, err = why(capsys, tmp_path / "mixed.ads", "--store", tmp_path / "none", "--json")
    assert code == 0 and len(json.loads(out)["jobs"]) == 2
    assert "1 ads of" in err and "left out" in err
