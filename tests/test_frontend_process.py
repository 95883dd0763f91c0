"""frontend_hooks in a real group process, loaded the ways docs/frontend.md describes.

GlideinWMS (frontend/glideinFrontend.py, ``spawn_group``) starts every group, every cycle, as
``python glideinFrontendElement.py PPID WORK_DIR GROUP ACTION``: the class is defined in
``__main__`` after sitecustomize has run. Here the stand-ins (tests/frontend_standin*.py, the element one
mirrors glideinFrontendElement.py's ``__main__`` block) are laid out as the real package and the
element file is run the same way, and instrumented (1) by a sitecustomize that calls ``instrument()`` and
(2) by ``opentelemetry-instrument`` through the ``opentelemetry_instrumentor`` entry point that
setup.cfg declares.
"""

import configparser
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


# frontend_hooks needs opentelemetry-instrumentation (and its wrapt); until setup.cfg's
# install_requires lists it, a plain `pip install -e .[test]` skips these tests.
pytest.importorskip("opentelemetry.instrumentation.instrumentor")

from frontend_hooks import REQUEST_TRACEPARENT_PARAM  # noqa: F401  (the package must import)
from frontend_hooks import conventions as c
from glidein_tracing.core.ids import parse_traceparent
from glidein_tracing.failure_rules.classifiers import installed_entry_points
from tests.support import frontend_package, install
from tests.support.otlp_receiver import CountingCollector, counting_collector

ROOT = Path(__file__).resolve().parent.parent
WORLD = [
    {"glideid": ["gfactory.example.org", f"E{i}@gfactory_instance@OSG", "vofe@gfactory.example.org"],
     "attrs": {"EntryName": f"E{i}", "GlideinName": "gfactory_instance", "FactoryName": "OSG"},
     "idle": 10 * i, "status": {"Total": 1, "Idle": 1, "Running": 0}}
    for i in (1, 2)
]

SITECUSTOMIZE = """\
import os
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from frontend_hooks import GlideinFrontendInstrumentor


class FileExporter(SpanExporter):
    def export(self, spans):
        with open(os.environ["SPANS_OUT"], "a") as out:
            for span in spans:
                out.write(span.to_json(indent=None) + "\\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
GlideinFrontendInstrumentor().instrument(tracer_provider=provider)
"""


def group_env(**variables) -> dict:
    """The group process's environment: this one without its OTEL_ variables, plus ``variables``."""
    return dict({k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, **variables)


def group_process(tmp_path):
    """A work dir with world.json, and the stand-ins laid out as the real package."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "world.json").write_text(json.dumps(WORLD))
    lib, script = frontend_package.lay_out(tmp_path / "lib")
    return work, script, lib


def check_spans(spans, cycle_number):
    cycles = [s for s in spans if s["name"] == c.CYCLE_SPAN]
    requests = [s for s in spans if s["name"] == c.REQUEST_SPAN]
    assert len(cycles) == 1 and len(requests) == 2
    cycle = cycles[0]
    assert cycle["attributes"][c.FRONTEND_GROUP] == "main"
    assert cycle["attributes"][c.CYCLE_NUMBER] == cycle_number
    for request in requests:
        assert request["parent_id"] == cycle["context"]["span_id"]
        assert request["attributes"][c.TRACEPARENT_SENT] is True
    assert sorted(r["attributes"][c.ENTRY] for r in requests) == ["E1", "E2"]
    return cycle, requests


def test_sitecustomize_instruments_the_group_script_run_as_main(tmp_path):
    work, script, lib = group_process(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    out = tmp_path / "spans.jsonl"
    env = dict(os.environ, SPANS_OUT=str(out),
               PYTHONPATH=os.pathsep.join([str(site), str(lib), str(ROOT)]))
    for number in (1, 2):  # two cycles: two processes, the count kept in the history file
        out.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "frontend_hooks" not in done.stderr  # nothing of ours failed
        check_spans([json.loads(line) for line in out.read_text().splitlines()], number)


def installed_configurator():
    return installed_entry_points("opentelemetry_configurator")


def entry_point_dist(tmp_path):
    """setup.cfg's opentelemetry_instrumentor entry points, as an installed dist would have them."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    value = config["options.entry_points"]["opentelemetry_instrumentor"]
    assert "glideinwms_frontend = frontend_hooks.instrumentor:GlideinFrontendInstrumentor" in value
    dist = tmp_path / "dist" / "glidein_tracing_frontend_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: glidein-tracing-frontend-probe\n"
                                   "Version: 0.0\n")
    (dist / "entry_points.txt").write_text("[opentelemetry_instrumentor]\n" + value.strip() + "\n")
    return dist.parent


