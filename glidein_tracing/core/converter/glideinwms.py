"""GlideinWMS's rules: what its own records say about a glidein that the hooks did not write.

- one ``validation`` span per per-script record (``otr_outlist.list``), with its own
  timings, under ``setup``; ``setup`` itself ends where GlideinWMS's setup ends;
- the ``condor`` span from the ``condor_startup.sh`` record when no hook wrote it;
- job ends from StartdHistoryLog records when the exit hook missed a job;
- ``idle`` spans: the parts of the condor phase with no job running.
"""

from __future__ import annotations

import base64

from .. import conventions as c
from ..classads import parse_old_ad
from ..journal import Event
from .clocks import CLOCK_MARGIN_S
from .draft import ROOT, Draft, SpanDraft
from .fields import number, parse_iso
from .record_times import place_records

CONDOR_RECORD = "condor_startup.sh"
VALIDATION_PREFIX = "validation/"   # + the record's id: a validation span's key

# job ad attributes a failed job's triage needs (issue 13), from the StartdHistoryLog
_HISTORY_TRIAGE = (("HoldReason", c.JOB_HOLD_REASON, str), ("HoldReasonCode", c.JOB_HOLD_REASON_CODE, int),
                   ("RemoteWallClockTime", c.JOB_WALL_S, float), ("LastRemoteHost", c.JOB_REMOTE_HOST, str),
                   ("RemoteHost", c.JOB_REMOTE_HOST, str))


def records_to_spans(draft: Draft) -> None:
    """The per-script records as ``validation`` spans (the ``condor_startup.sh`` one as the
    ``condor`` span's times and metrics), then ``setup`` around them. Their whole-second times
    are placed in record order (record_times.py); the stage times the hooks took from the
    records (the end of ``setup``, ``condor``, the start of ``teardown``) move with them."""
    has_condor_span = "condor" in draft.spans and draft.spans["condor"].start is not None
    setup = draft.spans.get("setup")
    recorded = []
    for record in draft.records:
        start = parse_iso(record.fields.get("@tstart", "")) or record.time
        recorded.append((start, parse_iso(record.fields.get("@tend", "")) or start))
    placed = place_records(recorded, setup.start if setup is not None else None)
    moved = {}   # a whole second the hooks wrote -> where its record event was placed
    for record, (start, end), (placed_start, placed_end) in zip(draft.records, recorded, placed):
        fields = record.fields
        status = fields.get("@status", "").upper()
        metrics = {name[2:]: value for name, value in fields.items() if name.startswith("m.")}
        if record.key == CONDOR_RECORD or record.key.endswith("/" + CONDOR_RECORD):
            _condor_record(draft, fields, start, end, status, metrics, has_condor_span)
            moved[("condor", start)], moved[("condor_end", end)] = placed_start, placed_end
        else:
            _validation_span(draft, record, placed_start, placed_end, status, metrics)
            draft.spans[VALIDATION_PREFIX + record.key].attrs[c.GLIDEIN_SCRIPT_MAX_DURATION_S] = \
                int(max(0.0, end - start)) + 1
            moved[("last_end", end)] = placed_end
    _move_record_times(draft, moved)
    if "setup" in draft.spans or draft.records:
        _setup_span(draft)


def _move_record_times(draft: Draft, moved: dict) -> None:
    """The stage times the hooks took from a record (whole seconds) go where record_times.py
    placed that record's event: setup ends and condor starts when condor_startup.sh started
    (or, with no condor phase, when the last script ended), teardown starts when it ended."""
    def place(value, *kinds):
        for kind in kinds:
            if value is not None and (kind, value) in moved:
                return moved[(kind, value)]
        return value
    setup, condor, teardown = (draft.spans.get(k) for k in ("setup", "condor", "teardown"))
    if setup is not None:
        setup.end = place(setup.end, "condor", "last_end")
    if condor is not None:
        condor.start = place(condor.start, "condor", "last_end")
        condor.end = place(condor.end, "condor_end")
    if teardown is not None:
        teardown.start = place(teardown.start, "condor_end", "last_end")


def _condor_record(draft: Draft, fields: dict, start, end, status: str, metrics: dict,
                   has_condor_span: bool):
    condor = draft.span("condor")
    if not has_condor_span:
        condor.start, condor.end = start, end
    condor.name, condor.stage, condor.parent = c.SPAN_CONDOR, c.STAGE_CONDOR, ROOT
    for name, value in metrics.items():
        condor.attrs.setdefault(c.CONDOR_METRIC_PREFIX + name, value)
    condor.attrs.setdefault(c.CONDOR_DURATION_S, max(0.0, end - start))
    if status == "ERROR":
        condor.status = "ERROR"
        condor.error_type = fields.get("@failure", "") or condor.error_type
        condor.error_detail = fields.get("@detail", "") or condor.error_detail


