"""analyze --jaeger against a real Jaeger v2 (the session's, from tests/conftest.py)."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest

from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.analysis import synth
from glidein_tracing.cli.main import main

pytestmark = pytest.mark.jaeger


def post_otlp_json(endpoint: str, request: dict) -> None:
    body = json.dumps(request).encode()
    req = urllib.request.Request(endpoint.rstrip("/") + "/v1/traces", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        assert response.status == 200


def test_analyze_reads_traces_back_from_jaeger(jaeger, jaeger_query, tmp_path):
    service = f"glidein-analysis-{uuid.uuid4().hex[:8]}"
    cfg = synth.SynthConfig(glideins=40, seed=17, start=time.time() - 3 * 86400, period_s=86400.0)
    glideins = list(synth.generate(cfg))
    for glidein in glideins:
        spans = synth.glidein_spans(glidein)
        resource = dict(spans[0]["resource"], **{"service.name": service})
        for span in spans:
            span["resource"] = resource
        post_otlp_json(jaeger.otlp_endpoint, request_from_span_dicts(spans))
    deadline = time.monotonic() + 30
    while service not in jaeger_query.services() and time.monotonic() < deadline:
        time.sleep(0.5)
    out = tmp_path / "out.json"
    doc = None
    while time.monotonic() < deadline:
        assert main(["analyze", "--jaeger", jaeger.query_url, "--service", service, "--since", "5d",
                     "--json", str(out), "--quiet", "--whatif"]) == 0
        doc = json.loads(out.read_text())
        if doc["stats"]["glideins"] == len(glideins):
            break
        time.sleep(1)
    assert doc["stats"]["glideins"] == len(glideins)
    assert doc["stats"]["jobs"] == sum(len(g.timeline.jobs) for g in glideins)
    assert doc["whatif"]["current_replay"]["exact"]
    assert doc["stats"]["problems"]["no_root"] == 0
