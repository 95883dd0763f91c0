"""The Factory's own glideinWMS.xml is the one source of its facts (issue 41, item 1; issue 42,
item 1): its name, each entry's schedd, site and whether it traces. Settings that contradict
it are refused; without it the forwarder says what it guesses; a wrong Factory name stops the
pass before anything is written, instead of turning every glidein into a failure for good."""

import os
import sqlite3
import subprocess
import sys

from glidein_tracing.exporters.store import read_store
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein

RPM_NAMES = 'factory_name="{factory}" glidein_name="gfactory_instance"'


def forward(*argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--no-progress", *map(str, argv)],
                          capture_output=True, text=True, timeout=180, env=env)


def factory_tree(tmp_path, glideins=3):
    """A Factory whose ``glideins`` traced glideins of DEMO_ENTRY ended, each with its journal
    naming FACTORY (what glidein_startup.sh was given as -factory)."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gfactory_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    for proc in range(glideins):
        run_glidein(log, layout, 300, proc, T0 + proc, returned_stderr(journal_text(layout, 300, proc, T0 + proc)))
    return layout


def glideinwms_xml(tmp_path, factory=FACTORY, entry_attrs="", global_attrs="", entry="DEMO_ENTRY"):
    xml = tmp_path / "glideinWMS.xml"
    xml.write_text(f'<glidein {RPM_NAMES.format(factory=factory)} schedd_name="{SCHEDD}"><attrs>{global_attrs}</attrs>'
                   f'<entries><entry name="{entry}"><attrs>{entry_attrs}</attrs></entry></entries></glidein>\n')
    return xml


def where(tmp_path):
    return ["--store", tmp_path / "store", "--state", tmp_path / "ledger.sqlite", "--table", tmp_path / "table",
            "--grace", "5"]


def test_a_factory_name_that_contradicts_glideinwms_xml_is_refused_naming_both(tmp_path):
    layout = factory_tree(tmp_path, 1)
    xml = glideinwms_xml(tmp_path, factory="gfactory_service")
    done = forward(layout.logs, "--factory-config", xml, "--factory", "gfactory_instance", *where(tmp_path),
                   "--check-config")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "factory: 'gfactory_instance' (that is its glidein_name, GLIDEIN_Name) contradicts" in done.stderr
    assert "factory_name 'gfactory_service'" in done.stderr
    done = forward(layout.logs, "--factory-config", xml, "--entry-schedd", "DEMO_ENTRY=schedd_other@f",
                   *where(tmp_path), "--check-config")
    assert done.returncode == 2 and f"DEMO_ENTRY='schedd_other@f' contradicts" in done.stderr
    assert f"schedd_name '{SCHEDD}'" in done.stderr, done.stderr
    # glideinWMS.xml alone names the Factory: no `factory:` needed
    done = forward(layout.logs, "--factory-config", xml, *where(tmp_path), "--check-config")
    assert done.returncode == 0 and "guessing" not in done.stderr, done.stderr


def test_a_wrong_factory_name_stops_the_pass_with_both_names_and_writes_nothing(tmp_path):
    layout = factory_tree(tmp_path)
    done = forward(layout.logs, "--factory", "gfactory_instance", "--schedd", SCHEDD, *where(tmp_path),
                   "--check-config")
    assert done.returncode == 2 and f"name the Factory '{FACTORY}', not 'gfactory_instance'" in done.stderr
    done = forward(layout.logs, "--factory", "gfactory_instance", "--schedd", SCHEDD, *where(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"its newest journals all name the Factory '{FACTORY}', not 'gfactory_instance'" in done.stderr
    assert "nothing was written" in done.stderr
    assert read_store(tmp_path / "store") == {}
    assert not list((tmp_path / "table").rglob("*.parquet"))
    if (tmp_path / "ledger.sqlite").exists():
        with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
            assert db.execute("SELECT count(*) FROM glideins").fetchone()[0] == 0
    # the name fixed: every glidein is forwarded, with its journal
    done = forward(layout.logs, "--factory", FACTORY, "--schedd", SCHEDD, *where(tmp_path))
    assert done.returncode == 0, done.stderr
    traces = read_store(tmp_path / "store")
    for proc in range(3):
        stages = {s["attributes"]["glidein.stage"] for s in traces[identity(layout, 300, proc).trace_id]}
        assert {"glidein", "setup", "teardown", "factory.submit"} <= stages


def test_without_glideinwms_xml_the_forwarder_says_what_it_guesses(tmp_path):
    layout = factory_tree(tmp_path, 1)
    done = forward(layout.logs, "--factory", FACTORY, *where(tmp_path), "--check-config")
    assert done.returncode == 0, done.stderr
    guesses = [line for line in done.stderr.splitlines() if "guessing:" in line]
    for words in ("the Factory's name 'gwms_demo_factory' is the settings', not checked",
                  "whether a glidein was asked to trace is guessed", "each entry's site is what its journal says",
                  "log retention is taken to be GlideinWMS's default",
                  "entry DEMO_ENTRY: no schedd known (give --factory-config, or --entry-schedd DEMO_ENTRY=SCHEDD)"):
        assert any(words in line for line in guesses), (words, guesses)
    assert "no config file: /etc/glidein-tracing/forwarder.yaml, the default, is absent" in done.stdout
    # the pass itself warns the same, once, at its start
    done = forward(layout.logs, "--factory", FACTORY, *where(tmp_path))
    assert done.returncode == 0 and "guessing: entry DEMO_ENTRY: no schedd known" in done.stderr, done.stderr


def _one_glidein_with_no_journal(tmp_path, param_list: str):
    """A glidein of DEMO_ENTRY that ended and returned a stdout (cut by its job: ``param_list``
    is all that is left of its PARAM_LIST) and a stderr with no journal section."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gfactory_instance", entry="DEMO_ENTRY")
    run_glidein(CondorGLog(layout), layout, 310, 0, T0, "glidein stderr, no journal\n")
    layout.output(310, 0, "out").write_text(f"Starting glidein_startup.sh\n{param_list}\n")
    return layout


