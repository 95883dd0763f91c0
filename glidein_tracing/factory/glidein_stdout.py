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
taken from it, from at most ``MAX_STDOUT_BYTES``. The same read tells whether the glidein was
asked to trace (an untraced glidein's entry does not trace: docs/span-conventions.md).
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

MAX_LINE_BYTES = 256          # a banner is one short line (~100 bytes): longer lines are not read
MAX_TOTAL_LINES = 64          # lines of the StarterLog summary read (it has 6 per slot)

# each banner is one line (GlideinWMS's patterns do not cross lines): read line by line, so a
# hostile stdout (millions of banner starts on one line, a block never closed) costs one pass
_VALIDATION = re.compile(rb"=== Last script starting .* after validating for ([0-9]+) ===")
_CONDOR_START = re.compile(rb"=== Condor starting.*===")
_CONDOR_END = re.compile(rb"=== Condor ended.*after ([0-9]+) ===")
_SLOT_START = re.compile(rb"=== Stats of (\S+) ===")
_SLOT_END = re.compile(rb"=== End Stats of \S+ ===")
_STATS_LINE = re.compile(rb"Total(.*)jobs ([0-9]+) .*utilization ([0-9]+)")
_GLIDEIN_END = re.compile(rb"=== Glidein ending .* with code ([0-9]+) after ([0-9]+) ===")

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
    lines = [line for line in text.split(b"\n") if len(line) <= MAX_LINE_BYTES]
    out = {c.GLIDEIN_GWMS_CONDOR_STARTED: False}
    at = 0
    found = _first(lines, _VALIDATION, at)
    if found:
        _seconds(out, c.GLIDEIN_GWMS_VALIDATION_S, found[1].group(1))
        at = found[0] + 1
    found = _first(lines, _CONDOR_START, at)
    if found:
        out[c.GLIDEIN_GWMS_CONDOR_STARTED] = True
        at = found[0] + 1
        found = _first(lines, _CONDOR_END, at)
        if found:
            _seconds(out, c.GLIDEIN_GWMS_CONDOR_S, found[1].group(1))
            at = _summary(out, lines, found[0] + 1)
    found = _first(lines, _GLIDEIN_END, at)
    if found:
        _seconds(out, c.GLIDEIN_GWMS_EXIT_CODE, found[1].group(1))
        _seconds(out, c.GLIDEIN_GWMS_GLIDEIN_S, found[1].group(2))
    return out


def _first(lines: list, pattern, at: int):
    """(index, match) of the first of ``lines`` from ``at`` on that ``pattern`` matches."""
    for index in range(at, len(lines)):
        match = pattern.search(lines[index])
        if match:
            return index, match
    return None


def _summary(out: dict, lines: list, at: int) -> int:
    """The StarterLog summary: as GlideinWMS reads it, one block from the first slot's banner
    to the last slot's end banner, left out when that first slot ends in 1 (a monitoring
    slot); in it the first Total, goodZ and goodNZ lines. Returns where the search goes on."""
    found = _first(lines, _SLOT_START, at)
    if not found:
        return at
    first, slot = found[0], found[1].group(1)
    last = next((i for i in range(len(lines) - 1, first - 1, -1) if _SLOT_END.search(lines[i])), None)
    if last is None:
        return at
    if not slot.endswith(b"1"):
        # the summary is a few lines: the first MAX_TOTAL_LINES lines naming "Total" are read
        totals = (line for line in lines[first:last + 1] if b"Total" in line)
        for _, line in zip(range(MAX_TOTAL_LINES), totals):
            match = _STATS_LINE.search(line)
            if match is None:
                continue
            kind = match.group(1).strip().decode("ascii", "replace") or "Total"
            names = _STATS.get(kind)
            if names is None or names[1] in out:
                continue
            if names[0] is not None:
                _seconds(out, names[0], match.group(2))
            _seconds(out, names[1], match.group(3))
    return last + 1


def _seconds(out: dict, name: str, digits: bytes):
    value = int(digits[:12])
    if value < _MAX_SECONDS:
        out[name] = value