def _validation_span(draft: Draft, record: Event, start, end, status: str, metrics: dict):
    fields = record.fields
    span = draft.span(VALIDATION_PREFIX + record.key)
    span.name, span.stage, span.parent = record.key, c.STAGE_VALIDATION, "setup"
    span.start, span.end = start, end
    span.attrs[c.GLIDEIN_TIME_PLACED] = c.TIME_PLACED_RECORD_ORDER
    span.attrs[c.GLIDEIN_SCRIPT_ID] = record.key
    span.attrs[c.GLIDEIN_SCRIPT_LIST] = record.key.split("/", 1)[0]
    span.attrs[c.GLIDEIN_SCRIPT_STATUS] = status or "UNKNOWN"
    for name, value in metrics.items():
        if name != "failure":
            span.attrs[c.GLIDEIN_SCRIPT_METRIC_PREFIX + name] = value
    if fields.get("@detail"):
        span.attrs[c.GLIDEIN_SCRIPT_DETAIL] = fields["@detail"]
    if status == "ERROR":
        span.status = "ERROR"
        span.error_type = fields.get("@failure", "") or metrics.get("failure", "") or "Unknown"
        span.error_detail = fields.get("@detail", "")
    elif status == "OK":
        span.status = "OK"


def _setup_span(draft: Draft):
    """``setup`` covers its validation spans and ends where GlideinWMS's setup ends (the
    cleanup hook writes the same): the last script's start, else the end of the last
    per-script record; it fails with the first failed script."""
    validations = [draft.spans[k] for k in draft.keys_starting(VALIDATION_PREFIX)]
    failed = [v for v in validations if v.status == "ERROR"]
    setup = draft.span("setup")
    setup.name, setup.stage = c.STAGE_SETUP, c.STAGE_SETUP
    if setup.start is None and validations:
        setup.start = min(v.start for v in validations)
    if setup.end is None:
        condor = draft.spans.get("condor")
        if condor is not None and condor.start is not None:
            setup.end = condor.start
        elif validations:
            setup.end = max(v.end for v in validations)
    if failed:
        setup.status = "ERROR"
        setup.error_type = failed[0].error_type
        setup.error_detail = f"{failed[0].name} failed: {failed[0].error_detail}".strip()


def history_to_job_ends(draft: Draft) -> None:
    """A job the exit hook missed ends as its StartdHistoryLog record says, when that end lies
    between the job's start and the record's line (widened by clocks.CLOCK_MARGIN_S)."""
    for event in draft.histories:
        ad = _parse_history_ad(event.fields.get("@ad", ""))
        if ad is None:
            draft.report.skip("unparsable history record", event.line_no)
            continue
        span = draft.spans.get(event.key)
        if span is None or span.end is not None:
            continue
        completion = number(ad.get("CompletionDate")) or number(ad.get("EnteredCurrentStatus"))
        started = span.start if span.start is not None else event.time
        if completion and not started - CLOCK_MARGIN_S <= completion <= event.time + CLOCK_MARGIN_S:
            draft.report.skip("history record dated outside its job's life", event.line_no)
        elif completion:
            _end_job_from_ad(span, float(completion), ad)


def _end_job_from_ad(span: SpanDraft, completion: float, ad: dict):
    span.end = completion
    span.attrs[c.JOB_END_SOURCE] = "StartdHistoryLog"
    code = number(ad.get("ExitCode"))
    if code is not None:
        span.attrs[c.JOB_EXIT_CODE] = int(code)
    if ad.get("ExitBySignal") is True:
        span.attrs[c.JOB_EXIT_SIGNAL] = int(number(ad.get("ExitSignal")) or 0)
    for attr, name in (("RemoteUserCpu", "r.utime"), ("RemoteSysCpu", "r.stime")):
        if number(ad.get(attr)) is not None:
            span.end_fields[name] = str(number(ad.get(attr)))
    rss = number(ad.get("ResidentSetSize"))
    if rss is not None:
        span.attrs[c.JOB_RSS_BYTES] = int(rss) * 1024
    for attr, name, kind in _HISTORY_TRIAGE:
        value = ad.get(attr)
        if kind is str and isinstance(value, str) and value:
            span.attrs.setdefault(name, value)
        elif kind is not str and number(value) is not None:
            span.attrs.setdefault(name, kind(number(value)))
    failed = (code not in (None, 0)) or ad.get("ExitBySignal") is True
    span.status = "ERROR" if failed else "OK"
    if failed:
        span.error_type = "job_failed"


def _parse_history_ad(encoded: str):
    """Decode one StartdHistoryLog record (base64 of old-syntax ClassAd text) into a dict."""
    try:
        text = base64.b64decode(encoded, validate=False).decode("utf-8", "replace")
    except (ValueError, TypeError):
        return None
    return parse_old_ad(text)


def idle_spans(draft: Draft) -> None:
    """The parts of the condor phase with no job running, each an ``idle`` span under it."""
    condor = draft.spans.get("condor")
    if condor is None or condor.start is None or condor.end is None:
        return
    jobs = sorted((s.start, s.end) for k, s in draft.spans.items()
                  if k.startswith("job/") and s.start is not None)
    gaps = []
    cursor = condor.start
    seen_job = False
    for start, end in jobs:
        start, end = max(start, condor.start), min(end, condor.end)
        if start > cursor:
            gaps.append((cursor, start, "between_jobs" if seen_job else "before_first_job"))
        cursor = max(cursor, end)
        seen_job = True
    if cursor < condor.end:
        gaps.append((cursor, condor.end, "tail" if seen_job else "no_job"))
    for index, (start, end, kind) in enumerate(gaps):
        span = draft.span(f"idle/{index}")
        span.name, span.stage, span.parent = c.STAGE_IDLE, c.STAGE_IDLE, "condor"
        span.start, span.end = start, end
        span.attrs[c.GLIDEIN_IDLE_KIND] = kind
