"""GlideinWMS's analyze_entries table from the glidein table, and the same SQL on Spark."""

import os
import shutil
import subprocess

import pytest

from glidein_tracing.analysis import entries
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.analysis.stats import aggregate_scans

from tests.support.analysis_helpers import glidein_row, write_rows, write_synth_table

MULT = ((2, 0), (15, 5), (60, 25), (180, 100), (400, 250), (700, 500))   # getMillRange: below -> multiplier


def multiplier(mill: float) -> int:
    """analyze_entries' multiplier of a per-mille value's range (None .. Most, All)."""
    for limit, value in MULT:
        if mill < limit:
            return value
    return 1000 if mill > 998 else 750


def expected(rows: list[dict]) -> dict:
    """analyze_entries' columns for one entry, as the tool computes them from the sums."""
    lasted = sum(r["gwms_lasted_s"] for r in rows)
    n = len(rows)
    return {"strt": 100 * sum(not r["gwms_condor_started"] for r in rows) / n,
            "fval": 100 * sum(r["gwms_lasted_s"] for r in rows if r["waste_validation_mill"] > 998) / lasted,
            "0job": 100 * sum(r["gwms_jobs_nr"] == 0 for r in rows) / n,
            "val": 100 * sum(r["gwms_lasted_s"] * multiplier(r["waste_validation_mill"]) / 1000 for r in rows) / lasted,
            "idle": 100 * sum(r["gwms_lasted_s"] * multiplier(r["waste_idle_mill"]) / 1000 for r in rows) / lasted,
            "wst": 100 * (lasted - sum(r["gwms_jobs_lasted_s"] for r in rows)) / lasted,
            "badp": 100 * (lasted - sum(r["gwms_jobs_goodput_s"] for r in rows)) / lasted,
            "waste": (lasted - sum(r["gwms_jobs_lasted_s"] for r in rows)) / 3600, "time": lasted / 3600,
            "glideins": n}


def waste_table(table) -> list[dict]:
    """The table as the analysis makes it: from the statistics' aggregate of the glideins."""
    con = open_dataset(table).con
    return entries.waste_table(con, aggregate_scans(con)[0])


GWMS = [  # (condor started, lasted, jobs nr, jobs lasted, goodput, waste mills validation/idle)
    (True, 7200, 2, 6000, 5000, 10.0, 150.0), (False, 1500, 0, 0, 0, 1000.0, 0.0),
    (True, 3600, 0, 0, 0, 30.0, 990.0), (True, 10000, 5, 9500, 9500, 1.0, 50.0)]


def test_the_table_follows_glideinwms_definitions(tmp_path):
    rows = []
    for index, (started, lasted, nr, jl, good, val, idle) in enumerate(GWMS):
        row, _ = glidein_row(f"{index:032x}", entry="ENTRY_X" if index < 3 else "ENTRY_Y")
        row.update(gwms_condor_started=started, gwms_lasted_s=lasted, gwms_jobs_nr=nr, gwms_jobs_lasted_s=jl,
                   gwms_jobs_goodput_s=good, waste_validation_mill=val, waste_idle_mill=idle)
        rows.append(row)
    write_rows(tmp_path, "glideins", rows)
    got = {r["entry"]: r for r in waste_table(tmp_path)}
    for entry in ("ENTRY_X", "ENTRY_Y"):
        want = expected([r for r in rows if r["entry"] == entry])
        for column, value in want.items():
            assert got[entry][column] == pytest.approx(value, abs=0.01), (entry, column)
    assert got["ENTRY_X"]["strt"] == pytest.approx(100 / 3, abs=0.01)     # one of three never started HTCondor
    assert list(got) == ["ENTRY_X", "ENTRY_Y"]      # most waste first


def _spark():
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the [spark] extra)")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs a Java runtime (java on PATH or JAVA_HOME)")
    from pyspark.sql import SparkSession
    return pyspark, SparkSession


def _stop_spark(spark) -> None:
    """Stop the session and its JVM: pyspark keeps the JVM gateway for the next session until
    the interpreter exits, which the suite's end counts as a process left behind. The JVM
    leaves when the pipe to its stdin closes (pyspark's java_gateway.launch_gateway)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()
        try:
            proc.wait(timeout=120)      # a bound against a hang only
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_waste_table_query_runs_unchanged_on_spark(tmp_path):
    """The same SQL text on Spark in local mode over the same files gives the same table."""
    _, SparkSession = _spark()
    write_synth_table(tmp_path, glideins=3000, seed=13, period_s=2 * 86400)
    duck = waste_table(tmp_path)
    spark = (SparkSession.builder.master("local[1]").appName("glidein-tracing-test")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        spark.read.option("basePath", str(tmp_path / "glideins")).parquet(str(tmp_path / "glideins")) \
            .createOrReplaceTempView("glideins")
        rows = spark.sql(entries.WASTE_TABLE_SQL).collect()
    finally:
        _stop_spark(spark)
    got = [{c: (round(v, 2) if isinstance(v, float) else v) for c, v in zip(entries.COLUMNS, row)} for row in rows]
    assert len(got) == len(duck) > 1
    for a, b in zip(got, duck):
        assert a["entry"] == b["entry"] and a["glideins"] == b["glideins"]
        for column in entries.COLUMNS[1:-1]:
            assert a[column] == pytest.approx(b[column], abs=0.011), column
