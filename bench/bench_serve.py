"""Benchmark: `glidein-tracing serve` under concurrent users, beside `show` of one trace.

Builds (once, cached under ~/.cache/glidein_tracing/bench) a store of N synthetic glideins
(testing/synth.py), each job owned by one of --users users (``job.owner``, as the forwarder
stores it), plus one waiting submission per user (a ``job.waiting`` span, as the Frontend
sends it). Starts the real service (a subprocess, waitress, on 127.0.0.1, tokens signed here
with a key made here) and runs --users clients at once for --seconds, each over its own
keep-alive connection with its own token, looping: its "my jobs" page (``/api/v1/jobs``, 20
submissions with their states), one of its traces (``/api/v1/traces/ID``) and its waiting
submission's ``why`` (``/api/v1/jobs/ID/why``). Prints p50 and p99 latency per kind and
overall, the requests answered and the errors (any answer but 200), and, measured in the same
run, the baseline: `show`'s read of one trace from the same store (Store.trace + the tree).

    python -m bench.bench_serve [--glideins 50000] [--users 200] [--seconds 60]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.core import conventions as c  # noqa: E402
from glidein_tracing.exporters.store import Store  # noqa: E402
from glidein_tracing.testing import synth  # noqa: E402
from glidein_tracing.viewers.tree import render  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "glidein_tracing" / "bench"
ISSUER, AUDIENCE = "https://issuer.bench.example.org", "https://tracing.bench.example.org"


def user(n: int) -> str:
    return f"user{n:03d}"


def waiting_trace(n: int) -> str:
    return f"{0xbe0c0000 + n:032x}"


def build_store(directory: Path, glideins: int, users: int) -> None:
    """N synthetic glideins, their jobs owned by the users in turn, and one waiting submission
    per user, through the store's own writer."""
    store = Store(directory)
    rng = random.Random(11)
    pending = []
    for glidein in synth.generate(synth.SynthConfig(glideins=glideins, seed=11)):
        spans = synth.glidein_spans(glidein)
        for span in spans:
            if span["attributes"].get(c.STAGE) == c.STAGE_JOB:
                span["attributes"][c.JOB_OWNER] = user(rng.randrange(users))
        pending.append(spans)
        if len(pending) >= 2000:
            store.append_span_dicts(pending)
            pending.clear()
    now_ns = time.time_ns()
    for n in range(users):
        trace = waiting_trace(n)
        pending.append([{"trace_id": trace, "span_id": f"{n + 1:016x}", "parent_span_id": "", "name": c.STAGE_JOB_WAITING,
                         "start_ns": now_ns - 1800 * 10**9, "end_ns": now_ns, "status_code": 0, "status_message": "",
                         "attributes": {c.STAGE: c.STAGE_JOB_WAITING, c.JOB_OWNER: user(n),
                                        c.JOB_WAITING_REASON: "site_queue", c.JOB_WAITING_STATE: "current",
                                        c.JOB_WAITING_DETAIL: "4 glideins for it wait in the site's batch queue",
                                        c.JOB_WAITING_REASON_ENTRIES: ["ENTRY_Alpha_0"]},
                         "resource": {c.SERVICE_NAME: "gwms-frontend"}, "events": [], "links": []}])
    store.append_span_dicts(pending)


def start_server(tmp: Path, store: Path, threads: int):
    """The service as a process on a free port, with a JWKS of a key made here; (process, port, key)."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "bench"}
    (tmp / "keys.jwks").write_text(json.dumps({"keys": [jwk]}))
    (tmp / "serve.yaml").write_text(
        f"listen: 127.0.0.1:0\nstore: {store}\nthreads: {threads}\nrate_limit: 10000\nsecure_cookies: false\n"
        f"issuers:\n  - issuer: {ISSUER}\n    jwks_file: {tmp / 'keys.jwks'}\n    audience: {AUDIENCE}\n")
    process = subprocess.Popen([sys.executable, "-m", "glidein_tracing", "serve", "--config", str(tmp / "serve.yaml")],
                               stderr=subprocess.PIPE, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    while True:
        line = process.stderr.readline()
        if not line:
            raise SystemExit("the service did not start")
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].strip("/\n"))
            break
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()   # its access log
    return process, port, key


def client(port: int, token: str, own: list, waiting: str, until: float, out: list, errors: list) -> None:
    """One user's loop over its three requests on one keep-alive connection."""
    rng = random.Random(token[-16:])
    headers = {"Authorization": f"Bearer {token}"}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while time.time() < until:
        for kind, path in (("jobs", "/api/v1/jobs?limit=20"), ("trace", f"/api/v1/traces/{rng.choice(own)}"),
                           ("why", f"/api/v1/jobs/{waiting}/why")):
            start = time.perf_counter()
            try:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as exc:
                status = type(exc).__name__
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            out.append((kind, time.perf_counter() - start))
            if status != 200:
                errors.append((kind, status))
    connection.close()


def percentile(values: list, share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main():
    import jwt
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glideins", type=int, default=50_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--threads", type=int, default=8, help="the service's worker threads")
    args = quick.parse_args(parser, glideins=300, users=5, seconds=3)
    directory = CACHE / f"serve-store-{args.glideins}-u{args.users}-g{synth.GENERATOR_VERSION}"
    if not (directory / "index.sqlite").exists():
        built = time.perf_counter()
        build_store(directory, args.glideins, args.users)
        print(f"built {args.glideins:,} glideins for {args.users} users in {time.perf_counter() - built:.0f} s")
    store = Store(directory, read_only=True)
    owned = {n: [t for t, *_ in store.owned(user(n), limit=50) if t != waiting_trace(n)] for n in range(args.users)}
    health = store.health()
    print(f"store: {health['traces']:,} traces; load {os.getloadavg()[0]:.2f}")
    sample = [t for ids in owned.values() for t in ids[:3]]
    show = []
    for trace in sample[:50]:                 # the baseline: `show` of one trace (its read and its tree)
        start = time.perf_counter()
        render(Store(directory, read_only=True).trace(trace))
        show.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory(prefix="gt-bench-serve-") as tmp:
        process, port, key = start_server(Path(tmp), directory, args.threads)
        try:
            now = int(time.time())
            tokens = {n: jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": user(n), "exp": now + 7200},
                                    key, algorithm="RS256", headers={"kid": "bench"}) for n in range(args.users)}
            out, errors = [], []
            until = time.time() + args.seconds
            workers = [threading.Thread(target=client, args=(port, tokens[n], owned[n] or [waiting_trace(n)],
                                                             waiting_trace(n), until, out, errors))
                       for n in range(args.users)]
            started = time.perf_counter()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            wall = time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(timeout=60)
    base = statistics.median(show)
    print(f"baseline, show of one trace (read + tree, in process): median {base * 1000:.1f} ms over {len(show)} traces")
    for kind in ("jobs", "trace", "why"):
        times = [t for k, t in out if k == kind]
        p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
        print(f"{kind:5s}: {len(times):6d} requests, p50 {p50 * 1000:7.1f} ms ({p50 / base:5.1f}x show), "
              f"p99 {p99 * 1000:7.1f} ms ({p99 / base:5.1f}x show)")
    times = [t for _, t in out]
    print(f"all  : {len(times)} requests in {wall:.0f} s ({len(times) / wall:.0f}/s) by {args.users} users, "
          f"p50 {percentile(times, 0.5) * 1000:.1f} ms, p99 {percentile(times, 0.99) * 1000:.1f} ms, "
          f"errors {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))


if __name__ == "__main__":
    main()
