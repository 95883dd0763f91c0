"""Declared downtimes, read from the files existing monitoring exports: was a failure planned?

Formats (fetching them is the operator's cron job; this module only reads files):

- the OSG Topology downtime feed (``.xml``): ``<Downtimes>`` with ``PastDowntimes``,
  ``CurrentDowntimes``, ``FutureDowntimes``, each ``<Downtime>`` with ``ID``,
  ``ResourceGroup/GroupName``, ``ResourceName``, ``ResourceFQDN``, ``StartTime``/``EndTime``
  (``Jun 10, 2025 13:38 PM UTC``: a 24-hour clock, the AM/PM ignored), ``Class``
  (SCHEDULED or UNSCHEDULED), ``Severity``, ``Services/Service/Name``, ``Description``. The
  downtime names the resource, its FQDN and its resource group: a glidein's site
  (``glidein.site``) is matched against each.
- a CSV (``.csv``, a header row naming ``target``, ``start``, ``end``) or JSON (``.json``, a list
  of objects, or ``{"downtimes": [...]}``) with ``target`` (a service or a site), ``start``,
  ``end``, ``reason`` and optionally ``class``: any monitoring system can export one. Times are
  ISO 8601 with a zone (``Z`` or an offset) or Unix seconds.

Every time must say its zone: a time without one, or with a zone name other than UTC/GMT
(``CST`` means three different offsets), is a bad entry; so is a time that is not finite
(``NaN``, ``Infinity``), outside the years 2000-2099, or with an offset beyond +/-14:00. Bad
entries (unreadable dates, an end before its start, a missing target) are named with their
place (``FILE:LINE``; ``FILE: osg:ID`` in the XML feed) and left out; the rest is used. A file
larger than ``MAX_BYTES``, nested too deeply or a CSV without its header row is refused whole.
Windows of one target that overlap are named too, and both kept: a failure inside both gets
the one that began first.

A feed is parsed once per content: with a cache directory, what a file gave (its entries and
problems) is kept under the hash of its path and bytes, and read back while they are the same.
"""

from __future__ import annotations

import bisect
import csv
import hashlib
import json
import marshal
import math
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from ..core.inputs import read_input

MAX_BYTES = 64 * 1024 * 1024     # a feed larger than this is refused
EARLIEST = 946684800.0           # 2000-01-01T00:00:00Z: times before are refused
LATEST = 4102444800.0            # 2100-01-01T00:00:00Z: times from then on are refused
MAX_OFFSET_S = 14 * 3600         # the widest offset in use (+14:00, Line Islands)
CACHE_FORMAT = 1                 # bump when what a cached feed holds changes
CACHE_KEEP_S = 7 * 86400         # a cached feed not read for this long is deleted
_OSG_TIME = re.compile(r"^([A-Z][a-z]{2}) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2})(?: [AP]M)? (\S+)$")
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))}
_UTC_NAMES = ("UTC", "GMT", "Z", "+0000", "-0000", "+00:00")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_ISO_OFFSET = re.compile(r"[+-]\d\d:?(\d\d)(?::?(\d\d)(?:\.\d+)?)?$")   # Python takes +00:99 as +01:39
TARGETS = ("target", "service", "site")


class Downtime(NamedTuple):
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


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse_time(text) -> float:
    """Unix seconds of an ISO 8601 time with a zone, Unix seconds, or an OSG Topology time;
    BadTime unless it is finite, in 2000-2099 and its offset within +/-14:00."""
    return _plausible(_parse_time(text), text)


def _plausible(when: float, text) -> float:
    if not math.isfinite(when):
        raise BadTime(f"not a finite time: {_shown(text)}")
    if not EARLIEST <= when < LATEST:
        raise BadTime(f"{_shown(text)} is not in the years 2000-2099")
    return when


