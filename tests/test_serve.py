"""`glidein-tracing serve`: a real server (waitress) on 127.0.0.1, real tokens signed with keys
made here (cryptography; no private key is ever written to the repository), a real store and
glidein table. Users see their own jobs only, everything else is the 404 of a trace that does
not exist; each known attack on the token check is refused; hostile requests are bounded."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

jwt = pytest.importorskip("jwt")
pytest.importorskip("waitress")

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, rsa  # noqa: E402

from glidein_tracing.core import conventions as c  # noqa: E402
from glidein_tracing.exporters.store import Store  # noqa: E402
from glidein_tracing.serve.app import CSP, secure_and_list  # noqa: E402
from glidein_tracing.testing import synth, synth_table  # noqa: E402
from tests.support.analysis_helpers import simple_glidein, span  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ISSUER = "https://cilogon.example.org/fermilab"
AUDIENCE = "https://tracing.example.org"
OPERATORS = "/fermilab/operations"
HOUR = 3600


def _trace(n: int) -> str:
    return hashlib.sha256(f"serve-test-{n}".encode()).hexdigest()[:32]


ALICE_WAITING, ALICE_FAILED, BOB_WAITING, SHARED_GLIDEIN, CAROL_RUNNING = (_trace(n) for n in range(5))
EVE_HOSTILE = _trace(7)
# what a hostile worker node or job may write into a span: markup, attribute-breaking quotes, script URLs
HOSTILE = ("\"'><script>document.title='owned'</script>", "javascript:document.title='owned'//",
           "<img src=x onerror=\"document.title='owned'\">", "' onmouseover='document.title=1' x='")
NOWHERE = _trace(99)
HOSTILE_TAIL = "step 3 failed\n<script>document.title='owned'</script>\n<img src=x onerror=alert(1)>"


def _at(seconds_ago: float) -> float:
    """A test span time (analysis_helpers.span's seconds from BASE) that is ``seconds_ago`` before now."""
    from tests.support.analysis_helpers import BASE
    return time.time() - seconds_ago - BASE


def _waiting(trace, owner, key, *, state="current", end=None, reason="site_queue", ago=2 * HOUR, entry="ENTRY_B"):
    attrs = {c.JOB_OWNER: owner, c.JOB_WAITING_REASON: reason, c.JOB_WAITING_STATE: state,
             c.JOB_WAITING_DETAIL: f"4 glideins for it wait in SITE_B's batch queue ({owner})",
             c.JOB_WAITING_REASON_ENTRIES: [entry], c.JOB_WAITING_ENTRIES: [entry]}
    if end:
        attrs[c.JOB_WAITING_END] = end
    return span(trace, key, c.STAGE_JOB_WAITING, _at(ago), _at(ago - 600), name=c.STAGE_JOB_WAITING, parent=None,
                attrs=attrs)


def _stores(directory: Path, entry: str = "ENTRY_B") -> None:
    """Four traces: alice waits (for a glidein at ``entry``) in one and failed in another, bob
    waits, and a glidein ran a job of each (bob's with a phase under it; alice's came with her
    context, so her own trace, not the glidein's, is her submission)."""
    alice_failed = [_waiting(ALICE_FAILED, "alice", "w", state="ended", end="no_idle_jobs", ago=5 * HOUR)]
    job = span(ALICE_FAILED, "job", c.STAGE_JOB, _at(4 * HOUR), _at(3 * HOUR), name=c.SPAN_JOB_ON_GLIDEIN,
               parent=None, status=2, attrs={c.JOB_OWNER: "alice", c.GLIDEIN_SITE: "SITE_T", c.GLIDEIN_ENTRY: "ENTRY_T",
                                             c.GLIDEIN_USER_VIEW: True, c.JOB_GLOBAL_ID: "schedd#12.0#1",
                                             c.JOB_FAILURE_DOMAIN: "user_code", c.JOB_EXIT_CODE: 3})
    job["events"] = [{"name": c.JOB_LOG_TAIL, "time_ns": job["end_ns"],
                      "attributes": {c.LOG_SOURCE: "job stderr", c.LOG_LINES: HOSTILE_TAIL}}]
    alice_failed.append(job)
    glidein = simple_glidein(SHARED_GLIDEIN, jobs=((100, 500, 0), (600, 900, 0)))
    for s in glidein:
        if s["attributes"][c.STAGE] == c.STAGE_JOB:
            s["attributes"][c.JOB_OWNER] = "alice" if s["start_ns"] < glidein[0]["start_ns"] + 500e9 else "bob"
    bobs = next(s for s in glidein if s["attributes"].get(c.JOB_OWNER) == "bob")
    alices = next(s for s in glidein if s["attributes"].get(c.JOB_OWNER) == "alice")
    alices["attributes"][c.JOB_USER_TRACEPARENT] = f"00-{ALICE_FAILED}-{job['span_id']}-01"
    glidein.append(span(SHARED_GLIDEIN, "bobs-phase", c.STAGE_JOB_PHASE, 650, 700, name="bobs secret phase",
                        parent="job/1"))
    assert glidein[-1]["parent_span_id"] == bobs["span_id"]
    # carol's jobs started (the Frontend saw none idle since), and a phase of one has ended
    carol = [_waiting(CAROL_RUNNING, "carol", "w", state="ended", end="no_idle_jobs", ago=HOUR),
             span(CAROL_RUNNING, "phase", c.STAGE_JOB_PHASE, _at(1200), _at(600), name="reconstruct", parent=None,
                  attrs={c.GLIDEIN_USER_VIEW: True})]
    # eve's failed job: every text a node writes is hostile (name, site, entry, verdict, reason, log tail)
    eve_job = span(EVE_HOSTILE, "job", c.STAGE_JOB, _at(3 * HOUR), _at(2 * HOUR), name=HOSTILE[0], parent=None,
                   status=2, attrs={c.JOB_OWNER: "eve", c.GLIDEIN_SITE: HOSTILE[1], c.GLIDEIN_ENTRY: HOSTILE[3],
                                    c.GLIDEIN_USER_VIEW: True, c.JOB_GLOBAL_ID: HOSTILE[2],
                                    c.JOB_FAILURE_DOMAIN: HOSTILE[1], c.JOB_EXIT_CODE: 3},
                   resource={c.GLIDEIN_SITE: HOSTILE[1], c.GLIDEIN_ENTRY: HOSTILE[3]})
    eve_job["status_message"] = HOSTILE[2]
    eve_job["events"] = [{"name": c.JOB_LOG_TAIL, "time_ns": eve_job["end_ns"],
                          "attributes": {c.LOG_SOURCE: HOSTILE[3], c.LOG_LINES: "\n".join(HOSTILE)}}]
    eve = [_waiting(EVE_HOSTILE, "eve", "w", state="ended", end="no_idle_jobs", ago=4 * HOUR, entry=HOSTILE[3]), eve_job,
           span(EVE_HOSTILE, "phase", c.STAGE_JOB_PHASE, _at(2.5 * HOUR), _at(2.2 * HOUR), name=HOSTILE[2],
                parent="job", attrs={HOSTILE[0]: HOSTILE[1]})]
    Store(directory).append_span_dicts([eve, carol, [_waiting(ALICE_WAITING, "alice", "w", entry=entry, ago=900)], alice_failed,
                                        [_waiting(BOB_WAITING, "bob", "w")], glidein])


@pytest.fixture(scope="module")
def keys():
    return {"rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ec": ec.generate_private_key(ec.SECP256R1()),
            "stranger": rsa.generate_private_key(public_exponent=65537, key_size=2048)}


def _jwks(keys) -> dict:
    out = []
    for kid, algorithm in (("rsa", jwt.algorithms.RSAAlgorithm), ("ec", jwt.algorithms.ECAlgorithm)):
        jwk = algorithm.to_jwk(keys[kid].public_key(), as_dict=True)
        out.append({**jwk, "kid": kid, "use": "sig"})
    return {"keys": out}


def token(keys, user="alice", *, kid="rsa", key=None, groups=(), **claims) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "iat": now, "nbf": now - 60, "exp": now + HOUR,
            "wlcg.groups": list(groups), "scope": "compute.read", **claims}
    algorithm = "RS256" if kid in ("rsa", "stranger") else "ES256"
    return jwt.encode(body, key or keys[kid], algorithm=algorithm, headers={"kid": "rsa" if kid == "stranger" else kid})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict, claims: dict, sign=None) -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    return head + "." + (_b64(sign(head.encode())) if sign else "")


