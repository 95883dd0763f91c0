"""Where ``glidein-tracing why`` reads from: job ads (a ``condor_q -l`` file, or the schedd
through the HTCondor bindings, with the owner's user record), a trace's spans (Jaeger's query
API or the embedded store), and the glidein table's recent outcomes per entry. A failure that
stops every answer is one UserError line; one that stops only some (Jaeger unreachable) is said
in those answers."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from ..core import conventions as c
from ..core.classads import parse_old_ad
from ..core.errors import UserError
from ..core.ids import parse_traceparent
from ..core.inputs import open_input

MAX_AD_FILE_BYTES = 256 * 1024 * 1024
TABLE_DAYS = 2
USER_RECORD_ATTRIBUTES = ("User", "MaxJobsRunning", "NumRunning", "NumIdle")
# the job ad attributes why reads (why/diagnosis.py): a file's ads are kept with these only
JOB_ATTRIBUTES = ("ClusterId", "ProcId", "JobStatus", "GlobalJobId", "ScheddName", "Owner", "User", "TraceParent",
                  "QDate", "EnteredCurrentStatus", "HoldReasonCode", "HoldReasonSubCode", "HoldReason",
                  "NumJobStarts", "VacateReasonCode", "VacateReason", "JobCoolDownExpiration",
                  "TransferringInput", "TransferQueued", "RequestCpus", "RequestMemory", "RequestDisk")
TRACEPARENT_LINE = re.compile(rb'^TraceParent[ \t]*=[ \t]*"([^"\n]{0,100})"[ \t]*$', re.I | re.M)
# the spans of a trace why reads: the Frontend's records of why jobs wait, and each job's wait
# before it started (job.wait, the user's view: what a trace-only ask says of jobs that ran)
READ_SPANS = frozenset((c.STAGE_JOB_WAITING, c.STAGE_JOB_WAIT))
ARRAY_ATTRIBUTES = (c.JOB_WAITING_JOBS, c.JOB_WAITING_ENTRIES, c.JOB_WAITING_REASON_ENTRIES, c.JOB_WAITING_LIMITS,
                    c.JOB_WAITING_JOB_VALUES, c.JOB_WAITING_GROUP_ENTRIES, c.JOB_WAITING_SITES)


class AdFile:
    """The job ads of a file ``condor_q -l`` wrote, read one at a time and kept lean (only
    ``JOB_ATTRIBUTES``, what ``why`` reads): a user's whole queue is never held at once.
    ``trace_ids()`` finds every ad's trace id first, in one cheap pass over the text (no ClassAd
    parsing), so their spans can be read in one pass over the store. ``unreadable`` counts the
    ads that are no job ad, once they have been read."""

    def __init__(self, path):
        import classad2  # noqa: F401  without the bindings, the verb names its extra (not "no job ad in it")
        with open_input(path) as handle:
            size = os.fstat(handle.fileno()).st_size
        if size > MAX_AD_FILE_BYTES:
            raise UserError(f"{path}: larger than {MAX_AD_FILE_BYTES >> 20} MiB; give fewer jobs")
        self.path, self.unreadable = path, 0

    def _texts(self):
        """Each ad's text (blank lines between ads), as the file is read."""
        lines: list = []
        with open_input(self.path) as handle:
            for line in handle:
                if line.strip():
                    lines.append(line)
                elif lines:
                    yield b"".join(lines).decode("utf-8", "replace")
                    lines = []
        if lines:
            yield b"".join(lines).decode("utf-8", "replace")

    def trace_ids(self) -> set:
        """The trace ids of the ads' TraceParents, as far as a plain ``TraceParent = "..."`` line
        gives them (an ad whose TraceParent is written otherwise has its trace read alone)."""
        values, tail = set(), b""
        with open_input(self.path) as handle:
            while True:
                block = handle.read(1 << 20)
                text = tail + block
                end = text.rfind(b"\n") + 1 if block else len(text)   # whole lines only, but at the end
                values.update(TRACEPARENT_LINE.findall(text, 0, end))
                tail = text[end:]
                if not block:
                    break
        return {parsed[0] for parsed in (parse_traceparent(v.decode("ascii", "replace")) for v in values) if parsed}

    def __iter__(self):
        found = False
        for text in self._texts():
            ad = parse_old_ad(text, JOB_ATTRIBUTES)
            if ad and "ClusterId" in ad and "ProcId" in ad:
                found = True
                yield ad
            else:
                self.unreadable += 1
        if not found:
            raise UserError(f"{self.path}: no job ad in it (write one with condor_q -l CLUSTER.PROC > FILE)")


def _schedd(htcondor2, name: str | None):
    """The schedd named ``name`` (found through the pool's collector), or the local one when
    no name is given, as condor_q asks it."""
    if name is None:
        return htcondor2.Schedd()
    return htcondor2.Schedd(htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, name))


