"""Jobs that outlive the condor phase's record (a SIGTERM): where the condor span ends.

On SIGTERM glidein_startup.sh forwards the signal and runs cleanup without waiting for the
condor phase; condor_startup.sh's record (which dates `condor`) ends then, but HTCondor kills
its jobs after that, so the job-exit hook's `end` of a job comes 0.5-1.2 s later (real
glideins, ../shared/fixtures/glidein-run/sigterm). A span must lie within its parent:
- a job that ended while the glidein still ran (by the root's end) moves the end of `condor`
  to its own: HTCondor ran until its last job ended (``condor.end_source`` = ``last_job``;
  so does a job that started after the record's end, which has 1 s resolution);
- a job whose end came after the glidein's (its line written after cleanup) is cut at
  `condor`'s end, with the reason (``job.end_cut_reason``, the glidein's shutdown reason) and
  the end it recorded (``job.recorded_end_s``).

When HTCondor shut itself down (``glidein.shutdown.reason`` ``max_idle`` or
``daemon_shutdown``: no signal), condor_startup.sh returned only after its daemons and jobs
had ended, and cleanup began after that: `teardown`, which the hooks start at the record's
whole second, starts where `condor` ends when that is within the second.
"""

from __future__ import annotations

from .. import conventions as c

CONDOR = "condor"   # the condor phase's journal key
END_SOURCE, LAST_JOB = c.CONDOR_END_SOURCE, "last_job"
CUT_REASON, RECORDED_END = c.JOB_END_CUT_REASON, c.JOB_RECORDED_END_S
TEARDOWN = "teardown"
SELF_SHUTDOWN = ("max_idle", "daemon_shutdown")   # glidein.shutdown.reason with no signal


def fit_jobs_in_condor(spans: dict, root_key: str) -> None:
    """Make every job span (parent `condor`) end within `condor`, as the module says.
    ``spans``: key -> the converter's spans (start, end, parent, attrs, closed_by_converter)."""
    condor, root = spans.get(CONDOR), spans.get(root_key)
    if condor is None or condor.end is None or root is None:
        return
    jobs = [s for s in spans.values() if s.parent == CONDOR and s.end is not None
            and s.start is not None and s.end > condor.end]
    if not jobs:
        return
    limit = root.end if root.end is not None and not root.closed_by_converter else None
    # the record has 1 s resolution (its second is truncated): a job that started after it
    # shows that HTCondor still ran then
    ended_in_time = [s.end for s in jobs if (limit is None or s.end <= limit)
                     and not s.closed_by_converter] + [s.start for s in jobs]
    reason = str(condor.attrs.get(c.GLIDEIN_SHUTDOWN_REASON) or "unknown")
    if not condor.closed_by_converter and max(ended_in_time) > condor.end:
        condor.end = max(ended_in_time)
        condor.attrs[END_SOURCE] = LAST_JOB
        if reason in SELF_SHUTDOWN:
            _teardown_after(spans.get(TEARDOWN), condor.end)
    for job in jobs:
        if job.end > condor.end:
            job.attrs[RECORDED_END] = round(job.end, 6)
            job.attrs[CUT_REASON] = reason
            job.end = max(condor.end, job.start)


def _teardown_after(teardown, condor_end: float) -> None:
    """`teardown` starts at `condor`'s end when its start (a whole second) lies in the second
    before it: the second said when, condor's last job says where in it."""
    if teardown is not None and teardown.start is not None and teardown.end is not None \
            and teardown.start < condor_end < min(teardown.start + 1.0, teardown.end):
        teardown.start = condor_end
