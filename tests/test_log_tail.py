"""Log tails on failure: the real cleanup hook collects the log that explains a failure, the
converter makes it a `glidein.log_tail` event on the failed stage, `show` prints it."""

import os
import re
import subprocess
import sys

import pytest

from glidein_tracing.core.converter import convert
from glidein_tracing.exporters.store import JsonLinesStoreExporter
from glidein_tracing.core.journal import read_journal

from tests.support.hook_support import config_get, fixture_dir
from tests.support.hook_support import glidein_at_cleanup as at_cleanup

UUID_KEY = "GLIDEIN_UUID"


@pytest.fixture
def glidein_at_cleanup(tmp_path):
    made = []

    def make(run, extra_config=None, otr_text=None):
        g, cleanup_dir = at_cleanup(tmp_path / run, run, extra_config=extra_config, otr_text=otr_text,
                                    retime=True)
        made.append(g)
        return g, cleanup_dir
    yield make
    for g in made:
        g.kill_sampler()
        g.stop()


def glidein_logs(g):
    uuid = config_get(g.config, UUID_KEY)
    logs = g.work / "logs" / uuid
    logs.mkdir(parents=True, exist_ok=True)
    return logs, uuid


def stderr_at_cleanup(run="fail"):
    """The glidein's stderr as its logs/<uuid>/<uuid>.err copy held it when cleanup ran:
    up to the post-failure sleep (the fixture's stderr is the whole life)."""
    text = (fixture_dir(run) / "glidein_stderr.txt").read_text()
    return text[:text.index(re.search(r"^.* Sleeping \d+$", text, re.M).group(0))]


def cleanup_spans(g, cleanup_dir, env=None):
    out = g.run_hook("gconditional_TRACING_cleanup.sh", str(g.config), cwd=cleanup_dir, env=env)
    assert out.returncode == 0 and out.stdout == ""
    events, report = read_journal(g.journal)
    assert report.skipped_total == 0, report.summary()
    return events, convert(events, report)


def tails(span):
    return {e.attributes["log.source"]: dict(e.attributes) for e in span.events
            if e.name == "glidein.log_tail"}