def _parse_time(text) -> float:
    if isinstance(text, bool) or isinstance(text, (dict, list)):
        raise BadTime(f"not a time: {_shown(text)}")
    if isinstance(text, (int, float)):
        return float(text)
    text = str(text).strip()
    if not text.isascii():      # fullwidth and other Unicode digits: int() and float() take them
        raise BadTime(f"not a time (characters other than ASCII): {_shown(text)}")
    if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise BadTime(f"not a finite time: {_shown(text)}")
    if re.fullmatch(r"\d{9,11}(\.\d+)?", text):
        return float(text)
    osg = _OSG_TIME.match(text)
    if osg:
        month, day, year, hour, minute, zone = osg.groups()
        if month not in _MONTHS:
            raise BadTime(f"unknown month in {_shown(text)}")
        offset = _zone_offset(zone, text)
        try:
            when = datetime(int(year), _MONTHS[month], int(day), int(hour), int(minute), tzinfo=timezone.utc)
        except ValueError as exc:
            raise BadTime(f"{_shown(text)}: {exc}") from exc
        return when.timestamp() - offset
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise BadTime(f"not an ISO 8601 time: {_shown(text)}") from exc
    if when.tzinfo is None:
        raise BadTime(f"no time zone in {_shown(text)}: give Z or an offset")
    offset = _ISO_OFFSET.search(text)
    if offset and any(int(part) >= 60 for part in offset.groups() if part):
        raise BadTime(f"not an offset: {offset.group(0)!r} in {_shown(text)}")
    if abs(when.utcoffset().total_seconds()) > MAX_OFFSET_S:
        raise BadTime(f"offset beyond +/-14:00 in {_shown(text)}")
    return when.timestamp()


def _zone_offset(zone: str, text: str) -> int:
    if zone in _UTC_NAMES:
        return 0
    if re.fullmatch(r"[+-]\d{4}", zone):
        hours, minutes = int(zone[1:3]), int(zone[3:5])
        if minutes >= 60 or hours * 3600 + minutes * 60 > MAX_OFFSET_S:
            raise BadTime(f"offset {zone} in {_shown(text)} is beyond +/-14:00")
        return (1 if zone[0] == "+" else -1) * (hours * 3600 + minutes * 60)
    raise BadTime(f"time zone {zone!r} in {_shown(text)} is ambiguous: use UTC or an offset")


def _planned(value) -> bool | None:
    text = str(value or "").strip().upper()
    return {"SCHEDULED": True, "PLANNED": True, "UNSCHEDULED": False, "UNPLANNED": False}.get(text)


def read_osg_xml(path, data: bytes) -> tuple[list[Downtime], list[str]]:
    """(downtimes, problems) of an OSG Topology downtime feed."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
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
    if any(isinstance(n, (dict, list)) for n in names) or isinstance(reason, (dict, list)):
        return None, f"{ident}: target and reason are plain values"
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


def read_table(path, data: bytes) -> tuple[list[Downtime], list[str]]:
    """(downtimes, problems) of a CSV or JSON list of (target, start, end, reason[, class])."""
    text = data.decode("utf-8", "replace")
    if Path(path).suffix == ".json":
        try:
            numbered = _json_rows(path, text)
        except RecursionError:
            return [], [f"{path}: nested too deeply: not a list of downtimes"]
        except ValueError as exc:
            return [], [f"{path}: not readable: {exc}"]
        if numbered is None:
            return [], [f"{path}: JSON downtimes are a list of objects (or {{\"downtimes\": [...]}})"]
    else:
        try:
            reader = csv.DictReader(text.splitlines())
            if not any(name in TARGETS for name in reader.fieldnames or ()) or \
                    not {"start", "end"} <= set(reader.fieldnames or ()):
                first = text.split("\n", 1)[0]
                return [], [f"{path}:1: no header row naming target (or service, site), start and end; "
                            f"the first line is {_shown(first)}"]
            numbered = [(f"{path}:{reader.line_num}", row) for row in reader]
        except csv.Error as exc:
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


def _json_rows(path, text: str) -> list | None:
    """[(FILE:LINE, row)] of a JSON list of objects or {"downtimes": [...]}, each row's line
    the one its value begins on; None when the file holds neither. NaN and Infinity stay words
    (so they are refused as times, with their line)."""
    decoder = json.JSONDecoder(parse_constant=str)
    data = decoder.decode(text)                         # ValueError with its place when not JSON
    if isinstance(data, dict) and isinstance(data.get("downtimes"), list):
        start = _json_key_value(decoder, text, "downtimes")
    elif isinstance(data, list):
        start = _JSON_SPACE.match(text).end()
    else:
        return None
    out, line, seen = [], 1, 0
    for pos, row in _json_items(decoder, text, start):
        line += text.count("\n", seen, pos)
        seen = pos
        out.append((f"{path}:{line}", row))
    return out


def _json_key_value(decoder, text: str, wanted: str) -> int:
    """Where the value of the top-level object's key ``wanted`` begins (text already valid)."""
    pos = _JSON_SPACE.match(text).end() + 1            # past "{"
    found = -1
    while True:
        pos = _JSON_SPACE.match(text, pos).end()
        key, pos = decoder.raw_decode(text, pos)
        pos = _JSON_SPACE.match(text, pos).end() + 1    # past ":"
        pos = _JSON_SPACE.match(text, pos).end()
        if key == wanted:
            found = pos                                 # the last one wins, as in json.loads
        _, pos = decoder.raw_decode(text, pos)
        pos = _JSON_SPACE.match(text, pos).end()
        if text[pos] == "}":
            return found
        pos += 1                                        # past ","


