"""Helpers for tests/test_analysis_*.py: small synthetic stores and hand-made traces."""

from __future__ import annotations

import json

from glidein_tracing.exporters.otlp_json import request_from_span_dicts
from glidein_tracing.core import ids
from glidein_tracing.analysis import synth

BASE = 1767225600.0  # 2026-01-01T00:00:00Z


def write_synth_store(directory, **kwargs) -> synth.SynthConfig:
    cfg = synth.SynthConfig(**kwargs)
    synth.write_store(cfg, directory)
    return cfg


def span(trace, key, stage, start, end, *, name=None, parent="glidein", attrs=None, resource=None, status=0):
    """A flat span dict as flatten_request yields it (times in seconds from BASE)."""
    attributes = {"glidein.stage": stage}
    attributes.update(attrs or {})
    return {"trace_id": trace, "span_id": ids.span_id(trace, key),
            "parent_span_id": "" if parent is None else ids.span_id(trace, parent),
            "name": name or key.split("/", 1)[0], "start_ns": int((BASE + start) * 1e9),
            "end_ns": int((BASE + end) * 1e9) if end is not None else 0, "status_code": status,
            "status_message": "", "attributes": attributes,
            "resource": resource if resource is not None else {"glidein.entry": "ENTRY_T", "glidein.site": "SITE_T",
                                                               "host.cpu.logical_count": 4},
            "events": [], "links": []}


def simple_glidein(trace, *, jobs=((100, 1000, 0),), condor=(50, 1400), reason="daemon_shutdown",
                   outcome="ok", root=True, factory=True, node_offset=0.0):
    """One glidein: optional Factory spans, setup + one validation, condor, jobs, teardown."""
    o = node_offset
    spans = []
    if root:
        spans.append(span(trace, "glidein", "glidein", -300, condor[1] + 10 + o, parent=None,
                          attrs={"glidein.entry": "ENTRY_T", "glidein.site": "SITE_T", "glidein.outcome": outcome}))
    if factory:
        spans.append(span(trace, "factory.submit", "factory.submit", -300, -295))
        spans.append(span(trace, "factory.queue", "factory.queue", -295, -5))
    spans.append(span(trace, "setup", "setup", 0 + o, condor[0] + o))
    spans.append(span(trace, "validation/main/a.sh", "validation", 1 + o, 40 + o, name="main/a.sh",
                      parent="setup", attrs={"glidein.script.id": "main/a.sh"}))
    spans.append(span(trace, "condor", "condor.start", condor[0] + o, condor[1] + o, name="condor",
                      attrs={"glidein.shutdown.reason": reason}))
    for index, (start, end, code) in enumerate(jobs):
        spans.append(span(trace, f"job/{index}", "job", start + o, end + o, parent="condor",
                          attrs={"job.exit_code": code}, status=2 if code else 1))
    spans.append(span(trace, "teardown", "teardown", condor[1] + o, condor[1] + 10 + o))
    return spans


def write_jsonl(path, batches) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for batch in batches:
            handle.write(json.dumps(request_from_span_dicts(batch)) + "\n")


def trace_id(n: int) -> str:
    return f"{n:032x}"
