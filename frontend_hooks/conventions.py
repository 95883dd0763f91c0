"""The public names of the Frontend instrumentation: the one place each is spelled.

docs/frontend.md documents every name here; docs/span-conventions.md lists the two stages.
The glidein side reads ``REQUEST_TRACEPARENT_PARAM`` from glidein_config: import it from here
rather than spelling it again. The names both sides share (the stage attribute, the two
Frontend stages, the entry's identity) come from glidein_tracing.core.conventions.
"""

from glidein_tracing.core import conventions as _shared

# The GlideinParam that carries the request span's W3C traceparent. The Frontend advertises it
# as ``GlideinParamGLIDEIN_TRACING_REQUEST_TRACEPARENT`` in the request (glideclient) ad; the
# Factory passes every param to the glidein as ``-param_GLIDEIN_TRACING_REQUEST_TRACEPARENT``
# (escaped: ``-`` travels as ``.minus,``), and glidein_startup.sh decodes it into glidein_config
# as ``GLIDEIN_TRACING_REQUEST_TRACEPARENT 00-<trace>-<span>-<flags>``.
REQUEST_TRACEPARENT_PARAM = "GLIDEIN_TRACING_REQUEST_TRACEPARENT"

# Span names (equal to their glidein.stage, docs/frontend.md).
CYCLE_SPAN = _shared.STAGE_FRONTEND_CYCLE
REQUEST_SPAN = _shared.STAGE_FRONTEND_REQUEST

STAGE = _shared.STAGE

# frontend.cycle (and repeated on frontend.request)
FRONTEND_NAME = "frontend.name"            # glideinFrontendElement.frontend_name (FrontendName)
FRONTEND_GROUP = "frontend.group"          # glideinFrontendElement.group_name
FRONTEND_CLIENT_NAME = "frontend.client_name"  # published_frontend_name: the ClientName the Factory sees
FRONTEND_ACTION = "frontend.action"        # run, removeIdle, ... (glideinFrontendElement.action)
CYCLE_NUMBER = "frontend.cycle.number"     # 1, 2, ... per group, kept in the group's history file
CYCLE_ENTRIES = "frontend.cycle.requests"  # frontend.request spans opened in the cycle
CYCLE_WAITING_SPANS = "frontend.cycle.waiting_spans"  # job.waiting spans sent (docs/why-waiting.md)
CYCLE_MATCH_ERRORS = "frontend.cycle.match_errors"  # match evaluations that raised (job kind x entry): reason unknown

# frontend.request: identity of the entry (the glidefactory ad attributes)
ENTRY = _shared.GLIDEIN_ENTRY              # EntryName     == GLIDEIN_Entry_Name on the glidein
FACTORY = _shared.GLIDEIN_FACTORY          # FactoryName   == GLIDEIN_Factory
GLIDEIN_NAME = _shared.GLIDEIN_NAME        # GlideinName   == GLIDEIN_Name
REQUEST_NAME = "frontend.request.name"     # ReqName: entry@glidein@factory
FACTORY_POOL = "frontend.request.factory_pool"  # the Factory collector the request goes to
IN_DOWNTIME = "frontend.request.in_downtime"

# frontend.request: the numbers of the request (glideinFrontendElement.iterate_one's per-entry
# stats tuple, the columns of its "Jobs in schedd queues | Slots | Cores | Glidein Req" log line)
IDLE_JOBS = "frontend.request.idle_jobs"                  # prop_jobs["Idle"]: this entry's share of idle jobs
MATCHING_IDLE_JOBS = "frontend.request.matching_idle_jobs"  # count_jobs["Idle"]: idle jobs that match the entry
EFFECTIVE_IDLE = "frontend.request.effective_idle"        # max(prop idle - idle glideins, 0)
EFFECTIVE_IDLE_MC = "frontend.request.effective_idle_mc"  # the multicore-scaled value compute_glidein_min_idle uses
OLD_IDLE_JOBS = "frontend.request.old_idle_jobs"          # prop_jobs["OldIdle"]
RUNNING_JOBS = "frontend.request.running_jobs"            # count_jobs["Running"]
GLIDEINS_TOTAL = "frontend.request.glideins_total"        # count_status["Total"]
IDLE_GLIDEINS = "frontend.request.idle_glideins"          # count_status["Idle"]
RUNNING_GLIDEINS = "frontend.request.running_glideins"    # count_status["Running"]
REQ_IDLE_GLIDEINS = "frontend.request.req_idle_glideins"  # compute_glidein_min_idle -> ReqIdleGlideins
REQ_MAX_GLIDEINS = "frontend.request.req_max_glideins"    # compute_glidein_max_run -> ReqMaxGlideins
LIMITS_TRIGGERED = "frontend.request.limits_triggered"    # names of the limits/curbs that cut the request
REMOVE_EXCESS = "frontend.request.remove_excess"          # decide_removal_type: NO, WAIT, IDLE, ALL, ...
ADVERTISED = "frontend.request.advertised"                # MultiAdvertizeWork.add was called (a factory key existed)
TRACEPARENT_SENT = "frontend.request.traceparent_param"   # the GlideinParam was added to the request
INCOMPLETE = "frontend.request.incomplete"                # closed by the cycle, not by its own end

# The per-entry stats tuple of iterate_one ("this_stats_arr", 17 numbers, the order of
# log_factory_header's columns) -> attribute; indexes not listed are not recorded.
STATS_TUPLE_ATTRIBUTES = {
    0: IDLE_JOBS,
    1: MATCHING_IDLE_JOBS,
    2: EFFECTIVE_IDLE,
    3: OLD_IDLE_JOBS,
    5: RUNNING_JOBS,
    8: GLIDEINS_TOTAL,
    9: IDLE_GLIDEINS,
    10: RUNNING_GLIDEINS,
    15: REQ_IDLE_GLIDEINS,
    16: REQ_MAX_GLIDEINS,
}
STATS_TUPLE_LENGTH = 17

# The per-group history-file key where the cycle counter is kept between cycles.
HISTORY_CYCLE_KEY = "glidein_tracing_cycle"
