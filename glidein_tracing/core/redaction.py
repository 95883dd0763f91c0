"""What never reaches a span: secrets, found by attribute name and inside free text.

Journals are written on worker nodes, where scripts print their command lines, URLs and
environment into details, status descriptions and notes. The converter passes every
attribute, status description and event attribute through ``scrub``/``redact_text``:

- by name: an attribute whose name holds a secret marker (``token``, ``passw``...) or that
  the operator listed (knob ``GLIDEIN_TRACING_REDACT``) is replaced whole;
- in text: ``key=value`` / ``--key=value`` / ``--key value`` with a secret-looking key, URL
  credentials (``scheme://user:pass@host``), cloud keys (``AWS_SECRET_ACCESS_KEY=...``,
  ``AKIA...`` key ids), bearer/basic credentials, JWTs and PEM blocks: only the secret part
  becomes ``REDACTED``, the rest of the text stays readable.
"""

from __future__ import annotations

import functools
import re

REDACTED = "REDACTED"
SECRET_MARKERS = ("token", "passw", "secret", "proxy_key", "private", "credential", "authorization",
                  "apikey", "api_key", "access_key", "passwd")
SECRET_NAME_RE = re.compile("|".join(re.escape(m) for m in SECRET_MARKERS), re.IGNORECASE)

_KEY = r"[A-Za-z0-9_.-]*(?:" + "|".join(re.escape(m) for m in SECRET_MARKERS) + r")[A-Za-z0-9_.-]*"
_VALUE = r"""(?:(?:Bearer|Basic)\s+)?(?:"[^"\n]*"|'[^'\n]*'|[^\s,;&"']+)"""
SECRET_TEXT_RE = re.compile(
    # PEM blocks, to their END line (or to the end of the text when cut)
    r"(?P<pem>-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z))"
    # URL credentials: keep scheme and user, drop the password
    r"|(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]+:)(?P<url_secret>[^@/\s]+)(?=@)"
    # key=value, --key=value, key: value with a secret-looking key
    rf"|(?P<kv>(?<![A-Za-z0-9_.-]){_KEY}\s*(?:=|:\s)\s*)(?P<kv_secret>{_VALUE})"
    # --key value (a command line's secret option)
    rf"|(?P<opt>(?<!\S)--?{_KEY}\s+)(?P<opt_secret>(?!-)[^\s]+)"
    # HTTP credentials, JWTs (SciTokens, IDTOKENs), AWS access key ids
    r"|(?P<auth>\b(?:Bearer|Basic)\s+)(?P<auth_secret>[A-Za-z0-9._~+/=-]{8,})"
    r"|(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)"
    r"|(?P<akid>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)",
    re.IGNORECASE | re.DOTALL)
# every SECRET_TEXT_RE match contains one of these (lower case): plain substring tests rule
# out the common case far faster than the regex scanning every character
HINTS = ("-----begin", "://", "bearer", "basic", "eyj", "akia", "asia") + SECRET_MARKERS


def _replacement(match: re.Match) -> str:
    for keep in ("url", "kv", "opt", "auth"):
        if match.group(keep) is not None:
            return match.group(keep) + REDACTED
    return REDACTED


def might_hold_secret(text: str) -> bool:
    lowered = text.lower()
    return any(hint in lowered for hint in HINTS)


def redact_text(text: str) -> str:
    """``text`` with every secret in it replaced (``text`` itself when there is none)."""
    if not might_hold_secret(text):
        return text
    return SECRET_TEXT_RE.sub(_replacement, text)


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    return SECRET_NAME_RE.search(name) is not None


def scrub(attrs: dict, names=frozenset()) -> dict:
    """``attrs`` with secrets removed: by name (markers and ``names``) and in string values.
    Returns ``attrs`` itself when nothing needed redacting, else a redacted copy."""
    out = None
    for name, value in attrs.items():
        if name in names or secret_name(name):
            clean = REDACTED
        elif isinstance(value, str):
            clean = redact_text(value)
        else:
            continue
        if clean is not value and clean != value:
            if out is None:
                out = dict(attrs)
            out[name] = clean
    return attrs if out is None else out
