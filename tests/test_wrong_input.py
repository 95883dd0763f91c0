"""An operator's mistakes, each answered with one line and its exit code, and nothing made or
changed by the verbs that only read (show, status, analyze, rules --check, table --check)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glidein_tracing.core.converter import convert
from glidein_tracing.core.errors import EXIT_LEDGER, EXIT_USAGE
from glidein_tracing.core.journal import format_line, parse_lines
from glidein_tracing.exporters.otlp_json import encode_request
from glidein_tracing.exporters.store import JsonLinesStoreExporter

from tests.support.analysis_helpers import write_synth_table
from tests.support.factory_builders import ledger_held_by_another_process
from tests.support.journal_builders import root_lines


def cli(*argv, cwd=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "glidein_tracing", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


def one_line(done, code: int) -> str:
    """The one line a verb answered with, after checking its exit code."""
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr.strip()


def snapshot(directory: Path) -> dict:
    """Every file below ``directory`` with its size and modification time."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*"))}


def glidein(name, start=1000.0):
    lines = root_lines(start, **{"glidein.name": name}) + [format_line(start + 3, "end", "glidein", {})]
    return convert(parse_lines("".join(lines).encode())[0])


@pytest.fixture
def store(tmp_path):
    directory = tmp_path / "store"
    exporter = JsonLinesStoreExporter(directory)
    for name in ("a", "b"):
        exporter.export(glidein(name))
    return directory


def test_show_a_store_that_is_a_typo_is_refused_and_not_made(tmp_path):
    typo = tmp_path / "stroe"
    assert one_line(cli("show", "--store", typo), EXIT_USAGE) == \
        f"glidein-tracing show: no store at {typo}: no such directory"
    assert not typo.exists()


def test_show_list_on_a_directory_that_is_no_store_writes_nothing_into_it(tmp_path):
    other = tmp_path / "etc"
    other.mkdir()
    (other / "hosts").write_text("127.0.0.1 localhost\n")
    before = snapshot(other)
    assert one_line(cli("show", "--list", "--store", other), EXIT_USAGE) == (
        f"glidein-tracing show: {other} is not a store: it holds no traces-*.jsonl files and no index.sqlite")
    assert snapshot(other) == before


def test_show_reads_a_store_without_changing_a_file_even_when_its_index_is_behind(store):
    trace = format(glidein("a")[0].context.trace_id, "032x")
    before = snapshot(store)
    listed = cli("show", "--list", "--store", store)
    shown = cli("show", trace[:8], "--store", store)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2, listed.stderr
    assert shown.returncode == 0 and "glidein" in shown.stdout, shown.stderr
    assert snapshot(store) == before
    # a writer killed after writing a line but before indexing it: the line is read, in
    # memory, and the index on disk is left as it was
    late = glidein("c")
    with open(next(store.glob("traces-*.jsonl")), "a") as handle:
        handle.write(json.dumps(encode_request(late), separators=(",", ":")) + "\n")
    before = snapshot(store)
    listed = cli("show", "--list", "--store", store)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 3, listed.stderr
    assert listed.stderr.strip() == (
        f"glidein-tracing show: the index of {store} is behind its files (a writer stopped before indexing); "
        f"read from the files this time: `glidein-tracing show --reindex --store {store}` saves the index")
    assert snapshot(store) == before


def test_show_html_into_an_unwritable_place_says_so(store, tmp_path):
    trace = format(glidein("a")[0].context.trace_id, "032x")
    target = tmp_path / "no-such-dir" / "t.html"
    assert one_line(cli("show", trace, "--store", store, "--html", target), EXIT_USAGE) == \
        f"glidein-tracing show: cannot write {target}: No such file or directory"
    done = cli("show", trace, "--store", store, "--html", tmp_path / "t.html")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {tmp_path / 't.html'}: trace {trace}, {len(glidein('a'))} spans"


def test_analyze_an_empty_directory_is_refused(tmp_path):
    assert one_line(cli("analyze", tmp_path), EXIT_USAGE) == (
        f"glidein-tracing analyze: {tmp_path} is not a glidein table: it has no glideins/ directory (give the "
        "table's directory, the one holding glideins/ and jobs/)")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    directory = tmp_path_factory.mktemp("table")
    write_synth_table(directory, glideins=200, seed=3, entries=2, period_s=86400)
    return directory


