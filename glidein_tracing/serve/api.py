"""The REST API, versioned under /api/v1/ and described by the OpenAPI document it serves
(/api/v1/openapi.json). Every list is a page (``limit``, and ``before`` from the last page's
``next``), every table query a few days at most; the answers are the ones the pages show
(pages.py renders these same dicts)."""

from __future__ import annotations

import re
import time

from .. import __version__
from ..core import conventions as c
from . import jobs
from .access import visible_spans
from .app import TRACE_ID_RE, HttpError, json_response
from .source import MAX_PAGE, MAX_TABLE_DAYS, table_rows

MAX_ENTRY_CHARS = 200
ENTRY_COLUMNS = ["trace_id", "entry", "site", "outcome", "failure_domain", "failure_stage", "started_at",
                 "ended_at", "jobs", "glidein_s"]


def trace_for(app, request, trace_id: str) -> list:
    """The spans of a trace the caller may see; 404 for every other trace, as for none."""
    if not TRACE_ID_RE.match(trace_id):
        raise HttpError(404)
    spans = visible_spans(request.caller, app.source.trace(trace_id))
    if spans is None:
        raise HttpError(404)
    return spans


def my_jobs(app, request) -> dict:
    """A page of the caller's submissions, latest activity first, each with its state (a
    glidein's trace only for jobs that came with no trace of their own)."""
    limit = request.number("limit", 20, 1, MAX_PAGE)
    before = request.param("before")
    if before is not None and not (before.isascii() and before.isdigit() and len(before) < 20):
        raise HttpError(400, "before must be the `next` of the previous page")
    name = request.caller.name
    rows = app.source.owned(name, int(before) if before else None, limit)
    found = []
    read = app.source.traces([trace_id for trace_id, _first, _last in rows])
    for trace_id, _first, _last in rows:
        spans = visible_spans(request.caller, read[trace_id])
        if spans and not jobs.in_own_trace(spans, name):
            found.append((trace_id, spans, diagnosis_of(app, request, trace_id, spans)))
    from ..why.answer import with_table
    with_table([item for _, _, item in found if item is not None], app.config.table, time.time())
    out = [jobs.state(trace_id, spans, item, name) for trace_id, spans, item in found]
    return {"user": name, "jobs": out,
            "next": str(rows[-1][2]) if len(rows) == limit else None}


def diagnosis_of(app, request, trace_id: str, spans: list, table: str | None = None):
    """``why``'s diagnosis of a waiting submission (its caller's jobs first), None when it
    does not wait; with the table's evidence and estimate when ``table`` is given."""
    from ..why.answer import of_trace
    if not jobs.is_waiting(spans, request.caller.name if not request.caller.operator else None):
        return None
    return of_trace(trace_id, spans, looked=app.source.where, asker=request.caller.name, table=table)[0]


def why_answer(app, request, trace_id: str) -> dict:
    """``why --json``'s answer for the submission of ``trace_id``, from the spans the caller
    may see, their own jobs first."""
    from ..why import answer
    spans = trace_for(app, request, trace_id)
    return answer.as_data(answer.of_trace(trace_id, spans, looked=app.source.where, asker=request.caller.name,
                                          table=app.config.table))


def require_operator(app, request) -> None:
    if not request.caller.operator:
        raise HttpError(403, "for operators only")
    if not app.config.table:
        raise HttpError(404, "this service reads no glidein table (`table:` in its config)")


def entries_summary(app, request) -> dict:
    """Per entry, its glideins of the last ``days`` days by outcome and failure domain."""
    require_operator(app, request)
    days = request.number("days", 2, 1, MAX_TABLE_DAYS)
    out: dict = {}
    for row in table_rows(app.config.table, days, ["entry", "site", "outcome", "failure_domain"]):
        entry = out.setdefault(row["entry"] or "", {"entry": row["entry"], "site": row["site"], "glideins": 0,
                                                    "outcomes": {}, "failure_domains": {}})
        entry["glideins"] += 1
        entry["outcomes"][row["outcome"]] = entry["outcomes"].get(row["outcome"], 0) + 1
        if row["failure_domain"]:
            domains = entry["failure_domains"]
            domains[row["failure_domain"]] = domains.get(row["failure_domain"], 0) + 1
    return {"days": days, "entries": sorted(out.values(), key=lambda e: -e["glideins"])}


def analysis_summary(app, request) -> dict:
    """``analyze``'s summary of the table's last ``days`` days (summary.py: made at most every
    10 minutes)."""
    require_operator(app, request)
    return app.summaries.of_days(request.number("days", 7, 1, MAX_TABLE_DAYS))


def entry_glideins(app, request, entry: str) -> dict:
    """A page of one entry's recent glideins (of one outcome when ``outcome`` is given)."""
    require_operator(app, request)
    if len(entry) > MAX_ENTRY_CHARS:
        raise HttpError(404)
    days = request.number("days", 2, 1, MAX_TABLE_DAYS)
    limit = request.number("limit", MAX_PAGE, 1, MAX_PAGE)
    offset = request.number("offset", 0, 0, 1_000_000)
    outcome = request.param("outcome")
    rows = [r for r in table_rows(app.config.table, days, ENTRY_COLUMNS)
            if r["entry"] == entry and (outcome is None or r["outcome"] == outcome)]
    if not rows and offset == 0:
        raise HttpError(404)
    rows.sort(key=lambda r: r["started_at"] or r["ended_at"], reverse=True)
    counts: dict = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    page = rows[offset:offset + limit]
    return {"entry": entry, "days": days, "outcomes": counts, "total": len(rows), "offset": offset,
            "glideins": [{**r, "started_at": _iso(r["started_at"]), "ended_at": _iso(r["ended_at"])} for r in page],
            "next_offset": offset + limit if offset + limit < len(rows) else None}


