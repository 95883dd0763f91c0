"""Two forwarders on one Factory tree: the second refuses while the first runs (its ledger's
lock names the holder), so every span reaches the collector exactly once; `status` and `show`,
which only read, work beside a running forwarder and for a user who may not write."""

import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from glidein_tracing.core.errors import EXIT_LEDGER
from glidein_tracing.factory.ledger_lock import lock_path
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein
from tests.support.unprivileged import as_nobody
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)

GLIDEINS = 60
SPANS_A_GLIDEIN = 5   # root, setup, teardown, factory.submit, factory.queue


@pytest.fixture
def tree():
    """A Factory tree in a directory another user may read (for the read-only checks)."""
    root = Path(tempfile.mkdtemp(prefix="gt-two-"))
    root.chmod(0o755)
    layout = FactoryLayout(logs=root / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    for proc in range(GLIDEINS):
        run_glidein(log, layout, 800, proc, T0 + proc, returned_stderr(journal_text(layout, 800, proc, T0 + proc)))
    yield root, layout
    shutil.rmtree(root)


def forward_cmd(layout, ledger, *extra):
    return [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
            "--schedd", SCHEDD, "--state", str(ledger), "--grace", "5", "--no-progress", *extra]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def start_following(cmd, ledger):
    """A forwarder as a service (--follow), returned once it holds the ledger's lock."""
    proc = subprocess.Popen(cmd + ["--follow", "--interval", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock_path(ledger).exists() and f'"pid": {proc.pid}' in lock_path(ledger).read_text():
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the following forwarder never took its lock")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def as_reader(cmd):
    """``cmd`` as a user who may read the tree but write nothing of it (root: drop to nobody)."""
    return as_nobody(cmd)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=clean_env())


def assert_every_span_once(layout):
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    per_trace = collections.Counter(trace for trace, _ in received)
    assert set(per_trace) == {identity(layout, 800, p).trace_id for p in range(GLIDEINS)}
    assert set(per_trace.values()) == {SPANS_A_GLIDEIN}


def test_a_second_forwarder_refuses_naming_the_first_and_status_still_reads(tree, collector):
    root, layout = tree
    ledger = root / "state" / "ledger.sqlite"
    cmd = forward_cmd(layout, ledger, "--endpoint", collector, "--query", collector, "--timeout", "5")
    status = [sys.executable, "-m", "glidein_tracing", "status", "--state", str(ledger), "--factory", FACTORY,
              "--schedd", SCHEDD, "--json"]
    reader_status = as_reader(status)      # before the forwarder starts: it may skip the test
    first = start_following(cmd, ledger)
    try:
        second = run(cmd)
        assert second.returncode == EXIT_LEDGER, second.stderr
        assert (f"another forwarder is running on {ledger}: pid {first.pid} on host {socket.gethostname()} since "
                in second.stderr), second.stderr
        assert "Traceback" not in second.stderr
        for who in (status, reader_status):        # beside the forwarder, and as a read-only user
            done = run(who)
            assert done.returncode == 0 and '"entries"' in done.stdout, done.stderr
    finally:
        stop(first)
    # with no forwarder running (no -shm file beside the ledger), a read-only user still reads
    done = run(reader_status)
    assert done.returncode == 0 and '"entries"' in done.stdout, done.stderr
    # the first one gone (its lock with it), the next one runs
    assert run(cmd).returncode == 0
    assert_every_span_once(layout)


def test_two_forwarders_started_together_send_each_span_once(tree, collector):
    root, layout = tree
    ledger = root / "ledger.sqlite"
    cmd = forward_cmd(layout, ledger, "--endpoint", collector, "--query", collector, "--timeout", "5")
    both = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
            for _ in range(2)]
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in both]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 0], [0, EXIT_LEDGER]), results   # the second ran after the first, or refused
    assert run(cmd).returncode == 0
    assert_every_span_once(layout)


def test_show_reads_a_store_a_forwarder_is_writing_also_as_a_read_only_user(tree):
    root, layout = tree
    store = root / "store"
    cmd = forward_cmd(layout, store / "forwarder.sqlite", "--store", str(store))
    show = as_reader([sys.executable, "-m", "glidein_tracing", "show", "--store", str(store)])  # may skip the test
    first = start_following(cmd, store / "forwarder.sqlite")
    try:
        deadline = time.monotonic() + 120
        listed = None
        while time.monotonic() < deadline:
            listed = run(show + ["--list"])
            if listed.returncode == 0 and len(listed.stdout.splitlines()) == GLIDEINS:
                break
            time.sleep(0.5)
        assert listed.returncode == 0 and len(listed.stdout.splitlines()) == GLIDEINS, listed.stderr
        trace = identity(layout, 800, 0).trace_id
        shown = run(show + [trace])
        assert shown.returncode == 0 and f"trace {trace}  ({SPANS_A_GLIDEIN} spans)" in shown.stdout, shown.stderr
    finally:
        stop(first)
    listed = run(show + ["--list"])
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == GLIDEINS, listed.stderr
