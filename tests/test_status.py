"""`glidein-tracing status`: per entry, glideins queued, held and running now, their ages and
the oldest ones' trace ids, from the forwarder's ledger; --older-than makes it an alert check."""

import json
import subprocess
import sys
import time

from glidein_tracing.exporters.store import JsonLinesStoreExporter
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import FACTORY, SCHEDD, identity, settings_for
from tests.support.otlp_receiver import collector  # noqa: F401 (fixture)

HOUR = 3600.0


def factory_now(tmp_path):
    """Five glideins seen by one forwarder pass: two queued (5 h, 2 h), one held for 1 h, one
    running for 9 h, one ended."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    now = time.time()
    for proc, submitted in ((0, 5), (1, 2), (2, 3), (3, 10), (4, 1)):
        log.submit(300, proc, when=now - submitted * HOUR)
        log.grid_submit(300, proc, when=now - submitted * HOUR + 10)
    log.held(300, 2, "Error connecting to schedd ce.example.org", code=0, when=now - 1 * HOUR)
    log.execute(300, 3, when=now - 9 * HOUR)
    log.execute(300, 4, when=now - 0.9 * HOUR)
    log.terminated(300, 4, when=now - 600)
    ledger = tmp_path / "ledger.sqlite"
    forwarder = build_forwarder(settings_for(layout, schedd=SCHEDD, grace=3 * HOUR),
                                exporter=JsonLinesStoreExporter(tmp_path / "store"), ledger=Ledger(ledger))
    forwarder.run_once()
    forwarder.ledger.close()
    return layout, ledger


def status(ledger, *extra, schedd=("--schedd", SCHEDD)):
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "status", "--state", str(ledger),
                           "--factory", FACTORY, *schedd, *extra], capture_output=True, text=True,
                          timeout=60)


def test_status_lists_queued_held_and_running_glideins_with_ages_and_trace_ids(tmp_path):
    layout, ledger = factory_now(tmp_path)
    done = status(ledger, "--json")
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["entries"]["DEMO_ENTRY"]
    assert {state: row["count"] for state, row in entry.items()} == {"queued": 2, "held": 1, "running": 1}
    queued = entry["queued"]
    assert abs(queued["age_max_s"] - 5 * HOUR) < 120 and abs(queued["age_p50_s"] - 3.5 * HOUR) < 120
    assert [o["trace_id"] for o in queued["oldest"]] == [identity(layout, 300, p).trace_id for p in (0, 1)]
    assert abs(entry["held"]["age_max_s"] - HOUR) < 120
    assert entry["running"]["oldest"][0]["trace_id"] == identity(layout, 300, 3).trace_id
    assert abs(entry["running"]["age_max_s"] - 9 * HOUR) < 120
    assert entry["held"]["oldest"][0]["hold_reason"] == "Error connecting to schedd ce.example.org"
    text = status(ledger).stdout
    assert "DEMO_ENTRY" in text and f"300.0 {identity(layout, 300, 0).trace_id}" in text
    assert "300.2 " in text and "held: 'Error connecting to schedd ce.example.org'" in text
    assert text.splitlines()[-1] == "Total: 4 glideins; 2 queued, 1 held, 1 running"     # as condor_q ends


def test_without_a_schedd_status_shows_no_trace_id_that_cannot_exist(tmp_path):
    layout, ledger = factory_now(tmp_path)
    done = status(ledger, schedd=())
    assert done.returncode == 0, done.stderr
    assert "300.0 (no schedd: no trace id)" in done.stdout
    assert identity(layout, 300, 0).trace_id not in done.stdout
    entry = json.loads(status(ledger, "--json", schedd=()).stdout)["entries"]["DEMO_ENTRY"]
    assert {o["trace_id"] for row in entry.values() for o in row["oldest"]} == {None}


def test_older_than_turns_it_into_an_alert_check(tmp_path):
    _, ledger = factory_now(tmp_path)
    assert status(ledger, "--older-than", "queued=6h").returncode == 0
    over = status(ledger, "--older-than", "queued=4h")
    assert over.returncode == 1 and "DEMO_ENTRY: queued glidein 300.0 for 5.0h (limit 4.0h; 1+ over)" in over.stderr
    assert status(ledger, "--older-than", "held=2h", "--older-than", "running=10h").returncode == 0
    assert status(ledger, "--older-than", "8h").returncode == 1          # every state: the running one
    bad = status(ledger, "--older-than", "stuck=1h")
    assert bad.returncode == 2 and "no state 'stuck'" in bad.stderr


def test_without_a_ledger_it_says_where_it_looked(tmp_path):
    done = status(tmp_path / "none.sqlite")
    assert done.returncode == 2 and "no forwarder ledger at" in done.stderr


def test_status_reads_the_ledger_where_the_forwarder_keeps_it(tmp_path, collector):
    """One config, no `state:`: sending to a collector, the forwarder keeps its ledger beside
    the user's store dir, and status finds it there."""
    import os
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    log.submit(310, 0, when=time.time() - HOUR)
    config = tmp_path / "forwarder.yaml"
    config.write_text(f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{layout.logs}]\nendpoint: {collector}\n")
    env = dict(os.environ, GLIDEIN_TRACING_STORE=str(tmp_path / "data" / "store"))
    forwarded = subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(config),
                                "--no-progress"], env=env, capture_output=True, text=True, timeout=60)
    assert forwarded.returncode == 0, forwarded.stderr
    assert (tmp_path / "data" / "forwarder.sqlite").exists()
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "status", "--config", str(config), "--json"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entries"]["DEMO_ENTRY"]["queued"]["count"] == 1


_EXCLUSIVE_HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("INSERT OR REPLACE INTO counters(name, value) VALUES ('held', 1)")
db.commit()
print("holding", flush=True)
time.sleep(120)
"""


def test_a_ledger_held_in_exclusive_mode_gets_one_line_naming_its_holder(tmp_path):
    """A copy or query of the ledger in SQLite's EXCLUSIVE locking mode holds it until it ends:
    status says so in one line (exit 6), after a short wait, not a traceback after 30 s."""
    _, ledger = factory_now(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", _EXCLUSIVE_HOLDER, str(ledger)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        done = status(ledger)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 6 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"is locked by pid {holder.pid}" in done.stderr and "try again once it lets go" in done.stderr


def test_show_list_names_the_entry_of_glideins_still_running(tmp_path):
    """Their Factory stages went early, their root comes when they end: `show --list` names
    their entry, not "(no root)"."""
    layout, _ = factory_now(tmp_path)
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "show", "--list", "--store", str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    running = lines[identity(layout, 300, 3).trace_id]
    assert running.endswith("glidein DEMO_ENTRY (in flight: no root yet)") and " - " not in running
    assert "(no root)" not in done.stdout and len(lines) == 4       # the four still queued, held or running
