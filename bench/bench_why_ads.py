#!/usr/bin/env python3
"""``why`` on a user's whole queue against the floor of reading the ads (issue 45; not a test:
figures go to bench/README.md).

1. A ``condor_q -l`` file of ``--ads`` job ads (default 50,000, 20 jobs a submission): each is
   HTCondor's own test job ad (../shared/fixtures/htcondor/test.old.ad, 96 attributes) with
   its ids, owner, status and TraceParent set, else an ad of the same attributes written here.
2. A store holding one ``job.waiting`` span per submission, exported as the Frontend exports
   them: lines of 512 spans, the rest of each line the Frontend's other spans.
3. Each in a fresh process, its CPU (user + system) and peak RSS from the kernel:
   - the floor: the file read and every ad parsed with classad2, one ``parseOne`` per ad (the
     bindings' ``parseAds`` over the file costs more with each next ad: it had not read 50,000
     ads after 10 minutes);
   - ``glidein-tracing why FILE --store STORE --json`` (stdout to /dev/null);
   - ``--baseline CHECKOUT``: the same command of another checkout (an earlier main), for the record.

Budget: at most 2x the floor's CPU and 1.5x its peak memory.

Usage: python -m bench.bench_why_ads [--ads 50000] [--baseline /path/to/old/checkout] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.quick import parse_args
from glidein_tracing.core.ids import format_traceparent
from glidein_tracing.exporters.store import Store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO.parent / "shared" / "fixtures" / "htcondor" / "test.old.ad"
JOBS_PER_SUBMISSION = 20
SPANS_PER_LINE = 512

FLOOR = """
import sys, classad2
n, lines = 0, []
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        if line.strip():
            lines.append(line)
        elif lines:
            classad2.parseOne(b"".join(lines).decode(), classad2.ParserType.Old)
            n, lines = n + 1, []
if lines:
    classad2.parseOne(b"".join(lines).decode(), classad2.ParserType.Old)
    n += 1
print(n, "ads")
"""


def trace_of(submission: int) -> str:
    return f"{submission + 1:032x}"


def template() -> list:
    """The job ad's lines, without the attributes each job sets."""
    own = {"ClusterId", "ProcId", "GlobalJobId", "Owner", "User", "JobStatus", "TraceParent", "QDate"}
    if FIXTURE.is_file():
        lines = FIXTURE.read_text().splitlines()
    else:
        lines = [f"Attribute{n} = \"value of attribute {n} of a job ad\"" for n in range(96)]
    return [line for line in lines if line.split("=", 1)[0].strip() not in own and line.strip()]


def write_ads(path: Path, ads: int) -> None:
    rest = "\n".join(template())
    now = int(time.time())
    with open(path, "w") as out:
        for n in range(ads):
            submission, proc = divmod(n, JOBS_PER_SUBMISSION)
            owner = f"user{submission % 50}"
            out.write(f'ClusterId = {1000 + submission}\nProcId = {proc}\nJobStatus = 1\nQDate = {now - 3600}\n'
                      f'Owner = "{owner}"\nUser = "{owner}@example.org"\n'
                      f'GlobalJobId = "submit.example.org#{1000 + submission}.{proc}#{now}"\n'
                      f'TraceParent = "{format_traceparent(trace_of(submission), f"{submission + 1:016x}")}"\n'
                      f"{rest}\n\n")


