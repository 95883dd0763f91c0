"""Helpers for the glidein table tests: GlideinWMS's Factory view of a glidein's stdout, and
the spans of a stored trace by stage."""

from __future__ import annotations

import re

from glidein_tracing.table import gwms
from glidein_tracing.table.rows import GLIDEIN_COLUMNS, JOB_COLUMNS, glidein_values


def factory_view(stdout: str) -> gwms.GlideinRun:
    """What GlideinWMS's Factory log parser reads in a glidein's returned stdout (its banners
    and condor_startup.sh's StarterLog summary; the first line of each kind counts)."""
    def number(pattern):
        match = re.search(pattern, stdout)
        return int(match.group(1)) if match else None
    started = re.search(r"=== Condor starting.*===", stdout) is not None
    stats = {}
    block = re.search(r"=== Stats of (\S+) ===(.*)=== End Stats of (\S+) ===", stdout, re.DOTALL)
    if block:
        for match in re.finditer(r"Total(.*)jobs ([0-9]+) .*utilization ([0-9]+)", block.group(2)):
            name = match.group(1).strip() or "Total"
            stats.setdefault(name, (int(match.group(2)), int(match.group(3))))
    total = stats.get("Total", (0, 0))
    summary = gwms.StarterSummary(total[0], total[1], stats.get("goodZ", (0, 0))[1], stats.get("goodNZ", (0, 0))[1])
    return gwms.GlideinRun(
        glidein_s=number(r"=== Glidein ending .* with code [0-9]+ after ([0-9]+) ==="), factory_s=None,
        validation_s=number(r"=== Last script starting .* after validating for ([0-9]+) ==="),
        condor_started=started, condor_s=number(r"=== Condor ended.*after ([0-9]+) ===") if started else None,
        summary=summary)


def own_spans(spans):
    """A stored glidein trace's own spans by stage (not the user's view of its jobs)."""
    out = {}
    for span in spans:
        attrs = span["attributes"]
        if not attrs.get("glidein.user_view"):
            out.setdefault(attrs.get("glidein.stage"), []).append(span)
    return out


def seconds(span) -> float:
    return (span["end_ns"] - span["start_ns"]) / 1e9


def total(spans) -> float | None:
    return sum(s["end_ns"] - s["start_ns"] for s in spans) / 1e9 if spans else None


def glidein_rows(spans, *, trace_kept: bool = True) -> tuple[dict, list[dict]]:
    """(the glidein's row, its jobs' rows) from one glidein's spans, as dicts by column."""
    row, jobs = glidein_values(spans, trace_kept=trace_kept)
    return dict(zip(GLIDEIN_COLUMNS, row)), [dict(zip(JOB_COLUMNS, job)) for job in jobs]
