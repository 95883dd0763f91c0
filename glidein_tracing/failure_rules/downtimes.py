"""Declared downtimes, read from the files existing monitoring exports: was a failure planned?

Formats (fetching them is the operator's cron job; this module only reads files):

- the OSG Topology downtime feed (``.xml``): ``<Downtimes>`` with ``PastDowntimes``,
  ``CurrentDowntimes``, ``FutureDowntimes``, each ``<Downtime>`` with ``ID``,
  ``ResourceGroup/GroupName``, ``ResourceName``, ``ResourceFQDN``, ``StartTime``/``EndTime``
  (``Jun 10, 2025 13:38 PM UTC``: a 24-hour clock, the AM/PM ignored), ``Class``
  (SCHEDULED or UNSCHEDULED), ``Severity``, ``Services/Service/Name``, ``Description``. The
  downtime names the resource, its FQDN and its resource group: a glidein's site
  (``glidein.site``) is matched against each.
- a CSV (``.csv``, a header row) or JSON (``.json``, a list of objects, or ``{"downtimes": [...]}``)
  with ``target`` (a service or a site), ``start``, ``end``, ``reason`` and optionally
  ``class``: any monitoring system can export one. Times are ISO 8601 with a zone (``Z`` or an
  offset) or Unix seconds.

Every time must say its zone: a time without one, or with a zone name other than UTC/GMT
(``CST`` means three different offsets), is a bad entry. Bad entries (unreadable dates, an
end before its start, a missing target) are named with their place and left out; the rest is
used. Windows of one target that overlap are named too, and both kept: a failure inside both
gets the one that began first.
"""

from __future__ import annotations

import bisect
import csv
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

MAX_BYTES = 64 * 1024 * 1024     # a feed larger than this is refused
_OSG_TIME = re.compile(r"^([A-Z][a-z]{2}) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2})(?: [AP]M)? (\S+)$")
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))}
_UTC_NAMES = ("UTC", "GMT", "Z", "+0000", "-0000", "+00:00")


@dataclass(frozen=True)
class Downtime:
    ident: str              # "osg:ID" or "FILE:LINE"
    names: tuple            # what it covers: service or site names, lower case
    start: float
    end: float
    reason: str
    planned: bool | None    # SCHEDULED -> True, UNSCHEDULED -> False, unsaid -> None

    def describe(self) -> str:
        """The ``*.failure.downtime`` value: which declaration, and why."""
        kind = {True: "scheduled", False: "unscheduled", None: "declared"}[self.planned]
        return f"{self.ident} ({kind}): {self.reason}"[:256]


class BadTime(ValueError):
    pass


def parse_time(text) -> float:
    """Unix seconds of an ISO 8601 time with a zone, Unix seconds, or an OSG Topology time."""
    if isinstance(text, bool):
        raise BadTime(f"not a time: {text!r}")
    if isinstance(text, (int, float)):
        return float(text)
    text = str(text).strip()
    if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
        return float(text)
    osg = _OSG_TIME.match(text)
    if osg:
        month, day, year, hour, minute, zone = osg.groups()
        if month not in _MONTHS:
            raise BadTime(f"unknown month in {text!r}")
        offset = _zone_offset(zone, text)
        try:
            when = datetime(int(year), _MONTHS[month], int(day), int(hour), int(minute), tzinfo=timezone.utc)
        except ValueError as exc:
            raise BadTime(f"{text!r}: {exc}") from exc
        return when.timestamp() - offset
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise BadTime(f"not an ISO 8601 time: {text!r}") from exc
    if when.tzinfo is None:
        raise BadTime(f"no time zone in {text!r}: give Z or an offset")
    return when.timestamp()


def _zone_offset(zone: str, text: str) -> int:
    if zone in _UTC_NAMES:
        return 0
    if re.fullmatch(r"[+-]\d{4}", zone):
        sign = 1 if zone[0] == "+" else -1
        return sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)
    raise BadTime(f"time zone {zone!r} in {text!r} is ambiguous: use UTC or an offset")


def _planned(value) -> bool | None:
    text = str(value or "").strip().upper()
    return {"SCHEDULED": True, "PLANNED": True, "UNSCHEDULED": False, "UNPLANNED": False}.get(text)


