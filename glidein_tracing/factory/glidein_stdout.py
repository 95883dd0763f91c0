"""What GlideinWMS's Factory reads in a glidein's returned stdout (``job.<cluster>.<proc>.out``),
as root attributes ``glidein.gwms.*``, so the glidein table's GlideinWMS quantities are the
Factory's own to the second (table/gwms.py).

GlideinWMS's log parser (factory/glideFactoryLogParser.py) reads the banners glidein_startup.sh
and condor_startup.sh print, each searched after the previous one, the first of each kind
counting: ``=== Last script starting ... after validating for N ===`` (validation),
``=== Condor starting ... ===`` (HTCondor started at all), ``=== Condor ended ... after N ===``
(its duration), the StarterLog summary between ``=== Stats of SLOT ===`` and ``=== End Stats of
SLOT ===`` (slots ending in 1 are monitoring slots, left out), then ``=== Glidein ending ...
with code C after N ===`` (the glidein's duration). Its numbers are ``date +%s`` differences
taken by the glidein itself: no clock of ours can give them to the second (a SIGTERM before
``Condor starting`` leaves a record of the last script but no HTCondor; one during a job ends
HTCondor seconds after the record). The stdout is the node's, so only bounded integers are
taken from it, from at most ``MAX_STDOUT_BYTES``, each pattern on one line of at most
``MAX_LINE_BYTES`` from its literal on (no copy of the lines is made), so a hostile output
costs linear time (bench/bench_hostile.py). The same read tells whether the glidein was
asked to trace, the forwarder's guess when it has no glideinWMS.xml to say (a job can cut the
stdout: factory_xml.py's answer comes first; docs/span-conventions.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core import conventions as c
from ..core.inputs import open_input
from ..core.knobs import SWITCH

MAX_STDOUT_BYTES = 16 * 1024 * 1024
_MAX_SECONDS = 10**9          # ~31 years: beyond that a number is not a duration

MAX_HEADER_BYTES = 4096      # glidein_startup.sh's header, where it prints its own checksum
MAX_LINE_BYTES = 256          # a banner is one short line (~100 bytes): longer lines are not read
MAX_TOTAL_LINES = 64          # lines of the StarterLog summary read (it has 6 per slot)

# GlideinWMS's patterns, each with the literal it begins with: a pattern runs only on the rest
# of a line from its literal, so a hostile stdout (millions of banner starts on one line, a
# block never closed, millions of empty lines) costs one pass and no copy of its lines.
# The checksum: glidein_startup.sh's second line, the md5 of the glidein_startup.sh that ran (one value per
# release of the Factory's scripts: the glidein's version)
_CHECKSUM = (b"script_checksum", re.compile(rb"script_checksum *= *'([0-9a-f]{32}) "))
_VALIDATION = (b"=== Last script starting ", re.compile(rb"=== Last script starting .* after validating for ([0-9]+) ==="))
_CONDOR_START = (b"=== Condor starting", re.compile(rb"=== Condor starting.*==="))
_CONDOR_END = (b"=== Condor ended", re.compile(rb"=== Condor ended.*after ([0-9]+) ==="))
_GLIDEIN_END = (b"=== Glidein ending ", re.compile(rb"=== Glidein ending .* with code ([0-9]+) after ([0-9]+) ==="))
_SLOT_START = (b"=== Stats of ", re.compile(rb"=== Stats of (\S+) ==="))
_SLOT_END = (b"=== End Stats of ", re.compile(rb"=== End Stats of \S+ ==="))
# the summary line's pattern, Total(.*)jobs ([0-9]+) .*utilization ([0-9]+), read in its two
# parts (its greedy parts take the last "jobs N " before the last "utilization N"): run whole,
# its time grows with the cube of a hostile line
_JOBS = re.compile(rb"jobs ([0-9]+) ")
_UTILIZATION = re.compile(rb"utilization ([0-9]+)")

#: StarterLog summary line -> (attribute of its jobs' count, attribute of its seconds)
_STATS = {"Total": (c.GLIDEIN_GWMS_JOBS_NR, c.GLIDEIN_GWMS_JOBS_S),
          "goodZ": (None, c.GLIDEIN_GWMS_GOODZ_S), "goodNZ": (None, c.GLIDEIN_GWMS_GOODNZ_S)}


def stdout_path(row) -> Path:
    """Where Condor-G put the glidein's returned stdout."""
    return Path(row["entry_dir"]) / f"job.{row['cluster']}.{row['proc']}.out"


@dataclass(frozen=True)
class ReturnedStdout:
    """A returned stdout as the Factory reads it: GlideinWMS's reading (``facts``, the
    ``glidein.gwms.*`` attributes), whether it is an output at all (``output``: GlideinWMS's
    parser reads one shorter than 10 bytes as none), and whether the glidein was asked to
    trace (``asked_to_trace``: GLIDEIN_USE_TRACING among the parameters glidein_startup.sh
    lists on its ``PARAM_LIST`` line, as every knob is a parameter)."""

    facts: dict
    output: bool = False
    asked_to_trace: bool = False


_PARAM_LIST = b"\nPARAM_LIST "


