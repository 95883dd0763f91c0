"""Errors a production Factory meets, each one clear message with its own exit code and
nothing lost: a full disk under the store, a damaged or empty ledger, a config file that is
not text, a closed stdout (`| head`)."""

import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from glidein_tracing.core.errors import EXIT_CLOSED_PIPE, EXIT_LEDGER, EXIT_NO_SPACE, EXIT_USAGE
from glidein_tracing.exporters.store import iter_store
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.analysis_helpers import write_synth_store, write_synth_table
from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein

SPANS_A_GLIDEIN = 5   # root, setup, teardown, factory.submit, factory.queue


def factory_tree(root: Path, glideins: int) -> FactoryLayout:
    layout = FactoryLayout(logs=root / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    for proc in range(glideins):
        run_glidein(log, layout, 700, proc, T0 + proc, returned_stderr(journal_text(layout, 700, proc, T0 + proc)))
    return layout


def forward(layout, store: Path, *extra, state=None):
    cmd = [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
           "--schedd", SCHEDD, "--store", str(store), "--grace", "5", "--no-progress", *extra]
    if state:
        cmd += ["--state", str(state)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def stored_span_counts(store: Path) -> collections.Counter:
    return collections.Counter((s["trace_id"], s["span_id"]) for s in iter_store(store))


@contextlib.contextmanager
def small_tmpfs(size: str):
    """A tmpfs of ``size`` mounted for the block (root only), its mount point yielded."""
    point = Path(tempfile.mkdtemp(prefix="gt-full-"))
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True).returncode == 0
    if not mounted:
        point.rmdir()
        pytest.skip("needs to mount a small tmpfs (root, and a kernel that lets it)")
    try:
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=False)
        point.rmdir()


def test_a_full_disk_under_the_store_says_so_loses_nothing_and_the_next_pass_works(tmp_path):
    glideins = 300
    layout = factory_tree(tmp_path, glideins)
    with small_tmpfs("256k") as disk:
        store = disk / "store"
        full = forward(layout, store)
        assert full.returncode == EXIT_NO_SPACE, full.stderr
        assert "no space left on device" in full.stderr and "nothing was lost" in full.stderr
        assert "Traceback" not in full.stderr and "rollback" not in full.stderr
        again = forward(layout, store)           # still full: the same message, not another error
        assert again.returncode == EXIT_NO_SPACE and "Traceback" not in again.stderr, again.stderr
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        done = forward(layout, store)
        assert done.returncode == 0, done.stderr
        counts = stored_span_counts(store)
    assert max(counts.values()) == 1, "a span stored twice"
    per_trace = collections.Counter(trace for trace, _ in counts)
    assert set(per_trace) == {identity(layout, 700, p).trace_id for p in range(glideins)}
    assert set(per_trace.values()) == {SPANS_A_GLIDEIN}


@pytest.mark.parametrize("damage", ["empty", "garbage", "other_database"])
def test_an_empty_or_damaged_ledger_is_refused_not_taken_for_a_fresh_start(tmp_path, damage):
    layout = factory_tree(tmp_path, 3)
    store, state = tmp_path / "store", tmp_path / "ledger.sqlite"
    assert forward(layout, store, state=state).returncode == 0
    before = stored_span_counts(store)
    if damage == "empty":
        state.write_bytes(b"")
        words = "is empty, not a forwarder ledger"
    elif damage == "garbage":
        state.write_bytes(os.urandom(8192))
        words = "is damaged"
    else:
        import sqlite3
        state.unlink()
        db = sqlite3.connect(state)
        db.execute("CREATE TABLE notes (x)")
        db.commit()
        db.close()
        words = "is an SQLite database but not a forwarder ledger"
    for verb in (forward(layout, store, state=state),
                 subprocess.run([sys.executable, "-m", "glidein_tracing", "status", "--state", str(state),
                                 "--factory", FACTORY, "--schedd", SCHEDD], capture_output=True, text=True)):
        assert verb.returncode == EXIT_LEDGER, verb.stderr
        assert f"{state} {words}" in verb.stderr and "Traceback" not in verb.stderr
    assert "would be sent again" in verb.stderr
    assert stored_span_counts(store) == before      # nothing was sent again


def test_a_binary_config_file_is_named_not_a_traceback(tmp_path):
    config = tmp_path / "forwarder.yaml"
    config.write_bytes(b"\x7fELF\x02\x01\x01\x00" + os.urandom(512))
    for verb in ("forward", "status"):
        done = subprocess.run([sys.executable, "-m", "glidein_tracing", verb, "--config", str(config),
                               "--factory", "f"], capture_output=True, text=True)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert f"{config}: not a text file (binary data)" in done.stderr and "Traceback" not in done.stderr


def run_with_closed_stdout(argv):
    """Run the CLI with a stdout whose reader has already gone (`| head` that exited)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "glidein_tracing", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)


def test_a_closed_stdout_ends_quietly_and_files_asked_for_are_written(tmp_path):
    store = tmp_path / "store"
    write_synth_store(store, glideins=40, seed=5)
    listed = run_with_closed_stdout(["show", "--store", str(store), "--list"])
    assert listed.returncode == EXIT_CLOSED_PIPE and listed.stderr == ""
    html, out_json = tmp_path / "report.html", tmp_path / "report.json"
    write_synth_table(tmp_path / "table", glideins=40, seed=5)
    analyzed = run_with_closed_stdout(["analyze", str(tmp_path / "table"), "--html", str(html),
                                       "--json", str(out_json)])
    assert analyzed.returncode == EXIT_CLOSED_PIPE and analyzed.stderr == ""
    assert html.read_text().rstrip().endswith("</html>")
    assert json.loads(out_json.read_text())["stats"]["glideins"] == 40
