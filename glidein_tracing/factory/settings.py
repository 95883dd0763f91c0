"""The forwarder's settings: one YAML file (a key for every setting), checked line by line,
and what follows from them (where the ledger is, each entry's schedd). Used by the
``forward`` and ``status`` verbs; every problem is a ``ConfigError``.

Precedence, highest first: a command-line flag, the config file, the standard
``OTEL_EXPORTER_OTLP_(TRACES_)*`` variables (read by the SDK's exporter for what the file
leaves unset: endpoint, headers, certificate, compression, timeout), the defaults below.
A bad file is refused as a whole, every problem named with its line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..core import kinds
from ..core.errors import ConfigError
from ..core.numbers import is_finite_number
from ..core.settings_file import url_problem, yaml_mapping

DEFAULT_CONFIG = Path("/etc/glidein-tracing/forwarder.yaml")
COMPRESSIONS = ("none", "gzip", "deflate")


@dataclass(frozen=True)
class Setting:
    """How one setting is written, checked and explained. Its YAML key is its field's name in
    ``ForwarderSettings``; ``flag`` is its command-line flag (None: the file only)."""
    kind: str              # one of kinds.SETTING_KINDS
    default: object
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()
    flag: str | None = None
    metavar: str | None = None


def _setting(kind: str, default, help: str, **more):
    """A field of ``ForwarderSettings`` carrying its ``Setting``."""
    if kind not in kinds.SETTING_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(kinds.SETTING_KINDS)}")
    described = Setting(kind, default, help, **more)
    if kind == kinds.MAP:
        return field(default_factory=dict, metadata={"setting": described})
    return field(default=default, metadata={"setting": described})


@dataclass(frozen=True)
class ForwarderSettings:
    """Every setting of the forwarder, resolved (flags over the file over the defaults). Each is
    declared once, here: its key, default, check, help text and flag (``SETTINGS``)."""
    logs: tuple = _setting(kinds.LIST, (), "Factory client log directories (or entry dirs)", flag="logs")
    factory: str | None = _setting(kinds.STRING, None, "the Factory's name, GLIDEIN_Factory: factory_name in "
                                   "glideinWMS.xml, read there with --factory-config", flag="--factory")
    schedd: str | None = _setting(kinds.STRING, None, "the schedd of every entry not named otherwise (part of trace "
                                  "ids; journals claiming another are rejected)", flag="--schedd")
    factory_config: str | None = _setting(kinds.STRING, None, "the Factory's glideinWMS.xml: its factory_name, each "
                                          "entry's schedd_name, GLIDEIN_Site and GLIDEIN_USE_TRACING, its log "
                                          "retention", flag="--factory-config", metavar="GLIDEINWMS_XML")
    entry_schedds: dict = _setting(kinds.MAP, {}, "schedd of each named entry: {ENTRY: SCHEDD} (the flag is "
                                   "repeatable)", flag="--entry-schedd", metavar="ENTRY=SCHEDD")
    endpoint: str | None = _setting(kinds.URL, None, "OTLP/HTTP base URL (else OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, "
                                    "else the store)", flag="--endpoint")
    headers: dict = _setting(kinds.MAP, {}, "OTLP/HTTP request headers, over OTEL_EXPORTER_OTLP_(TRACES_)HEADERS "
                             "(the SDK adds the variables' other headers)")
    certificate: str | None = _setting(kinds.STRING, None, "CA file for TLS (else OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE)")
    compression: str | None = _setting(kinds.ENUM, None, "gzip, deflate or none (else "
                                       "OTEL_EXPORTER_OTLP_(TRACES_)COMPRESSION)", choices=COMPRESSIONS)
    timeout: float | None = _setting(kinds.FLOAT, None, "export timeout, seconds (else "
                                     "OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT, else 10)", minimum=0.1, flag="--timeout")
    max_request_bytes: int = _setting(kinds.INT, 4 * 1024 * 1024, "OTLP requests are split to stay under this size",
                                      minimum=0, flag="--max-request-bytes")
    query: str | None = _setting(kinds.URL, None, "Jaeger query API base URL, to reconcile after a crash",
                                 flag="--query")
    store: str | None = _setting(kinds.STRING, None, "store directory (when spans go to no endpoint)", flag="--store")
    store_max_days: float | None = _setting(kinds.FLOAT, 30.0, "days the store keeps: older days are dropped whole "
                                            "(null: all)", minimum=1)
    store_max_gb: float | None = _setting(kinds.FLOAT, None, "gigabytes the store keeps at most: the oldest days are "
                                          "dropped whole beyond it, never the newest (null: no bound)", minimum=0.001)
    state: str | None = _setting(kinds.STRING, None, "ledger file (default: <store or user data dir>/forwarder.sqlite)",
                                 flag="--state")
    table: str | None = _setting(kinds.STRING, None, "glidein table directory (default: glidein-table beside the "
                                 "ledger; 'none': write no table)", flag="--table")
    grace: float = _setting(kinds.FLOAT, 600.0, "seconds to wait for a glidein's output after it ended", minimum=0,
                            flag="--grace")
    sampling_ratio: float | None = _setting(kinds.FLOAT, None, "override the sampling ratio each glidein ran with "
                                            "(its journal's GLIDEIN_TRACING_SAMPLING_RATIO); failed glideins are "
                                            "always kept", minimum=0.0, maximum=1.0, flag="--sampling-ratio")
    redact: tuple = _setting(kinds.LIST, (), "attribute names to redact")
    batch_spans: int = _setting(kinds.INT, 2000, "spans per export", minimum=1)
    service_name: str | None = _setting(kinds.STRING, None, "override service.name of glidein spans")
    failure_rules: str | None = _setting(kinds.STRING, None, "failure rules: a YAML file or a directory of them "
                                         "(docs/failures.md)")
    downtimes: tuple = _setting(kinds.LIST, (), "declared downtime files: OSG Topology XML, CSV or JSON "
                                "(docs/failures.md)")
    follow: bool = _setting(kinds.SWITCH, False, "keep running (a service)", flag="--follow")
    interval: float = _setting(kinds.FLOAT, 60.0, "seconds between passes when following", minimum=1,
                               flag="--interval")
    metrics_listen: str | None = _setting(kinds.ADDRESS, None, "serve Prometheus metrics (docs/metrics.md) at "
                                          "http://HOST:PORT/metrics while following (off when unset)",
                                          flag="--metrics-listen", metavar="HOST:PORT")

    def factory_facts(self):
        """The Factory's facts (factory_xml.FactoryFacts): glideinWMS.xml (``factory_config``)
        read once here, with these settings where it is silent; ConfigError when it cannot
        be read, a setting contradicts it (both values named), or no Factory name is known.
        Callers keep what it returns."""
        from .factory_xml import facts_of, read_factory_xml
        try:
            xml = None
            if self.factory_config:
                try:
                    xml = read_factory_xml(self.factory_config)
                except ValueError as exc:
                    raise ValueError(f"factory_config: {exc}") from exc
            return facts_of(xml, self.factory, self.schedd, self.entry_schedds)
        except ValueError as exc:
            raise ConfigError(str(exc).split("\n"), heading=None) from exc

    def sends_to_collector(self) -> bool:
        """Spans go to an OTLP endpoint (the settings' or the standard variables'), not the store."""
        return bool(self.endpoint) or (otel_endpoint_configured() and not self.store)

    def ledger_path(self) -> Path:
        """The forwarder's ledger: ``state``, else beside the store it writes or would write."""
        from ..exporters.store import default_store_dir
        if self.state:
            return Path(self.state)
        if self.sends_to_collector():
            return default_store_dir().parent / "forwarder.sqlite"
        return Path(self.store or default_store_dir()) / "forwarder.sqlite"

    def path_problems(self) -> list[str]:
        """What --check-config finds wrong with the paths the forwarder writes: the ledger
        (``state``) and, when spans go to the store, the store, each writable by this user."""
        from ..exporters.store import default_store_dir
        checks = [("state", self.ledger_path(), False)]
        if not self.sends_to_collector():
            checks.append(("store", Path(self.store or default_store_dir()), True))
        return [f"{key}: {problem}" for key, path, directory in checks
                if (problem := unwritable(path, directory))]


