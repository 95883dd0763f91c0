"""The one converter: journal events -> spans (the SDK's ``ReadableSpan``).

Every path uses it: live export on the node, the Factory forwarder, the demo. Ids are
deterministic (glidein_tracing.core.ids), so the same journal converted twice, anywhere, gives
the same spans. Nothing here knows where spans go.

``convert`` runs the phases in order, each a module, all sharing one draft trace (draft.py):
1. collect.py: the journal's events into spans in progress (a user job's phase lines go to
   phases.py's collector, which checks them and makes their ``job.phase`` spans in build.py);
2. root.py: the root and the trace id;
3. glideinwms.py: GlideinWMS's records as ``validation``/``condor``/``setup`` spans, job ends
   from StartdHistoryLog records, ``idle`` spans;
4. bounds.py: stages a killed glidein left open closed at the last known time and marked,
   the root around all, GLIDEIN_TRACING_MAX_SPANS; clocks.py: the node's stages after the
   Factory's execute event;
5. outcome.py: ``glidein.outcome``, ``post_failure_sleep``, failure domains (failure.py);
   bounds.py again: every span lasts; root.py: the root's name;
6. build.py: the SDK's spans (readable_span.py makes each one, with its
   ``glidein_tracing.digest`` from digest.py: what the backend's copy must carry for the
   forwarder to count it delivered), per-stage ``glidein.resource.*`` (resources.py), and the
   user's view of their jobs (user_view.py).
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan

from ..journal import JournalReport
from . import bounds, build, clocks, glideinwms, job_nesting, outcome
from .collect import collect
from .draft import MAX_SPANS_CEILING, ROOT
from .fields import parse_iso
from .root import ConversionError, name_root, settle_root

__all__ = ["ConversionError", "convert", "parse_iso"]


def convert(events, report: JournalReport | None = None, *, resource_defaults: dict | None = None,
            redact=(), trace_id: str | None = None,
            span_ceiling: int = MAX_SPANS_CEILING) -> list[ReadableSpan]:
    """Turn one glidein's journal events into its spans, the root first. ``trace_id`` (the
    Factory's) wins over what the events say; ``span_ceiling`` bounds the spans a journal may
    ask for (its ``@max_spans``). Raises ConversionError when the events hold no glidein trace."""
    draft = collect(events, report, redact, span_ceiling)
    settle_root(draft, trace_id)
    glideinwms.records_to_spans(draft)
    glideinwms.history_to_job_ends(draft)
    bounds.close_open_spans(draft)
    job_nesting.fit_jobs_in_condor(draft.spans, ROOT)
    glideinwms.idle_spans(draft)
    clocks.reconcile(draft)
    bounds.cap_jobs(draft)
    bounds.cap_spans(draft)
    outcome.outcome(draft)
    outcome.post_failure_sleep(draft)
    outcome.failure_domains(draft)
    bounds.lasting(draft)
    name_root(draft)
    return build.build(draft, dict(resource_defaults or {}))