def _asked_to_trace(text: bytes) -> bool:
    """GLIDEIN_USE_TRACING among the parameters of glidein_startup.sh's first ``PARAM_LIST``
    line (a plain search: a regex anchored at each line costs more than the rest of the read)."""
    at = text.find(_PARAM_LIST)
    if at < 0:
        return False
    start = at + len(_PARAM_LIST)
    end = text.find(b"\n", start)
    return SWITCH.name.encode() in text[start:end if end >= 0 else len(text)].strip().split(b",")


def read_returned_stdout(path) -> ReturnedStdout:
    """A glidein's returned stdout as read (no facts when it cannot be read; a FIFO or a
    device is not read)."""
    try:
        with open_input(path) as handle:       # a FIFO would block the pass: refused
            text = handle.read(MAX_STDOUT_BYTES)
    except OSError:
        return ReturnedStdout({})
    return ReturnedStdout(stdout_facts(text), len(text) >= 10, _asked_to_trace(text))


def stdout_facts(text: bytes) -> dict:
    """GlideinWMS's reading of one glidein's stdout ``text`` as root attributes."""
    if len(text) < 10:        # GlideinWMS's reading of an empty output
        return {c.GLIDEIN_GWMS_CONDOR_STARTED: False, c.GLIDEIN_GWMS_GLIDEIN_S: 0}
    out = {c.GLIDEIN_GWMS_CONDOR_STARTED: False}
    match = _search(_CHECKSUM, text[:MAX_HEADER_BYTES], 0)
    if match:
        out[c.GLIDEIN_GWMS_STARTUP_MD5] = match.group(1).decode("ascii")
    at = 0
    match = _search(_VALIDATION, text, at)
    if match:
        _seconds(out, c.GLIDEIN_GWMS_VALIDATION_S, match.group(1))
        at = match.end()
    match = _search(_CONDOR_START, text, at)
    if match:
        out[c.GLIDEIN_GWMS_CONDOR_STARTED] = True
        at = match.end()
        match = _search(_CONDOR_END, text, at)
        if match:
            _seconds(out, c.GLIDEIN_GWMS_CONDOR_S, match.group(1))
            at = _summary(out, text, match.end())
    match = _search(_GLIDEIN_END, text, at)
    if match:
        _seconds(out, c.GLIDEIN_GWMS_EXIT_CODE, match.group(1))
        _seconds(out, c.GLIDEIN_GWMS_GLIDEIN_S, match.group(2))
    return out


def _line_end(text: bytes, at: int) -> int:
    end = text.find(b"\n", at)
    return len(text) if end < 0 else end


def _short(text: bytes, at: int, end: int) -> bool:
    """Whether the line around ``at`` (ending at ``end``) has at most MAX_LINE_BYTES (looking
    back no further than that)."""
    start = text.rfind(b"\n", max(0, at - MAX_LINE_BYTES), at) + 1
    return not (start == 0 and at > MAX_LINE_BYTES) and end - start <= MAX_LINE_BYTES


def _search(banner, text: bytes, at: int):
    """GlideinWMS's ``pattern.search(text, at)`` on the lines of at most MAX_LINE_BYTES that
    hold its literal, each from its literal on."""
    literal, pattern = banner
    start = text.find(literal, at)
    while start >= 0:
        end = _line_end(text, start)
        if _short(text, start, end):
            match = pattern.search(text, start, end)
            if match:
                return match
        start = text.find(literal, end)
    return None


def _summary(out: dict, text: bytes, at: int) -> int:
    """The StarterLog summary: as GlideinWMS reads it, one block from the first slot's banner
    to the last slot's end banner (found from the end), left out when that first slot ends in
    1 (a monitoring slot); in it the first Total, goodZ and goodNZ lines among the first
    MAX_TOTAL_LINES lines naming "Total". Returns where the search goes on."""
    first = _search(_SLOT_START, text, at)
    if first is None:
        return at
    literal, pattern = _SLOT_END
    last = text.rfind(literal)
    while last >= first.end() and not pattern.match(text, last, _line_end(text, last)):
        last = text.rfind(literal, 0, last)
    if last < first.end():
        return at
    if not first.group(1).endswith(b"1"):
        line = text.find(b"Total", first.end(), last)
        for _ in range(MAX_TOTAL_LINES):
            if line < 0:
                break
            end = min(_line_end(text, line), last)
            if _short(text, line, end):
                _summary_line(out, text[line:end])
            line = text.find(b"Total", end, last)
    return pattern.match(text, last).end()


def _summary_line(out: dict, line: bytes) -> None:
    """The summary pattern on a line from its first "Total": the last "jobs N " before the
    last "utilization N", as its greedy parts take them."""
    utilizations = list(_UTILIZATION.finditer(line, 5))
    if not utilizations:
        return
    seconds = utilizations[-1]
    jobs = list(_JOBS.finditer(line, 5, seconds.start()))
    if not jobs:
        return
    kind = line[5:jobs[-1].start()].strip().decode("ascii", "replace") or "Total"
    names = _STATS.get(kind)
    if names is None or names[1] in out:
        return
    if names[0] is not None:
        _seconds(out, names[0], jobs[-1].group(1))
    _seconds(out, names[1], seconds.group(1))


def _seconds(out: dict, name: str, digits: bytes):
    value = int(digits[:12])
    if value < _MAX_SECONDS:
        out[name] = value
