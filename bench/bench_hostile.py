"""Benchmark: the forwarder's peak memory and time on the worst glidein outputs (issue 11).

Two forwarder runs over Factory log trees, each in its own process (``glidein-tracing
forward`` into the embedded store), measured with ``wait4`` (peak RSS of that process):

- baseline: ``--good`` well-formed glideins;
- hostile: the same good glideins plus one glidein each of: 1M note lines, a 300,000-deep
  parent chain, 2M attributes on one span, 8 gzip-bomb sections in a ~2 MB stderr, and a
  live-export record naming 6M span ids "sent" (100,000 lines of 60), and 300 failed stages
  whose 1,200 log tails are texts that once made the secret search slow (redaction_traps).

It prints peak RSS and wall time of both, their ratio, and checks that every good glidein
arrived exactly once beside the hostile ones. Target: hostile peak RSS under 500 MB. A third
run (``--binary-mb``, 200 by default; 0: none): the good glideins and one whose stderr is that
many MiB of random bytes (a job that wrote a binary file there).

Then GlideinWMS's reading of a returned stdout (factory/glidein_stdout.py) on 16 MiB hostile
stdouts (unclosed "Stats of" blocks, long and many lines of summary and banner words, only
newlines) against a 16 MiB well-formed one (ordinary log lines around the real banners): the
time of each and its ratio.

Then the Factory's redaction (core/redaction.py, redact_text) of 8 KB texts a job can print,
one call each (the best of 3 x 20): the redaction traps above and an 8 KB text of tokens, of
URLs, of secret-looking keys, against an ordinary 8 KB log (the plain time); with
--compare-redaction FILE, another version of redaction.py in the same run (e.g. `git show
REV:glidein_tracing/core/redaction.py > FILE`).

    python -m bench.bench_hostile [--good 20] [--scale 1] [--binary-mb 200] [--compare-redaction FILE]
"""

from __future__ import annotations

import argparse
import base64
import itertools
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]

from glidein_tracing.exporters.store import iter_store  # noqa: E402
from glidein_tracing.core.journal import format_line  # noqa: E402
from glidein_tracing.core.sections import BEGIN, END, JOURNAL_SECTION, MARKER  # noqa: E402
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout  # noqa: E402

from tests.support.factory_builders import FACTORY, SCHEDD, T0, identity, journal_text, returned_stderr, run_glidein  # noqa: E402

TARGET_MB = 500


