"""Why is my job not running yet? (docs/why-waiting.md)

JOB is a job id (cluster.proc@schedd, asked of the schedd), a job ad file as `condor_q -l`
writes it (one job or many: then a summary per reason, like LSF's `bjobs -psum`), or the
trace id of your submission (its TRACEPARENT's second field). The diagnosis comes from the job
ad and from the job.waiting spans the Frontend put in your trace (Jaeger with --jaeger, else
the embedded store); --table adds the glidein table's recent outcomes at the entries.
"""

from __future__ import annotations

import json
import os
import sys

from ..core.terminal import echo
from ..why import diagnosis as d
from ..why import sources

# facts the text leaves to --json (the span's bookkeeping; the detail line says the rest)
_QUIET = {"state", "jobs", "detail", "request_cpus", "request_memory", "request_disk", "end", "last_today"}


def add_arguments(parser):
    parser.add_argument("job", metavar="JOB", help="cluster.proc@schedd, a condor_q -l file, or a trace id")
    parser.add_argument("--jaeger", metavar="URL", help="Jaeger's query URL (e.g. http://127.0.0.1:16686)")
    parser.add_argument("--store", metavar="DIR", help="the embedded store (default: the user's data dir)")
    parser.add_argument("--table", metavar="DIR", help="the glidein table, for the entries' recent outcomes")
    parser.add_argument("--json", action="store_true", help="the same as JSON")


def _diagnoses(args) -> list:
    spans_cache: dict = {}

    def spans_of(trace_id):
        if trace_id is None:
            return []
        if trace_id not in spans_cache:
            spans_cache[trace_id] = sources.trace_spans(trace_id, args.jaeger, args.store)
        return spans_cache[trace_id]

    job_id = d.parse_job_id(args.job)
    if job_id is not None:
        ad = sources.ad_from_schedd(*job_id)
        return [d.diagnose(ad, spans_of(d.trace_id_of(ad)), job=args.job)]
    if os.path.exists(args.job):
        ads, unreadable = sources.ads_from_file(args.job)
        if unreadable:
            echo(f"glidein-tracing why: {unreadable} ads of {args.job} are no job ads; left out", file=sys.stderr)
        return [d.diagnose(ad, spans_of(d.trace_id_of(ad))) for ad in ads]
    trace_id = d.check_trace_id(args.job)
    return [d.diagnose(None, spans_of(trace_id), job=trace_id)]


def _print(diagnoses, summary) -> None:
    for item in diagnoses:
        echo(f"{item.job}: {item.status} -- {item.category}" + (f" [{item.reason}]" if item.reason else ""))
        if item.facts.get("detail"):
            echo(f"  now:  {item.facts['detail']}")
        echo(f"  why:  {item.meaning}")
        echo(f"  do:   {item.action}")
        for key, value in item.facts.items():
            if key not in _QUIET and value not in (None, "", [], {}):
                echo(f"  {key}: {value}")
        for evidence in item.evidence:
            echo(f"  evidence: {evidence.text()}")
    if len(diagnoses) > 1:
        echo("")
        echo(f"{'JOBS':>6}  CATEGORY [REASON]")
        for count, category, reason in summary:
            echo(f"{count:>6}  {category}" + (f" [{reason}]" if reason else ""))


def run(args):
    diagnoses = _diagnoses(args)
    if args.table:
        outcomes = sources.entry_outcomes(args.table)
        for item in diagnoses:
            d.add_table_evidence(item, outcomes)
    summary = d.summary(diagnoses)
    if args.json:
        echo(json.dumps({"jobs": [item.as_dict() for item in diagnoses],
                         "summary": [{"jobs": n, "category": cat, "reason": reason}
                                     for n, cat, reason in summary]}, indent=1, default=str))
    else:
        _print(diagnoses, summary)
    return 0