def _json_items(decoder, text: str, pos: int):
    """(where, value) of each item of the JSON list beginning at ``pos`` (text already valid)."""
    pos = _JSON_SPACE.match(text, pos + 1).end()
    if text[pos] == "]":
        return
    while True:
        value, end = decoder.raw_decode(text, pos)
        yield pos, value
        pos = _JSON_SPACE.match(text, end).end()
        if text[pos] == "]":
            return
        pos = _JSON_SPACE.match(text, pos + 1).end()


def _read(path: Path) -> bytes:
    """The feed's bytes (a FIFO or a device refused: core/inputs.py); OSError over MAX_BYTES."""
    data = read_input(path, MAX_BYTES)
    if len(data) > MAX_BYTES:
        raise OSError(f"larger than {MAX_BYTES} bytes")
    return data


def read_feed(path, cache_dir=None) -> tuple[list[Downtime], list[str]]:
    """(downtimes, problems) of one file (by suffix: .xml OSG Topology, .csv, .json), read
    back from ``cache_dir`` when this path held these bytes before."""
    path = Path(path)
    try:
        data = _read(path)
    except OSError as exc:
        return [], [f"{path}: not readable: {exc.strerror or exc}"]
    key = hashlib.sha256(b"%d\0%s\0" % (CACHE_FORMAT, os.fsencode(path)) + data).hexdigest()
    cached = Path(cache_dir) / f"{key}.marshal" if cache_dir else None
    damaged = []
    if cached is not None:
        try:
            entries, problems = _from_cache(marshal.loads(cached.read_bytes()))
            os.utime(cached)
            return entries, problems
        except FileNotFoundError:
            pass                                        # not cached yet: parse
        except (OSError, ValueError, EOFError, TypeError) as exc:
            damaged = [f"{cached}: a damaged cache of {path} ({exc}): the feed is parsed again"]
    read = read_osg_xml if path.suffix == ".xml" else read_table
    entries, problems = read(path, data)
    if cached is not None:
        _cache(cached, entries, problems)
    return entries, damaged + problems


def _from_cache(value) -> tuple[list[Downtime], list[str]]:
    """What ``_cache`` wrote, checked as a feed would be (a cache is a file like any other:
    damaged, or another version's): ValueError when any row is not a downtime."""
    rows, problems = value
    entries = []
    for row in rows:
        ident, names, start, end, reason, planned = row
        if not (isinstance(ident, str) and isinstance(names, tuple) and all(isinstance(n, str) for n in names)
                and type(start) is float and type(end) is float and EARLIEST <= start <= end < LATEST
                and isinstance(reason, str) and planned in (True, False, None)):
            raise ValueError("a row that is not a downtime")
        entries.append(Downtime(ident, names, start, end, reason, planned))
    if not all(isinstance(p, str) for p in problems):
        raise ValueError("a problem that is not text")
    return entries, list(problems)


def _cache(cached: Path, entries, problems):
    """Keep what a feed gave, written whole (a temporary file renamed); old entries deleted."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".tmp{os.getpid()}")
        temporary.write_bytes(marshal.dumps(([tuple(e) for e in entries], problems)))
        os.replace(temporary, cached)
        now = time.time()
        for old in cached.parent.iterdir():
            if old != cached and now - old.stat().st_mtime > CACHE_KEEP_S:
                old.unlink()
    except OSError:
        pass                                            # a cache: the feed is parsed again next time


def read_downtimes(paths, cache_dir=None) -> tuple["Downtimes", list[str]]:
    """Every declared downtime of the files, and every problem: bad entries and overlapping
    windows. The forwarder and ``forward --check-config`` both read feeds through here."""
    entries, problems = [], []
    for path in paths:
        found, bad = read_feed(path, cache_dir)
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
