"""The Factory's own facts, read once from its glideinWMS.xml (``--factory-config``): the one
source of what the forwarder must otherwise be told or guess.

- ``factory_name`` (``<glidein factory_name>``): what every glidein gets as GLIDEIN_Factory
  (GlideinWMS's reconfig writes it as FactoryName in glidein.descript, cgWParamDict's
  populate_factory_descript; the Factory passes it to glidein_startup.sh as ``-factory``).
  The RPM's glideinWMS.xml sets ``gfactory_service``.
- ``glidein_name`` (``<glidein glidein_name>``): GLIDEIN_Name, the ``glidein_<name>``
  directory of the client logs (the RPM's ``gfactory_instance``).
- each entry's schedd (its own ``schedd_name``, else the ``<glidein schedd_name>`` when it
  names one schedd: with several, the Factory spreads entries over them), its GLIDEIN_Site
  and whether it traces (GLIDEIN_USE_TRACING non-empty in its ``<attrs>``, else in the global
  ones: an entry's attr replaces the global one, cgWParamDict's entry populate);
- ``<log_retention>``: how long the Factory keeps glidein outputs and activity logs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from ..core.inputs import open_input
from ..core.knobs import SWITCH

# GlideinWMS's own defaults for <log_retention> (its creation/lib/cgWParams.py): each kind
# of log is kept at least min_days, at most max_days, and trimmed to max_mbytes in between
LOG_RETENTION_DEFAULTS = {
    "job_logs": {"min_days": 2.0, "max_days": 7.0, "max_mbytes": 100.0},      # job.C.P.out/.err
    "condor_logs": {"min_days": 3.0, "max_days": 14.0, "max_mbytes": 100.0},  # condor_activity_*.log
}
MAX_RETENTION_DAYS = 36525.0     # a century: more is a typo (1e300 days overflowed every pass's dates)


@dataclass(frozen=True)
class Entry:
    name: str
    schedd: str = ""        # "" when glideinWMS.xml does not say
    site: str = ""
    traces: bool = False


@dataclass(frozen=True)
class FactoryXml:
    """What one glideinWMS.xml says (see the module's docstring)."""
    path: str
    factory_name: str = ""
    glidein_name: str = ""
    entries: dict = field(default_factory=dict)      # name -> Entry
    log_retention: dict = field(default_factory=dict)

    def schedds(self) -> dict:
        return {name: e.schedd for name, e in self.entries.items() if e.schedd}

    def sites(self) -> dict:
        return {name: e.site for name, e in self.entries.items() if e.site}

    def tracing_entries(self) -> list:
        return sorted(name for name, e in self.entries.items() if e.traces)


def default_log_retention() -> dict:
    return {kind: dict(values) for kind, values in LOG_RETENTION_DEFAULTS.items()}


def read_factory_xml(path) -> FactoryXml:
    """The facts of the glideinWMS.xml at ``path``; ValueError naming what cannot be read."""
    root = parse(path)
    shared_schedds = [s.strip() for s in (root.get("schedd_name") or "").split(",") if s.strip()]
    global_attrs = root.findall("./attrs/attr")
    entries = {}
    for node in root.findall("./entries/entry"):
        name = node.get("name")
        if not name:
            continue
        attrs = node.findall("./attrs/attr")
        schedd = (node.get("schedd_name") or "").strip() or (shared_schedds[0] if len(shared_schedds) == 1 else "")
        switch = _attr(attrs, SWITCH.name)
        entries[name] = Entry(name, schedd, _attr(attrs, "GLIDEIN_Site") or _attr(global_attrs, "GLIDEIN_Site") or "",
                              bool((switch if switch is not None else _attr(global_attrs, SWITCH.name) or "").strip()))
    return FactoryXml(str(path), (root.get("factory_name") or "").strip(), (root.get("glidein_name") or "").strip(),
                      entries, _log_retention(root, path))


def parse(path):
    """glideinWMS.xml's root element; ValueError when it cannot be read or parsed."""
    try:
        with open_input(path) as handle:          # a FIFO would block: refused (core/inputs.py)
            return ET.parse(handle).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: cannot be read as XML ({exc})") from exc
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _attr(attrs, name: str):
    """The value of the last ``<attr name=name>`` among ``attrs`` (stripped), None without one."""
    values = [a.get("value", "").strip() for a in attrs if a.get("name") == name]
    return values[-1] if values else None


def _log_retention(root, path) -> dict:
    """{"job_logs": {...}, "condor_logs": {...}} with min_days, max_days and max_mbytes, as
    ``<log_retention><job_logs .../><condor_logs .../>`` sets them, GlideinWMS's defaults where
    it does not; ValueError naming a value that is not a number of days or megabytes."""
    out = default_log_retention()
    for kind, values in out.items():
        node = root.find(f"./log_retention/{kind}")
        if node is None:
            continue
        for name in values:
            text = node.get(name)
            if text is None:
                continue
            try:
                value = float(text)
            except ValueError:
                value = float("nan")
            if not (value >= 0 and value != float("inf")):
                raise ValueError(f"{path}: <log_retention><{kind} {name}={text!r}> is not a number of "
                                 f"{'megabytes' if name == 'max_mbytes' else 'days'}")
            if name != "max_mbytes" and value > MAX_RETENTION_DAYS:
                raise ValueError(f"{path}: <log_retention><{kind} {name}={text!r}> is more than "
                                 f"{MAX_RETENTION_DAYS:g} days (a century)")
            values[name] = value
    return out


@dataclass(frozen=True)
class FactoryFacts:
    """What the forwarder knows of its Factory: glideinWMS.xml's facts (``xml``; None without
    one) and, where it is silent, the settings' (``--factory``, ``--schedd``,
    ``--entry-schedd``), which may never contradict it (``facts_of``)."""
    name: str
    schedd: str | None = None                        # the settings' schedd of every other entry
    entry_schedds: dict = field(default_factory=dict)
    entry_sites: dict = field(default_factory=dict)
    log_retention: dict = field(default_factory=default_log_retention)
    xml: FactoryXml | None = None

    def schedd_of(self, entry: str) -> str:
        return self.entry_schedds.get(entry) or self.schedd or ""

    def asked_to_trace(self, entry: str) -> bool | None:
        """Whether the Factory asked ``entry``'s glideins to trace (GLIDEIN_USE_TRACING in its
        or the global attrs); None when glideinWMS.xml was not given or does not list it."""
        known = self.xml.entries.get(entry) if self.xml is not None else None
        return None if known is None else known.traces

    def guesses(self, entries) -> list:
        """One line per fact about ``entries`` (names of the entry directories in the logs)
        the forwarder has to guess, because glideinWMS.xml was not given or does not say it."""
        out = []
        if self.xml is None:
            out += [f"no glideinWMS.xml (--factory-config): the Factory's name {self.name!r} is the settings', not "
                    "checked against its factory_name (a wrong one makes every journal look forged)",
                    "no glideinWMS.xml: whether a glidein was asked to trace is guessed from its returned stdout "
                    "(a job can cut it), so a traced glidein that returned nothing may count as untraced",
                    "no glideinWMS.xml: each entry's site is what its journal says (the node's word)",
                    "no glideinWMS.xml: the Factory's log retention is taken to be GlideinWMS's default "
                    f"({self.log_retention['job_logs']['max_days']:g} days for outputs, "
                    f"{self.log_retention['condor_logs']['max_days']:g} for activity logs)"]
        for entry in sorted(set(entries)):
            if self.xml is not None and entry not in self.xml.entries:
                out.append(f"entry {entry}: not in {self.xml.path}: its schedd, site and whether it traces are "
                           "guessed")
            if not self.schedd_of(entry):
                out.append(f"entry {entry}: no schedd known (give --factory-config, or --entry-schedd "
                           f"{entry}=SCHEDD): its running glideins' stages wait until they end, and `status` "
                           "shows no trace id for them")
        return out


def facts_of(xml: FactoryXml | None, factory: str | None, schedd: str | None, entry_schedds: dict) -> FactoryFacts:
    """The Factory's facts from glideinWMS.xml (``xml``) and the settings' names; ValueError
    with one line per setting that contradicts glideinWMS.xml (both values named), or
    without a Factory name at all."""
    problems = []
    if xml is None:
        name = factory or ""
        schedds = dict(entry_schedds)
    else:
        name = xml.factory_name or factory or ""
        if factory and xml.factory_name and factory != xml.factory_name:
            hint = " (that is its glidein_name, GLIDEIN_Name)" if factory == xml.glidein_name else ""
            problems.append(f"factory: {factory!r}{hint} contradicts {xml.path}'s factory_name "
                            f"{xml.factory_name!r} (GLIDEIN_Factory, what glideins name their Factory): "
                            "drop `factory:` or give glideinWMS.xml's value")
        schedds = xml.schedds()
        for entry, given in sorted(entry_schedds.items()):
            known = schedds.get(entry)
            if known and given != known:
                problems.append(f"entry_schedds: {entry}={given!r} contradicts {xml.path}'s schedd_name {known!r} "
                                "for that entry: drop it or give glideinWMS.xml's value")
            schedds.setdefault(entry, given)
    if not name:
        problems.append("no Factory name: give --factory-config (its factory_name), or --factory / `factory:`")
    if problems:
        raise ValueError("\n".join(problems))
    return FactoryFacts(name, schedd, schedds, xml.sites() if xml else {},
                        xml.log_retention if xml else default_log_retention(), xml)
