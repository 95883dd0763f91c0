"""Who is asking: a grid token (WLCG or SciTokens JWT, as jobsub_lite users hold them from
htgettoken), a session a token opened (the pages' sign-in), or a trusted front proxy's user
header.

A token is checked by PyJWT with cryptography, never by hand: its signature against the
issuer's public keys, from the configured JWKS file (read at start and again when it changes;
nothing is fetched), its ``iss``, ``aud``, ``exp`` (required) and ``nbf``. The algorithm is the key's
own (RS256, ES256, ...), so a token's header cannot choose ``none`` or HS256 keyed with the
public key. A token is never logged, nor kept: a session holds the caller it named.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass

from ..core.inputs import file_stamp, read_input

LOG = logging.getLogger("glidein_tracing.serve")
MAX_JWKS_BYTES = 1024 * 1024
MAX_TOKEN_CHARS = 8192         # WLCG tokens are about 1 KiB; a header cap bounds them anyway
LEEWAY_S = 30                  # clock difference tolerated on exp and nbf
# asymmetric algorithms only: a symmetric key in a JWKS would be a shared secret
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
# a user name as HTCondor's Owner holds it (a Unix account name)
USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
MAX_SESSIONS = 20000


class KeyProblem(Exception):
    """A JWKS file the service cannot use, in one line."""


class Unauthorized(Exception):
    """No caller: the reason goes to the log (never the token), the answer is a bare 401."""


@dataclass(frozen=True)
class Caller:
    name: str            # the user (HTCondor's Owner) or the operator's name
    operator: bool
    via: str             # token, session or proxy


def read_jwks(path) -> dict:
    """{kid: PyJWK} of a JWKS file (``{"keys": [...]}``, as an issuer publishes at its
    jwks_uri); KeyProblem for a file that is not one, or a key that is no public key of an
    allowed algorithm."""
    import jwt
    try:
        data = read_input(path, MAX_JWKS_BYTES)
        document = json.loads(data)
    except OSError as exc:
        raise KeyProblem(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError:
        raise KeyProblem(f"{path} is not JSON (a JWKS file: {{\"keys\": [...]}})") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list) or not keys:
        raise KeyProblem(f"{path} holds no keys (a JWKS file: {{\"keys\": [...]}})")
    out = {}
    for number, key in enumerate(keys, 1):
        if not isinstance(key, dict) or key.get("kty") not in ("RSA", "EC"):
            raise KeyProblem(f"{path}: key {number} is not an RSA or EC public key")
        if any(private in key for private in ("d", "p", "q")):
            raise KeyProblem(f"{path}: key {number} holds a private key; give the public keys only")
        try:
            parsed = jwt.PyJWK.from_dict(key)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
            raise KeyProblem(f"{path}: key {number}: {exc}") from None
        if parsed.algorithm_name not in ALGORITHMS:
            raise KeyProblem(f"{path}: key {number}: algorithm {parsed.algorithm_name} is not allowed")
        kid = key.get("kid") or ""
        if kid in out:
            raise KeyProblem(f"{path}: two keys have the kid {kid!r}")
        out[kid] = parsed
    return out


class IssuerKeys:
    """One issuer's public keys, read from its JWKS file again when the file changes (its
    mtime or size, looked at no more than every ``check_s`` seconds, never fetched), so a
    timer that saves the issuer's new keys needs no restart. A changed file that is no
    good JWKS is logged and the keys read before are kept."""

    def __init__(self, path, check_s: float):
        self.path, self.check_s = path, check_s
        self._stamp = file_stamp(path)
        self.keys = read_jwks(path)
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def current(self) -> dict:
        """{kid: PyJWK}, read again first when due and the file changed."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self.check_s:
                self._checked = now
                stamp = file_stamp(self.path)
                if stamp is not None and stamp != self._stamp:
                    self._stamp = stamp
                    try:
                        self.keys = read_jwks(self.path)
                        LOG.info("keys read again from %s (%d keys)", self.path, len(self.keys))
                    except KeyProblem as exc:
                        LOG.warning("kept the keys read before: %s", exc)
            return self.keys


class Verifier:
    """Checks tokens of the configured issuers and names their callers."""

    def __init__(self, config):
        self.config = config
        self.issuers = {i.issuer: (i, IssuerKeys(i.jwks_file, config.jwks_check_s)) for i in config.issuers}

    def caller_of_token(self, token: str) -> Caller:
        import jwt
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise Unauthorized("no token, or one too long")
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"not a JWT ({type(exc).__name__})") from None
        known = self.issuers.get(unverified.get("iss")) if isinstance(unverified.get("iss"), str) else None
        if known is None:
            raise Unauthorized("an issuer this service does not trust")
        issuer, keys = known[0], known[1].current()
        kid = header.get("kid") or ""
        key = keys.get(kid) if kid or len(keys) != 1 else next(iter(keys.values()))
        if key is None:
            raise Unauthorized(f"no key {str(kid)[:40]!r} of {issuer.issuer}")   # the token's words: bounded
        if header.get("alg") != key.algorithm_name:
            raise Unauthorized(f"algorithm {str(header.get('alg'))[:20]!r} is not its key's ({key.algorithm_name})")
        try:
            claims = jwt.decode(token, key.key, algorithms=[key.algorithm_name], audience=list(issuer.audience),
                                issuer=issuer.issuer, leeway=LEEWAY_S,
                                options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"token refused: {type(exc).__name__}") from None
        name = claims.get(issuer.user_claim)
        if not isinstance(name, str) or not USER_RE.match(name):
            raise Unauthorized(f"claim {issuer.user_claim} names no user")
        groups = claims.get(issuer.groups_claim) or []
        if isinstance(groups, str):
            groups = groups.split()
        operator = bool(set(g for g in groups if isinstance(g, str)) & set(self.config.operator_groups)) \
            or name in self.config.operator_users
        return Caller(name, operator, "token")

    def caller_of_proxy(self, remote_addr: str, headers) -> Caller | None:
        """The trusted proxy's user, when the request came from one of its addresses."""
        proxy = self.config.proxy
        if proxy is None or remote_addr not in proxy.addresses:
            return None
        name = headers.get("HTTP_" + proxy.header.upper().replace("-", "_"))
        if not name:
            return None
        if not USER_RE.match(name):
            raise Unauthorized("the proxy's user header names no user")
        return Caller(name, name in self.config.operator_users, "proxy")

    def expiry(self, token: str) -> float:
        """When a checked token expires (its exp), for the session it opens."""
        import jwt
        return float(jwt.decode(token, options={"verify_signature": False})["exp"])


class Sessions:
    """Sign-ins of the pages: a random id (the cookie) -> the caller, until the token that
    opened it expires. Held in memory: a restart signs everyone out; bounded in number."""

    def __init__(self, limit: int = MAX_SESSIONS):
        self.limit = limit
        self._by_id: dict = {}
        self._lock = threading.Lock()

    def open(self, caller: Caller, until: float) -> str:
        session = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            if len(self._by_id) >= self.limit:
                for old in [k for k, (_, end) in self._by_id.items() if end <= now]:
                    del self._by_id[old]
                while len(self._by_id) >= self.limit:        # the oldest sign-ins go first
                    del self._by_id[next(iter(self._by_id))]
            self._by_id[session] = (Caller(caller.name, caller.operator, "session"), until)
        return session

    def caller(self, session: str) -> Caller | None:
        with self._lock:
            found = self._by_id.get(session)
            if found is None:
                return None
            if found[1] <= time.time():
                del self._by_id[session]
                return None
            return found[0]

    def close(self, session: str) -> None:
        with self._lock:
            self._by_id.pop(session, None)