def _iso(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value is not None else ""


# -- the routes ----------------------------------------------------------------------------

def _trace(app, request, trace_id):
    return json_response(200, {"trace_id": trace_id, "spans": trace_for(app, request, trace_id)})


def _jobs(app, request):
    return json_response(200, my_jobs(app, request))


def submission(app, request, trace_id: str) -> dict:
    """One submission's state and tracking statement."""
    spans = trace_for(app, request, trace_id)
    item = diagnosis_of(app, request, trace_id, spans, app.config.table)
    return {**jobs.state(trace_id, spans, item, request.caller.name), "statement": jobs.statement(spans),
            "spans": spans}


def _job(app, request, trace_id):
    answer = submission(app, request, trace_id)
    answer.pop("spans")
    return json_response(200, answer)


def _why(app, request, trace_id):
    return json_response(200, why_answer(app, request, trace_id))


def _me(app, request):
    return json_response(200, {"user": request.caller.name, "operator": request.caller.operator})


def _entries(app, request):
    return json_response(200, entries_summary(app, request))


def _summary(app, request):
    return json_response(200, analysis_summary(app, request))


def _entry(app, request, entry):
    return json_response(200, entry_glideins(app, request, entry))


def _openapi(app, request):
    return json_response(200, openapi())


def _route(method: str, path: str, handler, needs_caller: bool = True) -> tuple:
    return (method, re.compile(path), handler, needs_caller)


_ID = "([^/]{1,64})"
ROUTES = [
    _route("GET", "/api/v1/openapi.json", _openapi, needs_caller=False),
    _route("GET", "/api/v1/me", _me),
    _route("GET", f"/api/v1/traces/{_ID}", _trace),
    _route("GET", "/api/v1/jobs", _jobs),
    _route("GET", f"/api/v1/jobs/{_ID}", _job),
    _route("GET", f"/api/v1/jobs/{_ID}/why", _why),
    _route("GET", "/api/v1/entries", _entries),
    _route("GET", "/api/v1/summary", _summary),
    _route("GET", "/api/v1/entries/([^/]{1,200})/glideins", _entry),
]


def openapi() -> dict:
    """The OpenAPI 3.0 document of this API."""
    trace_id = {"name": "trace_id", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}
    days = {"name": "days", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": MAX_TABLE_DAYS,
                                                       "default": 2}}
    limit = {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}}
    errors = {"401": {"description": "no token, or one refused"},
              "404": {"description": "no such trace, or one the caller may not see (the same answer)"},
              "429": {"description": "too many requests from this caller; retry after Retry-After seconds"}}

    def get(summary, parameters=(), extra=None):
        return {"get": {"summary": summary, "parameters": list(parameters),
                        "responses": {"200": {"description": "OK", "content": {"application/json": {}}},
                                      **errors, **(extra or {})}}}
    operators = {"403": {"description": "for operators only"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "glidein-tracing serve", "version": __version__,
                 "description": "Read-only traces of GlideinWMS glideins and of users' jobs. Sign in with a "
                                "grid token (WLCG or SciTokens JWT) as `Authorization: Bearer TOKEN`. A user sees "
                                "the traces holding their own jobs (job.owner, HTCondor's Owner); operators see all."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/api/v1/me": get("who the token names, and whether they are an operator"),
            "/api/v1/traces/{trace_id}": get("a trace's spans (flat span dicts; other users' jobs left out)",
                                             [trace_id]),
            "/api/v1/jobs": get("the caller's recent submissions, latest activity first, each with its state "
                                "(waiting: why, since when; running: where, which phase; done or failed: the "
                                "verdict and the log tail); a page: give the answer's `next` as `before`",
                                [limit, {"name": "before", "in": "query", "schema": {"type": "string"}}]),
            "/api/v1/jobs/{trace_id}": get("one submission's state and its tracking statement (time, place, "
                                           "event)", [trace_id]),
            "/api/v1/jobs/{trace_id}/why": get("why the submission waits: the answer of `glidein-tracing why "
                                               "--json`", [trace_id]),
            "/api/v1/entries": get("operators: per entry, recent glideins by outcome and failure domain "
                                   f"(the glidein table's last `days` days, at most {MAX_TABLE_DAYS})", [days], operators),
            "/api/v1/summary": get("operators: the analysis summary (`glidein-tracing analyze`) of the glidein "
                                   f"table's last `days` days (at most {MAX_TABLE_DAYS}; made at most every 10 "
                                   "minutes): its text and its whole document", [days], operators),
            "/api/v1/entries/{entry}/glideins": get(
                "operators: a page of an entry's recent glideins, newest first", [
                    {"name": "entry", "in": "path", "required": True, "schema": {"type": "string"}}, days, limit,
                    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                    {"name": "outcome", "in": "query", "schema": {"type": "string"}}], operators),
        },
        "x-glidein-tracing": {"owner_attribute": c.JOB_OWNER},
    }
