"""Where ``glidein-tracing why`` reads from: job ads (a ``condor_q -l`` file, or the schedd
through the HTCondor bindings, with the owner's user record), a trace's spans (Jaeger's query
API or the embedded store), and the glidein table's recent outcomes per entry. A failure that
stops every answer is one UserError line; one that stops only some (Jaeger unreachable) is said
in those answers."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..core import conventions as c
from ..core.classads import parse_old_ads
from ..core.errors import UserError
from ..core.inputs import read_input

MAX_AD_FILE_BYTES = 256 * 1024 * 1024
TABLE_DAYS = 2
USER_RECORD_ATTRIBUTES = ("User", "MaxJobsRunning", "NumRunning", "NumIdle")
ARRAY_ATTRIBUTES = (c.JOB_WAITING_JOBS, c.JOB_WAITING_ENTRIES, c.JOB_WAITING_REASON_ENTRIES, c.JOB_WAITING_LIMITS,
                    c.JOB_WAITING_JOB_VALUES, c.JOB_WAITING_GROUP_ENTRIES)


def ads_from_file(path) -> tuple:
    """(the job ads of a file ``condor_q -l`` wrote, how many of its ads could not be read)."""
    import classad2  # noqa: F401  without the bindings, the verb names its extra (not "no job ad in it")
    data = read_input(path, MAX_AD_FILE_BYTES)
    if len(data) > MAX_AD_FILE_BYTES:
        raise UserError(f"{path}: larger than {MAX_AD_FILE_BYTES >> 20} MiB; give fewer jobs")
    parsed = parse_old_ads(data.decode("utf-8", "replace"))
    ads = [ad for ad in parsed if ad and "ClusterId" in ad and "ProcId" in ad]
    if not ads:
        raise UserError(f"{path}: no job ad in it (write one with condor_q -l CLUSTER.PROC > FILE)")
    return ads, len(parsed) - len(ads)


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
        raise UserError(f"cannot ask {where} for job {cluster}.{proc}: {exc}; "
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
        self.jaeger, self.error, self._cache = jaeger, "", {}
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
        """The spans of one trace; None when they cannot be read (``error`` says why)."""
        if trace_id not in self._cache:
            self._cache[trace_id] = self._read(trace_id)
        return self._cache[trace_id]

    def _read(self, trace_id: str):
        if self.jaeger:
            from ..exporters.jaeger_query import trace_spans as jaeger_trace
            spans = jaeger_trace(self.jaeger, trace_id)
            if spans is None:
                self.error = f"Jaeger at {self.jaeger} did not answer"
                return None
            return [decoded_arrays(span) for span in spans]
        if not self.where:
            return None
        from ..exporters.store import Store, StoreError
        try:
            return Store(self.directory, read_only=True).trace(trace_id)
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