def write_config(tmp: Path, keys, **more) -> Path:
    jwks = tmp / "issuer.jwks"
    jwks.write_text(json.dumps(_jwks(keys)))
    lines = [f"listen: 127.0.0.1:0", f"store: {tmp / 'store'}", f"table: {tmp / 'table'}",
             "issuers:", f"  - issuer: {ISSUER}", f"    jwks_file: {jwks}", f"    audience: {AUDIENCE}",
             "    user_claim: sub", "operators:", f"  groups: [{OPERATORS}]", "secure_cookies: false",
             "jaeger_ui: https://jaeger.example.org"] + [f"{k}: {v}" for k, v in more.items()]
    path = tmp / "serve.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


class Server:
    """``glidein-tracing serve`` as a process, on the free port it picked; stopped on leaving."""

    def __init__(self, config: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "glidein_tracing", "serve", "--config", str(config)],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
        self.log: list = []
        deadline = time.time() + 60
        self.port = None
        while self.port is None:
            line = self.proc.stderr.readline()
            assert line and time.time() < deadline, "".join(self.log)
            self.log.append(line)
            if "listening on http://" in line:
                self.port = int(line.rsplit(":", 1)[1].strip("/\n"))
        threading.Thread(target=lambda: self.log.extend(iter(self.proc.stderr.readline, "")), daemon=True).start()

    def request(self, path, token=None, method="GET", headers=None, body=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, response.headers, data

    @property
    def own_origin(self) -> dict:
        """The Origin header of a form posted from one of the service's own pages."""
        return {"Origin": f"http://127.0.0.1:{self.port}"}

    def signin(self, token, headers=None):
        """POST the sign-in form with ``token``: (status, headers, body)."""
        return self.request("/signin", method="POST", body="token=" + urllib.parse.quote(token),
                            headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})

    def json(self, path, token=None):
        status, _, data = self.request(path, token)
        return status, json.loads(data) if data else None

    def json_with(self, path, headers):
        status, _, data = self.request(path, headers=headers)
        return status, json.loads(data) if data else None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def world(tmp_path_factory, keys):
    tmp = tmp_path_factory.mktemp("serve")
    synth_table.write_table(synth.SynthConfig(glideins=1500, entries=4, seed=5, start=time.time() - 86400, period_s=80000,
                                              validation_failure_rate=0.2), tmp / "table")
    from collections import Counter
    from glidein_tracing.serve.source import table_rows
    busiest = Counter(r["entry"] for r in table_rows(tmp / "table", 3, ["entry"])).most_common(1)[0][0]
    _stores(tmp / "store", busiest)
    server = Server(write_config(tmp, keys))
    yield tmp, server
    server.stop()


@pytest.fixture
def server(world):
    return world[1]


def test_a_user_sees_their_submissions_with_their_state_and_nobody_elses(server, keys):
    status, data = server.json("/api/v1/jobs", token(keys))
    assert status == 200 and data["user"] == "alice"
    states = {job["trace_id"]: job for job in data["jobs"]}
    assert set(states) == {ALICE_WAITING, ALICE_FAILED}         # the glidein that ran hers: in her own trace
    waiting = states[ALICE_WAITING]
    assert waiting["state"] == "waiting" and waiting["reason"] == "site_queue"
    assert "SITE_B's batch queue (alice)" in waiting["detail"] and waiting["since"]
    failed = states[ALICE_FAILED]
    assert failed["state"] == "failed" and failed["verdict"]["domain"] == "user_code"
    assert failed["log_tail"]["lines"] == HOSTILE_TAIL and failed["where"] == "SITE_T / ENTRY_T"
    status, data = server.json("/api/v1/jobs", token(keys, "carol"))
    (running,) = data["jobs"]
    assert (running["state"], running["phase"], running["where"]) == ("running", "reconstruct", "SITE_T / ENTRY_T")
    # bob, with an EC-signed token, sees his own only
    status, data = server.json("/api/v1/jobs", token(keys, "bob", kid="ec"))
    assert status == 200 and {j["trace_id"] for j in data["jobs"]} == {BOB_WAITING, SHARED_GLIDEIN}


