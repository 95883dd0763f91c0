"""`forward --check-config` finds what `forward` would refuse at start, before systemd starts
it (and restarts it every 30 s): the shipped forwarder.yaml, log directories, the table, the
glideinWMS.xml, the ledger and its locks. What it passes, the forwarder starts with."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glidein_tracing.core.errors import EXIT_LEDGER, EXIT_USAGE

from tests.support.factory_builders import ledger_held_by_another_process

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "factory_config" / "forwarder.yaml"


def forward(*argv, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def problems_of(done) -> list[str]:
    """The problem lines of a refused configuration (after its heading)."""
    assert done.returncode == EXIT_USAGE and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "glidein-tracing forward: bad configuration:", done.stderr
    return [line.strip() for line in lines[1:]]


GLIDEINWMS_XML = """<glidein factory_name="gfactory_service" glidein_name="v1" schedd_name="schedd_glideins2@factory">
  <entries><entry name="E1" schedd_name="schedd_glideins2@factory"><attrs>
    <attr name="GLIDEIN_Site" value="SITE_1"/></attrs></entry></entries>
</glidein>
"""


def factory_host(root: Path) -> dict:
    """The shipped file's paths, made under ``root``: a client log tree with one entry, a
    glideinWMS.xml, and where the ledger and the table go."""
    logs = root / "client"
    (logs / "user_fe" / "glidein_v1" / "entry_E1").mkdir(parents=True)
    xml = root / "glideinWMS.xml"
    xml.write_text(GLIDEINWMS_XML)
    return {"/var/log/gwms-factory/client": str(logs), "/etc/gwms-factory/glideinWMS.xml": str(xml),
            "/var/lib/glidein-tracing": str(root / "state")}


def shipped_with(root: Path, replacements: dict) -> Path:
    text = SHIPPED.read_text()
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    path = root / "forwarder.yaml"
    path.write_text(text)
    return path


def test_the_shipped_file_names_its_placeholders_and_passes_once_they_are_filled(tmp_path):
    paths = factory_host(tmp_path)
    unfilled = shipped_with(tmp_path, paths)
    assert problems_of(forward("--check-config", "--config", unfilled)) == [
        "endpoint: jaeger.example.org is the example's placeholder (a name reserved for examples, never a real "
        "host): put your collector's URL",
        "query: jaeger.example.org is the example's placeholder (a name reserved for examples, never a real host): "
        "put your Jaeger query's URL"]
    # the forwarder refuses to start with the same lines
    assert problems_of(forward("--config", unfilled, "--no-progress")) == \
        problems_of(forward("--check-config", "--config", unfilled))
    filled = shipped_with(tmp_path, {**paths, "https://jaeger.example.org:4318": "http://127.0.0.1:9",
                                     "https://jaeger.example.org:16686": "http://127.0.0.1:9"})
    done = forward("--check-config", "--config", filled)
    assert done.returncode == 0 and done.stdout.strip() == f"glidein-tracing forward: settings good ({filled})"
    assert not (tmp_path / "state").exists(), "the check made the ledger's directory"


def minimal(root: Path, extra: str = "", logs: Path | None = None) -> Path:
    """A settings file: the store, ``logs`` (default: a tree of one entry directory), and
    ``extra`` lines."""
    if logs is None:
        logs = root / "client"
        (logs / "user_fe" / "glidein_v1" / "entry_E1").mkdir(parents=True, exist_ok=True)
    path = root / "f.yaml"
    path.write_text(f"factory: F\nschedd: s@h\nlogs: [{logs}]\nstore: {root / 'store'}\n"
                    f"state: {root / 'ledger.sqlite'}\ngrace: 5\n" + extra)
    return path


@pytest.mark.parametrize("case", ["missing logs", "no entry directories", "table is a file",
                                  "glideinWMS.xml is a FIFO", "a retention that is no number", "a retention of 1e300 days",
                                  "certificate missing"])
def test_check_config_and_the_forwarder_refuse_the_same_mistake_with_one_line(tmp_path, case):
    if case == "missing logs":
        config = minimal(tmp_path, logs=tmp_path / "clinet")
        expected = f"logs: {tmp_path / 'clinet'}: no such directory"
    elif case == "no entry directories":
        empty = tmp_path / "gwms-factory"
        empty.mkdir()
        config = minimal(tmp_path, logs=empty)
        expected = (f"logs: {empty} holds no Factory entry directory (glidein_<instance>/entry_<entry>/): give the "
                    "Factory's client log directory (e.g. /var/log/gwms-factory/client)")
    elif case == "table is a file":
        (tmp_path / "table").write_text("")
        config = minimal(tmp_path, f"table: {tmp_path / 'table'}\n")
        expected = f"table: {tmp_path / 'table'} is not a directory"
    elif case == "glideinWMS.xml is a FIFO":
        os.mkfifo(tmp_path / "glideinWMS.xml")
        config = minimal(tmp_path, f"factory_config: {tmp_path / 'glideinWMS.xml'}\n")
        expected = f"factory_config: {tmp_path / 'glideinWMS.xml'} is a FIFO (named pipe), not a file"
    elif case == "a retention that is no number":
        xml = tmp_path / "glideinWMS.xml"
        xml.write_text('<glidein><log_retention><job_logs max_days="7 days"/></log_retention><entries/></glidein>')
        config = minimal(tmp_path, f"factory_config: {xml}\n")
        expected = f"factory_config: {xml}: <log_retention><job_logs max_days='7 days'> is not a number of days"
    elif case == "a retention of 1e300 days":
        xml = tmp_path / "glideinWMS.xml"
        xml.write_text('<glidein><log_retention><job_logs max_days="1e300"/></log_retention><entries/></glidein>')
        config = minimal(tmp_path, f"factory_config: {xml}\n")
        expected = f"factory_config: {xml}: <log_retention><job_logs max_days='1e300'> is more than 36525 days (a century)"
    else:
        config = minimal(tmp_path, f"certificate: {tmp_path / 'ca.pem'}\n")
        expected = f"certificate: {tmp_path / 'ca.pem'}: no such file"
    assert problems_of(forward("--check-config", "--config", config)) == [expected]
    assert problems_of(forward("--config", config, "--no-progress", timeout=60)) == [expected]
    assert not (tmp_path / "store").exists() and not (tmp_path / "ledger.sqlite").exists()


def test_what_check_config_passes_the_forwarder_runs_with(tmp_path):
    config = minimal(tmp_path, f"table: {tmp_path / 'table'}\n")
    assert forward("--check-config", "--config", config).returncode == 0
    done = forward("--config", config, "--no-progress")
    assert done.returncode == 0, done.stderr


def test_check_config_names_a_forwarder_running_on_the_ledger_and_a_process_locking_it(tmp_path):
    config = minimal(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    assert forward("--config", config, "--no-progress").returncode == 0
    follower = subprocess.Popen([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(config),
                                 "--follow", "--interval", "3600", "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    try:
        for _ in range(600):
            if (tmp_path / "ledger.sqlite.lock").exists() and \
                    str(follower.pid) in (tmp_path / "ledger.sqlite.lock").read_text():
                break
            assert follower.poll() is None, follower.communicate()
            time.sleep(0.1)
        (line,) = problems_of(forward("--check-config", "--config", config))
        assert re.fullmatch(rf"state: another forwarder is running on {re.escape(str(ledger))}: pid {follower.pid} "
                            r"on host \S+ since [0-9-]+ [0-9:]+ UTC; stop it first", line), line
    finally:
        follower.terminate()
        follower.communicate(timeout=60)
    with ledger_held_by_another_process(ledger) as holder:
        (line,) = problems_of(forward("--check-config", "--config", config))
        assert line.startswith(f"state: {ledger} is locked by pid {holder.pid} ({sys.executable} -c "), line
        started = forward("--config", config, "--no-progress")
        assert started.returncode == EXIT_LEDGER and f"is locked by pid {holder.pid}" in started.stderr
    assert forward("--check-config", "--config", config).returncode == 0


def test_check_config_changes_nothing(tmp_path):
    config = minimal(tmp_path, f"table: {tmp_path / 'table'}\n")
    assert forward("--config", config, "--no-progress").returncode == 0
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    assert forward("--check-config", "--config", config).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before
    shutil.rmtree(tmp_path / "store")
    assert forward("--check-config", "--config", config).returncode == 0
    assert not (tmp_path / "store").exists()
