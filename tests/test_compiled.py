"""The compiled modules (glidein_tracing.compiled): the same results as the pure-Python
sources (analysis tables, forwarded OTLP bytes), used only when built from the source beside
them, and really built by the installation the suite runs in."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from glidein_tracing import compiled
from glidein_tracing.analysis import synth
from glidein_tracing.analysis.sources import ReadReport, load_table

REPO = Path(__file__).resolve().parents[1]


def _table_arrays(table) -> dict:
    arrays = {f"{prefix}:{name}": column for prefix, part in (("g", table.g), ("jobs", table.jobs),
                                                                ("vals", table.vals)) for name, column in part.items()}
    arrays["meta"] = np.frombuffer(json.dumps({"names": table.names, "trace_ids": list(table.trace_ids)})
                                   .encode(), dtype=np.uint8)
    return arrays


_DUMP = """
import json, sys
import numpy as np
from glidein_tracing import compiled
from glidein_tracing.analysis.sources import ReadReport, load_table
from test_compiled import _table_arrays
report = ReadReport()
table = load_table(store=sys.argv[1], workers=int(sys.argv[3]), report=report)
np.savez(sys.argv[2], **_table_arrays(table))
print(json.dumps({"status": compiled.status(), "report": {k: v for k, v in report.__dict__.items()}}))
"""


def _read_in_child(store, out, workers, *, pure: bool) -> dict:
    return _run_child(_DUMP, [store, out, workers], pure=pure)


def test_compiled_and_pure_python_readers_give_the_same_table(tmp_path):
    store = tmp_path / "store"
    cfg = synth.SynthConfig(glideins=400, seed=17, fragment_rate=0.1, skew_rate=0.05, kill_rate=0.1)
    synth.write_store(cfg, store, rotate_bytes=300_000, fragment_delay_lines=50)
    with open(next(iter(sorted(store.glob("traces-*.jsonl")))), "ab") as handle:   # odd lines too
        handle.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}\n\x00garbage\n')
    for workers in (1, 2):
        pure = _read_in_child(store, tmp_path / f"pure{workers}.npz", workers, pure=True)
        default = _read_in_child(store, tmp_path / f"default{workers}.npz", workers, pure=False)
        assert set(pure["status"].values()) == {f"pure Python: {compiled.PURE_ENV} is set"}
        assert pure["report"] == default["report"] and pure["report"]["bad_lines"] >= 1
        with np.load(tmp_path / f"pure{workers}.npz") as a, np.load(tmp_path / f"default{workers}.npz") as b:
            assert sorted(a.files) == sorted(b.files)
            for name in a.files:
                np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        assert pure["report"]["traces"] > 300


_FORWARD = """
import copy, hashlib, json, sys
from glidein_tracing import compiled
from glidein_tracing.converter import convert, convert_to_span_data
from glidein_tracing.exporters.otlp_proto import encode_request_bytes
from glidein_tracing.journal import JournalReport, format_line, parse_lines
from journal_builders import root_lines
digest, reports = hashlib.sha256(), []
for g in range(12):
    t = 1767000000.25 + 5000 * g
    lines = root_lines(t, **{"glidein.proc:i": str(g), "api_token": "s3cr3t-value"})
    for k in range(4):
        lines.append(format_line(t + 2 + k, "record", f"main/s{k}.sh", {"@tstart": "2026-01-01T00:00:0%d+00:00" % k,
                     "@tend": "2026-01-01T00:00:0%d+00:00" % (k + 1), "@status": "ERROR" if g == k else "OK",
                     "m.NrAttributes": str(k)}))
        lines.append(format_line(t + 3 + k, "sample", "-", {"r.utime": str(k * 1.5), "r.rss": str(10**8 + k)}))
    lines.append(format_line(t + 9, "end", "setup", {"r.utime": "2.0"}))
    lines.append(format_line(t + 9, "start", "condor", {"@name": "condor", "@stage": "condor.start"}))
    for j in range(g % 4):
        key = f"job/s.example.org#{g}.{j}#1"
        lines.append(format_line(t + 20 + 100 * j, "start", key, {"@name": "job", "@stage": "job", "@parent": "condor",
                                                                 "job.request_cpus:i": "1", "big:i": str(2**70)}))
        lines.append(format_line(t + 90 + 100 * j, "end", key, {"@status": "OK" if j else "ERROR", "job.exit_code:i": j}))
    if g % 3:
        lines.append(format_line(t + 900, "end", "condor", {}))
        lines.append(format_line(t + 901, "end", "glidein", {}))
    data = "".join(lines).encode() + (b"garbage \\xff line\\n" if g % 2 else b"") + (b"cut line" if g % 5 == 0 else b"")
    report = JournalReport()
    events, report = parse_lines(data, report)
    spans = convert_to_span_data(events, report, redact=("api_token",))   # what the forwarder sends
    data = encode_request_bytes(spans)
    assert data == encode_request_bytes(convert(events, copy.deepcopy(report), redact=("api_token",))), \
        "SDK spans say the same"
    digest.update(data)
    reports.append({"lines": report.lines, "events": report.events, "skipped": dict(report.skipped),
                    "examples": {k: str(v) for k, v in report.examples.items()}, "spans": len(spans)})