def test_jobs_are_paged(server, keys):
    bob = token(keys, "bob")
    status, first = server.json("/api/v1/jobs?limit=1", bob)
    assert status == 200 and len(first["jobs"]) == 1 and first["next"]
    status, second = server.json(f"/api/v1/jobs?limit=1&before={first['next']}", bob)
    assert status == 200 and len(second["jobs"]) == 1 and second["next"]
    status, third = server.json(f"/api/v1/jobs?limit=1&before={second['next']}", bob)
    assert status == 200 and third == {"user": "bob", "jobs": [], "next": None}
    seen = [j["trace_id"] for j in first["jobs"] + second["jobs"]]
    assert seen == [BOB_WAITING, SHARED_GLIDEIN]                          # the latest activity first
    for bad in ("limit=5000", "limit=%C2%B2", "before=%C2%B2", "before=" + "9" * 30, "limit=-1"):
        assert server.json(f"/api/v1/jobs?{bad}", token(keys))[0] == 400, bad


def test_why_answers_as_why_json_does(world, keys):
    tmp, server = world
    status, data = server.json(f"/api/v1/jobs/{ALICE_WAITING}/why", token(keys))
    assert status == 200
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "why", ALICE_WAITING, "--store",
                           str(tmp / "store"), "--table", str(tmp / "table"), "--json"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)
    def steady(value):     # how long it has waited (and so the estimate) moves on between the two asks
        if isinstance(value, dict):
            return {k: steady(v) for k, v in value.items() if not k.endswith("_s")}
        if isinstance(value, str):
            return re.sub(r"\b\d+ ?(h|min|s)\b", "N", value)
        return [steady(v) for v in value] if isinstance(value, list) else value
    data, expected = steady(data), steady(expected)
    assert data == expected and data["jobs"][0]["reason"] == "site_queue"


def test_another_users_trace_answers_as_one_that_does_not_exist(server, keys):
    alice = token(keys)
    missing = server.request(f"/api/v1/traces/{NOWHERE}", alice)
    assert missing[0] == 404
    def headers_of(sent):      # every header but the clock's
        return sorted((k, v) for k, v in sent.items() if k.lower() != "date")
    for path in (f"/api/v1/traces/{BOB_WAITING}", f"/api/v1/jobs/{BOB_WAITING}", f"/api/v1/jobs/{BOB_WAITING}/why"):
        status, headers, body = server.request(path, alice)
        assert (status, body) == (404, missing[2]), path
        assert headers_of(headers) == headers_of(missing[1]), path
    for kind in ("jobs", "traces"):
        theirs, nothing = server.request(f"/{kind}/{BOB_WAITING}", alice), server.request(f"/{kind}/{NOWHERE}", alice)
        assert theirs[0] == nothing[0] == 404 and theirs[2] == nothing[2] and b"404 Not Found" in theirs[2]
        assert headers_of(theirs[1]) == headers_of(nothing[1]) and "script-src 'none'" in theirs[1]["Content-Security-Policy"]
    # the glidein that ran a job of each: alice sees it without bob's job and what ran under it
    status, data = server.json(f"/api/v1/traces/{SHARED_GLIDEIN}", alice)
    names = {s["name"] for s in data["spans"]}
    owners = {s["attributes"].get(c.JOB_OWNER) for s in data["spans"]}
    assert status == 200 and owners == {None, "alice"} and "bobs secret phase" not in names
    # an operator sees all of it
    status, data = server.json(f"/api/v1/traces/{SHARED_GLIDEIN}", token(keys, "olga", groups=[OPERATORS]))
    assert status == 200 and "bobs secret phase" in {s["name"] for s in data["spans"]}
    assert server.json(f"/api/v1/traces/{BOB_WAITING}", token(keys, "olga", groups=[OPERATORS]))[0] == 200


def test_each_attack_on_the_token_is_refused(server, keys):
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + HOUR}
    public_pem = keys["rsa"].public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
    attacks = {
        "alg none": _unsigned({"alg": "none", "typ": "JWT", "kid": "rsa"}, claims),
        "HS256 keyed with the public key": _unsigned({"alg": "HS256", "typ": "JWT", "kid": "rsa"}, claims,
                                                     lambda m: hmac.new(public_pem, m, hashlib.sha256).digest()),
        "a key that is not the issuer's": token(keys, kid="stranger", key=keys["stranger"]),
        "expired": token(keys, exp=now - 2 * HOUR, iat=now - 3 * HOUR, nbf=now - 3 * HOUR),
        "not yet valid": token(keys, nbf=now + HOUR),
        "no expiry": jwt.encode({k: v for k, v in claims.items() if k != "exp"}, keys["rsa"], algorithm="RS256",
                                headers={"kid": "rsa"}),
        "another audience": token(keys, aud="https://elsewhere.example.org"),
        "another issuer": token(keys, iss="https://evil.example.org"),
        "the RSA key's token claiming ES256": _unsigned({"alg": "ES256", "kid": "rsa"}, claims,
                                                        lambda m: b"\0" * 64),
        "a user name that is no user": token(keys, user="../../etc"),
        "garbage": "not.a.token",
    }
    refused = server.request("/api/v1/jobs")
    assert refused[0] == 401 and refused[1]["WWW-Authenticate"].startswith("Bearer")
    assert refused[1]["Content-Security-Policy"] == CSP == server.request("/jobs")[1]["Content-Security-Policy"]
    for what, bad in attacks.items():
        status, _, body = server.request("/api/v1/jobs", bad)
        assert (status, body) == (401, refused[2]), what
    assert server.request("/api/v1/jobs", headers={"Authorization": "Basic YWxpY2U6eA=="})[0] == 401
    assert server.json("/api/v1/me", token(keys))[1] == {"user": "alice", "operator": False}