SETTINGS = {f.name: f.metadata["setting"] for f in fields(ForwarderSettings)}


def resolve(file_values: dict, flags: dict) -> ForwarderSettings:
    """Every setting: the flags given over the file over the defaults; a map's flag (e.g.
    --entry-schedd) adds to the file's map."""
    values = {key: value for key, value in file_values.items() if value is not None}
    for key, value in flags.items():
        if value is None or value is False or (isinstance(value, (list, dict)) and not value):
            continue      # not given
        values[key] = {**values.get(key, {}), **value} if SETTINGS[key].kind == kinds.MAP else value
    return ForwarderSettings(**{key: tuple(v) if isinstance(v, list) else v for key, v in values.items()})


def load(path) -> dict:
    """The settings a YAML file sets ({key: value}), every value checked; ConfigError else."""
    values, problems = {}, []
    for key, line, value_line, value, _node in yaml_mapping(path, "the forwarder's YAML settings file", SETTINGS,
                                                            problems):
        problem = check(key, value)
        if problem:
            problems.append(f"{path}:{value_line}: {key}: {problem}")
        else:
            values[key] = value
    if problems:
        raise ConfigError(problems)
    return values


def check(key: str, value) -> str | None:
    """Why ``value`` is not a valid ``key``, or None. ``None`` (YAML's null) means unset."""
    setting = SETTINGS[key]
    if value is None:
        return None
    kind = setting.kind
    if kind in (kinds.STRING, kinds.URL, kinds.ENUM) and not isinstance(value, str):
        return f"must be a string, not {_type_name(value)}"
    if kind == kinds.URL:
        return url_problem(value)
    if kind == kinds.ADDRESS:
        return _address_problem(value)
    if kind == kinds.SWITCH and not isinstance(value, bool):
        return f"must be true or false, not {_type_name(value)}"
    if kind in kinds.NUMBERS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == kinds.INT and isinstance(value, float)):
            return f"must be {'an integer' if kind == kinds.INT else 'a number'}, not {_type_name(value)}"
        if not is_finite_number(value):
            return f"must be a finite number, not {value}"
        if setting.minimum is not None and value < setting.minimum:
            return f"must be at least {setting.minimum}, not {value}"
        if setting.maximum is not None and value > setting.maximum:
            return f"must be at most {setting.maximum}, not {value}"
    if kind == kinds.LIST and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
        return "must be a list of strings"
    if kind == kinds.MAP and (not isinstance(value, dict)
                          or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
        return "must be a mapping of strings to strings"
    if setting.choices and value not in setting.choices:
        return f"must be one of {', '.join(setting.choices)}, not {value!r}"
    return None


def listen_address(value: str) -> tuple:
    """(host, port) of a ``host:port`` setting (``[::1]:9101`` for an IPv6 host); ValueError
    when it is none."""
    host, sep, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"must be HOST:PORT with a port from 1 to 65535 (e.g. 127.0.0.1:9101), not {value!r}")
    return host, int(port)


