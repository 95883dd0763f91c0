"""The whole answer of ``glidein-tracing why`` as data: what ``why --json`` prints and what a
service shows (``answer``, ``of_trace``, ``as_data``), so both say the same."""

from __future__ import annotations

import getpass
import os
import time

from ..core.errors import UserError
from . import diagnosis as d
from . import sources, words

FROM_FILE = "the jobs were read from a file; give a job id to have the schedd asked"


def diagnoses(job: str, *, jaeger: str | None = None, store: str | None = None, table: str | None = None,
              now: float | None = None, warn=None):
    """The diagnoses of ``job`` (cluster.proc[@schedd], a ``condor_q -l`` file, a trace id or a
    TRACEPARENT), one at a time as the file is read, with the entries' recent outcomes and a
    start estimate when ``table`` is the glidein table. ``warn(text)`` is told of ads of the
    file left out, at its end. Wrong input: UserError (before the first diagnosis)."""
    now = time.time() if now is None else now
    if table and not os.path.isdir(table):     # a mistyped --table: refused, not said in every answer
        raise UserError(f"--table {table}: no such directory (give the glidein table's directory)")
    source = sources.SpanSource(jaeger, store)
    job_id = d.parse_job_id(job)
    ads = sources.AdFile(job) if job_id is None and os.path.exists(job) else None
    trace_id = d.check_trace_id(job) if job_id is None and ads is None else None
    add = table_evidence(table, now)

    def spans_of(trace_id):
        if trace_id is None:
            return (), source.where
        spans = source.spans(trace_id)
        return spans, (source.where if spans is not None else source.error)

    if job_id is not None:
        cluster, proc, schedd = job_id
        ad, user, unchecked = sources.ad_from_schedd(cluster, proc, schedd)
        spans, looked = spans_of(d.trace_id_of(ad))
        yield add(d.diagnose(ad, spans, job=job if schedd else d.job_name(ad), user=user, unchecked=unchecked,
                             looked=looked, now=now))
    elif ads is not None:
        source.prefetch(ads.trace_ids())
        for ad in ads:
            spans, looked = spans_of(d.trace_id_of(ad))
            yield add(d.diagnose(ad, spans, user=None, unchecked=FROM_FILE, looked=looked, now=now))
        if ads.unreadable and warn is not None:
            warn(f"{ads.unreadable} ads of {job} are no job ads; left out")
    else:
        spans, looked = spans_of(trace_id)
        yield add(d.diagnose(None, spans, job=trace_id, looked=looked, asker=getpass.getuser(), now=now))


def of_trace(trace_id: str, spans, *, looked: str, asker: str | None, table: str | None = None,
             now: float | None = None) -> list:
    """The diagnosis of the submission of ``trace_id`` from its spans (read by the caller:
    ``why`` itself, or the service, which reads what its caller may see), ``asker``'s jobs
    first when several owners' jobs share it."""
    now = time.time() if now is None else now
    return with_table([d.diagnose(None, spans, job=trace_id, looked=looked, asker=asker, now=now)], table, now)


def table_evidence(table: str | None, now: float):
    """What ``--table`` adds to each diagnosis, as a function of it: the entries' recent
    outcomes and the start estimate (the table opened once for all)."""
    if not table:
        return lambda item: item
    from .estimate import Estimator
    outcomes = sources.entry_outcomes(table, now=now)
    estimator = Estimator(table, now=now)

    def add(item: d.Diagnosis) -> d.Diagnosis:
        d.add_table_evidence(item, outcomes)
        item.estimate = estimator.for_diagnosis(item)
        return item
    return add


def with_table(items: list, table: str | None, now: float) -> list:
    """``items`` with the entries' recent outcomes and a start estimate, when ``table`` is
    the glidein table."""
    add = table_evidence(table, now)
    return [add(item) for item in items]


def job_data(item: d.Diagnosis) -> dict:
    """One job's answer as JSON-ready data: its diagnosis with its sentences."""
    return {**item.as_dict(), "text": words.sentences(item)}


def summary_data(counts: dict) -> list:
    """The summary (jobs per category and reason) of the counts ``d.count`` kept, as data."""
    return [{"jobs": n, "category": cat, "reason": reason} for n, cat, reason in d.summary_rows(counts)]


def as_data(items) -> dict:
    """The answer as JSON-ready data: every job's diagnosis with its sentences, and the summary
    (``why --json``'s {"jobs": [...], "summary": [...]})."""
    jobs, counts = [], {}
    for item in items:
        jobs.append(job_data(item))
        d.count(counts, item)
    return {"jobs": jobs, "summary": summary_data(counts)}


def answer(job: str, *, jaeger: str | None = None, store: str | None = None, table: str | None = None,
           now: float | None = None) -> dict:
    """``why --json``'s answer for ``job`` as a dict (see ``diagnoses``)."""
    return as_data(diagnoses(job, jaeger=jaeger, store=store, table=table, now=now))
