"""One returned glidein as the Factory reads it: who it is, by the Factory's own records, and
its journal, from the tail of its returned stderr.

A worker node is untrusted. The glidein's identity (its trace id) comes from the Factory:
the ledger row (entry, cluster, proc, glidein name) and the configuration (Factory name,
each entry's schedd, its site). A journal section whose root claims anything else is ignored
(``forged_identity``); any later line of the journal (a job runs as the glidein's user and
may append to it) that claims another identity for the root has that claim ignored and
counted (``held_identity``). Memory is bounded whatever the node returned: the stderr is read up
to ``MAX_STDERR_BYTES`` (its tail, where the journal is), its sections inflate to at most
``DEFAULT_MAX_TOTAL_BYTES`` together, and at most ``MAX_JOURNAL_LINES`` lines are parsed;
what was cut is returned, to be counted on the root.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core import ids
from ..core.converter.fields import parse_iso
from ..core.journal import INT, parse_lines, typed
from ..core.sections import DEFAULT_MAX_BYTES, DEFAULT_MAX_TOTAL_BYTES, journal_sections
from .stats import ForwardStats
from ..core import conventions as c
from ..core.inputs import open_input

log = logging.getLogger("glidein_tracing.forward")

MAX_STDERR_BYTES = 64 * 1024 * 1024
MAX_JOURNAL_LINES = 100_000  # per glidein, all sections together


@dataclass(frozen=True)
class FactoryNames:
    """What the Factory's configuration says of its glideins' names: the Factory's name and
    the schedd of each entry (``entry_schedds``), else of every entry (``schedd``)."""

    factory: str
    schedd: str | None = None
    entry_schedds: dict = field(default_factory=dict)

    def schedd_of(self, row) -> str:
        """The glidein's schedd as the Factory knows it, or ""."""
        return self.entry_schedds.get(row["entry"]) or self.schedd or ""


def identity(names: FactoryNames, row, journal_events=()) -> ids.GlideinIdentity:
    """A ledger row's glidein identity. Everything but the multi-glidein index comes from the
    Factory; a journal only fills in the schedd for its own glidein when the Factory was not
    told it, and its claims were checked to agree (``disagreement``)."""
    schedd, index = names.schedd_of(row), "0"
    for event in journal_events:
        if event.op == "start" and event.key == "glidein":
            schedd = schedd or event.fields.get(c.GLIDEIN_SCHEDD, "")
            index = event.fields.get(typed(c.GLIDEIN_MULTI_INDEX, INT), index)
            break
    return ids.GlideinIdentity(names.factory, row["instance"], row["entry"], schedd,
                               str(row["cluster"]), str(row["proc"]), index)


def disagreement(names: FactoryNames, row, events) -> str:
    """What a section's root claims that the Factory knows otherwise ("" when it agrees):
    cluster, proc, entry, factory, glidein name, the Factory's schedd, and the trace id
    those give. A section without a root claims nothing (its spans land in this trace)."""
    for event in events:
        if event.op != "start" or event.key != "glidein":
            continue
        fields = event.fields
        claims = {
            "cluster": (fields.get(typed(c.GLIDEIN_CLUSTER, INT), fields.get(c.GLIDEIN_CLUSTER)), str(row["cluster"])),
            "proc": (fields.get(typed(c.GLIDEIN_PROC, INT), fields.get(c.GLIDEIN_PROC)), str(row["proc"])),
            "entry": (fields.get(c.GLIDEIN_ENTRY), row["entry"]),
            "factory": (fields.get(c.GLIDEIN_FACTORY), names.factory),
            "name": (fields.get(c.GLIDEIN_NAME), row["instance"]),
            "schedd": (fields.get(c.GLIDEIN_SCHEDD), names.schedd_of(row) or None),
        }
        for what, (claimed, known) in claims.items():
            if claimed is not None and known is not None and str(claimed) != str(known):
                return what
        claimed_trace = (fields.get("@trace_id") or "").lower()
        if claimed_trace and claimed_trace != identity(names, row, [event]).trace_id:
            return "trace id"
    return ""