def _address_problem(value: str) -> str | None:
    try:
        listen_address(value)
    except ValueError as exc:
        return str(exc)
    return None


def unwritable(path, directory: bool) -> str | None:
    """Why this process could not write ``path`` (a directory when ``directory``, else a file
    SQLite keeps its journal beside), creating it and its missing parents; None when it can."""
    path = Path(path).expanduser()
    if path.exists():
        if path.is_dir() != directory:
            return f"{path} is {'not ' if directory else ''}a directory"
        where = path if directory else path.parent
        if not os.access(path, os.W_OK) or not os.access(where, os.W_OK | os.X_OK):
            return f"{where if os.access(path, os.W_OK) else path} is not writable by this user"
        return None
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{path} cannot be created: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{path} cannot be created: {parent} is not writable by this user"
    return None


def _type_name(value) -> str:
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def otel_endpoint_configured(environ=os.environ) -> bool:
    """Whether the standard variables name an OTLP endpoint (then spans go there, not to
    the store, when no endpoint is set)."""
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def load_config(given: str | None) -> tuple:
    """(path, settings) of the YAML file given, else of the default one when it exists, else
    (None, {}); ConfigError naming each problem with its line."""
    path = given or (DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None)
    return path, (load(path) if path else {})


def pairs_of(setting: Setting, items) -> dict:
    """The ``KEY=VALUE`` values of a map's repeatable flag (e.g. ``--entry-schedd``) -> {key: value}."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError([f"{setting.flag} wants {setting.metavar or 'KEY=VALUE'}, not {item!r}"], heading=None)
        out[key] = value
    return out