def _outcome(tmp_path, layout, *argv):
    done = forward(layout.logs, *where(tmp_path), *argv)
    assert done.returncode == 0, done.stderr
    (spans,) = read_store(tmp_path / "store").values()
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    return root["attributes"]["glidein.outcome"], done.stderr


def test_the_factorys_config_not_the_nodes_stdout_says_whether_a_glidein_was_asked_to_trace(tmp_path):
    # the entry traces (its global attr): a stdout cut before PARAM_LIST cannot make it untraced
    layout = _one_glidein_with_no_journal(tmp_path, "PARAM_LIST GLIDEIN_Client")
    xml = glideinwms_xml(tmp_path, global_attrs='<attr name="GLIDEIN_USE_TRACING" value="1"/>')
    assert _outcome(tmp_path, layout, "--factory-config", xml)[0] == "no_glidein_output"


def test_an_entry_that_turns_tracing_off_over_the_global_attr_is_untraced(tmp_path):
    layout = _one_glidein_with_no_journal(tmp_path, "PARAM_LIST GLIDEIN_Client,GLIDEIN_USE_TRACING")
    xml = glideinwms_xml(tmp_path, global_attrs='<attr name="GLIDEIN_USE_TRACING" value="1"/>',
                         entry_attrs='<attr name="GLIDEIN_USE_TRACING" value=""/>')
    assert _outcome(tmp_path, layout, "--factory-config", xml)[0] == "untraced"


def test_without_glideinwms_xml_tracing_is_guessed_from_the_stdout_and_said(tmp_path):
    layout = _one_glidein_with_no_journal(tmp_path, "PARAM_LIST GLIDEIN_Client")
    outcome, stderr = _outcome(tmp_path, layout, "--factory", FACTORY, "--schedd", SCHEDD)
    assert outcome == "untraced" and "guessing: no glideinWMS.xml: whether a glidein was asked to trace" in stderr