#: the root's identity attributes: the Factory's to give (the site only when glideinWMS.xml
#: was read; the multi-glidein index is the journal's root line's, checked with its trace id)
IDENTITY_ATTRIBUTES = (c.GLIDEIN_FACTORY, c.GLIDEIN_NAME, c.GLIDEIN_ENTRY, c.GLIDEIN_SCHEDD, c.GLIDEIN_CLUSTER,
                       c.GLIDEIN_PROC, c.GLIDEIN_SITE, c.GLIDEIN_MULTI_INDEX)


def _attribute(name: str) -> str:
    """A journal field's attribute name, without its type suffix (``glidein.proc:i``)."""
    return name[:-2] if name[-2:-1] == ":" else name


def held_identity(glidein: ids.GlideinIdentity, site: str | None, events) -> tuple[list, list]:
    """The journal's events with every claim on the root's identity that contradicts the
    Factory's left out, and the names of those left out. What the Factory does not know (the
    site without glideinWMS.xml) the journal may say, but only with one voice: a job runs as
    the glidein's user and can append to the journal, so when its lines name two different
    sites, none is taken (the site stays unknown rather than a job's choice)."""
    known = {c.GLIDEIN_FACTORY: glidein.factory, c.GLIDEIN_NAME: glidein.name, c.GLIDEIN_ENTRY: glidein.entry,
             c.GLIDEIN_SCHEDD: glidein.schedd or None, c.GLIDEIN_CLUSTER: str(glidein.cluster),
             c.GLIDEIN_PROC: str(glidein.proc), c.GLIDEIN_SITE: site or None,
             c.GLIDEIN_MULTI_INDEX: str(glidein.index or "0")}
    said: dict = {}
    for event in events:
        if event.key == "glidein":
            for name, value in event.fields.items():
                attribute = _attribute(name)
                if attribute in IDENTITY_ATTRIBUTES and known.get(attribute) is None:
                    said.setdefault(attribute, set()).add(str(value))
    out, ignored = [], []
    for event in events:
        if event.key != "glidein" or not event.fields:
            out.append(event)
            continue
        fields = None
        for name, value in event.fields.items():
            attribute = _attribute(name)
            if attribute not in IDENTITY_ATTRIBUTES:
                continue
            wanted = known.get(attribute)
            if (str(value) != wanted) if wanted is not None else len(said[attribute]) > 1:
                fields = dict(event.fields) if fields is None else fields
                del fields[name]
                ignored.append(attribute)
        out.append(event if fields is None else dataclasses.replace(event, fields=fields))
    return out, ignored


#: journal operations no hook ever writes on a validation script's key (those come from
#: GlideinWMS's per-script records, op ``record``): such a line was written by something else
FORGEABLE_OPS = ("start", "end", "attr")
JOB_PREFIX, VALIDATION_PREFIX = "job/", "validation/"


def attributed_to_jobs(events) -> tuple[list, int]:
    """The journal's events (in the order they were written) with each line no hook writes
    (a start, end or attr on a validation script's key) written while a job ran turned into a
    note on that job's span (the job that started last among those not ended), and such a line
    written while none ran left out; and how many there were. A job runs as the glidein's user:
    a failed validation script it appends must not fail the glidein. Likewise a per-script
    ``record`` whose script started while a job ran (GlideinWMS runs its scripts, and
    condor_startup.sh, before any job) is a note on that job, not a validation span."""
    ran_then = _jobs_running_at(events)
    out, running, moved = [], [], 0
    for event in events:
        key, op = event.key, event.op
        if key.startswith(JOB_PREFIX) and op == "start":
            running.append(key)
        elif key.startswith(JOB_PREFIX) and op == "end" and key in running:
            running.remove(key)
        if key.startswith(VALIDATION_PREFIX) and op in FORGEABLE_OPS:
            owner = running[-1] if running else None
        elif op == "record" and ran_then(parse_iso(event.fields.get("@tstart", "")) or event.time):
            owner = ran_then(parse_iso(event.fields.get("@tstart", "")) or event.time)
        else:
            out.append(event)
            continue
        moved += 1
        if owner is not None:
            out.append(dataclasses.replace(event, op="note", key=owner, links=[], fields={
                "@msg": f"a journal line written while this job ran ({op} {key[:200]}) is this job's, "
                        "not the glidein's: ignored"}))
    return out, moved


