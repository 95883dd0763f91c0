"""Live export from the node and the Factory forwarder together: every span once.

A simulated glidein (real hooks) exports live (modes ``both`` and ``live``), then the Factory
forwarder reads its returned stderr and the activity log. The collector must receive each
span exactly once: the node's stages from the node, the root and the Factory's stages from
the forwarder.
"""

import os
import sys

import pytest

from glidein_tracing.core.sections import JOURNAL_SECTION
from glidein_tracing.core import ids
from glidein_tracing.core.converter import convert
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.exporters.otlp import make_otlp_exporter
from glidein_tracing.core.ids import GlideinIdentity
from glidein_tracing.core.journal import parse_lines
from glidein_tracing.simulator import Job, Scenario, simulate_glidein
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import settings_for
from tests.support.otlp_receiver import CountingCollector, collector  # noqa: F401 (fixture)

USER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def run_through_factory(tmp_path, scenario):
    layout = FactoryLayout(logs=tmp_path / "logs", instance=scenario.name, entry=scenario.entry, utc_iso=True)
    log = CondorGLog(layout)
    log.submit(scenario.cluster, scenario.proc)
    log.grid_submit(scenario.cluster, scenario.proc)
    log.execute(scenario.cluster, scenario.proc)
    result = simulate_glidein(tmp_path / "glidein", scenario)
    log.return_outputs(scenario.cluster, scenario.proc, result.stdout_path, result.stderr_path)
    log.terminated(scenario.cluster, scenario.proc, result.exit_code or 0)
    return layout, result


def forward_once(tmp_path, layout, scenario, collector, **kwargs):
    """One pass of the Factory forwarder over the returned outputs, into ``collector``."""
    forwarder = build_forwarder(settings_for(layout, factory=scenario.factory, grace=0),
                                exporter=make_otlp_exporter(collector, 5), ledger=Ledger(tmp_path / "l.sqlite"),
                                settle_s=0, **kwargs)
    return forwarder.run_once()


@pytest.mark.parametrize("mode,fail", [("both", False), ("both", True), ("live", False)],
                         ids=["ok", "validation_failure", "mode_live"])
def test_node_live_export_and_forwarder_deliver_each_span_once(tmp_path, collector, mode, fail):
    """Each span id reaches the collector once, so with one content: in both modes the root
    comes from the forwarder only (it starts at submission, which only the Factory knows)."""
    scenario = Scenario(jobs=[Job(duration_s=0.3, traceparent=USER), Job(duration_s=0.3)],
                        fail_script=("check_wn_drainstate.sh", "WN_Resource") if fail else None,
                        fail_sleep_s=0.2,
                        knobs={"GLIDEIN_TRACING_EXPORT_MODE": mode, "GLIDEIN_TRACING_ENDPOINT": collector,
                               "GLIDEIN_TRACING_PYTHON": sys.executable,
                               "GLIDEIN_TRACING_SAMPLE_PERIOD": "1"})
    layout, result = run_through_factory(tmp_path, scenario)
    assert result.exit_code == (1 if fail else 0)
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    live = list(CountingCollector.received)
    assert live, "the node exported nothing live: " + result.stderr()[-2000:]
    assert all(t in (trace, USER.split("-")[1]) for t, _ in live)
    stats = forward_once(tmp_path, layout, scenario, collector)
    assert stats.export_failures == 0 and stats.spans_already_live == len(live)
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    # everything the journal + activity log describe arrived, and nothing else
    (section,) = [v for k, v in result.sections().items() if k == JOURNAL_SECTION]
    events, _ = parse_lines(section)
    expected_glidein_spans = {format(s.context.span_id, "016x") for s in convert(events)}
    got = {s for t, s in received}
    assert expected_glidein_spans <= got
    # from the forwarder: the root, the Factory's stages and the user's job.wait (it needs the
    # glidein's queue time at the site), nothing the node sent; after a validation failure also
    # the post-failure sleep when the Factory saw the glidein end later than its teardown (how
    # much later depends on the machine's load, so it may or may not be there)
    from_forwarder = set(received) - set(live)
    factory_side = {(trace, ids.span_id(trace, key)) for key in ("glidein", "factory.submit", "factory.queue")}
    sleep = {(trace, ids.span_id(trace, "post_failure_sleep"))} if fail else set()
    user_trace = USER.split("-")[1]
    waits = {(user_trace, ids.span_id(user_trace, f"glidein/{trace}/{e.key}/wait"))
             for e in events if e.op == "start" and e.key.startswith("job/")}
    assert factory_side <= from_forwarder <= factory_side | sleep | waits


