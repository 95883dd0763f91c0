"""Condor-G activity log (the Factory's user log of its glidein submissions) -> journal events.

The Factory is the only witness of a glidein's life before it runs (submission, waiting at
the site, holds) and after a hard kill. We read its event log with HTCondor's own reader
(``htcondor2.JobEventLog``) and express what it says as journal events, so the one
converter merges them with the glidein's own journal into one trace:

- 000 submit .. 027 grid submit        -> ``factory.submit``
- 027 (or 000) .. 001 execute           -> ``factory.queue`` (waiting at the site)
- 012 held .. 013 released / 009 abort  -> ``factory.held/<n>`` with the hold reason
- 005 terminated / 009 aborted          -> the root ends there; return value / removal
  (a glidein killed by a signal, ending with 128+signal, or removed ends in an ERROR root
  with ``glidein.outcome`` killed/removed and the reason: its own cleanup never ran)

Timestamps: the reader applies the log's zone (local by default, UTC when the Factory set
``ISO_DATE UTC``), and we add the sub-second part when the log has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from ..core import ids
from ..core.journal import BOOL, INT, Event, typed
from ..core import conventions as c
from ..core.inputs import check_input

SUBMIT, EXECUTE, EVICTED, TERMINATED, ABORTED, HELD, RELEASED, GRID_SUBMIT = 0, 1, 4, 5, 9, 12, 13, 27
ENDING = (TERMINATED, ABORTED)
FRACTION_RE = re.compile(r"T\d\d:\d\d:\d\d(\.\d+)")


def event_time(event) -> float:
    """Seconds since the epoch, with the sub-second part of EventTime when present.

    The bindings give EventTime as ISO 8601 local time: parsed here directly, as their own
    ``timestamp`` reads it but without its strptime (the forwarder's hot path) and keeping
    the fraction; anything else falls back to ``timestamp``."""
    text = str(event.get("EventTime", ""))
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        pass
    seconds = float(event.timestamp)
    match = FRACTION_RE.search(text)
    return seconds + float(match.group(1)) if match else seconds


@dataclass
class GlideinActivity:
    """What the activity log said about one glidein (one cluster.proc), as journal events."""

    cluster: int
    proc: int
    events: list = field(default_factory=list)
    open_keys: set = field(default_factory=set)
    holds: int = 0
    queues: int = 0
    queue_key: str | None = None
    executed: bool = False
    submit_time: float | None = None
    ended_at: float | None = None
    outcome: str = ""
    after_end: int = 0   # events of this pass logged after the glidein ended, ignored

    def add(self, time, op, key, fields=None):
        self.events.append(Event(time=time, op=op, key=key, fields=dict(fields or {})))
        if op == "start":
            self.open_keys.add(key)
        elif op == "end":
            self.open_keys.discard(key)

    STATE_FIELDS = ("open_keys", "holds", "queues", "queue_key", "executed", "submit_time",
                    "ended_at", "outcome")

    def state(self) -> dict:
        """What must survive between reading passes (events are handed over each pass)."""
        out = {name: getattr(self, name) for name in self.STATE_FIELDS}
        out["open_keys"] = sorted(self.open_keys)
        return out

    @classmethod
    def restore(cls, cluster: int, proc: int, state: dict | None) -> "GlideinActivity":
        activity = cls(cluster=cluster, proc=proc)
        for name, value in (state or {}).items():
            if name in cls.STATE_FIELDS:
                setattr(activity, name, set(value) if name == "open_keys" else value)
        return activity

    def start_queue(self, time):
        """Open a new ``factory.queue`` span (a glidein can wait again after a hold)."""
        if self.queue_key in self.open_keys:
            return
        self.queues += 1
        self.queue_key = c.STAGE_FACTORY_QUEUE if self.queues == 1 else f"factory.queue/{self.queues}"
        self.add(time, "start", self.queue_key, {"@name": c.STAGE_FACTORY_QUEUE, "@stage": c.STAGE_FACTORY_QUEUE})

    def close_open(self, time, status=""):
        for key in sorted(self.open_keys):
            fields = {"@status": status} if status else {}
            self.add(time, "end", key, fields)


def identity_fields(identity: ids.GlideinIdentity) -> dict:
    return {
        c.GLIDEIN_FACTORY: identity.factory, c.GLIDEIN_NAME: identity.name,
        c.GLIDEIN_ENTRY: identity.entry, c.GLIDEIN_SCHEDD: identity.schedd,
        typed(c.GLIDEIN_CLUSTER, INT): str(identity.cluster), typed(c.GLIDEIN_PROC, INT): str(identity.proc),
    }


def identity_events(identity: ids.GlideinIdentity, when: float) -> list:
    """The root's identity (the Factory's word for it)."""
    return [Event(time=when, op="attr", key="glidein", fields=identity_fields(identity))]


OVERLOAD_ATTR = "GlideinOverloadEnabled"   # in the job ad; in the log with job_ad_information_attrs


def _overload(activity: GlideinActivity, event, when: float) -> None:
    """GlideinOverloadEnabled on the root, the first time an event of the glidein carries it
    (GlideinWMS's submit file lists it in job_ad_information_attrs)."""
    value = event.get(OVERLOAD_ATTR)
    if isinstance(value, str):
        value = {"true": True, "false": False}.get(value.strip().lower())
    if not isinstance(value, bool):
        return
    key = typed(c.GLIDEIN_OVERLOAD_ENABLED, BOOL)
    if any(key in e.fields for e in activity.events if e.op == "attr" and e.key == "glidein"):
        return
    activity.events.append(Event(time=when, op="attr", key="glidein", fields={key: "true" if value else "false"}))


def apply_event(activity: GlideinActivity, event, when: float | None = None) -> None:
    """Translate one job event of a glidein into journal events (its identity is added when
    its spans are made: assembly.py)."""
    kind = int(event.type)
    when = event_time(event) if when is None else when
    if activity.ended_at is not None:
        # a job id is never reused: an event after the end (a reordered or repeated log) can
        # only put a stage outside the glidein's life
        activity.after_end += 1
        return
    _overload(activity, event, when)
    if kind == SUBMIT:
        activity.submit_time = when
        activity.events.append(Event(time=when, op="start", key="glidein",
                                     fields={"@name": "glidein", "@stage": "glidein"}))
        activity.add(when, "start", c.STAGE_FACTORY_SUBMIT, {
            "@name": c.STAGE_FACTORY_SUBMIT, "@stage": c.STAGE_FACTORY_SUBMIT,
            c.FACTORY_SUBMIT_HOST: str(event.get("SubmitHost", ""))})
    elif kind == GRID_SUBMIT:
        if c.STAGE_FACTORY_SUBMIT in activity.open_keys:
            activity.add(when, "end", c.STAGE_FACTORY_SUBMIT, {
                "@status": "OK", c.FACTORY_GRID_RESOURCE: str(event.get("GridResource", "")),
                c.FACTORY_GRID_JOB_ID: str(event.get("GridJobId", ""))})
        if not activity.executed:   # logged after the execute (reordered): it waits no more
            activity.start_queue(when)
    elif kind == EXECUTE:
        activity.executed = True
        if c.STAGE_FACTORY_SUBMIT in activity.open_keys:
            activity.add(when, "end", c.STAGE_FACTORY_SUBMIT, {"@status": "OK"})
        if activity.queue_key not in activity.open_keys:
            # the wait began at the submission, when this log saw it (a rotated log may not have)
            first_wait = activity.queue_key is None and activity.submit_time is not None
            activity.start_queue(activity.submit_time if first_wait else when)
        activity.add(when, "end", activity.queue_key,
                     {c.FACTORY_EXECUTE_HOST: str(event.get("ExecuteHost", ""))})
    elif kind == HELD:
        reason = str(event.get("HoldReason", ""))
        # Condor-G holds a glidein it could not hand to the site (or that the site lost):
        # the submission or the wait ends there, in error
        if c.STAGE_FACTORY_SUBMIT in activity.open_keys:
            activity.add(when, "end", c.STAGE_FACTORY_SUBMIT, {
                "@status": "ERROR", "@error.type": "held", "@error.detail": reason})
        if activity.queue_key in activity.open_keys:
            activity.add(when, "end", activity.queue_key, {
                "@status": "ERROR", "@error.type": "held", "@error.detail": reason})
        activity.holds += 1
        key = f"factory.held/{activity.holds}"
        activity.add(when, "start", key, {
            "@name": c.STAGE_FACTORY_HELD, "@stage": c.STAGE_FACTORY_HELD,
            c.FACTORY_HOLD_REASON: reason,
            typed(c.FACTORY_HOLD_REASON_CODE, INT): str(event.get("HoldReasonCode", "")),
            typed(c.FACTORY_HOLD_REASON_SUBCODE, INT): str(event.get("HoldReasonSubCode", ""))})
    elif kind == RELEASED:
        key = f"factory.held/{activity.holds}"
        if key in activity.open_keys:
            activity.add(when, "end", key, {c.FACTORY_RELEASE_REASON: str(event.get("Reason", ""))})
        if not activity.executed:
            activity.start_queue(when)  # released: Condor-G hands it to the site again
    elif kind == EVICTED:
        activity.add(when, "attr", "glidein", {typed(c.FACTORY_EVICTED, BOOL): "true"})
    elif kind in ENDING:
        _end(activity, kind, event, when)


def _end(activity: GlideinActivity, kind: int, event, when: float) -> None:
    """A glidein's termination or removal: every open stage closed, the root ended (in error
    when the batch system removed or killed it)."""
    activity.ended_at = when
    held_key = f"factory.held/{activity.holds}"
    if held_key in activity.open_keys:
        activity.add(when, "end", held_key, {"@status": "ERROR", "@error.type": "removed_while_held"})
    activity.close_open(when)
    fields = {}
    if kind == TERMINATED:
        activity.outcome = "terminated"
        fields[typed(c.FACTORY_TERMINATED_NORMALLY, BOOL)] = str(bool(event.get("TerminatedNormally", False))).lower()
        if event.get("ReturnValue") is not None:
            fields[typed(c.FACTORY_RETURN_VALUE, INT)] = str(event.get("ReturnValue"))
        if event.get("TerminatedBySignal") is not None:
            fields[typed(c.FACTORY_SIGNAL, INT)] = str(event.get("TerminatedBySignal"))
    else:
        activity.outcome = "removed"
        fields[typed(c.FACTORY_REMOVED, BOOL)] = "true"
        fields[c.FACTORY_REMOVE_REASON] = str(event.get("Reason", ""))
    ending = abnormal_end(kind, event)
    if ending and activity.executed:  # one that never ran keeps the forwarder's never_ran
        fields[c.GLIDEIN_OUTCOME] = ending[0]
    activity.add(when, "attr", "glidein", fields)
    activity.events.append(Event(time=when, op="end", key="glidein", fields={} if not ending else {
        "@status": "ERROR", "@error.type": ending[0], "@error.detail": ending[1]}))


def abnormal_end(kind: int, event):
    """(outcome, reason) of a glidein the batch system removed or killed, else None.

    glidein_startup.sh exits 128+N when signal N killed it under a shell; HTCondor reports a
    direct kill as an abnormal termination with the signal."""
    if kind == ABORTED:
        return "removed", f"removed: {event.get('Reason') or 'no reason given'}"
    signal = event.get("TerminatedBySignal")
    if event.get("TerminatedNormally") is False and signal is not None:
        return "killed", f"abnormal termination (signal {signal})"
    value = event.get("ReturnValue")
    if isinstance(value, int) and 128 < value <= 128 + 64:
        return "killed", f"return value {value} (signal {value - 128})"
    return None


def read_activity_log(path, state=None, restore=None):
    """Read new events of one activity log.

    ``restore(cluster, proc)`` gives
    the saved state of a glidein seen in an earlier pass (GlideinActivity.state()). ``state`` is the pickled
    reader position from a previous call (None: from the start). Returns
    (activities by (cluster, proc), new state, count of events read). Event logs that
    cannot be read give no activities and the old state.
    """
    import pickle

    import htcondor2

    check_input(path)      # a FIFO would block the pass forever: refused (NotAFileError)
    reader = pickle.loads(state) if state else htcondor2.JobEventLog(str(path))
    activities: dict = {}
    count = 0
    last = None
    for event in reader.events(stop_after=0):
        count += 1
        when = _year_corrected(event_time(event), last)
        last = when
        try:
            key = (int(event.cluster), int(event.proc))
        except (TypeError, ValueError):
            continue
        if key[0] < 0 or key[1] < 0:
            continue
        activity = activities.get(key)
        if activity is None:
            saved = restore(*key) if restore else None
            activity = activities[key] = GlideinActivity.restore(key[0], key[1], saved)
        apply_event(activity, event, when)
    return activities, pickle.dumps(reader), count


HALF_YEAR = 182 * 86400


def _shift_year(when: float, years: int) -> float:
    from datetime import datetime
    local = datetime.fromtimestamp(when)
    try:
        return local.replace(year=local.year + years).timestamp()
    except ValueError:  # 29 February
        return local.replace(year=local.year + years, day=28).timestamp()


def _year_corrected(when: float, previous: float | None) -> float:
    """Legacy stamps (``MM/DD HH:MM:SS``) carry no year and the reader assumes the current
    one: a log that crosses New Year, or is read a year on, jumps by a year. Events of one
    log are in time order, so a jump of months is such a guess gone wrong: undo it."""
    if previous is None:
        return when
    while when - previous > HALF_YEAR:
        when = _shift_year(when, -1)
    while previous - when > HALF_YEAR:
        when = _shift_year(when, +1)
    return when
