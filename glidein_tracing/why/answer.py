"""The whole answer of ``glidein-tracing why`` as data: what ``why --json`` prints and what a
service shows, from one function (``answer``), so both say the same."""

from __future__ import annotations

import getpass
import os
import time

from . import diagnosis as d
from . import sources, words

FROM_FILE = "the jobs were read from a file; give a job id to have the schedd asked"


def diagnoses(job: str, *, jaeger: str | None = None, store: str | None = None, table: str | None = None,
              now: float | None = None, warn=None) -> list:
    """The diagnoses of ``job`` (cluster.proc[@schedd], a ``condor_q -l`` file, a trace id or a
    TRACEPARENT), with the entries' recent outcomes and a start estimate when ``table`` is the
    glidein table. ``warn(text)`` is told of ads of the file left out. Wrong input: UserError."""
    now = time.time() if now is None else now
    source = sources.SpanSource(jaeger, store)

    def spans_of(trace_id):
        if trace_id is None:
            return (), source.where
        spans = source.spans(trace_id)
        return spans, (source.where if spans is not None else source.error)

    job_id = d.parse_job_id(job)
    if job_id is not None:
        cluster, proc, schedd = job_id
        ad, user, unchecked = sources.ad_from_schedd(cluster, proc, schedd)
        spans, looked = spans_of(d.trace_id_of(ad))
        out = [d.diagnose(ad, spans, job=job if schedd else d.job_name(ad), user=user, unchecked=unchecked,
                          looked=looked, now=now)]
    elif os.path.exists(job):
        ads, unreadable = sources.ads_from_file(job)
        if unreadable and warn is not None:
            warn(f"{unreadable} ads of {job} are no job ads; left out")
        out = []
        for ad in ads:
            spans, looked = spans_of(d.trace_id_of(ad))
            out.append(d.diagnose(ad, spans, user=None, unchecked=FROM_FILE, looked=looked, now=now))
    else:
        trace_id = d.check_trace_id(job)
        spans, looked = spans_of(trace_id)
        return of_trace(trace_id, spans, looked=looked, asker=getpass.getuser(), table=table, now=now)
    return with_table(out, table, now)


def of_trace(trace_id: str, spans, *, looked: str, asker: str | None, table: str | None = None,
             now: float | None = None) -> list:
    """The diagnosis of the submission of ``trace_id`` from its spans (read by the caller:
    ``why`` itself, or the service, which reads what its caller may see), ``asker``'s jobs
    first when several owners' jobs share it."""
    now = time.time() if now is None else now
    return with_table([d.diagnose(None, spans, job=trace_id, looked=looked, asker=asker, now=now)], table, now)


def with_table(items: list, table: str | None, now: float) -> list:
    """``items`` with the entries' recent outcomes and a start estimate, when ``table`` is
    the glidein table."""
    if table:
        from .estimate import Estimator
        outcomes = sources.entry_outcomes(table, now=now)
        estimator = Estimator(table, now=now)
        for item in items:
            d.add_table_evidence(item, outcomes)
            item.estimate = estimator.for_diagnosis(item)
    return items


def as_data(items: list) -> dict:
    """The answer as JSON-ready data: every job's diagnosis with its sentences, and the summary."""
    return {"jobs": [{**item.as_dict(), "text": words.sentences(item)} for item in items],
            "summary": [{"jobs": n, "category": cat, "reason": reason} for n, cat, reason in d.summary(items)]}


def answer(job: str, *, jaeger: str | None = None, store: str | None = None, table: str | None = None,
           now: float | None = None) -> dict:
    """``why --json``'s answer for ``job`` as a dict (see ``diagnoses``)."""
    return as_data(diagnoses(job, jaeger=jaeger, store=store, table=table, now=now))