def console_spans(text):
    decoder, spans, index = json.JSONDecoder(), [], 0
    while True:
        index = text.find("{", index)
        if index < 0:
            return spans
        span, index = decoder.raw_decode(text, index)
        spans.append(span)


@pytest.mark.skipif(shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable)) is None
                    or not installed_configurator(),
                    reason="needs opentelemetry-instrument and a configurator (opentelemetry-distro)")
def test_opentelemetry_instrument_loads_the_entry_point(tmp_path):
    work, script, lib = group_process(tmp_path)
    tool = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    env = dict(os.environ, OTEL_SERVICE_NAME="vofrontend", OTEL_TRACES_EXPORTER="console",
               OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none",
               PYTHONPATH=os.pathsep.join([str(entry_point_dist(tmp_path)), str(lib), str(ROOT)]))
    env.pop("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", None)
    done = subprocess.run([tool, sys.executable, str(script), "1", str(work), "main"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    spans = console_spans(done.stdout)
    cycle, requests = check_spans(spans, 1)
    assert cycle["resource"]["attributes"]["service.name"] == "vofrontend"
    for request in requests:
        assert request["context"]["trace_id"] == cycle["context"]["trace_id"]

    # and the switch-off the OTel tools document works too
    env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = "glideinwms_frontend"
    done = subprocess.run([tool, sys.executable, str(script), "1", str(work), "main"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert console_spans(done.stdout) == []


def test_the_docs_install_into_the_frontends_python_runs_the_instrumentor(built_wheel, tmp_path):
    """docs/frontend.md's steps 2 and 3 as written, a fresh virtualenv standing in for EL9's
    /usr/bin/python3; then a group process each way (the autoload directory step 3 prints;
    opentelemetry-instrument), with nothing of the checkout on the path: the instrumentor
    comes from the installed wheel."""
    python = install.fresh_python(tmp_path / "frontend-python")
    install_step, check_step = install.shell_blocks("frontend.md", "## Installing")
    install.run_block(install_step, built_wheel, {"/usr/bin/python3": install.quoted(python)})
    checked = install.run_block(check_step, tmp_path, {"sudo -u frontend /usr/bin/python3": install.quoted(python)})
    autoload = checked.stdout.strip()
    work, script, lib = group_process(tmp_path)
    # way 1: the autoload directory it printed, from the installed wheel
    with counting_collector() as url:
        env = group_env(OTEL_EXPORTER_OTLP_ENDPOINT=url, PYTHONPATH=os.pathsep.join([autoload, str(lib)]))
        done = subprocess.run([str(python), str(script), "1", str(work), "main"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert len(CountingCollector.received) == 3
    # way 2: opentelemetry-instrument
    env = group_env(OTEL_SERVICE_NAME="gwms-frontend", OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none",
               OTEL_LOGS_EXPORTER="none", PYTHONPATH=str(lib))
    done = subprocess.run([str(python.parent / "opentelemetry-instrument"), str(python), str(script), "1",
                           str(work), "main"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cycle, _ = check_spans(console_spans(done.stdout), 2)   # the same group's second cycle
    assert cycle["resource"]["attributes"]["service.name"] == "gwms-frontend"


def test_the_parameter_name_survives_the_factory_escaping():
    # factory/glideFactoryLib.py escapeParam turns "-" into ".minus," on the way to
    # glidein_startup.sh, whose params_decode turns it back; the name itself needs no escaping.
    assert REQUEST_TRACEPARENT_PARAM.replace("_", "").isalnum()
    assert parse_traceparent("00-" + "1" * 32 + "-" + "2" * 16 + "-03") is not None


AUTOLOAD = ROOT / "frontend_hooks" / "autoload"


def test_autoload_traces_the_group_process_over_otlp_http(tmp_path):
    """docs/frontend.md's first way: frontend_hooks/autoload on the Frontend's PYTHONPATH, the
    OTLP variables in its environment; the group process's spans arrive at an OTLP/HTTP
    receiver when it exits."""
    work, script, lib = group_process(tmp_path)
    with counting_collector() as url:
        env = group_env(OTEL_SERVICE_NAME="gwms-frontend", OTEL_EXPORTER_OTLP_ENDPOINT=url,
                   PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(lib), str(ROOT)]))
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        spans = {span.name: span for _key, (_when, span) in CountingCollector.arrived.items()}
        assert set(spans) == {c.CYCLE_SPAN, c.REQUEST_SPAN}
        assert len(CountingCollector.received) == 3          # the cycle and its two requests
        # switched off by the environment: nothing is sent
        CountingCollector.received.clear()
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], timeout=60,
                              env=dict(env, GLIDEIN_TRACING_FRONTEND="0"), capture_output=True, text=True)
        assert done.returncode == 0 and CountingCollector.received == []


def test_autoload_sends_each_span_once_from_a_group_that_forks(tmp_path):
    """GlideinWMS's group process queries and matches in forked children (iterate_one,
    do_match; the stand-in does so run as a script): the spans, job.waiting's included, are
    sent once, by the group process, not again by each child."""
    from tests.support import waiting_world as ww

    work, script, lib = group_process(tmp_path)
    (work / "world.json").write_text(json.dumps(ww.world(tmp_path)))
    with counting_collector() as url:
        env = group_env(OTEL_SERVICE_NAME="gwms-frontend", OTEL_EXPORTER_OTLP_ENDPOINT=url,
                   PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(lib), str(ROOT)]))
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        names = [span.name for _when, span in CountingCollector.arrived.values()]
        assert names.count(c.CYCLE_SPAN) == 1 and "job.waiting" in names
        assert len(CountingCollector.received) == len(CountingCollector.arrived)
        assert len(CountingCollector.paths_seen) == 1        # one request, at the group's exit


def test_autoload_reads_the_otlp_variables(tmp_path):
    """The traces endpoint, headers, resource attributes and sampler the SDK's own exporter
    and provider read."""
    work, script, lib = group_process(tmp_path)
    with counting_collector() as url:
        env = group_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=url + "/otlp/v1/traces",
                   OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20abc,x-site=h6",
                   OTEL_SERVICE_NAME="vofe", OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test",
                   PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(lib), str(ROOT)]))
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert CountingCollector.paths_seen == ["/otlp/v1/traces"]
        headers = CountingCollector.headers_seen[0]
        assert headers["authorization"] == "Bearer abc" and headers["x-site"] == "h6"
        assert headers["content-type"] == "application/json"   # OTLP/HTTP JSON
        (resource,) = CountingCollector.resources_seen
        assert resource["service.name"] == "vofe" and resource["deployment.environment"] == "test"
        # the sampler: nothing sampled, nothing sent
        done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], timeout=60,
                              env=dict(env, OTEL_TRACES_SAMPLER="always_off"), capture_output=True, text=True)
        assert done.returncode == 0 and len(CountingCollector.paths_seen) == 1


