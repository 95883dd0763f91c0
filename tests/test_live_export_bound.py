"""GLIDEIN_TRACING_EXPORT_TIMEOUT bounds everything the cleanup hook does for live export
(probe and export), with or without `timeout(1)` on the node; the journal still goes home
in stderr, nothing of ours is left running, and endpoint credentials are written nowhere.

Real cleanup hook, real `glidein-tracing export`, real loopback endpoints."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from http.server import ThreadingHTTPServer

import pytest

from glidein_tracing.core.sections import JOURNAL_SECTION
from glidein_tracing.core.journal import format_line, parse_lines
from glidein_tracing.simulator import decode_sections
from tests.support.hook_support import make_glidein
from tests.support.journal_builders import root_lines
from tests.support.live_export_support import (closed_port_endpoint, glidein_for_live_export, hung_endpoint,
                                 path_without_timeout, run_cleanup, stuck_python)
from tests.support.otlp_receiver import CountingCollector

BOUND_S = 3
SLACK_S = 5  # generous: CI machines are slow; the measured figures are in bench/


@pytest.fixture(params=["with_timeout", "shell_watchdog"])
def node_path(request, tmp_path):
    """The node's PATH: as it is, or without `timeout` (the hook's shell watchdog bounds)."""
    return None if request.param == "with_timeout" else path_without_timeout(tmp_path / "bin")


def assert_bounded_and_journal_home(g, wall, stderr, left):
    assert wall < BOUND_S + SLACK_S, f"cleanup took {wall:.1f} s with a {BOUND_S} s bound"
    assert not left, f"left running after cleanup: {left}"
    section = decode_sections(stderr.encode())[JOURNAL_SECTION]
    assert section == g.journal.read_bytes()  # complete: the journal as the hook closed it
    events, report = parse_lines(section)
    assert report.skipped_total == 0
    assert any(e.key == "glidein" and e.op == "end" for e in events)
    # the other bounded steps (the records: awk reading a pipe) did their work too
    assert any(e.op == "record" and e.key == "condor_startup.sh" for e in events)
    notes = [e.fields.get("@msg", "") for e in events if e.op == "note"]
    assert any("live export to" in n and ("cut at" in n or "failed" in n) for n in notes), notes
    # nothing is recorded as sent: the Factory asks its backend, then sends what is missing
    assert not [e for e in events if e.op == "export" and e.fields.get("@state") == "sent"]


def test_hung_endpoint_is_cut_at_the_bound(tmp_path, node_path):
    with hung_endpoint() as endpoint:
        g, cleanup_dir = glidein_for_live_export(tmp_path, endpoint, BOUND_S)
        try:
            wall, stderr, left = run_cleanup(g, cleanup_dir, path=node_path)
        finally:
            g.stop()
    assert_bounded_and_journal_home(g, wall, stderr, left)


def test_closed_port_fails_within_the_bound(tmp_path, node_path):
    g, cleanup_dir = glidein_for_live_export(tmp_path, closed_port_endpoint(), BOUND_S)
    try:
        wall, stderr, left = run_cleanup(g, cleanup_dir, path=node_path)
    finally:
        g.stop()
    assert_bounded_and_journal_home(g, wall, stderr, left)


def test_python_that_never_answers_is_cut_at_the_bound(tmp_path, node_path):
    """The probe gets part of the bound, not a fixed 10 s of its own."""
    g, cleanup_dir = glidein_for_live_export(tmp_path, closed_port_endpoint(), BOUND_S,
                                             python=stuck_python(tmp_path / "py"))
    try:
        wall, stderr, left = run_cleanup(g, cleanup_dir, path=node_path)
    finally:
        g.stop()
    assert wall < BOUND_S + SLACK_S, f"cleanup took {wall:.1f} s with a {BOUND_S} s bound"
    assert not left, f"left running after cleanup: {left}"
    assert decode_sections(stderr.encode())[JOURNAL_SECTION] == g.journal.read_bytes()
    assert b"did not answer in time" in g.journal.read_bytes()


def test_shell_watchdog_leaves_nothing_when_the_export_finishes_early(tmp_path):
    """A reachable collector: the export ends well before the bound, and the watchdog (its
    sleep included) is gone with it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingCollector)
    CountingCollector.received, CountingCollector.up = [], True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        g, cleanup_dir = glidein_for_live_export(tmp_path, f"http://127.0.0.1:{server.server_port}", 30)
        try:
            wall, stderr, left = run_cleanup(g, cleanup_dir, path=path_without_timeout(tmp_path / "bin"))
        finally:
            g.stop()
    finally:
        server.shutdown()
        server.server_close()
    assert not left, f"left running after cleanup: {left}"
    assert wall < 30
    events, _ = parse_lines(g.journal.read_bytes())
    sent = [e for e in events if e.op == "export" and e.fields.get("@state") == "sent"]
    assert sent, "the live export did not go out"
    assert len(CountingCollector.received) > 0


class AuthRecordingCollector(CountingCollector):
    """The counting receiver, also keeping each request's Authorization header."""
    authorizations: list = []

    def do_POST(self):
        AuthRecordingCollector.authorizations.append(self.headers.get("Authorization"))
        super().do_POST()


