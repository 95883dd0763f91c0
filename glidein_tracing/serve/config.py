"""The service's settings: one YAML file (factory_config/serve.yaml shows every key), checked
as ``forward``'s is (``serve --check-config``: one line per problem, each with its line,
exit 2). What it reads (the store or Jaeger, the glidein table), where it listens, whom it
trusts (token issuers and their public keys, the operators' groups, a front proxy) and how
much one caller may ask."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError
from ..core.settings_file import url_problem, yaml_mapping

DEFAULT_CONFIG = Path("/etc/glidein-tracing/serve.yaml")
KEYS = {"listen", "store", "jaeger", "jaeger_services", "jaeger_ui", "table", "issuers", "operators",
        "proxy", "public_url", "jwks_check_s", "threads", "rate_limit", "secure_cookies"}
ISSUER_KEYS = {"issuer", "jwks_file", "audience", "user_claim", "groups_claim"}
# an HTTP header name (RFC 9110 token) and a Unix user name as HTCondor's Owner holds it
HEADER_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")


@dataclass(frozen=True)
class Issuer:
    """One token issuer the service trusts: its ``iss``, its public keys (a JWKS file read at
    start and again when it changes, never fetched), the ``aud`` values a token must name one
    of, the claim that names the user (matched to HTCondor's job Owner) and the claim listing
    their groups."""
    issuer: str
    jwks_file: str
    audience: tuple
    user_claim: str = "sub"
    groups_claim: str = "wlcg.groups"


@dataclass(frozen=True)
class Proxy:
    """A trusted front proxy: its user header is believed from these addresses only."""
    header: str
    addresses: tuple


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8470
    store: str | None = None
    jaeger: str | None = None
    # the glideins' service.name (core/conventions.py) and the Frontend instrumentor's (its job.waiting spans)
    jaeger_services: tuple = ("glidein", "gwms-frontend")
    jaeger_ui: str | None = None
    table: str | None = None
    issuers: tuple = ()
    operator_groups: tuple = ()
    operator_users: tuple = ()
    proxy: Proxy | None = None
    # the origin users reach the service at through the site's proxy (scheme://host[:port]),
    # from which the sign-in form is accepted besides the service's own address
    public_url: str | None = None
    jwks_check_s: int = 60         # how often at most a JWKS file is looked at for a change
    threads: int = 8
    rate_limit: int = 240          # requests per minute per caller
    secure_cookies: bool = True


def load(path) -> ServeConfig:
    """The settings of a YAML file; ConfigError naming every problem with its line."""
    problems: list = []
    values: dict = {}
    given = set()
    for key, _line, value_line, value, node in yaml_mapping(path, "the service's YAML settings file", KEYS,
                                                             problems):
        given.add(key)
        before = len(problems)
        checked = _issuers(value, _item_lines(node), problems) if key == "issuers" else _check(key, value, problems)
        for index in range(before, len(problems)):      # (line, problem) of a list's item, else the value's
            line, problem = problems[index] if isinstance(problems[index], tuple) else (value_line, problems[index])
            problems[index] = f"{path}:{line}: {key}: {problem}"
        if len(problems) == before:
            values.update(checked)
    if "store" in values and "jaeger" in values:
        problems.append(f"{path}: give `store` or `jaeger`, not both")
    if not given & {"issuers", "proxy"}:
        problems.append(f"{path}: no `issuers` and no `proxy`: nobody could sign in")
    if problems:
        raise ConfigError(problems)
    return ServeConfig(**values)


def _check(key: str, value, problems: list) -> dict:
    """The ServeConfig fields ``value`` of ``key`` sets; each problem appended to ``problems``."""
    if key == "listen":
        match = re.fullmatch(r"\[?([^\[\]]+?)\]?:(\d{1,5})", str(value)) if isinstance(value, str) else None
        if not match or not 0 <= int(match.group(2)) <= 65535:
            problems.append(f"must be host:port (e.g. 127.0.0.1:8470), not {value!r}")
            return {}
        return {"host": match.group(1), "port": int(match.group(2))}
    if key in ("store", "table"):
        if not isinstance(value, str) or not value:
            problems.append("must be a directory path")
            return {}
        if not Path(value).expanduser().is_dir():
            problems.append(f"{value} is not a directory")
            return {}
        return {key: value}
    if key in ("jaeger", "jaeger_ui"):
        problem = url_problem(value) if isinstance(value, str) else "must be a URL"
        if problem:
            problems.append(problem)
            return {}
        return {key: value.rstrip("/")}
    if key == "public_url":
        try:
            parts = urllib.parse.urlsplit(value) if isinstance(value, str) else None
            _ = parts and parts.port           # a port that is no number raises here
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
                or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            problems.append(f"must be the URL users open, scheme://host[:port] (e.g. https://tracing.example.org), "
                            f"not {value!r}")
            return {}
        return {key: f"{parts.scheme}://{parts.netloc.lower()}"}
    if key == "jaeger_services":
        if not _strings(value):
            problems.append("must be a list of service names")
            return {}
        return {key: tuple(value)}
    if key in ("threads", "rate_limit", "jwks_check_s"):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10000:
            problems.append(f"must be a whole number from 1 to 10000, not {value!r}")
            return {}
        return {key: value}
    if key == "secure_cookies":
        if not isinstance(value, bool):
            problems.append("must be true or false")
            return {}
        return {key: value}
    if key == "operators":
        if not isinstance(value, dict) or set(value) - {"groups", "users"} or not all(
                _strings(v) for v in value.values()):
            problems.append("must be {groups: [GROUP, ...], users: [USER, ...]} (both optional)")
            return {}
        return {"operator_groups": tuple(value.get("groups") or ()),
                "operator_users": tuple(value.get("users") or ())}
    if key == "proxy":
        return _proxy(value, problems)
    raise AssertionError(key)   # every key of KEYS is checked above (issuers by _issuers)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _item_lines(node) -> list:
    """[(the item's line, {its key: that key's line})] of a YAML list node's items; [] for a
    node that is no list."""
    import yaml
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [(item.start_mark.line + 1,
             {k.value: k.start_mark.line + 1 for k, _ in item.value if isinstance(k, yaml.ScalarNode)}
             if isinstance(item, yaml.MappingNode) else {}) for item in node.value]


def _issuers(value, lines: list, problems: list) -> dict:
    """The issuers of the ``issuers`` list; each problem as (its line, text): the issuer's own
    line, or the line of its key at fault."""
    from .auth import KeyProblem, read_jwks
    if not isinstance(value, list) or not value:
        problems.append("must be a list of {issuer, jwks_file, audience, user_claim}")
        return {}
    out, seen = [], set()
    for number, (item, (line, key_lines)) in enumerate(zip(value, lines), 1):
        if not isinstance(item, dict):
            problems.append((line, f"issuer {number}: must be a mapping of strings"))
            continue
        bad = [k for k, v in item.items() if not (isinstance(v, str) and v or k == "audience" and _strings(v))]
        for key in bad:
            problems.append((key_lines.get(key, line), f"issuer {number}: {key}: must be a string"
                             + (" or a list of strings" if key == "audience" else "")))
        if bad:
            continue
        unknown = set(item) - ISSUER_KEYS
        missing = {"issuer", "jwks_file", "audience"} - set(item)
        for key in sorted(unknown):
            problems.append((key_lines.get(key, line), f"issuer {number}: unknown key {key!r} "
                                                       f"(known: {', '.join(sorted(ISSUER_KEYS))})"))
        if missing:
            problems.append((line, f"issuer {number}: missing {', '.join(sorted(missing))}"))
        if unknown or missing:
            continue
        if item["issuer"] in seen:
            problems.append((key_lines.get("issuer", line), f"issuer {number}: {item['issuer']} is listed twice"))
            continue
        seen.add(item["issuer"])
        try:
            read_jwks(item["jwks_file"])
        except KeyProblem as exc:
            problems.append((key_lines.get("jwks_file", line), f"issuer {number} ({item['issuer']}): {exc}"))
            continue
        audience = item["audience"]
        out.append(Issuer(**{**item, "audience": (audience,) if isinstance(audience, str) else tuple(audience)}))
    return {"issuers": tuple(out)}


def _proxy(value, problems: list) -> dict:
    if not isinstance(value, dict) or set(value) != {"header", "addresses"}:
        problems.append("must be {header: HEADER, addresses: [ADDRESS, ...]}")
        return {}
    header, addresses = value["header"], value["addresses"]
    if not isinstance(header, str) or not HEADER_RE.match(header) or header.lower() in ("authorization", "cookie"):
        problems.append(f"header: not a header name this service can trust: {header!r}")
        return {}
    if not _strings(addresses):
        problems.append("addresses: must be a list of IP addresses")
        return {}
    for address in addresses:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            problems.append(f"addresses: not an IP address: {address!r}")
            return {}
    return {"proxy": Proxy(header, tuple(addresses))}


def load_config(given) -> tuple:
    """(path, ServeConfig) of the file given, else of the default one; ConfigError when
    there is none."""
    path = Path(given) if given else DEFAULT_CONFIG
    if not given and not path.exists():
        raise ConfigError([f"no config file: give --config FILE (default {DEFAULT_CONFIG}; "
                           "factory_config/serve.yaml shows every key)"], heading=None)
    return path, load(path)
