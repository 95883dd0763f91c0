"""Where ``glidein-tracing why`` reads from: job ads (a ``condor_q -l`` file, or the schedd
through the HTCondor bindings), a trace's spans (Jaeger's query API or the embedded store),
and the glidein table's recent outcomes per entry. Each failure is one UserError line."""

from __future__ import annotations

import time
from pathlib import Path

from ..core.classads import parse_old_ads
from ..core.errors import UserError
from ..core.inputs import read_input

MAX_AD_FILE_BYTES = 256 * 1024 * 1024
TABLE_DAYS = 2


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


def ad_from_schedd(cluster: int, proc: int, schedd: str) -> dict:
    """The job's ad, asked of its schedd (found through the pool's collector)."""
    import htcondor2  # without the bindings, the verb names its extra (not "cannot ask schedd")
    try:
        location = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, schedd)
        ads = htcondor2.Schedd(location).query(constraint=f"ClusterId == {cluster} && ProcId == {proc}")
    except Exception as exc:   # the bindings raise several types for an unreachable daemon
        raise UserError(f"cannot ask schedd {schedd} for job {cluster}.{proc}: {exc}; "
                        f"give its ad instead (condor_q -l {cluster}.{proc} > job.ad)") from exc
    if not ads:
        raise UserError(f"job {cluster}.{proc} is not in schedd {schedd}'s queue")
    return {key: ads[0].eval(key) for key in ads[0].keys()}


def trace_spans(trace_id: str, jaeger: str | None, store: str | None) -> list:
    """The spans of one trace, from Jaeger when its URL is given, else from the store."""
    if jaeger:
        from ..exporters.jaeger_query import trace_spans as jaeger_trace
        spans = jaeger_trace(jaeger, trace_id)
        if spans is None:
            raise UserError(f"cannot read trace {trace_id} from Jaeger at {jaeger}")
        return spans
    from ..exporters.store import Store, StoreError, default_store_dir
    directory = Path(store) if store else default_store_dir()
    if not directory.is_dir():
        return []
    try:
        return Store(directory, read_only=True).trace(trace_id)
    except (StoreError, OSError) as exc:
        raise UserError(f"cannot read the store {directory}: {exc}") from exc


def entry_outcomes(table_dir, days: int = TABLE_DAYS, now: float | None = None) -> dict:
    """entry -> {outcome: glideins} of the glideins the table holds of the last ``days`` days
    (only those days' files are read: the cost does not grow with the table)."""
    import pyarrow.parquet as pq

    from ..table.reader import usable_files
    now = time.time() if now is None else now
    wanted = {time.strftime("%Y-%m-%d", time.gmtime(now - 86400 * back)) for back in range(days)}
    out: dict = {}
    for path in usable_files(table_dir, "glideins").files:
        if path.parent.name.split("=", 1)[-1] not in wanted:
            continue
        try:
            columns = pq.read_table(path, columns=["entry", "outcome"]).to_pydict()
        except (OSError, ValueError):
            continue
        for entry, outcome in zip(columns["entry"], columns["outcome"]):
            counts = out.setdefault(entry, {})
            counts[outcome] = counts.get(outcome, 0) + 1
    return out
