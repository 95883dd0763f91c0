"""The service as one WSGI application, served by waitress in one process: who is asking
(auth.py), how much they may ask (a rate per caller, bounded paths, queries and bodies), which
route answers (the REST API under /api/v1/, api.py; the pages, pages.py), and the headers every
answer carries (a content security policy with no script at all, no caching, no framing).

Each request is logged in one line (caller, method, path, status, milliseconds): never a
token, a cookie or a query string."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from .auth import Sessions, Unauthorized, Verifier
from .source import Source, SourceError

LOG = logging.getLogger("glidein_tracing.serve")
MAX_PATH_CHARS = 512
MAX_QUERY_CHARS = 1024
MAX_QUERY_FIELDS = 20
MAX_BODY_BYTES = 16 * 1024          # the sign-in form: one token
MAX_HEADER_BYTES = 16 * 1024        # waitress refuses larger request headers (431)
SESSION_COOKIE = "glidein_tracing_session"
# a JWT (base64url JSON header, "eyJ", then payload and signature) wherever a caller put one
JWT_RE = re.compile(r"eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*){1,2}")
TRACE_ID_RE = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_PORTS = {"http": "80", "https": "443"}
# no script from anywhere (the pages need none), styles inline only (the waterfall's bars), no
# image but data: ones, forms posting back here only, no framing
CSP = ("default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                    ("Referrer-Policy", "same-origin"), ("Cache-Control", "no-store"),
                    ("X-Frame-Options", "DENY")]
REASONS = {200: "OK", 303: "See Other", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large", 414: "URI Too Long",
           429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list = field(default_factory=list)


def json_response(status: int, data) -> Response:
    return Response(status, json.dumps(data, indent=1, default=str).encode(), "application/json")


def error(status: int, message: str = "") -> Response:
    """An API error: JSON ``{"error": ...}``; a 404 says the same for every reason."""
    return json_response(status, {"error": message or REASONS.get(status, "error")})


class HttpError(Exception):
    """Raised by a handler: answer ``status`` (a page answers with its own page of it)."""

    def __init__(self, status: int, message: str = ""):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Request:
    method: str
    path: str
    query: dict
    environ: dict
    caller: object = None

    def param(self, name: str, default=None):
        values = self.query.get(name)
        return values[-1] if values else default

    def number(self, name: str, default: int, low: int, high: int) -> int:
        """A whole-number query parameter within [low, high]; 400 otherwise."""
        text = self.param(name)
        if text is None:
            return default
        if not (text.isascii() and text.isdigit() and len(text) < 20) or not low <= int(text) <= high:
            raise HttpError(400, f"{name} must be a whole number from {low} to {high}")
        return int(text)


class RateLimit:
    """At most ``per_minute`` requests per caller in any minute-long window (fixed windows,
    keyed by the caller's name, or the address of one not signed in); bounded in memory."""

    def __init__(self, per_minute: int, max_callers: int = 100000):
        self.per_minute, self.max_callers = per_minute, max_callers
        self._windows: dict = {}
        self._lock = threading.Lock()

    def allow(self, key: str, now: float | None = None) -> bool:
        minute = int((time.time() if now is None else now) // 60)
        with self._lock:
            start, count = self._windows.get(key, (minute, 0))
            if start != minute:
                start, count = minute, 0
            if len(self._windows) >= self.max_callers and key not in self._windows:
                self._windows = {k: v for k, v in self._windows.items() if v[0] == minute}
            self._windows[key] = (start, count + 1)
            return count < self.per_minute


class ServeApp:
    """The WSGI application."""

    def __init__(self, config):
        from . import api, pages
        self.config = config
        self.source = Source(config)
        self.verifier = Verifier(config)
        self.sessions = Sessions()
        self.limit = RateLimit(config.rate_limit)
        from .summary import Summaries
        self.summaries = Summaries(config.table) if config.table else None
        self.routes = api.ROUTES + pages.ROUTES       # (method, compiled path, handler, needs a caller)

    def __call__(self, environ, start_response):
        started = time.monotonic()
        request = None
        try:
            request, response = self._answer(environ)
        except Exception:      # noqa: BLE001 (one request's bug must not take the service down)
            LOG.exception("error answering %s", _loggable(environ.get("PATH_INFO", "")))
            response = error(500)
        caller = f"{request.caller.name}({request.caller.via})" if request and request.caller else "-"
        LOG.info("%s %s %s %s %d %.0fms", environ.get("REMOTE_ADDR", "-"), caller, environ.get("REQUEST_METHOD"),
                 _loggable(environ.get("PATH_INFO", "")), response.status,
                 (time.monotonic() - started) * 1000)
        headers = [("Content-Type", response.content_type), ("Content-Length", str(len(response.body)))]
        start_response(f"{response.status} {REASONS.get(response.status, '')}",
                       headers + SECURITY_HEADERS + response.headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else response.body]

    def _answer(self, environ) -> tuple:
        path = environ.get("PATH_INFO", "")
        query = environ.get("QUERY_STRING", "")
        is_api = path.startswith("/api/")
        fail = error if is_api else _page_error
        if len(path) > MAX_PATH_CHARS or len(query) > MAX_QUERY_CHARS:
            return None, fail(414)
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            request = Request(method, path, urllib.parse.parse_qs(query, max_num_fields=MAX_QUERY_FIELDS), environ)
        except ValueError:          # more fields than any route takes
            return None, fail(400, f"at most {MAX_QUERY_FIELDS} query parameters")
        try:
            request.caller = self.caller(environ)
        except Unauthorized as exc:
            LOG.info("refused: %s", exc)
            refused = True
        else:
            refused = False
        name = getattr(request.caller, "name", None)
        if not self.limit.allow(f"user:{name}" if name else f"addr:{environ.get('REMOTE_ADDR', '')}"):
            response = fail(429)
            response.headers.append(("Retry-After", "60"))
            return request, response
        for route_method, pattern, handler, needs_caller in self.routes:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            if method != route_method and not (method == "HEAD" and route_method == "GET"):
                continue
            if needs_caller and request.caller is None:
                return request, self._unauthorized(is_api)
            if method == "POST" and not self.from_own_page(environ):
                # login CSRF: another site's page would sign its visitor in as the attacker
                LOG.info("refused: a POST %s from another origin", path)
                return request, fail(403, "this form is accepted from this service's own pages only")
            try:
                return request, handler(self, request, *match.groups())
            except HttpError as exc:
                return request, fail(exc.status, exc.message)
            except SourceError as exc:
                LOG.warning("%s", exc)
                return request, fail(503, "the traces cannot be read now; try again later")
        return request, self._unauthorized(is_api) if refused else fail(404)

    def caller(self, environ):
        """The Caller of a request: a bearer token, else a session cookie, else the trusted
        proxy's header; None when it names none. A bad token raises Unauthorized. The rate
        limit counts per caller so named, else per address (a front proxy's users each have
        their own)."""
        header = environ.get("HTTP_AUTHORIZATION", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer":
                raise Unauthorized("an Authorization header that is no bearer token")
            return self.verifier.caller_of_token(token.strip())
        session = self._session_id(environ)
        if session:
            found = self.sessions.caller(session)
            if found is not None:
                return found
        return self.verifier.caller_of_proxy(environ.get("REMOTE_ADDR", ""), environ)

    def from_own_page(self, environ) -> bool:
        """Whether a POST came from a page of this service: its Origin (else its Referer)
        is the address it was sent to (scheme and Host), or the configured ``public_url``
        users reach it at through the site's proxy. Neither header, or ``null``: refused."""
        sent = environ.get("HTTP_ORIGIN") or environ.get("HTTP_REFERER") or ""
        origin = _origin(sent)
        if origin is None:
            return False
        own = {_origin(f"{environ.get('wsgi.url_scheme', 'http')}://"
                       f"{environ.get('HTTP_HOST') or environ.get('SERVER_NAME', '')}")}
        if self.config.public_url:
            own.add(_origin(self.config.public_url))
        return origin in own - {None}

    @staticmethod
    def _session_id(environ) -> str | None:
        from http.cookies import CookieError, SimpleCookie
        raw = environ.get("HTTP_COOKIE", "")
        if not raw or len(raw) > 4096:
            return None
        try:
            cookie = SimpleCookie(raw)
        except CookieError:
            return None
        morsel = cookie.get(SESSION_COOKIE)
        return morsel.value if morsel is not None else None

    def session_cookie(self, environ, session: str, max_age: int) -> tuple:
        """The session cookie: HttpOnly, SameSite=Strict, gone when the token expires;
        Secure unless ``secure_cookies: false``, and then still when the request came over
        https, from the trusted proxy, or ``public_url`` is https."""
        proxy = self.config.proxy
        secure = "; Secure" if (self.config.secure_cookies or environ.get("wsgi.url_scheme") == "https"
                                or (self.config.public_url or "").startswith("https://")
                                or (proxy is not None and environ.get("REMOTE_ADDR") in proxy.addresses)) else ""
        return ("Set-Cookie", f"{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; "
                              f"Max-Age={max(0, max_age)}{secure}")

    def _unauthorized(self, is_api: bool) -> Response:
        if is_api:
            response = error(401, "a valid bearer token is needed (Authorization: Bearer TOKEN)")
            response.headers.append(("WWW-Authenticate", 'Bearer realm="glidein-tracing"'))
            return response
        from .pages import signin_page
        return signin_page(401)


def _loggable(path: str) -> str:
    """A request path as the log shows it: bounded, quoted, any token in it (a user who
    pasted theirs into the address bar) replaced by ``[token]``."""
    return JWT_RE.sub("[token]", urllib.parse.quote(path[:MAX_PATH_CHARS]))


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL, lower-cased, without the scheme's default port;
    None for one that names no http(s) origin (``null``, garbage)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = f":{port}" if port is not None and str(port) != DEFAULT_PORTS[parts.scheme.lower()] else ""
    return f"{parts.scheme.lower()}://{host.lower()}{shown}"


def _page_error(status: int, message: str = "") -> Response:
    from .pages import error_page
    return error_page(status, message)


def _channel_with_secured_errors():
    """waitress's connection, whose own answers (a request it refuses before the application
    sees it: headers over 16 KiB, a body over 16 KiB, a malformed request) carry the security
    headers every answer of the application carries."""
    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    class SecuredErrorTask(ErrorTask):
        def execute(self):
            self.response_headers.extend(SECURITY_HEADERS)      # before the body: it sends the headers
            super().execute()

    class SecuredChannel(HTTPChannel):
        error_task_class = SecuredErrorTask

    return SecuredChannel


def serve(config) -> None:
    """Serve until SIGTERM or SIGINT (waitress stops on either)."""
    import sys

    import waitress
    app = ServeApp(config)
    server = waitress.create_server(app, host=config.host, port=config.port, threads=config.threads,
                                    max_request_header_size=MAX_HEADER_BYTES, max_request_body_size=MAX_BODY_BYTES,
                                    connection_limit=1000, channel_timeout=60, ident="glidein-tracing",
                                    clear_untrusted_proxy_headers=True)
    for address in secure_and_list(server):
        # each address actually bound (port 0: a free one), for the unit's log and the tests
        print(f"glidein-tracing serve: listening on http://{address}/", file=sys.stderr, flush=True)
    server.run()


def secure_and_list(server) -> list:
    """Give each listening socket of a waitress server the channel whose own refusals carry the
    security headers, and return their ``host:port``s. A host that resolves to several
    addresses (EL9's ``localhost``: 127.0.0.1 and ::1) makes waitress return a
    MultiSocketServer, which holds one server per socket in its map and has no port of its own."""
    import waitress.server

    sockets = [each for each in getattr(server, "map", {}).values()
               if isinstance(each, waitress.server.BaseWSGIServer)] or [server]
    channel = _channel_with_secured_errors()
    addresses = []
    for each in sockets:
        each.channel_class = channel
        host = each.effective_host
        addresses.append(f"[{host}]:{each.effective_port}" if ":" in str(host) else f"{host}:{each.effective_port}")
    return addresses
