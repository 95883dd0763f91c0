"""The Jaeger test harness itself: build recipe, loopback-only listeners, clean shutdown."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support import jaeger_harness as jh

REPO = Path(__file__).resolve().parents[1]


# -- no Jaeger needed ------------------------------------------------------------------------

def test_replace_lines_of_a_go_mod():
    gomod = textwrap.dedent("""\
        module github.com/jaegertracing/jaeger
        go 1.24
        require (
            github.com/Shopify/sarama v1.37.2 // indirect
        )
        replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
        replace (
            example.org/a v1.0.0 => example.org/a v1.0.1 // why
            example.org/b => ../b
        )
        """)
    assert jh._replace_lines(gomod) == [
        "github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0",
        "example.org/a v1.0.0 => example.org/a v1.0.1",
        "example.org/b => ../b",
    ]


def test_cache_path_is_outside_the_repo_and_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GLIDEIN_TRACING_CACHE", str(tmp_path / "c"))
    assert jh.cached_binary_path() == tmp_path / "c" / f"jaeger-{jh.JAEGER_VERSION}" / "jaeger"
    monkeypatch.delenv("GLIDEIN_TRACING_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert jh.cached_binary_path() == (tmp_path / "x" / "glidein_tracing" /
                                       f"jaeger-{jh.JAEGER_VERSION}" / "jaeger")
    assert jh.REPO not in jh.cached_binary_path().parents


def test_without_go_jaeger_is_unavailable_with_a_clear_reason(monkeypatch, tmp_path):
    monkeypatch.delenv("GLIDEIN_TRACING_JAEGER_BIN", raising=False)
    monkeypatch.delenv("GLIDEIN_TRACING_JAEGER_BUILD", raising=False)
    monkeypatch.setenv("GLIDEIN_TRACING_CACHE", str(tmp_path))
    monkeypatch.setattr(jh, "find_go", lambda: None)
    with pytest.raises(jh.JaegerUnavailable, match="no Go toolchain"):
        jh.ensure_jaeger()


def test_unavailable_skips_but_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Jaeger unavailable: no Go"):
        jh.unavailable("no Go")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI=true"):
        jh.unavailable("no Go")


def test_the_test_config_binds_every_listener_to_loopback():
    text = jh.TEST_CONFIG.read_text()
    endpoints = re.findall(r"endpoint:\s*\"?\$\{env:[A-Z_]+:-([^}]+)\}", text)
    assert len(endpoints) == 3
    assert all(e.startswith("127.0.0.1:") for e in endpoints)
    assert "0.0.0.0" not in text and "grpc:\n        endpoint" not in text


# -- a real Jaeger ---------------------------------------------------------------------------

@pytest.mark.jaeger
def test_jaeger_listens_only_on_loopback_and_only_where_told(jaeger):
    sockets = jaeger.sockets()
    listening = [s for s in sockets if s.state in ("LISTEN", "UNCONN")]
    assert listening, "found no listening socket of the Jaeger process"
    assert [s for s in listening if not s.loopback] == []
    assert sorted(s.port for s in listening if s.proto.startswith("tcp")) == \
        sorted(jaeger.ports.values())
    assert not [s for s in listening if s.proto.startswith("udp")]
    # The same, as ss sees it (when ss exists): every socket of this pid is on 127.0.0.1.
    ss = shutil.which("ss")
    if ss:
        out = subprocess.run([ss, "-Hltnup"], capture_output=True, text=True).stdout
        mine = [line for line in out.splitlines() if f"pid={jaeger.pid}," in line]
        assert len(mine) == 3, out
        assert all(line.split()[4].startswith("127.0.0.1:") for line in mine), mine


@pytest.mark.jaeger
def test_query_api_answers(jaeger_query):
    assert isinstance(jaeger_query.services(), list)
    unknown = "0123456789abcdef0123456789abcdef"
    assert jaeger_query.trace_v1(unknown) is None
    assert jaeger_query.trace_v3(unknown) is None


@pytest.mark.jaeger
def test_an_sdk_span_arrives(jaeger, jaeger_query):
    """The harness end to end with the plain OTel SDK (no project code)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource({"service.name": "harness-smoke"}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=jaeger.otlp_endpoint + "/v1/traces", timeout=10)))
    with provider.get_tracer("smoke").start_as_current_span("outer") as outer:
        with provider.get_tracer("smoke").start_as_current_span("inner") as inner:
            pass
    provider.shutdown()
    trace_id = format(outer.get_span_context().trace_id, "032x")
    outer_id = format(outer.get_span_context().span_id, "016x")
    inner_id = format(inner.get_span_context().span_id, "016x")
    trace = jaeger_query.wait_for_trace(trace_id, [outer_id, inner_id], timeout=20)
    spans = jh.v1_spans_by_id(trace)
    assert jh.v1_parent(spans[inner_id]) == outer_id
    assert jh.v1_process(trace, spans[outer_id])["serviceName"] == "harness-smoke"
    assert "harness-smoke" in jaeger_query.services()
    v3 = jaeger_query.wait_for_trace(trace_id, [outer_id, inner_id], api="v3", timeout=20)
    by_id = {s["spanId"]: s for s in jh.v3_spans(v3)}
    assert by_id[inner_id]["parentSpanId"] == outer_id