def gzip_section(chunks) -> str:
    """A journal section whose gzip stream is made from ``chunks`` (bytes) without holding
    the whole inflated text: how a bomb fits in a small stderr."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    packed = b"".join(compressor.compress(chunk) for chunk in chunks) + compressor.flush()
    return f"{JOURNAL_SECTION}\n{MARKER}\n{BEGIN}\n{base64.encodebytes(packed).decode()}{END}\n"


def hostile_outputs(layout, scale: float = 1.0):
    """{proc: stderr text} of the hostile glideins (cluster 2), each ``scale`` times its size."""

    def sized(count: int) -> int:
        return max(1, int(count * scale))
    note = format_line(T0 + 1, "note", "-", {"@msg": "n" * 40}).encode()
    chain = [format_line(T0 + 2, "start", f"c/{i}", {"@name": "c", "@stage": "setup",
                                                     "@parent": f"c/{i - 1}" if i else "setup"})
             for i in range(sized(300_000))]
    attrs = [format_line(T0 + 1, "attr", "glidein", {f"custom.k{i}_{j}": "v" for j in range(200)})
             for i in range(sized(10_000))]
    zeros = b"\0" * (1 << 20)
    bomb = "".join(gzip_section([b"gtj1\n"] + [zeros] * sized(180)) for _ in range(8))
    record = (format_line(T0 + 21, "export", "-", {"@state": "sent", "@spans": " ".join(
        f"{n * 60 + i:016x}" for i in range(60))}).encode() for n in range(sized(100_000)))   # never held whole
    return {
        5: gzip_section([journal_text(layout, 2, 5, T0, extra=redaction_traps(sized(300))).encode()]),
        0: gzip_section([journal_text(layout, 2, 0, T0).encode()] + [note * 1000] * sized(1000)),
        1: gzip_section([journal_text(layout, 2, 1, T0, extra=chain).replace(
            "\tstart\tglidein\t", "\tstart\tglidein\t@max_spans=100000000\t", 1).encode()]),
        2: gzip_section([journal_text(layout, 2, 2, T0, extra=attrs).encode()]),
        3: bomb,
        4: gzip_section(itertools.chain([journal_text(layout, 2, 4, T0).encode()], record)),
    }


# 8 KB texts that made the secret search slow: a letter run before a "://", short base64-looking
# lines with an END hint, full base64 lines after a short one and no END line
REDACTION_TRAPS = [b"a" * 8180 + b" http://x", (b"a1\n" * 2800)[:8180] + b"-----end",
                   (b"x\nab1\n" + (b"A" * 63 + b"1\n") * 130)[:8180] + b"x\n-----end"]


def redaction_traps(spans: int = 300) -> list:
    """Failed stages whose log tails (4 a span, 8 KB each: the most the Factory keeps) are the
    texts that made the secret search slow: a letter run before a "://", short base64-looking
    lines with an END hint, full base64 lines after a short one and no END line (about 14 MB
    of journal, near a glidein's 16 MiB)."""
    texts = REDACTION_TRAPS
    lines = []
    for n in range(spans):
        key = f"trap/{n}"
        lines += [format_line(T0 + 2, "start", key, {"@name": "trap", "@stage": "setup", "@parent": "setup"}),
                  format_line(T0 + 3, "end", key, {"@status": "ERROR"})]
        for tail in range(4):
            data = base64.b64encode(texts[(n + tail) % len(texts)]).decode()
            chunks = [data[i:i + 1000] for i in range(0, len(data), 1000)]
            lines += [format_line(T0 + 3, "note", key, {"@log.source": f"log{tail}", "@log.part": str(i),
                                                        "@log.parts": str(len(chunks)), "@log.data": chunk})
                      for i, chunk in enumerate(chunks)]
    return lines


def build(root: Path, good: int, hostile: bool, scale: float, binary_mb: int = 0) -> FactoryLayout:
    layout = FactoryLayout(logs=root / "logs")
    log = CondorGLog(layout)
    for proc in range(good):
        run_glidein(log, layout, 1, proc, T0 + proc, returned_stderr(journal_text(layout, 1, proc, T0 + proc)))
    if hostile:
        for proc, text in hostile_outputs(layout, scale).items():
            run_glidein(log, layout, 2, proc, T0, text)
    if binary_mb:       # a job that wrote a binary file to the glidein's stderr: random bytes, no journal
        run_glidein(log, layout, 2, 0, T0, "")
        err = layout.output(2, 0, "err")
        with open(err, "wb") as out:
            for _ in range(binary_mb):
                out.write(os.urandom(1 << 20))
        os.utime(err, (time.time() - 3600,) * 2)
    return layout


def forward(layout, root: Path):
    """Run one forwarder pass in its own process: (peak RSS MB, wall s, exit status)."""
    command = [sys.executable, "-m", "glidein_tracing", "forward", str(layout.logs), "--factory", FACTORY,
               "--schedd", SCHEDD, "--store", str(root / "store"), "--state", str(root / "ledger.sqlite"),
               "--grace", "5", "--no-progress"]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    summary = process.stderr.read().decode().strip().splitlines()
    return usage.ru_maxrss / 1024, wall, process.returncode, summary[-1] if summary else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=int, default=20, help="well-formed glideins in each run")
    parser.add_argument("--scale", type=float, default=1.0, help="the hostile outputs' size, times the above")
    parser.add_argument("--binary-mb", type=int, default=200,
                        help="a third run: the good glideins and one whose stderr is this many MiB of random bytes")
    parser.add_argument("--compare-redaction", type=Path, metavar="FILE",
                        help="another version of core/redaction.py, timed in the same run")
    args = quick.parse_args(parser, good=2, scale=0.02, binary_mb=2)
    work = Path(tempfile.mkdtemp(prefix="bench_hostile_"))
    try:
        results = {}
        for name, hostile, binary_mb in (("baseline", False, 0), ("hostile", True, 0), ("binary", False, args.binary_mb)):
            if name == "binary" and not binary_mb:
                continue
            root = work / name
            # built in a process of its own: a child's peak RSS starts from its parent's peak at
            # exec, and the hostile outputs take hundreds of MB to make
            builder = multiprocessing.get_context("fork").Process(target=build, args=(root, args.good, hostile,
                                                                                      args.scale, binary_mb))
            builder.start()
            builder.join()
            layout = FactoryLayout(logs=root / "logs")
            size = sum(p.stat().st_size for p in layout.entry_dir.glob("job.2.*.err"))
            rss, wall, code, summary = forward(layout, root)
            counts = Counter((s["trace_id"], s["span_id"]) for s in iter_store(root / "store"))
            good = {identity(layout, 1, proc).trace_id for proc in range(args.good)}
            once = all(n == 1 for n in counts.values()) and good <= {t for t, _ in counts}
            results[name] = (rss, wall)
            print(f"{name:9s} peak RSS {rss:7.1f} MB  time {wall:6.2f} s  exit {code}  "
                  f"hostile input {size / 1e6:5.1f} MB  good glideins exactly once: {once}")
            print(f"          {summary}")
        (base_rss, base_wall), (rss, wall) = results["baseline"], results["hostile"]
        print(f"ratio hostile/baseline: peak RSS {rss / base_rss:.2f}x, time {wall / base_wall:.2f}x; "
              f"target peak RSS < {TARGET_MB} MB: {'met' if rss < TARGET_MB else 'NOT met'}")
        if "binary" in results:
            rss, wall = results["binary"]
            print(f"ratio binary/baseline: peak RSS {rss / base_rss:.2f}x, time {wall / base_wall:.2f}x "
                  f"({args.binary_mb} MiB of random bytes as one glidein's stderr)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    redaction_calls(args.compare_redaction)
    stdout_reader()


def redaction_calls(compare=None):
    """Time redact_text on hostile 8 KB texts against an ordinary 8 KB log (and, given
    ``compare``, the same with that version of redaction.py)."""
    import importlib.util
    import timeit

    from glidein_tracing.core import redaction
    versions = {"this": redaction}
    if compare is not None:
        spec = importlib.util.spec_from_file_location("compared_redaction", compare)
        versions[compare.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(versions[compare.name])
    traps = [text.decode() for text in REDACTION_TRAPS]
    texts = {"ordinary log (the plain time)": ("line %d of the job's output, 20 events done\n" * 300)[:8190],
             "letter run before ://": traps[0], "short base64 lines, END hint": traps[1],
             "full base64 lines, no END": traps[2], "token words": ("token " * 1400)[:8190],
             "URLs": ("see http://host.example.org/path " * 300)[:8190],
             "password: words": ("password: " * 900)[:8190]}
    print("redaction of 8 KB (core/redaction.py redact_text, best of 3 x 20 calls)")
    print(f"{'text':<32}" + "".join(f" {name + ' ms (x plain)':>24}" for name in versions))
    plain = {}
    for label, text in texts.items():
        cells = []
        for name, module in versions.items():
            ms = min(timeit.repeat(lambda: module.redact_text(text), number=20, repeat=3)) / 20 * 1000
            plain.setdefault(name, ms)
            cells.append(f" {f'{ms:.3f} ({ms / plain[name]:.0f}x)':>24}")
        print(f"{label:<32}" + "".join(cells))


def stdout_reader():
    """Time GlideinWMS's reading of hostile 16 MiB stdouts against a well-formed one."""
    from glidein_tracing.factory.glidein_stdout import MAX_STDOUT_BYTES, stdout_facts
    size = MAX_STDOUT_BYTES
    banners = (b"=== Last script starting Sun Nov 22 03:36:04 UTC 2026 (1795318564) after validating for 7 ===\n"
               b"=== Condor starting Sun Nov 22 03:36:05 UTC 2026 (1795318565) ===\n"
               b"=== Condor ended Sun Nov 22 03:36:10 UTC 2026 (1795318570) after 5 ===\n"
               b"=== Stats of main ===\n(Real) Total jobs 1 utilization 5\n=== End Stats of main ===\n")
    log = b"Executing (flags:) /srv/glidein/execute/dir_1234/main/some_script.sh\n"
    condor = b"=== Condor starting ===\n=== Condor ended after 9 ===\n"
    outputs = {
        "well-formed": (log * (size // 2 // len(log)) + banners + log * (size // 2 // len(log)))[:size],
        "unclosed Stats-of blocks": (condor + b"=== Stats of main ===\n" * (size // 22))[:size],
        "one line of summary words": (condor + b"=== Stats of main ===\n" + b"Total jobs 1 " * (size // 13))[:size],
        "256-byte summary lines": (condor + b"=== Stats of main ===\n" + (b"Total jobs 1 " * 19 + b"\n") * (size // 248)
                                   )[:size - 30] + b"\n=== End Stats of main ===\n",
        "one line of banner words": (b"=== Last script starting " * (size // 25))[:size],
        "256-byte banner lines": ((b"=== Last script starting " * 10 + b"\n") * (size // 251))[:size],
        "only newlines": b"\n" * size,
    }
    times = {}
    for name, text in outputs.items():
        start = time.perf_counter()
        stdout_facts(text)
        times[name] = time.perf_counter() - start
    for name, seconds in times.items():
        print(f"stdout reader, {name:26s} {len(outputs[name]) / 2**20:5.1f} MiB  {seconds * 1000:7.1f} ms  "
              f"{seconds / times['well-formed']:6.1f}x the well-formed one")


if __name__ == "__main__":
    main()