def read_osg_xml(path) -> tuple[list[Downtime], list[str]]:
    """(downtimes, problems) of an OSG Topology downtime feed."""
    import xml.etree.ElementTree as ET
    path = Path(path)
    try:
        root = ET.fromstring(_read(path))
    except (OSError, ET.ParseError) as exc:
        return [], [f"{path}: not readable as the OSG Topology downtime XML: {exc}"]
    out, problems = [], []
    for element in root.iter("Downtime"):
        ident = f"osg:{(element.findtext('ID') or '?').strip()}"
        names = [element.findtext(tag) for tag in ("ResourceName", "ResourceFQDN", "ResourceGroup/GroupName")]
        services = [s.findtext("Name") or "" for s in element.iterfind("Services/Service")]
        reason = (element.findtext("Description") or "").strip()
        if services:
            reason = f"{reason} [services: {', '.join(s for s in services if s)}]"
        entry, problem = _entry(ident, names, element.findtext("StartTime"), element.findtext("EndTime"),
                                reason, _planned(element.findtext("Class")))
        (problems.append(f"{path}: {problem}") if problem else out.append(entry))
    return out, problems


def _entry(ident, names, start, end, reason, planned) -> tuple[Downtime | None, str]:
    names = tuple(sorted({str(n).strip().lower() for n in names if n and str(n).strip()}))
    if not names:
        return None, f"{ident}: names no service or site"
    try:
        lo, hi = parse_time(start), parse_time(end)
    except BadTime as exc:
        return None, f"{ident}: {exc}"
    if hi <= lo:
        return None, f"{ident}: ends ({end}) before it starts ({start})"
    return Downtime(ident, names, lo, hi, str(reason or "").strip(), planned), ""


def read_table(path) -> tuple[list[Downtime], list[str]]:
    """(downtimes, problems) of a CSV or JSON list of (target, start, end, reason[, class])."""
    path = Path(path)
    try:
        text = _read(path).decode("utf-8", "replace")
        if path.suffix == ".json":
            data = json.loads(text)
            rows = data.get("downtimes") if isinstance(data, dict) else data
            if not isinstance(rows, list):
                return [], [f"{path}: JSON downtimes are a list of objects (or {{\"downtimes\": [...]}})"]
            numbered = [(f"{path}:entry {i + 1}", row) for i, row in enumerate(rows)]
        else:
            reader = csv.DictReader(text.splitlines())
            numbered = [(f"{path}:{reader.line_num}", row) for row in reader]
    except (OSError, ValueError, csv.Error) as exc:
        return [], [f"{path}: not readable: {exc}"]
    out, problems = [], []
    for ident, row in numbered:
        if not isinstance(row, dict):
            problems.append(f"{ident}: not an object with target, start, end, reason")
            continue
        target = row.get("target") or row.get("service") or row.get("site")
        entry, problem = _entry(ident, [target], row.get("start"), row.get("end"), row.get("reason", ""),
                                _planned(row.get("class")))
        (problems.append(problem) if problem else out.append(entry))
    return out, problems


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(f"larger than {MAX_BYTES} bytes")
    return data


def read_downtimes(paths) -> tuple["Downtimes", list[str]]:
    """Every declared downtime of the files (by suffix: .xml OSG Topology, .csv, .json), and
    every problem: bad entries and overlapping windows."""
    entries, problems = [], []
    for path in paths:
        read = read_osg_xml if Path(path).suffix == ".xml" else read_table
        found, bad = read(path)
        entries += found
        problems += bad
    downtimes = Downtimes(entries)
    return downtimes, problems + downtimes.overlaps()


class Downtimes:
    """Declared downtimes by name, each name's windows sorted by start."""

    def __init__(self, entries=()):
        self.entries = list(entries)
        self._by_name: dict = {}
        for entry in sorted(self.entries, key=lambda e: (e.start, e.end)):
            for name in entry.names:
                self._by_name.setdefault(name, []).append(entry)
        self._starts = {name: [e.start for e in rows] for name, rows in self._by_name.items()}
        self._longest = {name: max(e.end - e.start for e in rows) for name, rows in self._by_name.items()}

    def __len__(self):
        return len(self.entries)

    def find(self, names, when: float) -> Downtime | None:
        """The declared downtime, of any of ``names`` (service or site), that ``when`` is in;
        of several, the one that began first."""
        best = None
        for name in names:
            key = str(name or "").lower()
            rows = self._by_name.get(key)
            if not rows:
                continue
            first = bisect.bisect_left(self._starts[key], when - self._longest[key])
            for entry in rows[first:bisect.bisect_right(self._starts[key], when)]:
                if entry.start <= when < entry.end and (best is None or entry.start < best.start):
                    best = entry
                    break
        return best

    def overlaps(self) -> list[str]:
        """Each pair of one name's windows that overlap, named (both are kept)."""
        out = []
        for name, rows in self._by_name.items():
            latest = None
            for entry in rows:
                if latest is not None and entry.start < latest.end:
                    out.append(f"{entry.ident}: overlaps {latest.ident} for {name} (both kept)")
                if latest is None or entry.end > latest.end:
                    latest = entry
        return out
