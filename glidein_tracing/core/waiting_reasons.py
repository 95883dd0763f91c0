"""Why a user's idle jobs wait for a glidein: the reasons the Frontend instrumentor records
(``job.waiting.reason``, frontend_hooks/waiting.py) and ``glidein-tracing why`` explains
(docs/why-waiting.md). The one place each reason is spelled, with what it means and what the
user can do about it."""

from __future__ import annotations

from typing import NamedTuple


class Reason(NamedTuple):
    value: str
    category: str     # the diagnosis category ``why`` prints (HTCondor's, extended)
    meaning: str
    action: str


# The categories (``why``'s headings), after HTCondor's own (held, idle, running) with the
# glidein ones added.
NO_GLIDEIN_COULD_EXIST = "matches no glidein that could exist"
WAITING_REQUEST = "waiting for a glidein to be requested"
WAITING_SITE_QUEUE = "waiting for a glidein to leave the site queue"
WAITING_VALIDATION = "waiting for a glidein to pass validation"
DOES_NOT_FIT = "glideins are there but the job does not fit"
WAITING_NEGOTIATOR = "a glidein fits: waiting for HTCondor to start the job"
NOT_KNOWN = "the Frontend could not tell whether a glidein could run the job"

# Most hopeful first: a submission matching several entries gets the reason of the entry
# closest to giving it a glidein.
REASONS = (
    Reason("glidein_idle", WAITING_NEGOTIATOR,
           "an idle glidein at a matching entry fits the job; HTCondor's negotiator should "
           "start it within a negotiation cycle or two",
           "nothing; if it lasts, check your user priority (condor_userprio)"),
    Reason("site_queue", WAITING_SITE_QUEUE,
           "glideins were requested for the entries the jobs match and wait in the site's "
           "batch queue",
           "nothing but wait; jobs that can run at more sites (wider DESIRED_Sites) wait less"),
    Reason("requested", WAITING_REQUEST,
           "the Frontend requested glideins this cycle; the Factory has not submitted them yet",
           "nothing: the Factory submits them in its next cycle"),
    Reason("validation", WAITING_VALIDATION,
           "glideins start at the site but none joins the pool: they fail their validation",
           "nothing you can fix; tell the operators (the entry is broken); wider DESIRED_Sites "
           "let the jobs run elsewhere"),
    Reason("unusable_idle_glideins", DOES_NOT_FIT,
           "the Frontend counts idle glideins at the matching entries as capacity, so it asks "
           "for no more, but they cannot run the job: they retire, or lack the memory, cores, "
           "disk or time the job asks for (GlideinWMS issue 554)",
           "request less (RequestMemory, RequestCpus, RequestDisk, the expected lifetime) if the "
           "job allows; else the idle glideins must leave first"),
    Reason("limit", WAITING_REQUEST,
           "a limit or curb of the Frontend configuration stops or cuts the request "
           "(job.waiting.limits says which)",
           "nothing but wait for glideins to free up; the operators set the limits"),
    Reason("downtime", WAITING_REQUEST,
           "the matching entries (or the Frontend) are in downtime: no glideins are requested",
           "wait for the downtime to end, or let the jobs run at more sites"),
    Reason("not_requested", WAITING_REQUEST,
           "the Frontend requested nothing at the matching entries this cycle (e.g. it is "
           "removing glideins)",
           "wait a few Frontend cycles; if it lasts, ask the operators"),
    Reason("unknown", NOT_KNOWN,
           "the group's match expression could not be evaluated on the jobs (job.waiting."
           "match_error says why), so whether an entry matches them is not known; the Frontend "
           "counts such jobs for no entry",
           "nothing to change in the job yet; tell the operators, quoting job.waiting.match_error"),
    Reason("no_matching_entry", NO_GLIDEIN_COULD_EXIST,
           "no entry of the Frontend group matches the jobs: no glidein that could run them "
           "will be requested",
           "check the job's requirements and DESIRED_Sites against the sites your VO uses; "
           "condor_rm and resubmit with requirements a site can meet"),
)
BY_VALUE = {reason.value: reason for reason in REASONS}
RANK = {reason.value: rank for rank, reason in enumerate(REASONS)}