def test_operators_see_entries_by_outcome_and_users_may_not(server, keys):
    olga = token(keys, "olga", kid="ec", groups=["/fermilab", OPERATORS])
    assert server.json("/api/v1/me", olga)[1] == {"user": "olga", "operator": True}
    assert server.json("/api/v1/entries", token(keys))[0] == 403
    status, data = server.json("/api/v1/entries?days=2", olga)
    assert status == 200 and data["entries"]
    entry = data["entries"][0]
    assert sum(entry["outcomes"].values()) == entry["glideins"] > 0
    status, page = server.json(f"/api/v1/entries/{entry['entry']}/glideins?limit=5", olga)
    assert status == 200 and len(page["glideins"]) == min(5, entry["glideins"]) and page["total"] == entry["glideins"]
    assert page["outcomes"] == entry["outcomes"]
    assert server.json("/api/v1/entries?days=400", olga)[0] == 400
    # the analysis summary: analyze's own over the table's last days, for operators only
    status, summary = server.json("/api/v1/summary?days=3", olga)
    assert status == 200 and summary["analysis"]["stats"]["glideins"] == 1500       # the whole synthetic table
    assert "glideins 1,500" in summary["text"]
    assert server.json("/api/v1/summary", token(keys))[0] == 403
    assert server.json("/api/v1/entries/NO_SUCH_ENTRY/glideins", olga)[0] == 404