def test_unreachable_endpoint_loses_nothing_and_changes_nothing(tmp_path, collector):
    """What the user relies on, whichever bound cuts the export first (the request's timeout or
    GLIDEIN_TRACING_EXPORT_TIMEOUT: that depends on the machine's load): the glidein's exit
    code is unchanged, and every span reaches the collector through the Factory forwarder."""
    import socket
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(8)  # accepts, never answers: the export step is cut at its bound
    try:
        scenario = Scenario(jobs=[Job(duration_s=0.2)], knobs={
            "GLIDEIN_TRACING_EXPORT_MODE": "live", "GLIDEIN_TRACING_EXPORT_TIMEOUT": "2",
            "GLIDEIN_TRACING_ENDPOINT": f"http://127.0.0.1:{sink.getsockname()[1]}",
            "GLIDEIN_TRACING_PYTHON": sys.executable})
        layout, result = run_through_factory(tmp_path, scenario)
    finally:
        sink.close()
    assert result.exit_code == 0
    journal = result.journal_from_stderr()
    assert journal and b"\texport\t-\t@state=sent" not in journal   # the node sent nothing for sure
    stats = forward_once(tmp_path, layout, scenario, collector)
    assert stats.export_failures == 0
    events, _ = parse_lines(journal)
    expected = {format(s.context.span_id, "016x") for s in convert(events)}
    received = CountingCollector.received
    assert len(received) == len(set(received)), "a span arrived twice"
    assert expected <= {s for _, s in received}, "a span was lost"


def forward_cli(tmp_path, layout, scenario, collector, env_extra=None, timeout_s="3"):
    """The real forward command over the returned outputs, reconciling with the collector;
    each glidein its own export (batch_spans 1), so a crash falls between glideins too."""
    import os
    import subprocess
    config = tmp_path / "forwarder.yaml"
    config.write_text("batch_spans: 1\n")
    return subprocess.run(
        [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", scenario.factory,
         "--schedd", scenario.schedd, "--endpoint", collector, "--query", collector, "--state",
         str(tmp_path / "ledger.sqlite"), "--table", "none", "--grace", "0", "--config", str(config),
         "--no-progress", "--timeout", timeout_s],
        env=dict(os.environ, **(env_extra or {})), capture_output=True, text=True, timeout=120)


PHASED_JOB = '''"$GLIDEIN_TRACING_PHASE" unpack -- sleep 0.1
"$GLIDEIN_TRACING_PHASE" reco -- sleep 0.1
'''


@pytest.fixture
def two_glideins_with_users_jobs(tmp_path):
    """Two glideins (real hooks) each running a job of one user's trace with two phases:
    their spans are in the glideins' traces and in the user's."""
    layouts = []
    for proc in (0, 1):
        scenario = Scenario(proc=proc, jobs=[Job(script=PHASED_JOB, traceparent=USER)])
        layout, result = run_through_factory(tmp_path / f"g{proc}", scenario)
        assert result.exit_code == 0, result.stderr()[-2000:]
        layouts.append(layout)
    logs = tmp_path / "logs"          # one Factory's client log tree holding both
    for layout in layouts:
        for path in layout.logs.rglob("*"):
            if path.is_file():
                target = logs / path.relative_to(layout.logs)
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "ab") as out:
                    out.write(path.read_bytes())
                os.utime(target, (path.stat().st_atime, path.stat().st_mtime))
    return FactoryLayout(logs=logs, instance=scenario.name, entry=scenario.entry, utc_iso=True), scenario


def _users_spans(received):
    return [(t, s) for t, s in received if t == USER.split("-")[1]]


@pytest.mark.parametrize("points", [("after_export",), ("after_mark_sending",), ("after_mark_sending", "after_export")])
def test_a_forwarder_killed_at_each_crash_point_sends_each_span_of_the_users_trace_once(
        tmp_path, collector, two_glideins_with_users_jobs, points):
    """Issue 33: reconciling after a crash asked the backend about the glidein's own trace
    only, so the spans it puts in users' traces (job on glidein, job.wait, phases) came twice."""
    layout, scenario = two_glideins_with_users_jobs
    for point in points:
        crashed = forward_cli(tmp_path, layout, scenario, collector, {"GLIDEIN_TRACING_CRASH_AT": point})
        assert crashed.returncode == -9, crashed.stderr
    finished = forward_cli(tmp_path, layout, scenario, collector)
    assert finished.returncode == 0, finished.stderr
    assert forward_cli(tmp_path, layout, scenario, collector).returncode == 0
    received = CountingCollector.received
    users = _users_spans(received)
    names = sorted(CountingCollector.arrived[key][1].name for key in set(users))
    assert names.count("job on glidein") == 2 and names.count("job.wait") == 2
    assert names.count("unpack") == names.count("reco") == 2          # both jobs' phases
    assert len(users) == len(set(users)), "a span of the user's trace arrived twice"
    assert len(received) == len(set(received)), "a span arrived twice"


def test_an_export_that_timed_out_after_arriving_is_not_sent_again_in_any_trace(
        tmp_path, collector, two_glideins_with_users_jobs):
    layout, scenario = two_glideins_with_users_jobs
    CountingCollector.answer_after_s = 3.0            # takes the spans, answers after the timeout
    timed_out = forward_cli(tmp_path, layout, scenario, collector, timeout_s="1")
    assert timed_out.returncode == 1 and "timed out" in timed_out.stderr
    assert _users_spans(CountingCollector.received), "nothing of the user's trace arrived"
    CountingCollector.answer_after_s = 0.0
    finished = forward_cli(tmp_path, layout, scenario, collector)
    assert finished.returncode == 0, finished.stderr
    received = CountingCollector.received
    assert len(_users_spans(received)) == len(set(_users_spans(received))) > 0
    assert len(received) == len(set(received)), "a span arrived twice"