@pytest.mark.jaeger
def test_watchdog_kills_jaeger_after_its_max_lifetime(jaeger_binary, tmp_path):
    process = jh.JaegerProcess(jaeger_binary, log_dir=tmp_path, max_lifetime=3)
    process.start()
    try:
        assert process.proc.poll() is None
        process.proc.wait(timeout=15)
        assert process.proc.returncode == -signal.SIGKILL
    finally:
        process.stop()


@pytest.mark.jaeger
def test_stop_terminates_gracefully(jaeger_binary, tmp_path):
    process = jh.JaegerProcess(jaeger_binary, log_dir=tmp_path, max_lifetime=0).start()
    pid = process.pid
    assert process.stop() == 0
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert "Shutdown complete" in process.log_tail(5)


@pytest.mark.jaeger
def test_jaeger_dies_when_its_python_parent_is_killed(jaeger_binary, tmp_path):
    """pytest killed with SIGKILL runs no atexit hook: the parent-death signal still works."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.support import jaeger_harness as jh
        p = jh.JaegerProcess(jh.Path({str(jaeger_binary)!r}), log_dir=jh.Path({str(tmp_path)!r}),
                             max_lifetime=0).start()
        print(p.pid, flush=True)
        time.sleep(120)
        """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"helper printed {line!r}"
        jaeger_pid = int(line)
        assert _alive(jaeger_pid)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(jaeger_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(jaeger_pid), "Jaeger survived its parent's SIGKILL"
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, or a pid reused by something else, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and "jaeger" in stat.split(")")[0]


def test_process_sockets_reads_our_own_listener():
    """The /proc parser, checked against a socket we open ourselves."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        found = [s for s in jh.process_sockets(os.getpid()) if s.port == port]
    assert [(s.proto, s.address, s.state) for s in found] == [("tcp", "127.0.0.1", "LISTEN")]


INNER_SESSION = '''
from tests.support import jaeger_harness as jh


def test_a_build_that_fails(monkeypatch, tmp_path_factory):
    cache = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("GLIDEIN_TRACING_CACHE", str(cache))
    for name in ("GLIDEIN_TRACING_JAEGER_BIN", "GLIDEIN_TRACING_JAEGER_BUILD"):
        monkeypatch.delenv(name, raising=False)
    go = cache / "go"
    go.parent.mkdir(parents=True)
    go.write_text("#!/bin/sh\\necho 'go: no module here' >&2\\nexit 1\\n")
    go.chmod(0o755)
    monkeypatch.setattr(jh, "find_go", lambda: str(go))
    try:
        jh.ensure_jaeger()
    except jh.JaegerUnavailable:
        pass
'''


def test_a_build_says_what_it_does_and_where_its_log_is_past_pytests_capture(tmp_path):
    """tests/run.sh's first Jaeger build takes tens of minutes: under pytest (no -s), its
    lines reach stderr, naming the step and the build log."""
    (tmp_path / "test_inner.py").write_text(INNER_SESSION)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_inner.py")],
                          cwd=jh.REPO, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "CI"})
    assert done.returncode == 0, done.stdout + done.stderr
    log = tmp_path / "base" / "cache" / f"jaeger-{jh.JAEGER_VERSION}" / "build.log"
    lines = done.stderr.splitlines()
    assert f"jaeger harness: downloading {jh.JAEGER_MODULE}@{jh.JAEGER_VERSION} (log: {log})" in lines, done.stderr
    assert any(line.startswith("jaeger harness: the build failed after 0 min: cannot download ") for line in lines)
    assert "go: no module here" in log.read_text()