def test_hostile_requests_are_bounded(server, keys):
    alice = token(keys)
    for path in ("/api/v1/traces/..%2F..%2F..%2Fetc%2Fpasswd", "/../../../../etc/passwd",
                 "/api/v1/traces/../../../etc/passwd", "/jobs/%2e%2e%2f%2e%2e%2fetc%2fpasswd"):
        status, _, body = server.request(path, alice)
        assert status == 404 and b"root:" not in body, path
    status, sent, _ = server.request("/api/v1/jobs", alice, headers={"X-Filler": "x" * 100_000})
    assert status == 431 and sent["Content-Security-Policy"] == CSP and sent["X-Content-Type-Options"] == "nosniff"
    assert server.request("/api/v1/jobs?" + "a=b&" * 1000, alice)[0] == 414           # a long query
    assert server.request("/api/v1/jobs?" + "a=b&" * 30, alice)[0] == 400             # too many fields
    assert server.request("/signin", method="POST", body=b"a=b&" * 30,
                          headers={"Content-Type": "application/x-www-form-urlencoded", **server.own_origin})[0] == 400
    assert server.request("/api/v1/jobs?" + "a=b&" * 10000, alice)[0] == 431          # past the header bound
    status, sent, _ = server.request("/signin", method="POST", body=b"token=" + b"x" * 200_000,
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 413 and sent["Content-Security-Policy"] == CSP      # waitress's own refusals too
    assert server.request("/api/v1/jobs", alice, method="DELETE")[0] == 404
    assert server.json("/api/v1/jobs", alice)[0] == 200          # still answering


def test_every_answer_forbids_scripts_and_the_api_is_described(server, keys):
    for path in ("/signin", "/api/v1/openapi.json", f"/jobs/{ALICE_FAILED}", "/api/v1/jobs"):
        headers = server.request(path, token(keys))[1]
        assert "script-src 'none'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    status, doc = server.json("/api/v1/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.")
    assert {"/api/v1/traces/{trace_id}", "/api/v1/jobs", "/api/v1/jobs/{trace_id}/why", "/api/v1/entries",
            "/api/v1/entries/{entry}/glideins"} <= set(doc["paths"])
    page = server.request(f"/jobs/{ALICE_FAILED}", token(keys))[2].decode()
    assert "<script>document" not in page and "&lt;script&gt;document.title" in page


def test_the_pages_in_a_browser_show_the_reason_the_statement_and_the_entries(server, keys, tmp_path):
    from tests.support.browser import DevToolsPage, browser
    base = f"http://127.0.0.1:{server.port}"
    with DevToolsPage(browser(), tmp_path) as tab:
        tab.open(f"{base}/jobs")
        assert tab.evaluate("document.querySelector('textarea') !== null")       # asked to sign in
        tab.evaluate(f"document.querySelector('textarea').value = {json.dumps(token(keys))};"
                     "document.forms[document.forms.length - 1].submit()")
        tab.wait_for_load()
        jobs = tab.evaluate("JSON.stringify({url: location.pathname, rows: Array.from("
                            "document.querySelectorAll('#jobs tr.job')).map(r => r.innerText)})")
        jobs = json.loads(jobs)
        assert jobs["url"] == "/jobs" and len(jobs["rows"]) == 2, jobs
        waiting = next(r for r in jobs["rows"] if r.startswith(ALICE_WAITING[:12]))
        assert "waiting" in waiting and "SITE_B's batch queue (alice)" in waiting
        assert "It will likely start between" in waiting, waiting         # the estimate, from the table
        failed = next(r for r in jobs["rows"] if r.startswith(ALICE_FAILED[:12]))
        assert "failed" in failed and "user_code" in failed and "<script>document.title='owned'</script>" in failed
        # one submission's tracking statement, its waterfall below; the hostile tail is text, never run
        tab.open(f"{base}/jobs/{ALICE_FAILED}")
        found = json.loads(tab.evaluate(
            "JSON.stringify({title: document.title, scripts: document.scripts.length, images: document.images.length,"
            " statement: Array.from(document.querySelectorAll('#statement tr')).slice(1).map(r => r.innerText),"
            " bars: document.querySelectorAll('#waterfall div.bar').length})"))
        assert found["title"] == f"Submission {ALICE_FAILED}" and found["scripts"] == 0 and found["images"] == 0
        events = "\n".join(found["statement"])
        assert "started schedd#12.0#1" in events and "failed: domain user_code" in events and found["bars"] == 2
        assert tab.evaluate("document.body.innerText.includes(\"<img src=x onerror=alert(1)>\")")
        # another user's submission: the page of a trace that does not exist
        tab.open(f"{base}/jobs/{BOB_WAITING}")
        assert tab.evaluate("document.title") == "404 Not Found"
        tab.open(f"{base}/jobs")
        tab.evaluate("document.querySelector('nav form').submit()")             # sign out
        tab.wait_for_load()
        tab.open(f"{base}/jobs")
        assert tab.evaluate("document.querySelector('textarea') !== null")
        # an operator: the entries, one entry's glideins by outcome, a glidein's waterfall linked to Jaeger
        tab.evaluate(f"document.querySelector('textarea').value = {json.dumps(token(keys, 'olga', groups=[OPERATORS]))};"
                     "document.forms[document.forms.length - 1].submit()")
        tab.wait_for_load()
        tab.open(f"{base}/entries")
        entry_link = tab.evaluate("document.querySelector('#entries a').getAttribute('href')")
        tab.open(base + entry_link)
        entry = json.loads(tab.evaluate(
            "JSON.stringify({outcomes: document.querySelector('#outcomes').innerText, rows: "
            "document.querySelectorAll('#glideins tr').length - 1, first: document.querySelector('#glideins a')"
            ".getAttribute('href')})"))
        assert "glideins:" in entry["outcomes"] and "ok" in entry["outcomes"] and entry["rows"] > 0
        tab.open(f"{base}/summary")
        assert "glideins 1,500" in tab.evaluate("document.querySelector('#summary').innerText")
        tab.open(f"{base}/traces/{SHARED_GLIDEIN}")
        links = tab.evaluate("document.querySelector('#jaeger').getAttribute('href')")
        assert links == f"https://jaeger.example.org/trace/{SHARED_GLIDEIN}"
        assert tab.evaluate("document.body.innerText.includes('bobs secret phase')")


def _cookie(headers) -> dict:
    """The session cookie's attributes as sent: {name: value}, flags as True."""
    (sent,) = [v for k, v in headers.items() if k.lower() == "set-cookie"]
    out = {}
    for part in sent.split(";"):
        name, eq, value = part.strip().partition("=")
        out[name] = value if eq else True
    return out


def test_a_sign_in_posted_from_another_sites_page_is_refused(server, keys):
    """Login CSRF: a page elsewhere posting the attacker's token to /signin would sign its
    visitor in as the attacker (who then reads what the victim does there). Only a form from
    the service's own origin signs in: by Origin, else Referer; neither, or null, is refused."""
    attacker = token(keys, "mallory")
    own = f"http://127.0.0.1:{server.port}"
    for headers in ({"Origin": "https://evil.example.org"}, {"Origin": "null"}, {},
                    {"Referer": "https://evil.example.org/lure.html"}, {"Origin": f"http://127.0.0.1:{server.port + 1}"},
                    {"Origin": f"https://127.0.0.1:{server.port}"},
                    {"Origin": "https://evil.example.org", "Referer": f"{own}/signin"}):
        status, sent, body = server.signin(attacker, headers)
        assert status == 403 and "Set-Cookie" not in sent, headers
        assert b"own pages only" in body and "script-src 'none'" in sent["Content-Security-Policy"]
    assert server.request("/signout", method="POST", headers={"Origin": "https://evil.example.org"})[0] == 403
    for headers in ({"Origin": own}, {"Referer": f"{own}/signin"}, {"Origin": own.upper().replace("HTTP", "http")}):
        status, sent, _ = server.signin(attacker, headers)
        assert status == 303 and sent["Location"] == "/jobs", headers


def test_the_session_cookie_is_strict_and_ends_with_its_token(server, keys):
    """HttpOnly, SameSite=Strict, and never outliving the token's exp: neither in the
    browser (Max-Age) nor in the service (the session is refused once the token expired)."""
    short = token(keys, exp=int(time.time()) + 3)
    status, sent, _ = server.signin(short, server.own_origin)
    cookie = _cookie(sent)
    assert status == 303 and cookie["HttpOnly"] is True and cookie["SameSite"] == "Strict" and cookie["Path"] == "/"
    assert "Secure" not in cookie                     # secure_cookies: false, plain http, no proxy
    assert 0 <= int(cookie["Max-Age"]) <= 3
    session = {"Cookie": f"glidein_tracing_session={cookie['glidein_tracing_session']}"}
    assert server.json_with("/api/v1/me", session) == (200, {"user": "alice", "operator": False})
    time.sleep(4)
    assert server.json_with("/api/v1/me", session)[0] == 401
    status, sent, _ = server.signin(token(keys), server.own_origin)
    assert HOUR - 120 <= int(_cookie(sent)["Max-Age"]) <= HOUR


def test_behind_the_proxy_the_public_origin_signs_in_and_cookies_are_secure(tmp_path, keys):
    """With ``public_url`` (the address users open through the site's https proxy), a form
    from that origin signs in, and the cookie is Secure though ``secure_cookies`` is false."""
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    server = Server(write_config(tmp_path, keys, public_url="https://Tracing.example.org:443/"))
    try:
        status, sent, _ = server.signin(token(keys), {"Origin": "https://tracing.example.org"})
        assert status == 303 and _cookie(sent)["Secure"] is True
        assert server.signin(token(keys), {"Origin": "http://tracing.example.org"})[0] == 403
        assert server.signin(token(keys), {"Origin": "https://tracing.example.org.evil.example"})[0] == 403
    finally:
        server.stop()


def test_every_text_a_node_wrote_is_shown_as_text_in_a_browser(server, keys, tmp_path):
    """A job whose every text (span and phase names, site, entry, verdict, status, log tail,
    attribute names and values) is hostile markup, a quote that would end an attribute, or a
    javascript: URL: on each page a browser shows it as text; no script, no event handler,
    no link that leaves the service's own paths."""
    from tests.support.browser import DevToolsPage, browser
    base = f"http://127.0.0.1:{server.port}"
    inspect = ("JSON.stringify({title: document.title, scripts: document.scripts.length,"
               " handlers: Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes))"
               "   .filter(a => a.name.startsWith('on')).map(a => a.name),"
               " links: Array.from(document.querySelectorAll('[href],[src],[action],[formaction]'))"
               "   .map(e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('action')),"
               " text: document.body.innerText})")
    with DevToolsPage(browser(), tmp_path) as tab:
        tab.open(f"{base}/signin")
        tab.evaluate(f"document.querySelector('textarea').value = {json.dumps(token(keys, 'eve'))};"
                     "document.forms[document.forms.length - 1].submit()")
        tab.wait_for_load()
        for path in ("/jobs", f"/jobs/{EVE_HOSTILE}", f"/traces/{EVE_HOSTILE}"):
            tab.open(base + path)
            found = json.loads(tab.evaluate(inspect))
            assert found["title"] != "owned" and found["scripts"] == 0 and found["handlers"] == [], (path, found)
            assert all(link.startswith("/") and not link.startswith("//") for link in found["links"]), (path, found)
            assert HOSTILE[1] in found["text"], path            # shown, as text
        assert all(h in found["text"] for h in HOSTILE[:3])     # the waterfall shows every span and attribute
        status, sent, body = server.request(f"/jobs/{EVE_HOSTILE}", token(keys, "eve"))
        assert status == 200 and "script-src 'none'" in sent["Content-Security-Policy"]
        assert b"<script>" not in body and b"<img" not in body


def test_tokens_are_never_logged(server, keys):
    secret = token(keys)
    assert server.request("/api/v1/jobs", secret)[0] == 200
    assert server.request("/api/v1/jobs", secret[:-4] + "AAAA")[0] == 401
    time.sleep(0.5)
    log = "".join(server.log)
    assert "alice(token) GET /api/v1/jobs 200" in log and "refused: token refused: InvalidSignatureError" in log
    assert secret.split(".")[2][:20] not in log and secret.split(".")[1][:20] not in log
    # nor when it comes another way: the sign-in form (refused, then taken), the address bar, a query
    other = token(keys, "dave", exp=int(time.time()) + 2 * HOUR)
    assert server.signin(other[:-4] + "AAAA", server.own_origin)[0] == 401
    assert server.signin(other, server.own_origin)[0] == 303
    assert server.request(f"/jobs/{other}", secret)[0] == 414                    # a path too long, logged all the same
    assert server.request(f"/jobs/{other[:200]}", secret)[0] == 404
    assert server.request(f"/api/v1/traces/x?token={other}", secret)[0] == 404
    assert server.request("/jobs", headers={"Cookie": f"glidein_tracing_session={other}"})[0] == 401
    time.sleep(0.5)
    log = "".join(server.log)
    assert "sign-in refused: token refused: InvalidSignatureError" in log and "GET /jobs/[token] 414" in log and "GET /jobs/[token] 404" in log
    for part in other.split("."):
        assert part[:16] not in log, part


def test_a_caller_over_the_rate_limit_waits(tmp_path, keys):
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    server = Server(write_config(tmp_path, keys, rate_limit=5))
    try:
        answers = [server.request("/api/v1/me", token(keys))[0] for _ in range(5)]
        status, headers, _ = server.request("/api/v1/me", token(keys))
        assert answers == [200] * 5 and status == 429 and headers["Retry-After"] == "60"
        assert headers["Content-Security-Policy"] == CSP
    finally:
        server.stop()


def test_check_config_names_each_problem_with_its_line(tmp_path, keys):
    private = tmp_path / "private.jwks"
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(keys["rsa"], as_dict=True)    # the private key: refused
    private.write_text(json.dumps({"keys": [jwk]}))
    shared = tmp_path / "shared.jwks"                                       # a shared secret: refused
    shared.write_text(json.dumps({"keys": [{"kty": "oct", "k": _b64(b"s" * 32), "alg": "HS256"}]}))
    good = tmp_path / "good.jwks"
    good.write_text(json.dumps(_jwks(keys)))
    config = tmp_path / "bad.yaml"
    config.write_text(f"listen: somewhere\nstore: {tmp_path / 'nope'}\nissuers:\n  - issuer: x\n"
                      f"    jwks_file: {private}\n    audience: a\n  - {{issuer: y, jwks_file: {shared}, audience: a}}\n"
                      f"  - issuer: z\n    jwks_file: {good}\n    audiance: a\n"
                      f"  - issuer: x\n    jwks_file: {good}\n    audience: a\n"
                      "rate_limit: 0\ncolour: blue\nproxy: {header: Authorization, addresses: [127.0.0.1]}\n"
                      "public_url: javascript:alert(1)\n")
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "serve", "--check-config", "--config", str(config)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()[1:]
    assert len(lines) == 11, done.stderr
    text = done.stderr
    assert f"{config}:1: listen: must be host:port" in text and f"{config}:2: store:" in text
    # each issuer's problem at its own line: the key at fault, else the issuer's first line
    assert f"{config}:5: issuers: issuer 1 (x): {private}: key 1 holds a private key" in text
    assert f"{config}:7: issuers: issuer 2 (y): {shared}: key 1 is not an RSA or EC public key" in text
    assert f"{config}:10: issuers: issuer 3: unknown key 'audiance'" in text
    assert f"{config}:8: issuers: issuer 3: missing audience" in text
    assert f"{config}:11: issuers: issuer 4: x is listed twice" in text
    assert f"{config}:14: rate_limit:" in text and f"{config}:15: unknown key 'colour'" in text
    assert f"{config}:16: proxy: header: not a header name" in text
    assert f"{config}:17: public_url: must be the URL users open" in text
    good = write_config(tmp_path, keys)
    (tmp_path / "store").mkdir()
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "serve", "--check-config", "--config", str(good)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "settings good" in done.stdout, done.stderr


def test_the_shipped_config_checks_good_once_its_paths_exist(tmp_path, keys):
    shipped = (ROOT / "factory_config" / "serve.yaml").read_text()
    (tmp_path / "store").mkdir()
    _stores(tmp_path / "store")
    (tmp_path / "glidein-table").mkdir()
    (tmp_path / "cilogon-fermilab.jwks").write_text(json.dumps(_jwks(keys)))
    config = tmp_path / "serve.yaml"
    config.write_text(shipped.replace("/var/lib/glidein-tracing", str(tmp_path)).replace("/etc/glidein-tracing",
                                                                                         str(tmp_path)))
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "serve", "--check-config", "--config", str(config)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "settings good" in done.stdout, done.stderr
    unit = (ROOT / "factory_config" / "glidein-tracing-serve.service").read_text()
    assert "serve --config /etc/glidein-tracing/serve.yaml" in unit and "RestartPreventExitStatus=2" in unit


def test_an_issuer_may_be_trusted_for_several_audiences(tmp_path, keys):
    """``audience`` may list several: a token naming any of them (as a string, or in its list)
    is taken, one naming none of them is refused, and a list item that is no string is a
    config problem."""
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    any_audience = "https://wlcg.cern.ch/jwt/v1/any"
    config = write_config(tmp_path, keys)
    config.write_text(config.read_text().replace(f"audience: {AUDIENCE}", f"audience: [{AUDIENCE}, {any_audience}]"))
    server = Server(config)
    try:
        for aud, want in ((AUDIENCE, 200), (any_audience, 200), (["https://other.example.org", any_audience], 200),
                          ("https://other.example.org", 401), (["https://other.example.org"], 401)):
            assert server.request("/api/v1/me", token(keys, aud=aud))[0] == want, aud
    finally:
        server.stop()
    config.write_text(config.read_text().replace(f"audience: [{AUDIENCE}, {any_audience}]", f"audience: [{AUDIENCE}, 7]"))
    done = subprocess.run([sys.executable, "-m", "glidein_tracing", "serve", "--check-config", "--config", str(config)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and f"{config}:7: issuers: issuer 1: audience: must be a string or a list" in done.stderr, \
        done.stderr


def test_an_issuers_new_keys_are_read_from_the_changed_jwks_file_without_a_restart(tmp_path, keys):
    """The issuer rotates its keys, a timer saves the new JWKS: tokens signed with the new key
    are taken once the file changed (no restart), a broken save keeps the keys read before,
    and a key dropped from the file signs nothing more."""
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    config = write_config(tmp_path, keys, jwks_check_s=1)
    jwks = tmp_path / "issuer.jwks"
    server = Server(config)

    def save(document):
        jwks.write_text(document if isinstance(document, str) else json.dumps(document))
        later = time.time() + 5
        os.utime(jwks, (later, later))          # a new mtime even on a coarse-grained filesystem

    def answer(bearer, want):
        deadline = time.time() + 30             # the service looks at the file at most every second
        while True:
            status = server.request("/api/v1/me", bearer)[0]
            if status == want or time.time() > deadline:
                return status
            time.sleep(0.3)

    try:
        now = int(time.time())
        rotated = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + HOUR}, keys["stranger"],
                             algorithm="RS256", headers={"kid": "2027"})
        assert server.request("/api/v1/me", rotated)[0] == 401
        new_key = {**jwt.algorithms.RSAAlgorithm.to_jwk(keys["stranger"].public_key(), as_dict=True), "kid": "2027"}
        save({"keys": _jwks(keys)["keys"] + [new_key]})
        assert answer(rotated, 200) == 200
        save("{not json")
        time.sleep(1.5)
        assert server.request("/api/v1/me", rotated)[0] == 200 and server.request("/api/v1/me", token(keys))[0] == 200
        save({"keys": [new_key]})                                   # the old keys retired
        assert answer(token(keys), 401) == 401 and server.request("/api/v1/me", rotated)[0] == 200
        time.sleep(0.3)
        log = "".join(server.log)
        assert f"kept the keys read before: {jwks} is not JSON" in log and f"keys read again from {jwks}" in log
    finally:
        server.stop()


def test_every_key_is_shown_in_the_shipped_config_and_documented():
    """factory_config/serve.yaml "names every key" and docs/service.md describes each: a key
    added to the service is added to both, or this fails."""
    from glidein_tracing.serve.config import ISSUER_KEYS, KEYS
    shipped = (ROOT / "factory_config" / "serve.yaml").read_text()
    doc = (ROOT / "docs" / "service.md").read_text()
    for key in sorted(KEYS):
        assert re.search(rf"^#? ?{key}:", shipped, re.M), f"{key} not in factory_config/serve.yaml"
        assert f"`{key}`" in doc, f"{key} not in docs/service.md"
    for key in sorted(ISSUER_KEYS):
        assert re.search(rf"^ +(- )?{key}:", shipped, re.M) and key in doc, key


def test_a_trusted_proxys_user_header_is_believed_from_its_addresses_only(tmp_path, keys):
    _stores(tmp_path / "store")
    (tmp_path / "table").mkdir()
    for addresses, expected in (("[127.0.0.1]", 200), ("[192.0.2.7]", 401)):
        server = Server(write_config(tmp_path, keys, proxy=f"{{header: X-Remote-User, addresses: {addresses}}}"))
        try:
            status, data = server.json_with("/api/v1/jobs", {"X-Remote-User": "alice"})
            assert status == expected, addresses
            if status == 200:
                assert {j["trace_id"] for j in data["jobs"]} == {ALICE_WAITING, ALICE_FAILED}
                assert server.json_with("/api/v1/jobs", {"X-Remote-User": "al ice;rm"})[0] == 401
                # behind the proxy (which speaks https to users) the cookie is Secure, secure_cookies: false or not
                status, sent, _ = server.signin(token(keys), server.own_origin)
                assert status == 303 and _cookie(sent)["Secure"] is True
        finally:
            server.stop()


@pytest.mark.jaeger
def test_the_service_reads_jaeger_through_its_query_api(tmp_path, keys, jaeger):
    """The same users' answers with Jaeger as the source: spans sent over OTLP/HTTP, found
    again by trace id and by job.owner through the query API."""
    import urllib.request

    from glidein_tracing.exporters.otlp_json import request_from_span_dicts
    from glidein_tracing.exporters.store import read_store
    _stores(tmp_path / "scratch")
    traces = read_store(tmp_path / "scratch")
    recent = {ALICE_WAITING, ALICE_FAILED, BOB_WAITING}       # the shared glidein ran in January: too old to search
    for trace in recent:
        for s in traces[trace]:
            s["resource"] = {**s["resource"], c.SERVICE_NAME: "glidein"}
        body = json.dumps(request_from_span_dicts(traces[trace])).encode()
        urllib.request.urlopen(urllib.request.Request(jaeger.otlp_endpoint + "/v1/traces", body,
                                                      {"Content-Type": "application/json"}), timeout=30).read()
        jaeger.query().wait_for_trace(trace, min_spans=len(traces[trace]))
    (tmp_path / "table").mkdir()
    config = write_config(tmp_path, keys)
    config.write_text(config.read_text().replace(f"store: {tmp_path / 'store'}",
                                                 f"jaeger: {jaeger.query_url}\njaeger_services: [glidein]"))
    server = Server(config)
    try:
        status, data = server.json("/api/v1/jobs", token(keys))
        assert status == 200 and {j["trace_id"] for j in data["jobs"]} == {ALICE_WAITING, ALICE_FAILED}
        states = {j["trace_id"]: j["state"] for j in data["jobs"]}
        assert states == {ALICE_WAITING: "waiting", ALICE_FAILED: "failed"}
        assert server.json(f"/api/v1/jobs/{ALICE_WAITING}/why", token(keys))[1]["jobs"][0]["reason"] == "site_queue"
        assert server.request(f"/api/v1/traces/{BOB_WAITING}", token(keys))[2] == \
            server.request(f"/api/v1/traces/{NOWHERE}", token(keys))[2]
        assert server.json(f"/api/v1/traces/{BOB_WAITING}", token(keys, "bob"))[0] == 200
    finally:
        server.stop()


def test_the_demos_real_traces_as_their_user_sees_them(tmp_path, keys):
    """The demo's glideins, run with the real hooks and forwarded (no span made by hand): the
    simulated jobs' user (HTCondor Owner fakeuser) sees their submissions, the one whose last
    phase failed on a missing CVMFS file with its verdict and log tail, and its statement."""
    demo = subprocess.run([sys.executable, "-m", "glidein_tracing", "demo", "--glideins", "5", "--store",
                           str(tmp_path / "store")], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert demo.returncode == 0, demo.stderr[-3000:]
    (tmp_path / "table").mkdir()
    server = Server(write_config(tmp_path, keys))
    try:
        user = token(keys, "fakeuser")
        status, data = server.json("/api/v1/jobs", user)
        assert status == 200
        by_state = {}
        for job in data["jobs"]:
            by_state.setdefault(job["state"], []).append(job)
        assert set(by_state) <= {"done", "failed"} and len(data["jobs"]) >= 3, by_state
        assert all(job["where"] == "DEMO_SITE / DEMO_ENTRY" for job in data["jobs"]), data["jobs"]
        failed = [j for j in by_state["failed"] if j["verdict"].get("service") == "cvmfs"]
        assert failed and failed[0]["verdict"]["domain"] == "service" and failed[0]["log_tail"]["lines"]
        status, one = server.json(f"/api/v1/jobs/{failed[0]['trace_id']}", user)
        events = [line["event"] for line in one["statement"]]
        assert status == 200 and any(e.startswith("started ") for e in events), events
        assert any(line["failed"] and "service cvmfs" in line["event"] for line in one["statement"]), events
        assert server.json(f"/api/v1/jobs/{failed[0]['trace_id']}", token(keys, "someoneelse"))[0] == 404
    finally:
        server.stop()


def test_a_host_of_several_addresses_is_served_on_each_with_the_secured_refusals():
    """EL9's ``localhost`` resolves to 127.0.0.1 and ::1: waitress then binds one socket each and
    returns a server with no port of its own; every socket must get the channel whose refusals
    carry the security headers, and each bound address is named (the service crashed at start)."""
    import waitress

    server = waitress.create_server(lambda environ, start: [], listen="127.0.0.1:0 127.0.0.1:0")
    try:
        addresses = secure_and_list(server)
        sockets = [each for each in server.map.values() if isinstance(each, waitress.server.BaseWSGIServer)]
        assert len(addresses) == len(sockets) == 2
        assert all(re.fullmatch(r"127\.0\.0\.1:\d+", address) for address in addresses)
        assert len(set(addresses)) == 2
        assert all(each.channel_class.__name__ == "SecuredChannel" for each in sockets)
    finally:
        server.close()


def test_a_job_that_ran_between_two_frontend_cycles_is_done_not_running():
    """The Frontend sees a submission leave the idle state at its next cycle; a short job may
    have started and ended before then. Its wait's end is then later than the job's: the
    submission is done. A wait that ended with no job seen starting since it began runs still."""
    from glidein_tracing.serve import jobs

    trace = _trace(40)
    wait = _waiting(trace, "dave", "w", state="ended", end="no_idle_jobs", ago=HOUR)   # ended 50 min ago
    short = span(trace, "job", c.STAGE_JOB, _at(HOUR - 60), _at(HOUR - 120), name=c.SPAN_JOB_ON_GLIDEIN,
                 parent=None, attrs={c.JOB_OWNER: "dave", c.GLIDEIN_USER_VIEW: True})
    assert jobs.state(trace, [wait, short])["state"] == "done"
    earlier = span(trace, "job", c.STAGE_JOB, _at(3 * HOUR), _at(2 * HOUR), name=c.SPAN_JOB_ON_GLIDEIN,
                   parent=None, attrs={c.JOB_OWNER: "dave", c.GLIDEIN_USER_VIEW: True})
    assert jobs.state(trace, [earlier, wait])["state"] == "running"
