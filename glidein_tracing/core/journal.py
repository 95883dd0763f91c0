"""Reader (and a small writer) for the span journal, format ``gtj1`` (docs/journal.md).

The journal is written by shell hooks on a worker node that may be killed at any moment and
travels home through a glidein's stderr, so the reader assumes nothing: every malformed line
is skipped, counted and reported, and reading never raises on content.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

TAG = "gtj1"
OPS = frozenset({"start", "end", "attr", "sample", "record", "history", "note", "export"})
FIELD_NAME_RE = re.compile(r"^[A-Za-z0-9_.:@/-]+$")
MAX_LINE_BYTES = 4000
MAX_VALUE_CHARS = 1024
# A field name's type suffix: ``glidein.cluster:i`` holds the int attribute ``glidein.cluster``
# (f: a float, b: true or false); a field without one is a string.
INT, FLOAT, BOOL = "i", "f", "b"


def typed(name: str, kind: str) -> str:
    """The field name of attribute ``name`` holding a value of ``kind`` (INT, FLOAT, BOOL)."""
    return f"{name}:{kind}"


@dataclass
class Event:
    time: float
    op: str
    key: str
    fields: dict = field(default_factory=dict)
    links: list = field(default_factory=list)
    line_no: int = 0


@dataclass
class JournalReport:
    """What reading a journal found: good events, and each kind of bad line with a count."""

    lines: int = 0
    events: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)

    def skip(self, reason: str, line_no: int) -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, line_no)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        text = f"{self.events} events from {self.lines} lines"
        if self.skipped:
            parts = ", ".join(f"{n} {reason} (first at line {self.examples[reason]})"
                              for reason, n in sorted(self.skipped.items()))
            text += f"; skipped {self.skipped_total}: {parts}"
        return text


_GOOD_NAMES: dict = {}


def _good_name(name: str) -> bool:
    """Field names repeat on every line: check each distinct name once."""
    good = _GOOD_NAMES.get(name)
    if good is None:
        good = bool(FIELD_NAME_RE.match(name))
        if len(_GOOD_NAMES) < 100000:
            _GOOD_NAMES[name] = good
    return good


def parse_line(raw, line_no: int, report: JournalReport):
    """Parse one line (bytes, or str already decoded; without its newline); return an Event
    or None (and count why)."""
    if isinstance(raw, bytes):
        if len(raw) > MAX_LINE_BYTES:
            report.skip("oversized line", line_no)
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            report.skip("non-UTF-8 line", line_no)
            return None
    else:
        text = raw
        # at most 4 bytes a character: only long lines need their encoded length
        if len(text) * 4 > MAX_LINE_BYTES and len(text.encode("utf-8")) > MAX_LINE_BYTES:
            report.skip("oversized line", line_no)
            return None
    if text.endswith("\r"):
        text = text.rstrip("\r")
    parts = text.split("\t")
    if parts[0] != TAG:
        if not text.strip():
            return None
        report.skip("unknown tag", line_no)
        return None
    if len(parts) < 4:
        report.skip("too few fields", line_no)
        return None
    try:
        when = float(parts[1])
        if not (0 < when < 1e11):
            raise ValueError
    except ValueError:
        report.skip("bad time", line_no)
        return None
    op, key = parts[2], parts[3]
    if op not in OPS:
        report.skip("unknown op", line_no)
        return None
    if not key:
        report.skip("empty key", line_no)
        return None
    fields, links = {}, []
    good_names = _GOOD_NAMES
    long_line = len(text) > MAX_VALUE_CHARS   # else no value can be over the cap
    for item in parts[4:]:
        name, sep, value = item.partition("=")
        good = good_names.get(name)
        if good is None:
            good = _good_name(name)
        if not sep or not good:
            report.skip("bad field", line_no)
            continue
        if long_line:
            value = value[:MAX_VALUE_CHARS]
        if name == "@link":
            links.append(value)
        else:
            fields[name] = value
    return Event(when, op, key, fields, links, line_no)


def parse_lines(data: bytes, report: JournalReport | None = None):
    """Parse journal bytes; return (events, report). A last line with no newline was cut."""
    report = report or JournalReport()
    events = []
    try:  # one decode for the whole journal; a bad byte sends us line by line
        chunks = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        chunks = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        chunks.pop()
    elif chunks:
        # Writers end every line with a newline: a last line without one was cut by a
        # kill or a full disk, and its last value may be cut too. Drop it, count it.
        last = chunks.pop()
        if last.strip():
            report.skip("truncated last line", len(chunks) + 1)
        report.lines += 1
    report.lines += len(chunks)
    for index, raw in enumerate(chunks, 1):
        event = parse_line(raw, index, report)
        if event is not None:
            events.append(event)
    report.events += len(events)
    return events, report


def read_journal(path: str | os.PathLike):
    """Read a journal file; return (events, report). A missing file is an empty journal."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        report = JournalReport()
        report.skip("missing journal", 0)
        return [], report
    return parse_lines(data)


def _clean(value) -> str:
    text = str(value)
    for char in ("\t", "\r", "\n"):
        text = text.replace(char, " ")
    return text[:MAX_VALUE_CHARS]


def format_line(time: float, op: str, key: str, fields: dict | None = None,
                links: Iterable[str] = ()) -> str:
    """One journal line, as the shell hooks write it (for Python-side writers and tests)."""
    items = [TAG, f"{time:.6f}", op, _clean(key)]
    for name, value in (fields or {}).items():
        if FIELD_NAME_RE.match(name):
            items.append(f"{name}={_clean(value)}")
    items.extend(f"@link={_clean(link)}" for link in links)
    line = "\t".join(items)
    return line.encode("utf-8")[:MAX_LINE_BYTES - 1].decode("utf-8", "ignore") + "\n"


def append(path: str | os.PathLike, line: str) -> None:
    """Append one line with a single O_APPEND write (atomic against other writers)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