def write_store(directory: Path, submissions: int) -> None:
    """One job.waiting span per submission, in lines of 512 spans, the rest the Frontend's own
    (a request span per entry of its cycle's trace)."""
    now_ns = time.time_ns()
    spans = []
    for submission in range(submissions):
        owner = f"user{submission % 50}"
        spans.append({"trace_id": trace_of(submission), "span_id": f"{submission + 1:016x}", "name": "job.waiting",
                      "start_ns": now_ns - 600 * 10**9, "end_ns": now_ns - 600 * 10**9,
                      "attributes": {"job.waiting.reason": "site_queue", "job.waiting.state": "current",
                                     "job.owner": owner, "job.waiting.idle_jobs": JOBS_PER_SUBMISSION,
                                     "job.waiting.jobs": [f"{1000 + submission}.0@submit.example.org"],
                                     "job.waiting.entries": ["ENTRY_B@gfactory_instance@OSG"],
                                     "job.waiting.reason_entries": ["ENTRY_B@gfactory_instance@OSG"],
                                     "job.waiting.queued_glideins": 4,
                                     "job.waiting.detail": "4 glideins wait in the site queue at ENTRY_B"}})
        for entry in range(SPANS_PER_LINE // 16 - 1):     # the cycle's other spans
            spans.append({"trace_id": "f" * 32, "span_id": f"{submission:08x}{entry:08x}", "name": "frontend.request",
                          "start_ns": now_ns, "end_ns": now_ns,
                          "attributes": {"frontend.entry": f"ENTRY_{entry}@gfactory_instance@OSG",
                                         "frontend.request.idle": 10, "frontend.request.max_run": 100}})
    Store(directory).append_span_dicts([spans[start:start + SPANS_PER_LINE]
                                        for start in range(0, len(spans), SPANS_PER_LINE)])


def measure(argv: list, cwd=None, env=None) -> tuple:
    """(CPU seconds, peak RSS in MB, wall seconds) of one fresh process, stdout to /dev/null."""
    started = time.time()
    with open(os.devnull, "w") as devnull, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, stdout=devnull, stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            err.seek(0)
            raise SystemExit(f"{' '.join(map(str, argv[:4]))}... failed: {err.read()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, time.time() - started


def why(checkout: Path, ads: Path, store: Path) -> tuple:
    """The command, its environment and its directory: the checkout's package first on the path
    (``python -c`` puts its working directory first)."""
    return ([sys.executable, "-c", "import sys; from glidein_tracing.cli.main import main; sys.exit(main(sys.argv[1:]))",
             "why", str(ads), "--store", str(store), "--json"], {**os.environ, "PYTHONPATH": str(checkout)}, checkout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ads", type=int, default=50000)
    parser.add_argument("--baseline", metavar="CHECKOUT", help="another checkout's why, measured alike")
    args = parse_args(parser, argv, ads=400)
    with tempfile.TemporaryDirectory() as tmp:
        ads, store = Path(tmp) / "queue.ads", Path(tmp) / "store"
        write_ads(ads, args.ads)
        write_store(store, -(-args.ads // JOBS_PER_SUBMISSION))
        print(f"{args.ads:,} job ads ({ads.stat().st_size / 1e6:.0f} MB, {len(template()) + 8} attributes each), "
              f"{-(-args.ads // JOBS_PER_SUBMISSION):,} submissions; store lines of {SPANS_PER_LINE} spans", flush=True)
        floor = measure([sys.executable, "-c", FLOOR, str(ads)])
        print(f"floor, classad2 parseOne per ad: CPU {floor[0]:.2f} s, peak {floor[1]:.0f} MB, wall {floor[2]:.1f} s",
              flush=True)
        command, env, cwd = why(REPO, ads, store)
        cpu, rss, wall = measure(command, cwd=cwd, env=env)
        print(f"why --json, this checkout: CPU {cpu:.2f} s, peak {rss:.0f} MB, wall {wall:.1f} s", flush=True)
        print(f"why against the floor: CPU {cpu / floor[0]:.2f}x (budget 2x), "
              f"memory {rss / floor[1]:.2f}x (budget 1.5x)")
        if args.baseline:
            command, env, cwd = why(Path(args.baseline).resolve(), ads, store)
            old_cpu, old_rss, old_wall = measure(command, cwd=cwd, env=env)
            print(f"why --json, {args.baseline}: CPU {old_cpu:.2f} s, peak {old_rss:.0f} MB, wall {old_wall:.1f} s "
                  f"({old_cpu / floor[0]:.1f}x the floor's CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
