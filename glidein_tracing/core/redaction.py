"""What never reaches a span: secrets, found by attribute name and inside free text.

Journals are written on worker nodes, where scripts print their command lines, URLs and
environment into details, status descriptions and notes. The converter passes every
attribute, status description and event attribute through ``scrub``/``redact_text``:

- by name: an attribute whose name holds a secret marker (``token``, ``passw``...) or that
  the operator listed (knob ``GLIDEIN_TRACING_REDACT``) is replaced whole;
- in text: ``key=value`` / ``key<TAB>value`` / ``--key=value`` / ``--key value`` with a
  secret-looking key (``SSHPASS``, ``AccountKey`` too), the same key quoted as JSON, YAML or a
  Python dict prints it (``"password": "..."``, ``'access_token':'...'``), URL credentials
  (``scheme://user:pass@host``), a URL's query signature (``Signature=``, ``X-Amz-Signature=``,
  Azure SAS ``sig=``), webhook URLs (Slack, Discord), cloud keys (``AWS_SECRET_ACCESS_KEY=...``,
  ``AKIA...`` key ids), tokens of a known format anywhere, in a URL too (GitHub
  ``ghp_``/``github_pat_``..., GitLab ``glpat-``..., Slack ``xox[abposr]-``, Google ``AIza``,
  Stripe ``sk_live_`` and the other prefixes secret scanners know), bearer/basic credentials,
  JWTs, PEM blocks, and a PEM
  block's base64 body even without its BEGIN line (a log tail cut inside a key): only the
  secret part becomes ``REDACTED``, the rest of the text stays readable. Control bytes are
  dropped first, so a key split by them (``pass\x01word=``) is whole again.

The node redacts with the same rules before anything reaches its journal (``gt_redact`` in
the hooks' library, in awk: no Python on a worker node); tests/test_redaction_agree.py runs
both on one corpus of secrets, and this module redacts again at the Factory.
"""

from __future__ import annotations

import functools
import re

REDACTED = "REDACTED"
SECRET_MARKERS = ("token", "passw", "secret", "proxy_key", "private", "credential", "authorization",
                  "apikey", "api_key", "api-key", "access_key", "accountkey", "sshpass")
SECRET_NAME_RE = re.compile("|".join(re.escape(m) for m in SECRET_MARKERS), re.IGNORECASE)

_KEY = r"[A-Za-z0-9_.-]*(?:" + "|".join(re.escape(m) for m in SECRET_MARKERS) + r")[A-Za-z0-9_.-]*"
_VALUE = r"""(?:(?:Bearer|Basic)\s+)?(?:"[^"\n]*"|'[^'\n]*'|[^\s,;&"']+)"""
# a quoted value, escapes and all (JSON, Python repr, a JSON text inside a JSON string)
_QUOTED_VALUE = r"""(?:\\?"(?:[^"\\\n]|\\[^"\n]|\\"(?!\s*[,}\]]))*\\?"|'(?:[^'\\\n]|\\.)*'|(?![{\[])[^\s,;&"'}\]]+)"""
# a PEM body line: a run of base64 at least 40 long, alone on its line (PEM wraps at 64, SSH at 70)
_PEM_LINE = r"^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t\r]*(?:\n|\Z)"
# a short line that still looks like base64, not a word (a digit, + or / or padding in it)
_B64_PIECE = r"^[ \t]*(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]+={0,2}[ \t\r]*(?:\n|\Z)"
# either of the two, matched in one way only (the lookahead, atomic, decides): a line that is
# both, matched as either, made a failed search try 2^lines ways (20 lines: 7 s)
_B64_LINE = r"^[ \t]*(?=[A-Za-z0-9+/]{40}|[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]+={0,2}[ \t\r]*(?:\n|\Z)"
# base64 lines before an END line, at most this many: tried at each line of a long run of such
# lines with no END after them, the search took time quadratic in the run (8 KB of short lines:
# 1 s). A longer body before its END is the PEM body above from its first two full lines on; only
# a short first piece of it away from the text's start (where a cut body begins) is left
_MAX_END_LINES = 16
# a line start with an END line at most that many lines on: checked first with a plain scan of
# lines (the base64 lines' own match, tried at each of 2,800 short lines before an END hint,
# took 23 of the 33 ms of an 8 KB tail)
_NEAR_END = rf"^(?=(?:[^\n]*\n){{1,{_MAX_END_LINES}}}?[ \t]*-----END )"
# The rules, in the order they are tried at each position, each with the lower-case hints one of
# which every match of it contains (None: the PEM body's, which needs a line break and either an
# END hint or two full base64 lines). A text is searched with one alternation of the rules whose
# hints it holds, in this order: the same matches as with all of them (the others cannot match
# it), but a position is tried against only those (a URL hint alone: one rule, not sixteen)
_TOKEN_HINTS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "glpat-", "glptt-", "gldt-", "glrt-",
                "aiza", "k_live_", "k_test_", "npm_", "pypi-", "sg.", "hf_", "_v1_", "shp", "hvs.", "hvb.",
                "age-secret-key-", "dapi", "sk-", "pmak-", "lin_api_", "nrak-")