def _jobs_running_at(events):
    """A function: time -> the key of a job that ran then (started before, ended at or after,
    by its journal lines), or None."""
    starts, ends = {}, {}
    for event in events:
        if event.key.startswith(JOB_PREFIX) and event.op in ("start", "end"):
            (starts if event.op == "start" else ends).setdefault(event.key, event.time)
    runs = sorted((starts[k], ends[k], k) for k in starts if k in ends)
    begun = [start for start, _, _ in runs]
    latest, best = [], None          # latest[i]: the run among the first i+1 that ends last
    for run in runs:
        best = run if best is None or run[1] > best[1] else best
        latest.append(best)

    def ran_then(when: float):
        at = bisect.bisect_left(begun, when) - 1     # runs that started strictly before
        if at < 0 or latest[at][1] < when:
            return None
        return latest[at][2]
    return ran_then


def stderr_path(row) -> Path:
    """Where Condor-G put the glidein's returned stderr."""
    return Path(row["entry_dir"]) / f"job.{row['cluster']}.{row['proc']}.err"


@dataclass
class Returned:
    """What came back of one glidein's journal: its events (checked to be its own), what of
    it was cut (``{"sections": n, "bytes": n, "lines": n}``), and whether any journal section
    came back at all (``sections``: also one damaged, cut or claiming another glidein)."""

    events: list
    cut: dict
    sections: bool


def returned_journal(names: FactoryNames, row, stats: ForwardStats,
                     max_section_bytes: int = DEFAULT_MAX_BYTES) -> Returned:
    """The glidein's returned journal (see Returned)."""
    path = stderr_path(row)
    cut = {"sections": 0, "bytes": 0, "lines": 0}
    text = _stderr_tail(path, cut)
    if text is None:
        return Returned([], cut, False)
    events = []
    lines_left = MAX_JOURNAL_LINES
    sections = False
    for section in journal_sections(text, max_section_bytes, DEFAULT_MAX_TOTAL_BYTES):
        sections = True
        if section.error:
            log.warning("%s: journal section %s", path, section.error)
            stats.problem("truncated_section" if section.truncated else "damaged_section")
            cut["sections"] += 1
            cut["bytes"] += section.cut_bytes
        data, dropped = _first_lines(section.data, lines_left)
        if dropped:
            cut["lines"] += dropped
            stats.problem("journal_lines_cut")
        lines_left -= data.count(b"\n")
        section_events, report = parse_lines(data)
        if report.skipped_total:
            log.warning("%s: %s", path, report.summary())
            stats.problem("bad_journal_lines")
        claimed = disagreement(names, row, section_events)
        if claimed:
            log.warning("%s: journal section claims another %s; ignored", path, claimed)
            stats.problem("forged_identity")
            continue
        events.extend(section_events)
    return Returned(events, cut, sections)


def claimed_factories(path, max_section_bytes: int = DEFAULT_MAX_BYTES) -> list:
    """The Factory names the journal sections of a returned stderr give their root (GLIDEIN_Factory
    as the glidein saw it), one per section whose root names one."""
    text = _stderr_tail(Path(path), {"sections": 0, "bytes": 0, "lines": 0})
    out = []
    for section in journal_sections(text or "", max_section_bytes, DEFAULT_MAX_TOTAL_BYTES):
        if section.error:
            continue
        events, _ = parse_lines(_first_lines(section.data, MAX_JOURNAL_LINES)[0])
        for event in events:
            if event.op == "start" and event.key == "glidein":
                if event.fields.get(c.GLIDEIN_FACTORY):
                    out.append(str(event.fields[c.GLIDEIN_FACTORY]))
                break
    return out


def _stderr_tail(path: Path, cut: dict) -> str | None:
    """The last ``MAX_STDERR_BYTES`` of a stderr (the journal is appended last), the bytes
    before it counted in ``cut``; None when it cannot be read."""
    try:
        with open_input(path) as handle:           # a FIFO would block the pass: refused
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_STDERR_BYTES:
                handle.seek(size - MAX_STDERR_BYTES)
                cut["bytes"] += size - MAX_STDERR_BYTES
            return handle.read(MAX_STDERR_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _first_lines(data: bytes, keep: int) -> tuple[bytes, int]:
    """(the first ``keep`` lines of ``data``, how many whole lines were dropped)."""
    newlines = data.count(b"\n")
    if newlines <= keep:
        return data, 0
    at = -1
    for _ in range(keep):
        at = data.find(b"\n", at + 1)
    return data[:at + 1], newlines - keep