def test_glideins_recorded_under_a_wrong_name_are_forwarded_again_once_fixed_each_span_once(tmp_path):
    """Wrong name, redo, right name: glideins of an entry that returned no journal (nothing
    shows the name is wrong) went under the wrong Factory's trace ids; `--redo` with the right
    name sends them under the right ones, each span once, and a second redo sends nothing."""
    from glidein_tracing.core.ids import GlideinIdentity
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gfactory_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    for proc in range(3):
        run_glidein(log, layout, 320, proc, T0 + proc, "no journal here\n")
    done = forward(layout.logs, "--factory", "gfactory_instance", "--schedd", SCHEDD, *where(tmp_path))
    assert done.returncode == 0, done.stderr
    wrong = {GlideinIdentity("gfactory_instance", layout.instance, layout.entry, SCHEDD, "320", str(p)).trace_id
             for p in range(3)}
    assert set(read_store(tmp_path / "store")) == wrong
    redo = ["--redo", "DEMO_ENTRY", "--since", "2026-01-01", "--until", "2030-01-01"]
    done = forward(layout.logs, "--factory", FACTORY, "--schedd", SCHEDD, *where(tmp_path), *redo)
    assert done.returncode == 0 and "3 glideins of DEMO_ENTRY to forward again" in done.stderr, done.stderr
    traces = read_store(tmp_path / "store")
    right = {identity(layout, 320, p).trace_id for p in range(3)}
    assert set(traces) == wrong | right
    for trace in right:
        span_ids = [s["spanId"] if "spanId" in s else s["span_id"] for s in traces[trace]]
        assert len(span_ids) == len(set(span_ids)) and {"glidein", "factory.submit", "factory.queue"} <= \
            {s["attributes"]["glidein.stage"] for s in traces[trace]}
    before = {t: len(spans) for t, spans in traces.items()}
    done = forward(layout.logs, "--factory", FACTORY, "--schedd", SCHEDD, *where(tmp_path), *redo)
    assert done.returncode == 0 and "3 glideins of DEMO_ENTRY to forward again" in done.stderr
    assert {t: len(spans) for t, spans in read_store(tmp_path / "store").items()} == before
    # a redo with no time range, or towards a collector with no query API to ask, is refused
    assert forward(layout.logs, "--factory", FACTORY, *where(tmp_path), "--redo", "DEMO_ENTRY").returncode == 2
    done = forward(layout.logs, "--factory", FACTORY, "--state", tmp_path / "ledger.sqlite", "--endpoint",
                   "http://127.0.0.1:9", *redo)
    assert done.returncode == 2 and "only with --query" in done.stderr


def test_a_forwarder_that_keeps_running_follows_a_factory_reconfig(tmp_path, caplog):
    """An operator turns tracing on for an entry with a Factory reconfig while the forwarder
    runs (--follow): the glideins submitted after it are judged by the new glideinWMS.xml, not
    by the one read at start, and those submitted before, still in flight, by the old one. One
    caught mid-write is said once and the facts read before are kept."""
    import logging
    import time

    from glidein_tracing.exporters.store import JsonLinesStoreExporter
    from glidein_tracing.factory.build import build_forwarder
    from glidein_tracing.factory.ledger import Ledger
    from tests.support.factory_builders import settings_for

    layout = FactoryLayout(logs=tmp_path / "logs", instance="gfactory_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    xml = glideinwms_xml(tmp_path)                                        # DEMO_ENTRY does not trace
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, factory=None, schedd=SCHEDD, grace=1, factory_config=str(xml)),
                                exporter=JsonLinesStoreExporter(store), ledger=Ledger(tmp_path / "ledger.sqlite"))

    def outcome_of(cluster, submitted):
        """A glidein of DEMO_ENTRY submitted at ``submitted`` that ended with no journal."""
        run_glidein(log, layout, cluster, 0, submitted + 120, "glidein stderr, no journal\n")
        layout.output(cluster, 0, "out").write_text("Starting glidein_startup.sh\nPARAM_LIST GLIDEIN_Client\n")
        assert forwarder.run_once().glideins_done == 1
        (root,) = [s for s in read_store(store)[identity(layout, cluster, 0).trace_id]
                   if s["attributes"]["glidein.stage"] == "glidein"]
        return root["attributes"]["glidein.outcome"]

    before = time.time() - 600
    assert outcome_of(330, before) == "untraced"
    with caplog.at_level(logging.INFO, logger="glidein_tracing.forward"):
        glideinwms_xml(tmp_path, entry_attrs='<attr name="GLIDEIN_USE_TRACING" value="1"/>')   # the reconfig
        after = time.time() + 5
        assert outcome_of(331, after) == "no_glidein_output"   # asked to trace now: no journal is a failure
        assert "the Factory's facts read again (1 entries, tracing: DEMO_ENTRY)" in caplog.text
        assert outcome_of(332, before + 1) == "untraced"       # in flight at the reconfig: asked before it
        caplog.clear()
        xml.write_text(xml.read_text()[:40])                               # caught mid-write
        assert outcome_of(333, after + 1) == "no_glidein_output" and outcome_of(334, after + 2) == "no_glidein_output"
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "changed but cannot be used" in warnings[0], warnings