def test_failed_validation_script_gets_its_own_output_from_the_real_glideins_log(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail")
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text(stderr_at_cleanup())
    stdout = (fixture_dir("fail") / "glidein_stdout.txt").read_text()
    (logs / f"{uuid}.out").write_text(stdout[:stdout.index("=== Glidein ending")])
    events, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    got = tails(failed)
    err = got[f"logs/{uuid}/{uuid}.err"]
    text = err["log.lines"]
    # the failing script's part of the log: from the last script that passed to the error
    assert "=== Validation error in" in text and "Forced validation failure (GWMS_TRACE_TEST_FAIL=1)" in text
    assert "validation OK in" not in text and "cvmfsexec_platform_select.sh (0)" not in text
    assert text.splitlines()[0].startswith("gwms_trace_cleanup")
    assert "log.note" not in err
    # stdout has no validation markers: its part starts where glidein_startup.sh announced the
    # failed script (`Executing (flags:) <path>`), not 50 lines of other scripts' output
    out = got[f"logs/{uuid}/{uuid}.out"]["log.lines"].splitlines()
    assert out[0].startswith("Executing (flags:") and out[0].endswith("/main/gwms_trace_setup.sh")
    assert not [line for line in out[1:] if line.startswith("Executing")]
    assert "MACHINE_TOTAL_CPU" in stdout and "MACHINE_TOTAL_CPU" not in "\n".join(out)
    # only the failed stage carries a tail
    assert [s.name for s in spans if tails(s)] == ["main/gwms_trace_setup.sh"]
    # `show` prints it under the failed stage
    store = g.work.parent / "store"
    JsonLinesStoreExporter(store).export(spans)
    shown = subprocess.run([sys.executable, "-m", "glidein_tracing", "show", "--store", str(store),
                            format(spans[0].context.trace_id, "032x")],
                           capture_output=True, text=True, check=True).stdout
    assert f"log tail of logs/{uuid}/{uuid}.err:" in shown
    assert any(line.strip().startswith("|") and line.endswith("Forced validation failure (GWMS_TRACE_TEST_FAIL=1)")
               for line in shown.splitlines())


def test_a_glidein_that_ended_ok_gets_no_tail(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("success")
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text("all fine\n")
    events, spans = cleanup_spans(g, cleanup_dir)
    assert not [e for e in events if "@log.source" in e.fields]
    assert not [s for s in spans if tails(s)]


def test_knob_zero_turns_tails_off(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail", extra_config={"GLIDEIN_TRACING_LOG_TAIL_LINES": "0"})
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text(stderr_at_cleanup())
    events, _ = cleanup_spans(g, cleanup_dir)
    assert not [e for e in events if "@log.source" in e.fields]


def test_tail_is_bounded_in_lines_and_bytes(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail", extra_config={"GLIDEIN_TRACING_LOG_TAIL_LINES": "20"})
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text("".join(f"line {i}\n" for i in range(1000)))
    (logs / f"{uuid}.out").write_text("".join(f"{i:05d} " + "x" * 1000 + "\n" for i in range(100)))
    _, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    got = tails(failed)
    assert got[f"logs/{uuid}/{uuid}.err"]["log.lines"].splitlines() == [f"line {i}" for i in range(980, 1000)]
    out = got[f"logs/{uuid}/{uuid}.out"]["log.lines"]
    assert len(out.encode()) <= 8192 and out.endswith("x" * 1000) and "00099 " in out


def test_huge_binary_and_odd_logs_never_fail_the_hook(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail")
    logs, uuid = glidein_logs(g)
    with open(logs / f"{uuid}.err", "wb") as handle:   # 64 MB, binary, sparse mostly
        handle.seek(64 * 1024 * 1024)
        handle.write(os.urandom(20000) + b"\nlast words\n")
    (logs / f"{uuid}.out").mkdir()                      # not a file at all
    _, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    got = tails(failed)
    err = got[f"logs/{uuid}/{uuid}.err"]
    assert err["log.lines"].endswith("last words") and len(err["log.lines"].encode()) <= 8192 * 3
    assert "non-text characters shown as '?'" in err["log.note"]
    assert got[f"logs/{uuid}/{uuid}.out"]["log.note"] == "not a regular file"


def test_secrets_in_a_tail_are_redacted(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail")
    logs, uuid = glidein_logs(g)
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnbGlkZWluIn0.c2lnbmF0dXJl"
    (logs / f"{uuid}.err").write_text(f"curl -H 'Authorization: Bearer {token}'\nfailed\n")
    _, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    assert token not in str(tails(failed))


def failed_condor_records():
    """The success run's records with the condor phase failed (its record ERROR)."""
    text = (fixture_dir("success") / "otr_outlist.list").read_text()
    head, condor = text.rsplit('<OSGTestResult id="condor_startup.sh"', 1)
    condor = condor.replace("<status>OK</status>", "<status>ERROR</status>", 1)
    condor = condor.replace("<metric ", '<metric name="failure" ts="x" uri="local">WN_Resource</metric>\n    <metric ', 1)
    return head + '<OSGTestResult id="condor_startup.sh"' + condor


def test_failed_condor_phase_gets_the_daemon_logs(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("success", otr_text=failed_condor_records())
    log = g.work / "log"
    log.mkdir()
    (log / "MasterLog").write_text("11/22/26 03:36:07 ERROR: startd exited with status 4\n")
    (log / "StartdLog").write_text("11/22/26 03:36:06 Cannot bind to the collector\n")
    (log / "StarterLog.slot1_1").write_text("11/22/26 03:36:05 starter ran nothing\n")
    _, spans = cleanup_spans(g, cleanup_dir)
    (condor,) = [s for s in spans if s.attributes["glidein.stage"] == "condor.start"]
    got = tails(condor)
    assert got["log/MasterLog"]["log.lines"].endswith("startd exited with status 4")
    assert got["log/StartdLog"]["log.lines"].endswith("Cannot bind to the collector")
    assert got["log/StarterLog.slot1_1"]["log.lines"].endswith("starter ran nothing")
    (root,) = [s for s in spans if s.attributes["glidein.stage"] == "glidein"]
    assert root.attributes["glidein.failure.domain"] == "site"


def test_a_glidein_ended_by_sigterm_gets_the_tail_of_its_stderr(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("sigterm")
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text((fixture_dir("sigterm") / "glidein_stderr.txt").read_text())
    _, spans = cleanup_spans(g, cleanup_dir)
    (root,) = [s for s in spans if s.attributes["glidein.stage"] == "glidein"]
    assert root.attributes["glidein.outcome"] == "terminated"
    assert root.attributes["glidein.failure.domain"] == "preempted"
    tail = tails(root)[f"logs/{uuid}/{uuid}.err"]["log.lines"].splitlines()
    assert 0 < len(tail) <= 50
    assert tail[-1] == (fixture_dir("sigterm") / "glidein_stderr.txt").read_text().rstrip("\n").splitlines()[-1]
    # GlideinWMS's encoded sections (MasterLog, GlideinLog, the activity XML) are named, not
    # shown: 44 of the 50 lines were base64 before; now the lines around them tell the story
    assert not [line for line in tail if re.fullmatch(r"[A-Za-z0-9+/]{40,}=*", line)]
    assert "MasterLog" in tail and "GlideinLog" in tail
    assert [line for line in tail if line.startswith("[glidein_tracing: ") and "encoded data left out" in line]
    assert "Received kill signal... shutting down child processes (forwarding SIGTERM signal)" in tail


def test_a_hostile_journal_gets_at_most_four_bounded_tails_a_span():
    import base64

    from glidein_tracing.core import ids
    from glidein_tracing.core.journal import format_line, parse_lines
    from tests.support.journal_builders import root_lines
    trace = ids.GlideinIdentity("f", "n", "e", "s", "1", "0").trace_id
    data = base64.b64encode(b"x" * 700 + b"\x00\x1b[31m\n").decode()
    lines = root_lines(1000.0, trace) + [
        format_line(1001, "note", "glidein", {"@log.source": f"log{i}", "@log.part": str(part),
                                              "@log.parts": "60", "@log.data": data})
        for i in range(50) for part in range(60)]
    lines += [format_line(1001, "note", "glidein", {"@log.source": "bad", "@log.part": "0",
                                                    "@log.data": "%%%not base64"})]
    events, report = parse_lines("".join(lines).encode())
    (root,) = [s for s in convert(events, report) if s.attributes["glidein.stage"] == "glidein"]
    got = tails(root)
    assert len(got) == 4
    for attrs in got.values():
        assert len(attrs["log.lines"].encode()) <= 8192 and "\x00" not in attrs["log.lines"]
        assert "non-text characters" in attrs["log.note"]


def test_damaged_or_missing_parts_keep_what_could_be_read_and_say_so():
    import base64

    from glidein_tracing.core import log_tail
    first = base64.b64encode(b"first part\n").decode()
    damaged = log_tail.assemble([{"@log.part": "0", "@log.parts": "2", "@log.data": first},
                                 {"@log.part": "1", "@log.parts": "2", "@log.data": "%%%"}])
    assert damaged == {"log.lines": "first part", "log.note": "part of the tail is damaged"}
    missing = log_tail.assemble([{"@log.part": "0", "@log.parts": "3", "@log.data": first}])
    assert missing == {"log.lines": "first part", "log.note": "part of the tail is missing"}


def private_key_pem() -> str:
    """A real RSA private key in PEM (openssl's), or one shaped like it where openssl is absent."""
    import base64
    import shutil
    if shutil.which("openssl"):
        return subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                              capture_output=True, text=True, check=True).stdout
    body = base64.b64encode(os.urandom(1190)).decode()
    return ("-----BEGIN PRIVATE KEY-----\n" + "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
            + "\n-----END PRIVATE KEY-----\n")


def test_quoted_secrets_in_a_failing_scripts_output_are_redacted(glidein_at_cleanup):
    g, cleanup_dir = glidein_at_cleanup("fail")
    logs, uuid = glidein_logs(g)
    (logs / f"{uuid}.err").write_text(
        'config: {"password": "hunter2 two", "access_token":"tok-123456", "site": "UCSD"}\n'
        "yaml says:\n  'db_secret': 'y4ml-s3cret'\n  \"api_key\": plainkey99\n"
        "python: {'proxy_key': 'py-dict-value', 'entry': 'CMSHTPC_T2_US_UCSD'}\n"
        'nested: "{\\"client_secret\\": \\"esc-aped\\"}"\n'
        "Forced validation failure\n")
    _, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    text = tails(failed)[f"logs/{uuid}/{uuid}.err"]["log.lines"]
    for secret in ("hunter2", "tok-123456", "y4ml-s3cret", "plainkey99", "py-dict-value", "esc-aped"):
        assert secret not in text
    # the keys and what is not secret stay readable
    assert '"password": REDACTED' in text and '"site": "UCSD"' in text
    assert "'entry': 'CMSHTPC_T2_US_UCSD'" in text and text.endswith("Forced validation failure")


def _wrapped(key: str, width: int) -> str:
    """``key`` (PEM) with its base64 body wrapped at ``width`` columns."""
    lines = key.strip().splitlines()
    body = "".join(lines[1:-1])
    return "\n".join([lines[0], *(body[i:i + width] for i in range(0, len(body), width)), lines[-1]]) + "\n"


@pytest.mark.parametrize("width", [64, 48])
def test_a_tail_cut_inside_a_private_key_keeps_none_of_it(glidein_at_cleanup, width):
    """At 64 columns (openssl's) the hook itself leaves the key's body out (a run of long
    base64 lines); a key wrapped at 48 columns reaches the tail line by line, and the tail,
    cut inside its block, drops the block's lines up to its END."""
    g, cleanup_dir = glidein_at_cleanup("fail", extra_config={"GLIDEIN_TRACING_LOG_TAIL_LINES": "20"})
    logs, uuid = glidein_logs(g)
    key = _wrapped(private_key_pem(), width)
    body = key.splitlines()[1:-1]
    assert len(body) > 20        # the BEGIN line falls outside a 20-line tail of the whole key
    (logs / f"{uuid}.err").write_text("loading the key\n" + key + "key rejected by the CE\n")
    # a script that printed a key's body without its BEGIN and END lines, mid-log
    (logs / f"{uuid}.out").write_text("x509 dump:\n" + "\n".join(body[3:12]) + "\nend of dump\n")
    _, spans = cleanup_spans(g, cleanup_dir)
    (failed,) = [s for s in spans if s.name == "main/gwms_trace_setup.sh"]
    got = tails(failed)
    err, out = got[f"logs/{uuid}/{uuid}.err"], got[f"logs/{uuid}/{uuid}.out"]
    for line in body:
        assert line not in err["log.lines"] and line not in out["log.lines"]
    assert err["log.lines"].endswith("key rejected by the CE")
    if width == 64:
        return
    # the tail starts after the block: its END line and what followed
    assert err["log.lines"] == "key rejected by the CE"
    assert "lines of a PEM block the tail began inside dropped" in err["log.note"]
    assert out["log.lines"] == "x509 dump:\nREDACTED\nend of dump"