@pytest.mark.parametrize("credential", ["url_userinfo", "otel_headers"])
def test_endpoint_credentials_are_written_nowhere(tmp_path, credential):
    server = ThreadingHTTPServer(("127.0.0.1", 0), AuthRecordingCollector)
    CountingCollector.received, CountingCollector.up = [], True
    AuthRecordingCollector.authorizations = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    secret = "s3cr3t-Pa55"
    public = f"http://127.0.0.1:{server.server_port}"
    if credential == "url_userinfo":
        endpoint, env = f"http://gwms:{secret}@127.0.0.1:{server.server_port}", {}
        expected_auth = "Basic " + base64.b64encode(f"gwms:{secret}".encode()).decode()
    else:
        endpoint = public
        env = {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{secret}"}
        expected_auth = f"Bearer {secret}"
    try:
        g, cleanup_dir = glidein_for_live_export(tmp_path, endpoint, 30)
        try:
            _, stderr, _ = run_cleanup(g, cleanup_dir, env=env)
        finally:
            g.stop()
    finally:
        server.shutdown()
        server.server_close()
    # the credential worked (the collector saw it) ...
    assert CountingCollector.received and set(AuthRecordingCollector.authorizations) == {expected_auth}
    # ... and is nowhere on the node: journal, stderr (section and messages), export log
    journal = g.journal.read_bytes()
    section = decode_sections(stderr.encode())[JOURNAL_SECTION]
    export_log = (g.work / "glidein_tracing" / "export.log").read_bytes()
    for where, text in [("journal", journal), ("stderr section", section),
                        ("stderr", stderr.encode()), ("export.log", export_log)]:
        assert secret.encode() not in text, f"credential in the {where}"
    # the note says where the spans went
    events, _ = parse_lines(journal)
    (note,) = [e for e in events if e.op == "note" and "live export" in e.fields.get("@msg", "")]
    assert note.fields["@msg"] == f"live export to {public} done"


def test_bad_endpoint_knob_message_has_no_credentials(tmp_path):
    g = make_glidein(tmp_path, "success", extra_config={
        "GLIDEIN_TRACING_ENDPOINT": "ftp://gwms:s3cr3t-Pa55@collector:21"})
    try:
        out = g.run_hook("gconditional_TRACING_setup.sh", "glidein_config", "main")
    finally:
        g.kill_sampler()
        g.stop()
    assert "GLIDEIN_TRACING_ENDPOINT='ftp://collector:21' is not an http" in out.stderr
    assert "s3cr3t" not in out.stderr and b"s3cr3t" not in g.journal.read_bytes()


@pytest.mark.parametrize("endpoint_kind", ["hung", "closed"])
def test_export_command_ends_by_itself_within_its_timeout(tmp_path, endpoint_kind):
    """`glidein-tracing export --timeout T`: the SDK's request timeout and retries fit in T, so
    the command ends on its own (exit 1) instead of waiting to be killed; the journal only
    gains the record that the spans were being sent (they may have arrived)."""
    journal = tmp_path / "journal.gtj"
    journal.write_text("".join(line + "\n" for line in root_lines(1000.0)) + format_line(
        1001, "end", "setup", {"@status": "OK"}) + "\n" + format_line(
        1002, "end", "glidein", {"@status": "OK"}) + "\n")
    before = journal.read_bytes()
    with (hung_endpoint() if endpoint_kind == "hung" else nullcontext(closed_port_endpoint())) as url:
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "glidein_tracing", "export", "--journal", str(journal),
                              "--timeout", "2"], env={**os.environ, "GLIDEIN_TRACING_ENDPOINT": url},
                             capture_output=True, text=True, timeout=60)
        wall = time.monotonic() - start
    assert out.returncode == 1, out.stderr
    assert wall < 2 + SLACK_S
    after = journal.read_bytes()
    assert after.startswith(before)
    added, report = parse_lines(after[len(before):])
    assert report.skipped_total == 0 and added
    assert {(e.op, e.fields["@state"]) for e in added} == {("export", "sending")}
    assert f"spans to {url}, 1 failed" in out.stderr


def test_an_endpoint_with_credentials_and_a_bad_port_is_written_nowhere(tmp_path):
    """The SDK logs the URL it cannot parse ("Failed to parse: http://user:password@..."):
    the node's export.log and the glidein's stderr get it without the password."""
    secret = "s3cr3t-Pa55"
    g, cleanup_dir = glidein_for_live_export(tmp_path, f"http://gwms:{secret}@127.0.0.1:99999", 10)
    try:
        _, stderr, _ = run_cleanup(g, cleanup_dir)
    finally:
        g.stop()
    export_log = (g.work / "glidein_tracing" / "export.log").read_text()
    assert "Failed to parse: http://gwms:REDACTED@127.0.0.1:99999" in export_log
    for where, text in [("journal", g.journal.read_text()), ("stderr", stderr), ("export.log", export_log)]:
        assert secret not in text, f"credential in the {where}"