def test_analyze_an_entry_the_table_does_not_hold_is_refused_naming_those_it_holds(table, tmp_path):
    done = cli("analyze", table, "--entry", "NOPE", "--html", tmp_path / "r.html")
    assert one_line(done, EXIT_USAGE) == (
        f"glidein-tracing analyze: no glidein of entry NOPE in {table} (its entries: ENTRY_Alpha_0, ENTRY_Bravo_1)")
    assert done.stdout == "" and not (tmp_path / "r.html").exists()


def test_analyze_refuses_an_unwritable_report_before_the_work_and_says_what_it_wrote(table, tmp_path):
    target = tmp_path / "no-such-dir" / "r.html"
    assert one_line(cli("analyze", table, "--html", target), EXIT_USAGE) == \
        f"glidein-tracing analyze: --html {target}: no directory {target.parent}"
    done = cli("analyze", table, "--html", tmp_path / "r.html", "--json", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"glidein-tracing analyze: wrote {tmp_path / 'r.json'}",
                                        f"glidein-tracing analyze: wrote {tmp_path / 'r.html'}"]
    quiet = cli("analyze", table, "--json", tmp_path / "q.json", "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""


def test_analyze_and_table_check_change_nothing_in_the_table(table, tmp_path):
    before = snapshot(table)
    assert cli("analyze", table, "--quiet").returncode == 0
    assert cli("table", "--table", table, "--check").returncode == 0
    assert snapshot(table) == before
    typo = tmp_path / "tabel"
    assert one_line(cli("table", "--table", typo, "--check"), EXIT_USAGE) == \
        f"glidein-tracing table: {typo}: no such table directory"
    assert not typo.exists()


def test_trace_id_refuses_a_cluster_that_is_not_a_number():
    common = ["trace-id", "--factory", "F", "--name", "v1", "--entry", "E", "--schedd", "s@h", "--proc", "0"]
    assert one_line(cli(*common, "--cluster", "abc"), EXIT_USAGE) == (
        "glidein-tracing trace-id: argument --cluster: not a whole number: 'abc' "
        "(see glidein-tracing trace-id --help)")
    # the id hashes the number's text: 0012 is cluster 12, as HTCondor writes it
    assert cli(*common, "--cluster", "0012").stdout == cli(*common, "--cluster", "12").stdout


def test_export_refuses_a_directory_or_a_fifo_as_its_journal_and_makes_no_store(tmp_path):
    store = tmp_path / "store"
    assert one_line(cli("export", "--journal", tmp_path, "--store", store), EXIT_USAGE) == \
        f"glidein-tracing export: {tmp_path} is a directory, not a file"
    fifo = tmp_path / "journal.gtj"
    os.mkfifo(fifo)
    assert one_line(cli("export", "--journal", fifo, "--store", store, timeout=30), EXIT_USAGE) == \
        f"glidein-tracing export: {fifo} is a FIFO (named pipe), not a file"
    assert one_line(cli("export", "--stderr", "/dev/zero", "--store", store, timeout=30), EXIT_USAGE) == \
        "glidein-tracing export: /dev/zero is a character device, not a file"
    assert not store.exists()


def test_a_locked_ledger_names_the_process_holding_it(tmp_path):
    logs = tmp_path / "logs" / "user_fe" / "glidein_v1" / "entry_E1"
    logs.mkdir(parents=True)
    ledger = tmp_path / "ledger.sqlite"
    argv = ["forward", tmp_path / "logs", "--factory", "F", "--schedd", "s@h", "--store", tmp_path / "store",
            "--state", ledger, "--no-progress", "--table", "none"]
    assert cli(*argv).returncode == 0
    with ledger_held_by_another_process(ledger) as holder:
        line = one_line(cli(*argv), EXIT_LEDGER)
    assert line.startswith(f"glidein-tracing forward: {ledger} is locked by pid {holder.pid} ({sys.executable} -c ")
    assert line.endswith("another forwarder, or a copy or query of the ledger being made; stop it or let it "
                         "finish, then start again")
    assert cli(*argv).returncode == 0    # the holder gone, the forwarder runs
    with sqlite3.connect(ledger) as db:
        assert db.execute("SELECT count(*) FROM counters WHERE name='held'").fetchone() == (0,)


def test_rules_check_refuses_a_fifo_or_a_device_at_once_and_so_do_the_feeds(tmp_path):
    fifo = tmp_path / "rules.yaml"
    os.mkfifo(fifo)
    assert one_line(cli("rules", "--check", fifo, timeout=30), EXIT_USAGE) == \
        f"glidein-tracing rules: {fifo} is a FIFO (named pipe), not a file"
    assert one_line(cli("rules", "--check", "/dev/zero", timeout=30), EXIT_USAGE) == \
        "glidein-tracing rules: /dev/zero is a character device, not a file"
    assert one_line(cli("rules", "--check", tmp_path / "rulez"), EXIT_USAGE) == \
        f"glidein-tracing rules: {tmp_path / 'rulez'}: no such rules file or directory"
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README").write_text("rules go here\n")
    done = cli("rules", "--check", tmp_path / "empty")
    assert done.returncode == 1 and f"{tmp_path / 'empty'}: a directory with no rules file in it (*.yaml or *.yml)" \
        in done.stdout, done.stdout
    from glidein_tracing.failure_rules.downtimes import read_downtimes
    from glidein_tracing.failure_rules.files import parse_file
    assert parse_file(fifo) == ([], [f"{fifo}: cannot read: a FIFO (named pipe), not a file"])
    assert read_downtimes([fifo])[1] == [f"{fifo}: not readable: a FIFO (named pipe), not a file"]


def test_status_reads_the_ledger_without_making_or_changing_a_file(tmp_path):
    (tmp_path / "logs" / "user_fe" / "glidein_v1" / "entry_E1").mkdir(parents=True)
    ledger = tmp_path / "state" / "ledger.sqlite"
    assert cli("forward", tmp_path / "logs", "--factory", "F", "--schedd", "s@h", "--state", ledger,
               "--store", tmp_path / "store", "--no-progress").returncode == 0
    before = snapshot(tmp_path / "state")
    done = cli("status", "--state", ledger, "--factory", "F", "--schedd", "s@h", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["entries"] == {}, done.stderr
    assert snapshot(tmp_path / "state") == before      # no -wal or -shm left behind


def test_a_settings_file_that_is_a_fifo_or_nested_too_deep_is_one_line(tmp_path):
    fifo = tmp_path / "forwarder.yaml"
    os.mkfifo(fifo)
    done = cli("forward", "--check-config", "--config", fifo, timeout=30)
    assert done.returncode == EXIT_USAGE and done.stderr.splitlines() == [
        "glidein-tracing forward: bad configuration:", f"  {fifo}: cannot read: a FIFO (named pipe), not a file"]
    deep = tmp_path / "deep.yaml"
    deep.write_text("factory: F\nredact: " + "[" * 5000 + "]" * 5000 + "\n")
    done = cli("forward", "--check-config", "--config", deep)
    assert done.returncode == EXIT_USAGE and done.stderr.splitlines() == [
        "glidein-tracing forward: bad configuration:", f"  {deep}: nested hundreds of levels deep, not a settings file"]


def test_factory_config_refuses_what_it_cannot_read_with_one_line(tmp_path):
    fifo = tmp_path / "glideinWMS.xml"
    os.mkfifo(fifo)
    assert one_line(cli("factory-config", "--validate", fifo, timeout=30), EXIT_USAGE) == \
        f"glidein-tracing factory-config: {fifo}: cannot read: a FIFO (named pipe), not a file"
    assert one_line(cli("factory-config", "--validate", tmp_path / "nope.xml"), EXIT_USAGE) == \
        f"glidein-tracing factory-config: {tmp_path / 'nope.xml'}: cannot read: No such file or directory"
    assert one_line(cli("factory-config", "--hooks-dir", tmp_path / "hooks"), EXIT_USAGE) == \
        f"glidein-tracing factory-config: --hooks-dir {tmp_path / 'hooks'}: no such directory"
    (tmp_path / "bad.xml").write_text("<glidein>")        # a file that is not XML: a finding, exit 1
    done = cli("factory-config", "--validate", tmp_path / "bad.xml")
    assert done.returncode == 1 and "cannot be read as XML" in done.stdout


def test_a_fifo_in_the_factorys_log_tree_is_left_out_not_waited_on(tmp_path):
    entry = tmp_path / "logs" / "user_fe" / "glidein_v1" / "entry_E1"
    entry.mkdir(parents=True)
    for name in ("condor_activity_1_fe.log", "job.7.0.err", "job.7.0.out"):
        os.mkfifo(entry / name)
    old = time.time() - 86400              # old enough to be adopted as a glidein without events
    os.utime(entry / "job.7.0.err", (old, old))
    done = cli("forward", tmp_path / "logs", "--factory", "F", "--schedd", "s@h", "--store", tmp_path / "store",
               "--state", tmp_path / "ledger.sqlite", "--no-progress", "--grace", "0", timeout=120)
    assert done.returncode == 0, done.stderr
    assert (f"cannot read activity log {entry / 'condor_activity_1_fe.log'}: "
            f"{entry / 'condor_activity_1_fe.log'} is a FIFO (named pipe), not a file") in done.stderr
