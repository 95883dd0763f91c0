"""When will my job start (glidein_tracing/why/estimate.py): the 80 % interval from the glidein
table's history at the entries, read with DuckDB from Parquet files the synthetic generator and
the table's own writer write; "no estimate" with its reason when the data are too thin."""

import datetime
import json
import re
import time

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("numpy")

from glidein_tracing.testing.synth import SynthConfig, entry_profiles
from glidein_tracing.testing.synth_table import write_table
from glidein_tracing.why import diagnosis as d
from glidein_tracing.why.estimate import Estimator

DAY = 86400.0


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    cfg = SynthConfig(glideins=6000, seed=3, period_s=9 * DAY)
    table = tmp_path_factory.mktemp("synth")
    write_table(cfg, table)
    return cfg, table


def test_the_interval_comes_from_the_entrys_history(synth):
    cfg, table = synth
    profile = entry_profiles(cfg)[0]
    estimate = Estimator(table, now=cfg.start + 8 * DAY).estimate((profile.name,))
    assert estimate["interval"] == 80 and estimate["days"] == 7
    assert 0 <= estimate["low_s"] < estimate["median_s"] < estimate["high_s"]
    assert estimate["delivered"] >= 30 and estimate["glideins"] == estimate["delivered"] + estimate["failed"]
    # the planted queue waits are what the history shows
    assert estimate["queue_wait_median_s"] == pytest.approx(profile.queue_median_s, rel=0.3)
    # a job that has already waited: the time left, not the whole wait
    later = Estimator(table, now=cfg.start + 8 * DAY).estimate((profile.name,), waited=estimate["median_s"])
    assert later["high_s"] < estimate["high_s"] + estimate["median_s"] and later["waited_s"] == estimate["median_s"]


def test_no_estimate_when_the_data_are_thin(synth):
    cfg, table = synth
    estimator = Estimator(table, now=cfg.start + 8 * DAY)
    none = estimator.estimate(("NO_SUCH_CE",))
    assert none["why_none"] == "only 0 glideins at NO_SUCH_CE in the last 7 days delivered a job (30 needed)"
    name = entry_profiles(cfg)[0].name
    waited_long = estimator.estimate((name,), waited=30 * DAY)
    assert waited_long["why_none"].startswith("it has waited 30 d, longer than 100 % of the starts at " + name)
    # before the table's first day: nothing of the last 7 days
    early = Estimator(table, now=cfg.start).estimate((name,))
    assert re.fullmatch(r"the glidein table holds no glidein that ended in the last 7 days \(its glideins ended "
                        r"from \d{4}-\d\d-\d\d \d\d:\d\d to \d{4}-\d\d-\d\d \d\d:\d\d UTC\)", early["why_none"])
    # a table that cannot be read is said so
    assert "the glidein table cannot be read" in Estimator(table / "nothing-here", now=cfg.start).estimate(
        (name,))["why_none"]


def test_reasons_that_wait_for_no_glidein_get_no_estimate(synth):
    cfg, table = synth
    estimator = Estimator(table, now=cfg.start + 8 * DAY)
    nowhere = d.Diagnosis("1.0@s", "idle", "x", "m", "a", reason="no_matching_entry")
    assert estimator.for_diagnosis(nowhere) == {"why_none": "no entry matches the job, so no glidein will come"}
    assert estimator.for_diagnosis(d.Diagnosis("1.0@s", "held", d.HELD, "m", "a")) is None
    queued = d.Diagnosis("1.0@s", "idle", "x", "m", "a", reason="site_queue",
                         facts={"reason_entries": [entry_profiles(cfg)[1].name + "@g@f"], "for_s": 0})
    assert estimator.for_diagnosis(queued)["entries"] == [entry_profiles(cfg)[1].name]


def test_why_with_the_table_says_when(tmp_path, capsys):
    """`why --table`: the estimate in the answer's words and in --json, from rows the table's
    writer wrote for the entry the Frontend named."""
    pytest.importorskip("opentelemetry.instrumentation.instrumentor")
    pytest.importorskip("classad2")
    from glidein_tracing.cli.main import main
    from glidein_tracing.table import writer
    from tests.support import waiting_world as ww
    from tests.support.frontend_cycles import stored_cycles

    stored_cycles(tmp_path, ww.world(tmp_path))
    now = time.time()
    rows = []
    for n in range(40):       # 40 glideins at QUEUE_CE: their first job 10 to 49 min after submission
        submitted = datetime.datetime.utcfromtimestamp(now - 3 * 3600 - n * 60)
        rows.append({"entry": "QUEUE_CE", "outcome": "ok", "jobs": 1, "failed": False, "submitted_at": submitted,
                     "job_started_at": [submitted + datetime.timedelta(minutes=10 + n)],
                     "ended_at": submitted + datetime.timedelta(hours=2)})
    writer.write_days(tmp_path / "table", "glideins", {time.strftime("%Y-%m-%d", time.gmtime(now)): rows}, "t1")
    argv = ["why", ww.trace_of("QUEUE"), "--store", str(tmp_path / "store"), "--table", str(tmp_path / "table")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    said = re.search(r"It will likely start between (\d+) min and (\d+) min from now \(80 % interval, from 40 "
                     r"glideins at QUEUE_CE in the last 7 days\)\.", out)
    assert said and 10 <= int(said.group(1)) < int(said.group(2)) <= 49
    assert main(argv + ["--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["jobs"]
    assert job["estimate"]["delivered"] == 40 and job["estimate"]["low_s"] < job["estimate"]["high_s"]
    assert "It will likely start" in job["text"]