print(json.dumps({"status": compiled.status(), "digest": digest.hexdigest(), "reports": reports}))
"""


def _run_child(code, args, *, pure: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]))
    env.pop(compiled.PURE_ENV, None)
    if pure:
        env[compiled.PURE_ENV] = "1"
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_compiled_and_pure_python_forwarders_send_the_same_bytes():
    pure = _run_child(_FORWARD, [], pure=True)
    default = _run_child(_FORWARD, [], pure=False)
    assert set(pure["status"].values()) == {f"pure Python: {compiled.PURE_ENV} is set"}
    assert pure["digest"] == default["digest"]
    assert pure["reports"] == default["reports"]


def test_setup_compiles_exactly_the_modules_the_finder_knows():
    tree = ast.parse((REPO / "setup.py").read_text())
    listed = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and any(getattr(t, "id", "") == "COMPILED" for t in node.targets))
    paths = ast.literal_eval(listed)
    assert tuple(p[:-3].replace("/", ".") for p in paths) == compiled.MODULES
    assert all((REPO / p).is_file() for p in paths)


def _fake_package(tmp_path, *, binary=True, record="match"):
    package = tmp_path / "glidein_tracing"
    (package / "analysis").mkdir(parents=True)
    source = package / "analysis" / "timeline.py"
    source.write_text("X = 1\n")
    if binary:
        import importlib.machinery
        source.with_suffix(importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"\x7fELF")
    if record is not None:
        digest = compiled.source_digest(source) if record == "match" else "0" * 64
        (package / compiled.SOURCES_FILE).write_text(json.dumps({"glidein_tracing.analysis.timeline": digest}))
    return package, source


def test_a_binary_is_used_only_when_built_from_the_source_beside_it(tmp_path):
    name = "glidein_tracing.analysis.timeline"
    package, source = _fake_package(tmp_path / "ok")
    assert compiled.pure_reason(name, package, environ={}) is None
    assert "PURE_PYTHON is set" in compiled.pure_reason(name, package, environ={compiled.PURE_ENV: "1"})

    source.write_text("X = 2\n")          # edited after the build: the binary is stale
    assert "another version" in compiled.pure_reason(name, package, environ={})

    package, _ = _fake_package(tmp_path / "nobinary", binary=False)
    assert "not compiled" in compiled.pure_reason(name, package, environ={})
    package, _ = _fake_package(tmp_path / "norecord", record=None)
    assert "no record" in compiled.pure_reason(name, package, environ={})
    package, _ = _fake_package(tmp_path / "other", record="other")
    assert "another version" in compiled.pure_reason(name, package, environ={})


def test_the_installed_reader_is_compiled():
    """The installation this suite runs in (tests/run.sh: pip install -e .) compiled the
    reader; on a developer machine without a compiler this only skips, never in CI."""
    status = compiled.status()
    pure = {module: state for module, state in status.items() if state != "compiled"}
    if pure and os.environ.get(compiled.PURE_ENV):
        pytest.skip(f"{compiled.PURE_ENV} is set")
    if pure and os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        pytest.skip(f"not compiled here: {pure}")
    assert not pure, pure
    out = subprocess.run([sys.executable, "-m", "glidein_tracing", "--version"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert all(f"{module}: compiled" in out for module in compiled.MODULES), out


@pytest.mark.parametrize("argv", [["--version"], ["show", "--list", "--store", "{store}"]])
def test_a_reader_that_closes_the_pipe_early_is_not_an_error(tmp_path, argv):
    """`glidein-tracing --version | head -1` and the like: exit 0, no traceback."""
    from glidein_tracing.converter import convert
    from glidein_tracing.exporters.store import JsonLinesStoreExporter
    from glidein_tracing.journal import parse_lines
    from journal_builders import root_lines
    JsonLinesStoreExporter(tmp_path).export(convert(parse_lines("".join(root_lines(1000.0)).encode())[0]))
    command = [sys.executable, "-m", "glidein_tracing"] + [a.format(store=tmp_path) for a in argv]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()              # the reader is gone before anything is written
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