def test_autoload_leaves_every_other_python_program_alone(tmp_path):
    """The Frontend daemon and any other program its environment reaches import nothing of
    tracing: only a script named glideinFrontendElement.py starts it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(ROOT)]))
    probe = "import sys; print(sorted(m for m in sys.modules if m.startswith(('frontend_hooks', 'opentelemetry'))))"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_autoload_with_an_unreachable_collector_logs_one_line_and_the_cycle_succeeds(tmp_path):
    work, script, lib = group_process(tmp_path)
    with counting_collector() as url:
        pass                                   # a port that was just closed: nothing listens
    env = group_env(OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_EXPORTER_OTLP_TIMEOUT="2",
               PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(lib), str(ROOT)]))
    done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "spans not sent to " + url in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.jaeger
def test_autoload_spans_arrive_in_a_real_jaeger(tmp_path, jaeger, jaeger_query):
    """The group process's OTLP/HTTP JSON is taken by Jaeger's OTLP receiver: the cycle and
    its requests, parent and attributes as sent."""
    work, script, lib = group_process(tmp_path)
    service = f"gwms-frontend-{os.getpid()}-{tmp_path.name}"
    env = group_env(OTEL_SERVICE_NAME=service, OTEL_EXPORTER_OTLP_ENDPOINT=jaeger.otlp_endpoint,
               PYTHONPATH=os.pathsep.join([str(AUTOLOAD), str(lib), str(ROOT)]))
    done = subprocess.run([sys.executable, str(script), "1", str(work), "main"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert service in jaeger_query.wait_for_services([service])
    for _ in range(40):
        status, body = jaeger_query.get("/api/traces", {"service": service, "limit": "5"})
        if status == 200 and body.get("data") and len(body["data"][0]["spans"]) == 3:
            break
        time.sleep(0.25)
    (trace,) = body["data"]
    spans = {span["spanID"]: span for span in trace["spans"]}
    (cycle,) = [s for s in spans.values() if s["operationName"] == c.CYCLE_SPAN]
    requests = [s for s in spans.values() if s["operationName"] == c.REQUEST_SPAN]
    assert len(requests) == 2
    assert all(r["references"][0]["spanID"] == cycle["spanID"] for r in requests)
    tags = {tag["key"]: tag["value"] for tag in cycle["tags"]}
    assert tags[c.FRONTEND_GROUP] == "main" and tags[c.CYCLE_NUMBER] >= 1


def test_the_group_provider_does_no_work_in_the_children_glideinwms_forks(monkeypatch):
    """GlideinWMS forks a child per query and per job type every cycle: the SDK's provider
    would detect the process's resource again in each (a thread and the detectors), work
    thrown away since a child sends no span. The group provider's children skip it, and
    still get a fresh lock; the SDK's own provider is the baseline the test can fail on."""
    from opentelemetry.sdk.trace import TracerProvider

    from frontend_hooks.startup import group_provider

    if not hasattr(TracerProvider, "_handle_fork"):
        pytest.skip("this SDK does no work in forked children (1.41, the last for Python 3.9, does none)")

    def detected_in(provider) -> bool:
        before = provider.resource
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child reports whether its resource was detected again, and its lock
            try:
                os.write(write, b"%d%d" % (provider.resource is not before,
                                           provider._tracers_lock.acquire(blocking=False)))
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as reader:
            answer = reader.read()
        os.waitpid(pid, 0)
        assert answer[1:] == b"1"   # the child's lock is its own, not the parent's held one
        return answer[:1] == b"1"

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    sdk_provider, ours = TracerProvider(shutdown_on_exit=False), group_provider()
    try:
        with ours._tracers_lock, sdk_provider._tracers_lock:   # held in the parent at the fork
            assert detected_in(sdk_provider)
            assert not detected_in(ours)
    finally:
        ours.shutdown()


def test_autoload_puts_what_tracing_keeps_out_of_the_collectors_reach(tmp_path):
    """What tracing brings into a group process lives as long as the process: after start-up it
    is frozen (gc.freeze), so the cycle's collections, and those of every child GlideinWMS
    forks, do not walk it again (bench_frontend_startup.py for the CPU this saves)."""
    probe = ("import gc, sys; sys.argv[0] = 'glideinFrontendElement.py'; before = len(gc.get_objects()); "
             "from frontend_hooks import startup; startup.start(); "
             "print(gc.get_freeze_count() > before, 'opentelemetry.sdk.trace' in sys.modules, len(gc.get_objects()))")
    env = group_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    frozen, traced, left = done.stdout.split()
    assert frozen == "True" and traced == "True"
    assert int(left) < 100    # what the collector still walks: next to nothing
