"""factory_config/jaeger-config.yaml, the example production config (docs/jaeger.md):
validated by the Jaeger binary as it is, and run with TLS after moving every listener to a
free loopback port and swapping Elasticsearch for memory storage (no Elasticsearch here).
"""

from __future__ import annotations

import shutil
import subprocess
import urllib.request

import pytest
import yaml

from tests.support import jaeger_harness as jh
from glidein_tracing.exporters.otlp import make_otlp_exporter
from opentelemetry.sdk.trace.export import SpanExportResult
from tests.support.synthetic_glidein import SERVICE, full_glidein, hexid, in_trace

pytestmark = pytest.mark.jaeger

CONFIG = jh.REPO / "factory_config" / "jaeger-config.yaml"


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (it is its own CA) and its key."""
    openssl = shutil.which("openssl")
    if not openssl:
        pytest.skip("openssl is needed to make a test certificate")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def site_env(tls_pair, tmp_path) -> dict:
    cert, key = tls_pair
    password = tmp_path / "es-password"
    password.write_text("not-a-real-password\n")
    return {"JAEGER_TLS_CERT": str(cert), "JAEGER_TLS_KEY": str(key),
            "JAEGER_ES_URL": "https://es.example.org:9200",
            "JAEGER_ES_PASSWORD_FILE": str(password), "JAEGER_ES_CA": str(cert)}


def validate(binary, config, env):
    import os
    full = dict(os.environ)
    full.update(env)
    return subprocess.run([str(binary), "validate", "--config", f"file:{config}"],
                          capture_output=True, text=True, env=full, timeout=60)


def test_example_config_passes_jaegers_own_validation(jaeger_binary, tls_pair, tmp_path):
    done = validate(jaeger_binary, CONFIG, site_env(tls_pair, tmp_path))
    assert done.returncode == 0, done.stderr


def test_validation_does_catch_mistakes(jaeger_binary, tls_pair, tmp_path):
    """The negative control: a misspelt key, or TLS without its certificate, is refused."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG.read_text().replace("max_span_age:", "max_span_agee:"))
    done = validate(jaeger_binary, bad, site_env(tls_pair, tmp_path))
    assert done.returncode != 0 and "max_span_agee" in done.stderr
    env = site_env(tls_pair, tmp_path)
    del env["JAEGER_TLS_CERT"]
    done = validate(jaeger_binary, CONFIG, env)
    assert done.returncode != 0 and "certificate and key" in done.stderr


@pytest.fixture(scope="module")
def tls_jaeger(jaeger_binary, tls_pair, tmp_path_factory):
    """The example config, running: storage swapped for memory (Elasticsearch is validated
    above but not reachable here), every listener moved to a free loopback port."""
    tmp_path = tmp_path_factory.mktemp("jaeger-config")
    cfg = yaml.safe_load(CONFIG.read_text())
    backends = cfg["extensions"]["jaeger_storage"]["backends"]
    assert list(backends) == ["glidein_store"] and "elasticsearch" in backends["glidein_store"]
    backends["glidein_store"] = {"memory": {"max_traces": 1000}}
    # The harness picks the ports and passes them as GT_JAEGER_*.
    cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"] = "${env:GT_JAEGER_OTLP_HTTP}"
    query = cfg["extensions"]["jaeger_query"]
    query["http"]["endpoint"] = "${env:GT_JAEGER_QUERY_HTTP}"
    query["grpc"]["endpoint"] = "${env:GT_JAEGER_QUERY_GRPC}"
    health_port, metrics_port = jh.free_loopback_ports(2)
    env = site_env(tls_pair, tmp_path)
    env.update({"JAEGER_HEALTH_ENDPOINT": f"127.0.0.1:{health_port}",
                "JAEGER_METRICS_PORT": str(metrics_port)})
    rewritten = tmp_path / "jaeger-config.yaml"
    rewritten.write_text(yaml.safe_dump(cfg, sort_keys=False))
    process = jh.JaegerProcess(jaeger_binary, rewritten, log_dir=tmp_path, extra_env=env,
                               tls_ca=tls_pair[0], max_lifetime=600)
    try:
        process.start()
    except jh.JaegerUnavailable as exc:
        pytest.fail(f"the example config does not start: {exc}")
    process.extra_ports = {"health": health_port, "metrics": metrics_port}
    yield process
    process.stop()


def test_example_config_runs_with_tls_on_loopback(tls_jaeger, tls_pair, monkeypatch):
    process = tls_jaeger
    cert = tls_pair[0]
    health_port, metrics_port = process.extra_ports["health"], process.extra_ports["metrics"]
    listening = [s for s in process.sockets() if s.state in ("LISTEN", "UNCONN")]
    assert sorted(s.port for s in listening) == sorted(
        list(process.ports.values()) + [health_port, metrics_port])
    assert all(s.loopback for s in listening)

    # The operator's way of pointing the forwarder at it: the standard OTel variables.
    # (requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override the exporter's CA file:
    # see test_otlp_certificate_wins_over_a_requests_ca_bundle.)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    g = full_glidein("config")
    spans = g.spans()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", process.otlp_endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", str(cert))
    exporter = make_otlp_exporter(None, 10.0)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    exporter.shutdown()
    client = process.query()  # https, verified against the test CA
    mine = {hexid(s) for s in in_trace(spans, g.trace_id)}
    trace = client.wait_for_trace(g.trace_id, mine)
    assert {s["spanID"] for s in trace["spans"]} == mine
    assert SERVICE in client.services()

    # Plain HTTP is refused on the TLS receiver.
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_CERTIFICATE")
    plain = make_otlp_exporter(process.otlp_endpoint.replace("https://", "http://"), 5.0)
    assert plain.export(spans) == SpanExportResult.FAILURE
    plain.shutdown()

    # Health and internal metrics answer, on loopback only.
    with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/status", timeout=5) as r:
        assert r.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        assert b"otelcol_receiver_accepted_spans" in r.read()


def test_otlp_certificate_wins_over_a_requests_ca_bundle(tls_jaeger, tls_pair, monkeypatch):
    import ssl
    system_bundle = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", system_bundle)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", str(tls_pair[0]))
    exporter = make_otlp_exporter(tls_jaeger.otlp_endpoint, 3.0)
    try:
        assert exporter.export(full_glidein("bundle").spans()) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
