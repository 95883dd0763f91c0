"""What the forwarder checks before it starts, so a mistake stops it once, at the start, with
every problem named, instead of every 30 s under systemd's ``Restart=on-failure``.

``problems(settings)`` is the one list: ``forward`` runs it before it starts anything, and
``forward --check-config`` runs it with the checks only a dry run makes (the ledger can be
opened and nobody holds it, the failure rules and downtime feeds parse within their bounds,
which a running forwarder rather logs and works around). Nothing here creates or changes a
file: the paths the forwarder will write are checked for being writable, not written.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from ..core.errors import ConfigError
from ..core.inputs import NotAFileError, check_input
from .outputs import find_entry_dirs
from .settings import ForwarderSettings, unwritable

# host names reserved for examples (RFC 2606, RFC 6761): never a real collector
RESERVED_DOMAINS = ("example", "example.com", "example.net", "example.org", "invalid", "test")


def problems(conf: ForwarderSettings, *, dry_run: bool = False) -> list[str]:
    """One line per problem of the settings that would stop or hobble the forwarder; with
    ``dry_run`` (--check-config) also the ledger's lock and the failure rules and feeds."""
    found = placeholders(conf) + log_problems(conf) + file_problems(conf) + conf.path_problems() \
        + table_problems(conf)
    if dry_run:
        found += ledger_problems(conf) + failure_problems(conf)
    return found


def refuse(conf: ForwarderSettings, *, dry_run: bool = False):
    """The Factory's facts (factory_xml.FactoryFacts, glideinWMS.xml read once); ConfigError
    naming every problem, if there is one."""
    found = problems(conf, dry_run=dry_run)
    facts = None
    if not any(line.startswith("factory_config:") for line in found):
        try:
            facts = conf.factory_facts()
        except ConfigError as exc:
            found += exc.problems
    if found:
        raise ConfigError(found)
    return facts


def guesses(conf: ForwarderSettings, facts) -> list[str]:
    """What the forwarder must guess about the entries its log directories hold (no
    glideinWMS.xml, an entry it does not list, an entry with no schedd)."""
    return facts.guesses(e.entry for e in find_entry_dirs(conf.logs))


def placeholders(conf: ForwarderSettings) -> list[str]:
    """The example's placeholders left as they are (factory_config/forwarder.yaml ships
    ``jaeger.example.org``): an address that can never be reached."""
    out = []
    for key in ("endpoint", "query"):
        url = getattr(conf, key)
        host = (urlsplit(url).hostname or "").lower() if url else ""
        if host and any(host == d or host.endswith("." + d) for d in RESERVED_DOMAINS):
            out.append(f"{key}: {host} is the example's placeholder (a name reserved for examples, never a "
                       f"real host): put your {'collector' if key == 'endpoint' else 'Jaeger query'}'s URL")
    return out


def log_problems(conf: ForwarderSettings) -> list[str]:
    """Each log directory: there, a directory this user can read, holding at least one entry
    directory (``user_*/glidein_*/entry_*/``) as the forwarder looks for them."""
    out = []
    for path in map(Path, conf.logs):
        if not path.exists():
            out.append(f"logs: {path}: no such directory")
        elif not path.is_dir():
            out.append(f"logs: {path}: not a directory")
        elif not os.access(path, os.R_OK | os.X_OK):
            out.append(f"logs: {path}: not readable by this user")
        elif not find_entry_dirs([path]):
            out.append(f"logs: {path} holds no Factory entry directory (glidein_<instance>/entry_<entry>/): give "
                       "the Factory's client log directory (e.g. /var/log/gwms-factory/client)")
    return out


def file_problems(conf: ForwarderSettings) -> list[str]:
    """The files the settings name that the forwarder reads at start: glideinWMS.xml (the
    Factory's facts, factory_xml.py) and the CA certificate, there and readable."""
    out = []
    for key in ("factory_config", "certificate"):
        path = getattr(conf, key)
        if path:
            problem = _unreadable(path)
            if problem:
                out.append(f"{key}: {problem}")
    return out       # what glideinWMS.xml says is read once, by refuse


def _unreadable(path) -> str | None:
    try:
        check_input(path)
    except NotAFileError as exc:
        return str(exc)
    if not Path(path).exists():
        return f"{path}: no such file"
    if not os.access(path, os.R_OK):
        return f"{path}: not readable by this user"
    return None


def table_problems(conf: ForwarderSettings) -> list[str]:
    """The glidein table's directory (unless 'none'): writable by this user, or creatable."""
    from .sink import table_dir
    where = table_dir(conf.table, conf.ledger_path())
    problem = unwritable(where, directory=True) if where is not None else None
    return [f"table: {problem}"] if problem else []


def ledger_problems(conf: ForwarderSettings) -> list[str]:
    """The ledger, when it exists: a forwarder ledger, and no process holds it (another
    forwarder's lock, or an SQLite lock of a copy or query being made)."""
    from . import ledger_lock
    from .ledger import LedgerError, check_ledger_file, lock_holders
    path = conf.ledger_path()
    if not path.exists():
        return []
    holder = ledger_lock.holder_of(path)
    if holder:
        return [f"state: another forwarder is running on {path}: {holder}; stop it first"]
    holders = lock_holders(path)
    if holders:
        return [f"state: {path} is locked by {', '.join(holders)}"]
    try:
        check_ledger_file(path)
    except LedgerError as exc:
        return [f"state: {exc}"]
    return []


def failure_problems(conf: ForwarderSettings) -> list[str]:
    """The failure rules and downtime feeds the settings name, read by the functions the run
    reads them with (the same bounds, the same cache)."""
    from ..failure_rules.downtimes import read_downtimes
    from ..failure_rules.files import check
    out = check(conf.failure_rules)[1] if conf.failure_rules else []
    if conf.downtimes:
        out += read_downtimes(conf.downtimes, downtime_cache_of(conf))[1]
    return out


def downtime_cache_of(conf: ForwarderSettings) -> Path:
    """Where parsed downtime feeds are kept (beside the ledger), so a large feed is parsed once."""
    return conf.ledger_path().parent / "downtime-cache"
