"""The pages for people, served by the service itself: plain HTML and CSS, no script and no
font from anywhere (many hosts have no internet; the content security policy allows none).
Every text from a node or a job (names, reasons, log tails) is escaped.

- ``/signin``: paste a token (``htgettoken`` wrote it; ``cat $BEARER_TOKEN_FILE``), get a
  session cookie; the token is checked once, never kept.
- ``/jobs``: "my jobs", each recent submission with its state.
- ``/jobs/TRACE_ID``: one submission's tracking statement, and its waterfall below.
- ``/entries``, ``/entries/ENTRY``: operators, the entries' recent glideins by outcome;
  ``/summary``: the analysis summary of the table's last days.
- ``/traces/TRACE_ID``: a trace's waterfall, with a link to Jaeger when one is configured.
"""

from __future__ import annotations

import html
import re
import time
import urllib.parse

from ..viewers.waterfall import waterfall
from . import api, jobs
from .app import MAX_BODY_BYTES, REASONS, HttpError, Response
from .auth import Unauthorized

STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px}
nav a,nav form{margin-right:1.5em;display:inline}table.list{border-collapse:collapse;width:100%}
table.list td,table.list th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top;font-size:14px}
.state-waiting{color:#a15c00;font-weight:bold}.state-running{color:#1f6fb4;font-weight:bold}
.state-done{color:#2a7d2a;font-weight:bold}.state-failed{color:#c00;font-weight:bold}
pre.tail{font-size:12px;background:#f6f6f6;border-left:3px solid #d62728;padding:4px 6px;max-height:16em;
overflow:auto;white-space:pre-wrap}.sub{color:#555;font-size:13px}tr.failed td{background:#fff5f5}
textarea{width:100%;font-family:monospace}"""


def _e(value) -> str:
    return html.escape(str(value if value is not None else ""))


def page(title: str, body: str, status: int = 200, caller=None, style: str = "") -> Response:
    nav = ""
    if caller is not None:
        operator = "<a href='/entries'>entries</a>" if caller.operator else ""
        nav = (f"<nav><a href='/jobs'>my jobs</a>{operator}<span class='sub'>signed in as {_e(caller.name)}</span> "
               "<form method='post' action='/signout'><button>sign out</button></form></nav>")
    text = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<style>{STYLE}{style}</style></head><body>{nav}<h1>{_e(title)}</h1>{body}</body></html>")
    return Response(status, text.encode(), "text/html; charset=utf-8")


def error_page(status: int, message: str = "") -> Response:
    return page(f"{status} {REASONS.get(status, '')}", f"<p>{_e(message)}</p>" if message else "", status)


def signin_page(status: int = 200, message: str = "") -> Response:
    note = f"<p class='state-failed'>{_e(message)}</p>" if message else ""
    return page("Sign in", note + (
        "<p>Paste your token: the one <code>htgettoken</code> wrote for jobsub_lite "
        "(<code>cat $BEARER_TOKEN_FILE</code>, else <code>cat /run/user/$(id -u)/bt_u$(id -u)</code>). "
        "It is checked once and not kept: you stay signed in until it expires.</p>"
        "<form method='post' action='/signin'><textarea name='token' rows='8' required></textarea>"
        "<p><button type='submit'>sign in</button></p></form>"), status)


def _signin_form(app, request):
    return signin_page()


def _signin(app, request):
    environ = request.environ
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise HttpError(400) from None
    if length > MAX_BODY_BYTES:
        raise HttpError(413)
    try:
        form = urllib.parse.parse_qs(environ["wsgi.input"].read(length).decode("utf-8", "replace"), max_num_fields=5)
    except ValueError:
        raise HttpError(400) from None
    token = "".join((form.get("token") or [""])[-1].split())
    try:
        caller = app.verifier.caller_of_token(token)
        until = app.verifier.expiry(token)
    except Unauthorized as exc:
        from .app import LOG
        LOG.info("sign-in refused: %s", exc)
        return signin_page(401, "That token was refused (expired, of another issuer or audience, or not a token).")
    session = app.sessions.open(caller, until)
    response = Response(303, b"", headers=[("Location", "/jobs"),
                                           app.session_cookie(environ, session, int(until - time.time()))])
    request.caller = caller
    return response


def _signout(app, request):
    session = app._session_id(request.environ)
    if session:
        app.sessions.close(session)
    return Response(303, b"", headers=[("Location", "/signin"), app.session_cookie(request.environ, "", 0)])


def _home(app, request):
    return Response(303, b"", headers=[("Location", "/jobs")])


def _state_cell(job: dict) -> str:
    state = job["state"]
    lines = [f"<span class='state-{_e(state)}'>{_e(state)}</span> <span class='sub'>since {_e(job['since'])}</span>"]
    if state == jobs.WAITING:
        lines.append(f"<div class='why'>{_e(job.get('detail') or job.get('why'))}</div>")
        if job.get("detail") and job.get("why"):
            lines.append(f"<div class='sub'>{_e(job['why'])}</div>")
        lines.append(f"<div class='estimate'>{_e(job['estimate_text'])}</div>")
        if job.get("action"):
            lines.append(f"<div class='sub'>what to do: {_e(job['action'])}</div>")
    elif state == jobs.RUNNING:
        lines.append(f"<div>at {_e(job.get('where') or 'a glidein')}"
                     + (f", phase {_e(job['phase'])}" if job.get("phase") else "") + "</div>")
    elif state == jobs.FAILED:
        verdict = job.get("verdict") or {}
        lines.append("<div class='verdict'>" + _e(", ".join(f"{k}: {v}" for k, v in verdict.items())) + "</div>")
        tail = job.get("log_tail")
        if tail:
            lines.append(f"<div class='sub'>log tail of {_e(tail['source'])}</div><pre class='tail'>{_e(tail['lines'])}</pre>")
    elif state == jobs.DONE and job.get("where"):
        lines.append(f"<div>ran at {_e(job['where'])}</div>")
    return "".join(lines)


def _my_jobs(app, request):
    data = api.my_jobs(app, request)
    rows = []
    for job in data["jobs"]:
        trace = job["trace_id"]
        counts = f"{job['jobs_done']} done, {job['jobs_failed']} failed"
        rows.append(f"<tr class='job {_e(job['state'])}'><td><a href='/jobs/{_e(trace)}'>{_e(trace[:12])}…</a>"
                    f"<div class='sub'>{_e(job['first'])}</div></td><td>{_state_cell(job)}</td>"
                    f"<td class='sub'>{_e(counts)}</td></tr>")
    more = ""
    if data["next"]:
        more = f"<p><a href='/jobs?before={_e(data['next'])}'>older submissions</a></p>"
    body = ("<table class='list' id='jobs'><tr><th>submission</th><th>state</th><th>jobs</th></tr>"
            + "".join(rows) + "</table>" + more) if rows else \
        "<p>No submission of yours in the traces yet (jobs submitted with jobsub_lite carry a trace).</p>"
    return page("My jobs", body, caller=request.caller)


def _job(app, request, trace_id):
    state = api.submission(app, request, trace_id)
    spans = state["spans"]
    rows = "".join(f"<tr class='{'failed' if line['failed'] else ''}'><td>{_e(line['time'])}</td>"
                   f"<td>{_e(line['place'])}</td><td>{_e(line['event'])}</td></tr>" for line in state["statement"])
    style, _heading, fall = waterfall(spans, jaeger_ui=app.config.jaeger_ui if request.caller.operator else None)
    body = (f"<table class='list' id='now'><tr><td>{_state_cell(state)}</td></tr></table>"
            f"<p><a href='/api/v1/jobs/{_e(trace_id)}/why'>why, as JSON</a></p>"
            "<h2>Tracking</h2><table class='list' id='statement'><tr><th>time (UTC)</th><th>place</th>"
            f"<th>event</th></tr>{rows}</table><h2>Waterfall</h2>{fall}")
    return page(f"Submission {trace_id}", body, caller=request.caller, style=style)


def _trace(app, request, trace_id):
    spans = api.trace_for(app, request, trace_id)
    style, heading, fall = waterfall(spans, jaeger_ui=app.config.jaeger_ui if request.caller.operator else None)
    return page(html.unescape(heading), fall, caller=request.caller, style=style)


def _entries(app, request):
    data = api.entries_summary(app, request)
    rows = "".join(
        f"<tr><td><a href='/entries/{_e(urllib.parse.quote(e['entry'] or '', safe=''))}'>{_e(e['entry'])}</a></td>"
        f"<td>{_e(e['site'])}</td><td>{e['glideins']}</td>"
        f"<td>{_e(', '.join(f'{k} {v}' for k, v in sorted(e['outcomes'].items())))}</td>"
        f"<td>{_e(', '.join(f'{k} {v}' for k, v in sorted(e['failure_domains'].items())))}</td></tr>"
        for e in data["entries"])
    body = (f"<p>The glidein table's last {data['days']} days (<a href='/summary'>the analysis summary</a>).</p>"
            "<table class='list' id='entries'><tr><th>entry</th>"
            f"<th>site</th><th>glideins</th><th>outcomes</th><th>failure domains</th></tr>{rows}</table>")
    return page("Entries", body, caller=request.caller)


def _summary(app, request):
    data = api.analysis_summary(app, request)
    body = (f"<p class='sub'>glidein-tracing analyze over the glidein table's last {data['days']} days, made "
            f"{_e(data['generated_at'])} (the whole document: /api/v1/summary).</p>"
            f"<pre id='summary'>{_e(data['text'])}</pre>")
    return page("Analysis summary", body, caller=request.caller)


def _entry(app, request, entry):
    data = api.entry_glideins(app, request, entry)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(data["outcomes"].items()))
    rows = "".join(
        f"<tr class='{'failed' if g['outcome'] != 'ok' else ''}'><td><a href='/traces/{_e(g['trace_id'])}'>"
        f"{_e(g['trace_id'][:12])}…</a></td><td>{_e(g['started_at'])}</td><td>{_e(g['outcome'])}</td>"
        f"<td>{_e(g['failure_domain'])}</td><td>{_e(g['failure_stage'])}</td><td>{_e(g['jobs'])}</td></tr>"
        for g in data["glideins"])
    quoted = _e(urllib.parse.quote(entry, safe=""))
    more = (f"<p><a href='/entries/{quoted}?offset={data['next_offset']}'>more</a></p>"
            if data["next_offset"] is not None else "")
    body = (f"<p id='outcomes'>Last {data['days']} days: {data['total']} glideins: {_e(counts)}.</p>"
            "<table class='list' id='glideins'><tr><th>glidein</th><th>started (UTC)</th><th>outcome</th>"
            f"<th>failure domain</th><th>failed stage</th><th>jobs</th></tr>{rows}</table>{more}")
    return page(f"Entry {entry}", body, caller=request.caller)


def _route(method, path, handler, needs_caller=True):
    return (method, re.compile(path), handler, needs_caller)


ROUTES = [
    _route("GET", "/", _home, needs_caller=False),
    _route("GET", "/signin", _signin_form, needs_caller=False),
    _route("POST", "/signin", _signin, needs_caller=False),
    _route("POST", "/signout", _signout, needs_caller=False),
    _route("GET", "/jobs", _my_jobs),
    _route("GET", "/jobs/([^/]{1,64})", _job),
    _route("GET", "/traces/([^/]{1,64})", _trace),
    _route("GET", "/entries", _entries),
    _route("GET", "/summary", _summary),
    _route("GET", "/entries/([^/]{1,200})", _entry),
]
