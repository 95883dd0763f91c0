"""Why a user's idle jobs wait for a glidein: the reasons the Frontend instrumentor records
(``job.waiting.reason``, frontend_hooks/waiting.py) and ``glidein-tracing why`` explains
(docs/why-waiting.md). The one place each reason is spelled, with what it means and what the
user can do about it."""

from __future__ import annotations

from typing import NamedTuple


# Whether waiting helps, and who can act: each answer of ``why`` says both.
HELPS_YES, HELPS_NO, HELPS_UNKNOWN = "yes", "no", "unknown"
ACTOR_YOU, ACTOR_OPERATORS, ACTOR_NOBODY = "you", "the operators", "nobody"


class Reason(NamedTuple):
    value: str
    category: str     # the diagnosis category ``why`` prints (HTCondor's, extended)
    meaning: str
    action: str
    helps: str        # does waiting help: HELPS_*
    actor: str        # who can act: ACTOR_*


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
           "nothing; if it lasts, check your user priority (condor_userprio)",
           HELPS_YES, ACTOR_NOBODY),
    Reason("site_queue", WAITING_SITE_QUEUE,
           "glideins were requested for the entries the jobs match and wait in the site's "
           "batch queue",
           "nothing but wait; jobs that can run at more sites (wider DESIRED_Sites) wait less",
           HELPS_YES, ACTOR_NOBODY),
    Reason("requested", WAITING_REQUEST,
           "the Frontend requested glideins this cycle; the Factory has not submitted them yet",
           "nothing: the Factory submits them in its next cycle",
           HELPS_YES, ACTOR_NOBODY),
    Reason("validation", WAITING_VALIDATION,
           "glideins start at the site but none joins the pool: they fail their validation",
           "tell them the entry is broken; meanwhile, jobs that can run at more sites (wider "
           "DESIRED_Sites) run elsewhere",
           HELPS_UNKNOWN, ACTOR_OPERATORS),
    Reason("unusable_idle_glideins", DOES_NOT_FIT,
           "the Frontend counts idle glideins at the matching entries as capacity, so it asks "
           "for no more, but they cannot run the job: they retire, or lack the memory, cores, "
           "disk or time the job asks for (GlideinWMS issue 554)",
           "request less (RequestMemory, RequestCpus, RequestDisk, the expected lifetime) if the "
           "job allows; else the idle glideins must leave first",
           HELPS_UNKNOWN, ACTOR_YOU),
    Reason("limit", WAITING_REQUEST,
           "a limit or curb of the Frontend configuration stops or cuts the request "
           "(job.waiting.limits says which)",
           "they set the limits; meanwhile, glideins free up as others end",
           HELPS_YES, ACTOR_OPERATORS),
    Reason("downtime", WAITING_REQUEST,
           "the matching entries (or the Frontend) are in downtime: no glideins are requested",
           "wait for the downtime to end, or let the jobs run at more sites",
           HELPS_YES, ACTOR_NOBODY),
    Reason("not_requested", WAITING_REQUEST,
           "the Frontend requested nothing at the matching entries this cycle (e.g. it is "
           "removing glideins)",
           "if it lasts a few Frontend cycles, ask them why",
           HELPS_UNKNOWN, ACTOR_OPERATORS),
    Reason("unknown", NOT_KNOWN,
           "the group's match expression could not be evaluated on the jobs (job.waiting."
           "match_error says why), so whether an entry matches them is not known; the Frontend "
           "counts such jobs for no entry",
           "nothing to change in the job yet; tell them, quoting job.waiting.match_error",
           HELPS_UNKNOWN, ACTOR_OPERATORS),
    Reason("no_matching_entry", NO_GLIDEIN_COULD_EXIST,
           "no entry of the Frontend group matches the jobs: no glidein that could run them "
           "will be requested",
           "check the job's requirements and DESIRED_Sites against the sites your VO uses; "
           "condor_rm and resubmit with requirements a site can meet",
           HELPS_NO, ACTOR_YOU),
)
RANK = {reason.value: rank for rank, reason in enumerate(REASONS)}

# The reasons the job's own schedd gives (``why`` reads them from the job ad and the schedd's
# user record; the Frontend never sees them). Each stops the job whatever the glideins do.
WAITING_TRANSFER = "waiting in the schedd's transfer queue"
WAITING_COOLDOWN = "in a cool-down after a failed start"
WAITING_RUNNING_CAP = "at your running-job cap at the schedd"
JOB_REASONS = (
    Reason("transfer_queue", WAITING_TRANSFER,
           "the job has a slot and waits in the schedd's queue of file transfers (TransferQueued: "
           "more jobs are moving files than the schedd's MAX_CONCURRENT_UPLOADS allows)",
           "nothing: the transfer starts when others end",
           HELPS_YES, ACTOR_NOBODY),
    Reason("cooldown", WAITING_COOLDOWN,
           "a start of the job failed and HTCondor holds it back until its cool-down ends "
           "(JobCoolDownExpiration; the schedd's SYSTEM_ON_VACATE_COOL_DOWN; condor_q shows Ic)",
           "nothing: the schedd considers it again when the cool-down ends",
           HELPS_YES, ACTOR_NOBODY),
    Reason("running_cap", WAITING_RUNNING_CAP,
           "you already run as many jobs as your user record at the schedd allows "
           "(MaxJobsRunning, condor_qusers shows it): the schedd starts no more of yours",
           "they set the cap (condor_qusers -edit); meanwhile, it frees up as your running jobs end",
           HELPS_YES, ACTOR_OPERATORS),
)
BY_VALUE = {reason.value: reason for reason in REASONS + JOB_REASONS}

# The one precedence of ``why``'s answers, first that holds wins (docs/why-waiting.md): a held
# job; then the schedd's reasons in the order its Runnable() checks them (a job not idle, in
# cool-down, over the user's cap); then the Frontend's reason, itself the most hopeful of the
# entries' (REASONS' order). A later reason cannot start the job while an earlier one holds.
HELD = "held"
PRECEDENCE = (HELD,) + tuple(r.value for r in JOB_REASONS) + tuple(r.value for r in REASONS)