_RULES = (
    # PEM blocks, to their END line (or to the end of the text when cut)
    (("-----begin",), r"(?P<pem>-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z))"),
    # a PEM body without its BEGIN line: two or more full base64 lines (the text's cut first
    # line and a short last line with them), to the END line when there is one; or base64
    # lines that end in an END line
    (None, rf"(?P<pem_body>(?:\A{_B64_PIECE})?(?:{_PEM_LINE}){{2,}}(?:{_B64_PIECE})?(?:[ \t]*-----END [A-Z0-9 ]+-----)?"
           rf"|{_NEAR_END}(?:{_B64_LINE}){{1,{_MAX_END_LINES}}}[ \t]*-----END [A-Z0-9 ]+-----)"),
    # "key": "value", 'key': 'value', "key":value (JSON, YAML, Python dicts; escaped quotes too)
    (SECRET_MARKERS, rf"""(?P<quoted>(?P<quote>\\?["']){_KEY}(?P=quote)\s*[:=]\s*)(?P<quoted_secret>{_QUOTED_VALUE})"""),
    # URL credentials: keep scheme and user, drop the password. The scheme is tried only where
    # a run of scheme characters begins (kept as it is, so its first character may be any of
    # them): tried at every letter of a long run, each try running to the run's end, the search
    # took time quadratic in the run (8 KB of letters and a "://" in a log tail: 0.4 s)
    (("://",), r"(?P<url>(?<![A-Za-z0-9+.-])[A-Za-z0-9+.-]+://[^:/@\s]+:)(?P<url_secret>[^@/\s]+)(?=@)"),
    # key=value, --key=value, key: value, key<TAB>value with a secret-looking key
    (SECRET_MARKERS, rf"(?P<kv>(?<![A-Za-z0-9_.-]){_KEY}[ \t]*(?:=|:\s|\t)\s*)(?P<kv_secret>{_VALUE})"),
    # --key value (a command line's secret option)
    (SECRET_MARKERS, rf"(?P<opt>(?<!\S)--?{_KEY}\s+)(?P<opt_secret>(?!-)[^\s]+)"),
    # HTTP credentials, JWTs (SciTokens, IDTOKENs)
    (("bearer", "basic"), r"(?P<auth>\b(?:Bearer|Basic)\s+)(?P<auth_secret>[A-Za-z0-9._~+/=-]{8,})"),
    (("eyj",), r"(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)"),
    # a URL's query signature (S3 and GCS presigned URLs, Azure SAS) or session token
    (("sig=", "signature=", "credential", "token"),
     r"(?P<qs>(?:^|(?<=[?&;,\s]))(?:sig|signature|x-amz-signature|x-goog-signature|x-goog-credential"
     r"|x-amz-security-token)=)(?P<qs_secret>[^&#\s,;\"']+)"),
    # webhook URLs whose path is the secret (Slack, Discord)
    (("hooks.slack.com/", "/api/webhooks/"),
     r"(?P<hook>(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks)/)"
     r"(?P<hook_secret>[A-Za-z0-9/_.-]+)"),
    # tokens of a known format, wherever they are (a URL's user part: https://ghp_...@github.com):
    # the prefixes secret scanners know (GitHub, GitLab, Slack, Google, Stripe, npm, PyPI,
    # SendGrid, Hugging Face, DigitalOcean, Shopify, Vault, age, Databricks, OpenAI, Anthropic,
    # Postman, Linear, New Relic)
    (_TOKEN_HINTS,
     r"(?P<token>\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
     r"|gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,}|[sr]k_(?:live|test)_[0-9A-Za-z]{10,}"
     r"|npm_[A-Za-z0-9]{30,}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
     r"|hf_[A-Za-z0-9]{30,}|do[opr]_v1_[a-f0-9]{40,}|shp(?:at|ss|ca|pa)_[a-f0-9]{32}|hv[sb]\.[A-Za-z0-9_-]{24,}"
     r"|age-secret-key-1[A-Za-z0-9]{40,}|dapi[a-f0-9]{32}|sk-(?:proj|ant|svcacct)-[A-Za-z0-9_-]{20,}"
     r"|pmak-[A-Za-z0-9-]{40,}|lin_api_[A-Za-z0-9]{30,}|nrak-[A-Za-z0-9]{20,}))"),
    # AWS access key ids
    (("akia", "asia"), r"(?P<akid>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"),
)
# a PEM body's base64 lines: no substring hint for those, so a search of its own (only texts
# with a line break need it)
PEM_BODY_RE = re.compile(rf"(?:{_PEM_LINE}){{2}}", re.MULTILINE)
# every rule's match contains one of these (lower case): plain substring tests rule out the
# common case far faster than a regex scanning every character
HINTS = tuple(dict.fromkeys(h for hints, _ in _RULES if hints for h in hints)) + ("-----end",)


