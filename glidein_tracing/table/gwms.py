"""GlideinWMS's own per-glidein quantities (Lasted, CondorLasted, JobsNr, JobsLasted,
JobsGoodput, JobsTerminated, Waste per mille), with the definitions of its Factory monitoring
(glideFactoryLogParser reads the glidein's stdout banners and condor_startup.sh's StarterLog
summary; glideFactoryMonitoring.get_completed_stats turns them into these numbers), so an
operator can put our table beside the Factory's own pages. Inputs are integer seconds, as
GlideinWMS's ``date +%s`` arithmetic makes them. docs/glidein-table.md states each rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

#: a job's class in the StarterLog summary (condor_startup.sh's per-job "Process exited" line)
GOOD_ZERO, GOOD_NONZERO, BAD_SIGNAL, BAD_OTHER = "goodZ", "goodNZ", "badSignal", "badOther"

#: a condor phase shorter than this is a total loss (GlideinWMS's rule)
MIN_CONDOR_S = 5


class StarterSummary(NamedTuple):
    """condor_startup.sh's StarterLog summary as the Factory's parser takes it: the "Total"
    line's real job count and seconds, the goodZ and goodNZ lines' seconds normalised to one
    core (divided by GLIDEIN_CPUS)."""

    jobs_nr: int
    jobs_s: int
    good_zero_s: int
    good_nonzero_s: int


@dataclass
class GlideinRun:
    """What GlideinWMS's parser would have read for one glidein (None: not in its output)."""

    glidein_s: int | None          # "Glidein ending ... after N" (the node's own count)
    factory_s: int | None          # execute to terminated in the Factory's activity log
    validation_s: int | None       # "Last script starting ... after validating for N"
    condor_started: bool           # "Condor starting"
    condor_s: int | None           # "Condor ended ... after N"
    summary: StarterSummary = StarterSummary(0, 0, 0, 0)


def job_class(exit_code, exit_signal, exit_by) -> str:
    """The StarterLog class of a job from its span: a signal, or a job ended by remove/hold/
    evict (the starter kills it) is badSignal; an exit with a code is goodZ or goodNZ."""
    if exit_signal:
        return BAD_SIGNAL
    if exit_code is not None and exit_by in (None, "exit"):
        return GOOD_ZERO if exit_code == 0 else GOOD_NONZERO
    if exit_by in ("remove", "hold", "evict"):
        return BAD_SIGNAL
    return BAD_OTHER


def starter_summary(jobs, cpus: int | None) -> StarterSummary:
    """The summary condor_startup.sh prints for ``jobs`` ((run time s, class) each) on a
    glidein of ``cpus`` cores."""
    cpus = max(1, cpus or 1)
    good_zero = sum(secs for secs, kind in jobs if kind == GOOD_ZERO)
    good_nonzero = sum(secs for secs, kind in jobs if kind == GOOD_NONZERO)
    return StarterSummary(len(jobs), int(sum(secs for secs, _ in jobs)), int(good_zero / cpus),
                          int(good_nonzero / cpus))


def quantities(run: GlideinRun) -> dict:
    """The gwms_* and waste_* columns of one glidein."""
    lasted = run.glidein_s if run.glidein_s is not None else (run.factory_s or 0)   # "best guess"
    condor = 0
    jobs_nr = jobs_s = goodput = terminated = 0
    waste = {"validation": 1000.0, "idle": 0.0, "nosuccess": 0.0, "badput": 1000.0}
    if run.condor_started:
        condor = run.condor_s or 0
        lasted = max(lasted, condor)
        if condor >= MIN_CONDOR_S:
            validation = run.validation_s if run.validation_s is not None else (run.factory_s or 0) - condor
            jobs_nr, jobs_s, good_zero, good_nonzero = run.summary
            goodput = min(good_zero, jobs_s)
            terminated = min(goodput + good_nonzero, jobs_s)
            waste = {"validation": 1000.0 * validation / lasted,
                     "idle": 1000.0 * (condor - jobs_s) / condor,
                     "nosuccess": 1000.0 * (jobs_s - goodput) / jobs_s if jobs_s > 0 else 0.0,
                     "badput": 1000.0 * (lasted - terminated) / lasted}
    return {"gwms_condor_started": run.condor_started, "gwms_lasted_s": lasted,
            "gwms_validation_s": run.validation_s, "gwms_condor_lasted_s": condor,
            "gwms_jobs_nr": jobs_nr, "gwms_jobs_lasted_s": jobs_s, "gwms_jobs_goodput_s": goodput,
            "gwms_jobs_terminated_s": terminated,
            **{f"waste_{name}_mill": value for name, value in waste.items()}}
