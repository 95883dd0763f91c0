"""Why is my job not running yet? (docs/why-waiting.md)

JOB is a job id (cluster.proc@schedd; cluster.proc asks the local schedd, as condor_q does), a
job ad file as `condor_q -l` writes it (one job or many: then a summary per reason, like LSF's
`bjobs -psum`), or your submission's trace id or whole TRACEPARENT value. The answer comes from
the job ad, the schedd (your running-job cap) and the job.waiting spans the Frontend put in your
trace (Jaeger with --jaeger, else the embedded store); --table adds the glidein table's recent
outcomes at the entries and an estimate of when the job starts.
"""

from __future__ import annotations

import json
import sys

from ..core.terminal import echo
from ..why import answer, words
from ..why import diagnosis as d


def add_arguments(parser):
    parser.add_argument("job", metavar="JOB",
                        help="cluster.proc[@schedd], a condor_q -l file, a trace id or a TRACEPARENT")
    parser.add_argument("--jaeger", metavar="URL", help="Jaeger's query URL (e.g. http://127.0.0.1:16686)")
    parser.add_argument("--store", metavar="DIR", help="the embedded store (default: the user's data dir)")
    parser.add_argument("--table", metavar="DIR",
                        help="the glidein table: the entries' recent outcomes and when the job may start")
    parser.add_argument("--json", action="store_true", help="the same as JSON")


def _text(item) -> None:
    echo(words.sentences(item))
    for evidence in item.evidence:
        echo(f"  Evidence: {words.evidence_line(evidence)}")


def run(args):
    """Each job's answer printed as it is made (a whole queue is never held), then the summary."""
    items = answer.diagnoses(args.job, jaeger=args.jaeger, store=args.store, table=args.table,
                             warn=lambda text: echo(f"glidein-tracing why: {text}", file=sys.stderr))
    counts: dict = {}
    unchecked: set = set()
    for number, item in enumerate(items):
        if args.json:
            # one job a line (the C encoder: an indented dump costs as much as reading the ad)
            echo(('{"jobs": [\n' if not number else ",\n") + json.dumps(answer.job_data(item), default=str))
        else:
            if number:
                echo("")
            _text(item)
        d.count(counts, item)
        if "running_cap_unchecked" in item.facts:
            unchecked.add(item.facts["running_cap_unchecked"])
    summary = answer.summary_data(counts)
    if args.json:
        echo('], "summary": ' + json.dumps(summary, indent=1) + "}")
        return 0
    for text in sorted(unchecked):
        echo(f"Your running-job cap at the schedd was not checked: {text}.")
    if sum(counts.values()) > 1:
        echo("")
        echo(f"{'JOBS':>6}  CATEGORY [REASON]")
        for row in summary:
            echo(f"{row['jobs']:>6}  {row['category']}" + (f" [{row['reason']}]" if row["reason"] else ""))
    return 0