@functools.lru_cache(maxsize=256)
def _rules_regex(which: tuple) -> re.Pattern:
    """One alternation of the rules numbered ``which`` (in _RULES's order)."""
    return re.compile("|".join(_RULES[i][1] for i in which), re.IGNORECASE | re.DOTALL | re.MULTILINE)


def _rules_for(text: str, present: frozenset) -> tuple:
    """The numbers of the rules whose hints are among ``present`` (those ``text`` holds)."""
    return tuple(i for i, (hints, _) in enumerate(_RULES)
                 if (not present.isdisjoint(hints) if hints is not None else
                     "\n" in text and ("-----end" in present or PEM_BODY_RE.search(text) is not None)))


# control bytes but TAB, LF, CR: dropped before matching (they may split a key or a token)
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _replacement(match: re.Match) -> str:
    groups = match.groupdict()
    for keep in ("url", "kv", "opt", "auth", "quoted", "qs", "hook"):
        if groups.get(keep) is not None:
            return groups[keep] + REDACTED
    if groups.get("pem_body") is not None and match.group().endswith("\n"):
        return REDACTED + "\n"   # the line break after the body's last line stays
    return REDACTED


def might_hold_secret(text: str) -> bool:
    lowered = text.lower()
    return (any(hint in lowered for hint in HINTS)
            or ("\n" in text and PEM_BODY_RE.search(text) is not None))


def redact_text(text: str) -> str:
    """``text`` with its control bytes dropped and every secret in it replaced (``text``
    itself when it has neither)."""
    if CONTROL_RE.search(text) is not None:
        text = CONTROL_RE.sub("", text)
    lowered = text.lower()
    which = _rules_for(text, frozenset(hint for hint in HINTS if hint in lowered))
    return _rules_regex(which).sub(_replacement, text) if which else text


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