def ad_from_schedd(cluster: int, proc: int, schedd: str | None) -> tuple:
    """(the job's ad, its owner's user record or None, why the record is missing) asked of its
    schedd (``schedd`` None: the local one). The user record holds the per-user running cap
    (MaxJobsRunning, HTCondor 25): a schedd that has none for the user, or cannot give it,
    leaves the cap unchecked, said so."""
    import htcondor2  # without the bindings, the verb names its extra (not "cannot ask schedd")
    where = f"schedd {schedd}" if schedd else "the local schedd"
    try:
        handle = _schedd(htcondor2, schedd)
        ads = handle.query(constraint=f"ClusterId == {cluster} && ProcId == {proc}")
    except Exception as exc:   # the bindings raise several types for an unreachable daemon
        raise UserError(f"cannot ask {where} for job {cluster}.{proc}: {str(exc).strip().rstrip('.')}; "
                        f"give its ad instead (condor_q -l {cluster}.{proc} > job.ad)") from exc
    if not ads:
        raise UserError(f"job {cluster}.{proc} is not in {where}'s queue")
    ad = {key: ads[0].eval(key) for key in ads[0].keys()}
    return (ad,) + user_record(handle, ad.get("User"))


def user_record(handle, user) -> tuple:
    """(the schedd's user record of ``user``, or None; why there is none)."""
    if not isinstance(user, str) or not user:
        return None, "the job ad names no User"
    try:
        records = handle.queryUserAds(constraint=f"User == {json.dumps(user)}",
                                      projection=list(USER_RECORD_ATTRIBUTES))
    except Exception as exc:   # an older schedd has no user records; the bindings raise several types
        return None, f"the schedd gave no user record ({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})"
    if not records:
        return None, f"the schedd has no user record of {user}"
    return {key: records[0].eval(key) for key in records[0].keys()}, ""


class SpanSource:
    """Where a trace's spans are read: Jaeger's query API when its URL is given, else the
    embedded store (``--store``, by default the user's data dir). ``where`` names it in the
    answer that found nothing; ``error`` says why it could not be read (an unreachable
    Jaeger: only the answers that need a trace say so; the others are given)."""

    def __init__(self, jaeger: str | None, store: str | None):
        from ..exporters.store import default_store_dir
        self.jaeger, self.error, self._cache, self._store = jaeger, "", {}, None
        self.directory = Path(store) if store else default_store_dir()
        if jaeger:
            self.where = f"Jaeger at {jaeger}"
        elif self.directory.is_dir():
            self.where = f"the store {self.directory}"
        else:
            self.where = ""
            self.error = (f"no Jaeger given (--jaeger) and no store at {self.directory}"
                          + ("" if store else " (the default; --store names another)"))

    def spans(self, trace_id: str) -> list | None:
        """The job.waiting and job.wait spans of one trace (what ``why`` reads); None when they cannot be
        read (``error`` says why)."""
        if trace_id not in self._cache:
            self._cache.update(self._read([trace_id]))
        return self._cache[trace_id]

    def prefetch(self, trace_ids) -> None:
        """Read the spans of many traces at once: from the store, in one pass over its index
        (Jaeger is asked one trace at a time, when it is needed)."""
        if not self.jaeger and self.where:
            self._cache.update(self._read([t for t in trace_ids if t not in self._cache]))

    def _read(self, trace_ids: list) -> dict:
        if self.jaeger:
            from ..exporters.jaeger_query import trace_spans as jaeger_trace
            out = {}
            for trace_id in trace_ids:
                spans = jaeger_trace(self.jaeger, trace_id)
                if spans is None:
                    self.error = f"Jaeger at {self.jaeger} did not answer"
                out[trace_id] = None if spans is None else [decoded_arrays(span) for span in spans
                                                            if span.get("name") in READ_SPANS]
            return out
        if not self.where:
            return dict.fromkeys(trace_ids)
        from ..exporters.store import Store, StoreError
        try:
            if self._store is None:
                self._store = Store(self.directory, read_only=True)
            return self._store.spans_of(trace_ids, names=READ_SPANS)
        except (StoreError, OSError) as exc:
            raise UserError(f"cannot read the store {self.directory}: {exc}") from exc


def decoded_arrays(span: dict) -> dict:
    """Jaeger hands array attributes back as JSON strings: the job.waiting ones (declared
    arrays in core/conventions.py) are lists again; any other string stays as it is."""
    attributes = span.get("attributes") or {}
    for key in ARRAY_ATTRIBUTES:
        value = attributes.get(key)
        if isinstance(value, str) and value.startswith("["):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if isinstance(decoded, list):
                attributes[key] = decoded
    return span


def entry_outcomes(table_dir, days: int = TABLE_DAYS, now: float | None = None) -> dict:
    """entry -> {outcome: glideins} of the glideins the table holds of the last ``days`` days
    (only those days' files are read: the cost does not grow with the table)."""
    import pyarrow.parquet as pq

    from ..table.layout import day_of_file
    from ..table.reader import usable_files
    now = time.time() if now is None else now
    wanted = {time.strftime("%Y-%m-%d", time.gmtime(now - 86400 * back)) for back in range(days)}
    out: dict = {}
    for path in usable_files(table_dir, "glideins").files:
        if day_of_file(path) not in wanted:
            continue
        try:
            columns = pq.read_table(path, columns=["entry", "outcome"]).to_pydict()
        except (OSError, ValueError):
            continue
        for entry, outcome in zip(columns["entry"], columns["outcome"]):
            counts = out.setdefault(entry, {})
            counts[outcome] = counts.get(outcome, 0) + 1
    return out
