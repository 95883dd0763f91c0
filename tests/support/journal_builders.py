"""Build journals for tests from GlideinWMS's own per-script records (fixture XML)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime

from glidein_tracing.core.journal import format_line


def parse_otr_records(text: str):
    """The OSGTestResult records of an otr_outlist.list (concatenated, no root element)."""
    root = ET.fromstring("<records>" + text + "</records>")
    out = []
    for node in root.findall("OSGTestResult"):
        metrics = {m.get("name"): (m.text or "").strip() for m in node.iter("metric")}
        out.append({
            "id": node.get("id"),
            "tstart": node.findtext("test/tStart").strip(),
            "tend": node.findtext("test/tEnd").strip(),
            "status": node.findtext("result/status").strip(),
            "metrics": metrics,
            "detail": " ".join((node.findtext("detail") or "").split()),
        })
    return out


def iso_epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def record_lines(records):
    lines = []
    for r in records:
        fields = {"@tstart": r["tstart"], "@tend": r["tend"], "@status": r["status"]}
        if "failure" in r["metrics"]:
            fields["@failure"] = r["metrics"]["failure"]
        if r["detail"]:
            fields["@detail"] = r["detail"]
        fields.update({f"m.{k}": v for k, v in r["metrics"].items() if k != "failure"})
        lines.append(format_line(iso_epoch(r["tend"]), "record", r["id"], fields))
    return lines


def root_lines(start: float, trace_id: str = "", **identity):
    fields = {"@name": "glidein", "@stage": "glidein", "glidein.factory": "gwms_test_factory",
              "glidein.name": "gwms_test_instance", "glidein.entry": "TEST_ENTRY",
              "glidein.schedd": "schedd_glideins2@localhost", "glidein.cluster:i": "1234",
              "glidein.proc:i": "0", "res.host.name": "wn01.example.org",
              "res.service.name": "glidein"}
    if trace_id:
        fields["@trace_id"] = trace_id
    fields.update(identity)
    return [format_line(start, "start", "glidein", fields),
            format_line(start, "start", "setup", {"@name": "setup", "@stage": "setup",
                                                  "r.utime": "0.05", "r.stime": "0.01",
                                                  "r.rss": "3000000", "r.load1": "0.4",
                                                  "r.disk_free": "5000000000"})]
