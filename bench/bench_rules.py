"""Benchmark: classifying failed jobs with failure rules, beside today's classification.

Builds 200 rules (the 16 shipped examples, then VO-like rules on log tails, messages, hold
reasons and exit codes), and N failed jobs (default 1,000,000) with a realistic mix: every
job has its error type, exit code and message (``job exited with code N``, ~40 codes); a
share has a hold reason naming its slot and host (``--hold-fraction``, default 0.1, each one
distinct); a share has a log tail of ~1-2 KB from realistic texts, each made distinct by its
own timestamped last lines (``--tail-fraction``, default 0.2). Timed, in the same run:

- today's classification: ``failure.job_domain`` of every job (the converter's rule);
- the rules: ``RuleSet.classify`` of every job (what the forwarder adds, the facts built).

Target: the rules take at most 10 s for 1,000,000 jobs and 200 rules.

    python -m bench.bench_rules [--jobs 1000000] [--tail-fraction 0.2] [--hold-fraction 0.1]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.core import failure  # noqa: E402
from glidein_tracing.failure_rules.rules import Decision, Facts, Rule, RuleSet  # noqa: E402
from glidein_tracing.failure_rules.files import parse_file  # noqa: E402

TAILS = (
    "CernVM-FS: loading Fuse module... Failed to initialize root file catalog (16 - file catalog failure)",
    "bash: /cvmfs/cms.cern.ch/cmsset_default.sh: No such file or directory",
    "Run: [ERROR] Server responded with an error: [3011] No servers are available to read the file.",
    "Message kXR_read (handle: 0x00000000, offset: 0, size: 16777216) returned with [ERROR] Operation expired",
    'Traceback (most recent call last):\n  File "ana.py", line 12, in <module>\nZeroDivisionError: division by zero',
    "Segmentation fault (core dumped)",
    "%MSG-s FrontierConnectionManager: frontier.c:1024: Request 42 on chan 1 failed: Connection refused",
    "OSError: [Errno 28] No space left on device: '/srv/out.root'",
    "Begin processing the 532nd record. Run 341004, Event 37520, LumiSection 3 on stream 1",
)
FILLER = "%MSG-w XrdAdaptorInternal: (NoModuleName) 19-Jul-2026 22:28:47 CEST pre-events\n" * 12


def vo_rules(count: int) -> list[Rule]:
    """VO-like rules, as a VO writes them: its own messages, exit codes, hold reasons."""
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            patterns, codes = (("log_tail", rf"ERROR: module vo_step_{i} failed with status \d+"),), ()
        elif kind == 1:
            patterns, codes = (("log_tail", rf"(?i)sam project \S+ (is not running|ended) \(code {i}\)"),), ()
        elif kind == 2:
            patterns, codes = (("hold_reason", rf"policy vo_policy_{i} (exceeded|violated)"),), ()
        else:
            patterns, codes = (("message", rf"^job exited with code {1000 + i}$"),), (("exit_code", frozenset({1000 + i})),)
        out.append(Rule(name=f"vo-{i}", source=f"bench:{i}", patterns=patterns, codes=codes,
                        kinds=("glidein", "job"), clients=(),
                        decision=Decision(f"vo-{i}", "service", f"svc{i % 7}", f"VO failure {i}", "")))
    return out


def rules_200() -> list[Rule]:
    examples = [r for p in sorted((REPO / "glidein_tracing" / "failure_rules" / "examples").glob("*.yaml")) for r in parse_file(p)[0]]
    return examples + vo_rules(200 - len(examples))


def jobs(n: int, tail_fraction: float, hold_fraction: float, seed: int = 7) -> list[Facts]:
    rng = random.Random(seed)
    codes = [1, 2, 3, 8, 65, 66, 85, 134, 137, 139, 8001, 8020, 8021, 8028, 50660, 50664] + list(range(20, 44))
    out = []
    for i in range(n):
        code = rng.choice(codes)
        tail = hold = ""
        if rng.random() < tail_fraction:
            tail = (FILLER[: rng.randrange(200, len(FILLER))] + rng.choice(TAILS)
                    + f"\n[2026-07-22 06:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d} +0000] job {i} ends with {code}\n")
        if rng.random() < hold_fraction:
            hold = (f"Error from slot1_{i % 32}@glidein_{i}_{rng.randrange(10**6)}@wn{i % 997}.example.org: "
                    f"Job has gone over cgroup memory limit of {rng.choice((2048, 4000))} megabytes.")
        out.append(Facts(kind="job", domain="user_code", error_type="job.exit_code",
                         message=f"job exited with code {code}", log_tail=tail, hold_reason=hold,
                         exit_code=code, client="vofrontend_service.main"))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--tail-fraction", type=float, default=0.2)
    parser.add_argument("--hold-fraction", type=float, default=0.1)
    args = quick.parse_args(parser, jobs=1000)
    rules = rules_200()
    ruleset = RuleSet(rules)
    facts = jobs(args.jobs, args.tail_fraction, args.hold_fraction)
    tail_bytes = sum(len(f.log_tail) for f in facts)

    start = time.perf_counter()
    for f in facts:   # today: the converter's rule, from the same job's attributes
        failure.job_domain({"job.exit_code": f.exit_code}, f.error_type, None)
    today_s = time.perf_counter() - start

    start = time.perf_counter()
    decided = sum(1 for f in facts if ruleset.classify(f) is not None)
    rules_s = time.perf_counter() - start

    print(f"{args.jobs:,} failed jobs, {len(rules)} rules, {args.tail_fraction:.0%} with a log tail "
          f"({tail_bytes / 1e6:.0f} MB in all), {args.hold_fraction:.0%} with a hold reason")
    print(f"today's classification (failure.job_domain): {today_s:.2f} s")
    print(f"rules (RuleSet.classify):                    {rules_s:.2f} s   ratio {rules_s / today_s:.1f}x; "
          f"{decided:,} decided by a rule; target <= 10 s: {'met' if rules_s <= 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
