"""The public names of a glidein's trace: the one place each span stage and attribute is spelled.

docs/span-conventions.md documents every name here (a test checks that the two agree, both
ways): it is the contract users' queries and dashboards depend on. Import a name from here rather than spelling it again. Each attribute's
constant is its name in capitals with ``.`` as ``_`` (``glidein.outcome`` -> GLIDEIN_OUTCOME).
The Frontend's own names are in frontend_hooks/conventions.py, the knobs in knobs.py.
"""

# -- Stages: the value of ``glidein.stage`` ------------------------------------------------
STAGE = "glidein.stage"
STAGE_GLIDEIN = "glidein"                       # the root: the whole life of one glidein
STAGE_FACTORY_SUBMIT = "factory.submit"
STAGE_FACTORY_QUEUE = "factory.queue"
STAGE_FACTORY_HELD = "factory.held"
STAGE_SETUP = "setup"
STAGE_VALIDATION = "validation"                 # one GlideinWMS setup/validation script
STAGE_CONDOR = "condor.start"
STAGE_IDLE = "idle"
STAGE_JOB = "job"                               # also the user's view, "job on glidein"
STAGE_JOB_WAIT = "job.wait"                     # the user's view only
STAGE_JOB_WAITING = "job.waiting"               # the user's view, live: why idle jobs wait (Frontend)
STAGE_JOB_PHASE = "job.phase"                   # a user job's phase (docs/user-phases.md); also in the user's view
STAGE_TEARDOWN = "teardown"
STAGE_POST_FAILURE_SLEEP = "post_failure_sleep"
STAGE_FRONTEND_CYCLE = "frontend.cycle"         # frontend_hooks/conventions.py takes both from here
STAGE_FRONTEND_REQUEST = "frontend.request"
FACTORY_STAGE_PREFIX = "factory."               # every stage the Factory's activity log makes

# Span names that differ from their stage (the others are named as their stage; a
# validation span is named after its script)
SPAN_GLIDEIN = "glidein"                        # the root: "glidein ENTRY OUTCOME" (root.py)
SPAN_CONDOR = "condor"
SPAN_JOB_ON_GLIDEIN = "job on glidein"

# -- Identity: on the root and as resource attributes ---------------------------------------
GLIDEIN_FACTORY = "glidein.factory"
GLIDEIN_NAME = "glidein.name"
GLIDEIN_ENTRY = "glidein.entry"
GLIDEIN_CLIENT = "glidein.client"
GLIDEIN_CLIENT_GROUP = "glidein.client_group"
GLIDEIN_OVERLOAD_ENABLED = "glidein.overload_enabled"   # GlideinOverloadEnabled (the Factory's job ad)
GLIDEIN_RESOURCE_NAME = "glidein.resource_name"         # GLIDEIN_ResourceName (glidein_config)
GLIDEIN_SCHEDD = "glidein.schedd"
GLIDEIN_CLUSTER = "glidein.cluster"
GLIDEIN_PROC = "glidein.proc"
GLIDEIN_MULTI_INDEX = "glidein.multi_index"
GLIDEIN_SITE = "glidein.site"
GLIDEIN_UUID = "glidein.uuid"
IDENTITY = (GLIDEIN_FACTORY, GLIDEIN_NAME, GLIDEIN_ENTRY, GLIDEIN_CLIENT, GLIDEIN_CLIENT_GROUP,
            GLIDEIN_SCHEDD, GLIDEIN_CLUSTER, GLIDEIN_PROC, GLIDEIN_MULTI_INDEX, GLIDEIN_SITE,
            GLIDEIN_UUID)
#: journal claims on the root's identity the Factory left out (they contradicted its own)
INPUT_IDENTITY_IGNORED = "glidein_tracing.input.identity_ignored"
#: journal lines dated outside the glidein's life as the Factory measured it, left out
INPUT_OUTSIDE_LIFE = "glidein_tracing.input.outside_life"
SERVICE_NAME = "service.name"                   # resource; knob GLIDEIN_TRACING_SERVICE_NAME
DEFAULT_SERVICE_NAME = "glidein"

# Host facts (resource attributes)
HOST_NAME = "host.name"
HOST_ARCH = "host.arch"
HOST_CPU_MODEL_NAME = "host.cpu.model.name"
HOST_CPU_LOGICAL_COUNT = "host.cpu.logical_count"
HOST_MEMORY_TOTAL_BYTES = "host.memory.total_bytes"
OS_TYPE = "os.type"
OS_DESCRIPTION = "os.description"
OS_VERSION = "os.version"

# -- Per-stage resources (resources.py): only what the readings inside the stage measured ----
# the lifetime timeouts in force when setup ended (the glidein table's columns of the same names)
GLIDEIN_SETTING_PREFIX = "glidein.setting."
GLIDEIN_SETTING_MAX_IDLE_S = "glidein.setting.max_idle_s"
GLIDEIN_SETTING_MAX_TAIL_S = "glidein.setting.max_tail_s"
GLIDEIN_SETTING_RETIRE_TIME_S = "glidein.setting.retire_time_s"
GLIDEIN_SETTING_RETIRE_TIME_SPREAD_S = "glidein.setting.retire_time_spread_s"
GLIDEIN_SETTING_MAX_WALLTIME_S = "glidein.setting.max_walltime_s"
GLIDEIN_SETTING_JOB_MAX_TIME_S = "glidein.setting.job_max_time_s"
GLIDEIN_SETTING_GRACEFUL_SHUTDOWN_S = "glidein.setting.graceful_shutdown_s"
GLIDEIN_RESOURCE_PREFIX = "glidein.resource."
GLIDEIN_RESOURCE_CPU_USER_S = "glidein.resource.cpu_user_s"
GLIDEIN_RESOURCE_CPU_SYSTEM_S = "glidein.resource.cpu_system_s"
GLIDEIN_RESOURCE_WINDOW_S = "glidein.resource.window_s"
GLIDEIN_RESOURCE_MAX_RSS_BYTES = "glidein.resource.max_rss_bytes"
GLIDEIN_RESOURCE_MAX_RSS_SOURCE = "glidein.resource.max_rss_source"
GLIDEIN_RESOURCE_MAX_RSS_KIND = "glidein.resource.max_rss_kind"
GLIDEIN_RESOURCE_RSS_MAX_SAMPLED_BYTES = "glidein.resource.rss_max_sampled_bytes"
GLIDEIN_RESOURCE_DISK_FREE_MIN_BYTES = "glidein.resource.disk_free_min_bytes"
GLIDEIN_RESOURCE_LOAD1_MAX = "glidein.resource.load1_max"
GLIDEIN_RESOURCE_DISK_FREE_BYTES = "glidein.resource.disk_free_bytes"
GLIDEIN_RESOURCE_LOAD1 = "glidein.resource.load1"

# -- The root and the glidein's end --------------------------------------------------------
GLIDEIN_OUTCOME = "glidein.outcome"
OUTCOME_OK = "ok"
OUTCOME_VALIDATION_FAILED = "validation_failed"
OUTCOME_TERMINATED = "terminated"
OUTCOME_INCOMPLETE = "incomplete"
OUTCOME_KILLED = "killed"
OUTCOME_REMOVED = "removed"
OUTCOME_NEVER_RAN = "never_ran"
OUTCOME_NO_GLIDEIN_OUTPUT = "no_glidein_output"
OUTCOME_UNTRACED = "untraced"
# false: the glidein's output came back without a journal and it was not asked to trace (its
# entry does not trace); the Factory's view only, never a failure (absent: traced)
GLIDEIN_TRACED = "glidein.traced"
GLIDEIN_INCOMPLETE = "glidein.incomplete"
GLIDEIN_CLOSED_BY = "glidein.closed_by"         # "converter": a stage a killed glidein left open
CLOSED_BY_CONVERTER = "converter"
GLIDEIN_EXIT_CODE = "glidein.exit_code"
GLIDEIN_CPUS = "glidein.cpus"
GLIDEIN_GATEKEEPER = "glidein.gatekeeper"
GLIDEIN_RECORDS = "glidein.records"
# what GlideinWMS's Factory read in the glidein's returned stdout (factory/glidein_stdout.py)
GLIDEIN_GWMS_PREFIX = "glidein.gwms."
GLIDEIN_GWMS_VALIDATION_S = "glidein.gwms.validation_s"     # "after validating for N"
GLIDEIN_GWMS_CONDOR_STARTED = "glidein.gwms.condor_started"  # "=== Condor starting" printed
GLIDEIN_GWMS_CONDOR_S = "glidein.gwms.condor_s"             # "Condor ended ... after N"
GLIDEIN_GWMS_GLIDEIN_S = "glidein.gwms.glidein_s"           # "Glidein ending ... after N"
GLIDEIN_GWMS_EXIT_CODE = "glidein.gwms.exit_code"           # "Glidein ending ... with code C"
GLIDEIN_GWMS_JOBS_NR = "glidein.gwms.jobs_nr"               # StarterLog summary: Total jobs
GLIDEIN_GWMS_JOBS_S = "glidein.gwms.jobs_s"                 # ... Total utilization
GLIDEIN_GWMS_GOODZ_S = "glidein.gwms.goodz_s"               # ... goodZ utilization
GLIDEIN_GWMS_GOODNZ_S = "glidein.gwms.goodnz_s"             # ... goodNZ utilization
GLIDEIN_GWMS_STARTUP_MD5 = "glidein.gwms.startup_md5"       # "script_checksum = 'MD5  ./glidein_startup.sh'"
GLIDEIN_REQUEST_TRACEPARENT = "glidein.request_traceparent"
GLIDEIN_REQUEST_TRACE_ID = "glidein.request_trace_id"   # its trace id: a tag search finds a request's glideins
GLIDEIN_FAILED = "glidein.failed"               # true on the root of a glidein that did not end ok
GLIDEIN_SHUTDOWN_REASON = "glidein.shutdown.reason"
GLIDEIN_SHUTDOWN_IDLE_S = "glidein.shutdown.idle_s"
GLIDEIN_IDLE_KIND = "glidein.idle.kind"         # before_first_job, between_jobs, tail, no_job
GLIDEIN_SLEEP_REASON = "glidein.sleep.reason"
GLIDEIN_SLEEP_END_SOURCE = "glidein.sleep.end_source"

# -- Validation scripts (GlideinWMS per-script records) -------------------------------------
GLIDEIN_SCRIPT_ID = "glidein.script.id"
GLIDEIN_SCRIPT_LIST = "glidein.script.list"
GLIDEIN_SCRIPT_STATUS = "glidein.script.status"
GLIDEIN_SCRIPT_DETAIL = "glidein.script.detail"
GLIDEIN_SCRIPT_MAX_DURATION_S = "glidein.script.max_duration_s"   # the record's bound: lasted less
GLIDEIN_CLOCK_NODE_EARLY_S = "glidein.clock.node_early_s"   # node's first stage before the execute event by
GLIDEIN_CLOCK_SHIFT_S = "glidein.clock.shift_s"     # the node's stages moved later by
GLIDEIN_TIME_PLACED = "glidein.time.placed"     # how a span's drawn times were placed, when not measured
TIME_PLACED_RECORD_ORDER = "record_order"       # whole-second records, placed in record order
TIME_PLACED_MIN_DURATION = "min_duration"       # measured as lasting nothing: drawn 1 us long
GLIDEIN_SCRIPT_METRIC_PREFIX = "glidein.script.metric."

# -- condor.start ---------------------------------------------------------------------------
CONDOR_EXIT_CODE = "condor.exit_code"
CONDOR_DURATION_S = "condor.duration_s"
CONDOR_STARTED = "condor.started"               # "=== Condor starting" in the glidein's stdout copy
CONDOR_AUTO_SHUTDOWN = "condor.auto_shutdown"
CONDOR_KILLED = "condor.killed"
CONDOR_METRIC_PREFIX = "condor.metric."
CONDOR_END_SOURCE = "condor.end_source"        # last_job: condor ends with its last job

# -- job ------------------------------------------------------------------------------------
JOB_GLOBAL_ID = "job.global_id"
JOB_CLUSTER_ID = "job.cluster_id"
JOB_PROC_ID = "job.proc_id"
JOB_OWNER = "job.owner"
JOB_ACCOUNTING_GROUP = "job.accounting_group"
JOB_REQUEST_CPUS = "job.request_cpus"
JOB_REQUEST_MEMORY_MB = "job.request_memory_mb"
JOB_REQUEST_DISK_KB = "job.request_disk_kb"
JOB_SLOT = "job.slot"
JOB_EXIT_CODE = "job.exit_code"
JOB_END_CUT_REASON = "job.end_cut_reason"      # a job cut at condor's end (SIGTERM)
JOB_RECORDED_END_S = "job.recorded_end_s"
JOB_EXIT_SIGNAL = "job.exit_signal"
JOB_EXIT_BY = "job.exit_by"                     # exit, remove, hold, evict
JOB_USER_TRACEPARENT = "job.user_traceparent"
JOB_QDATE = "job.qdate"
JOB_NUM_JOB_STARTS = "job.num_job_starts"
JOB_RSS_BYTES = "job.rss_bytes"
JOB_END_SOURCE = "job.end_source"               # "StartdHistoryLog" when the history ended it
JOB_HOLD_REASON = "job.hold_reason"
JOB_HOLD_REASON_CODE = "job.hold_reason_code"
JOB_HOLD_REASON_SUBCODE = "job.hold_reason_subcode"
JOB_WALL_S = "job.wall_s"
JOB_REMOTE_HOST = "job.remote_host"

# -- job.phase: a user job's phases (docs/user-phases.md) ------------------------------------
JOB_PHASE_NAME = "job.phase.name"
JOB_PHASE_EXIT_CODE = "job.phase.exit_code"
JOB_PHASE_SIGNAL = "job.phase.signal"
GLIDEIN_JOB_SPAN_ID = "glidein.job_span_id"     # the glidein's job span a phase belongs to
# on the job span: the phase spool as the job-exit hook found it
JOB_PHASES = "job.phases"
JOB_PHASES_CUT = "job.phases.cut"
JOB_PHASES_MARKS_CUT = "job.phases.marks_cut"
JOB_PHASES_REJECTED_LINES = "job.phases.rejected_lines"
JOB_PHASES_NAMES_CUT = "job.phases.names_cut"
JOB_PHASES_SPOOL_CUT_BYTES = "job.phases.spool_cut_bytes"

# -- The user's view: spans in the user's own trace ------------------------------------------
GLIDEIN_USER_VIEW = "glidein.user_view"
GLIDEIN_TRACE_ID = "glidein.trace_id"
GLIDEIN_QUEUE_WAIT_S = "glidein.queue_wait_s"
GLIDEIN_VALIDATION_S = "glidein.validation_s"
JOB_WAIT_S = "job.wait_s"
JOB_WAIT_GLIDEIN = "job.wait.glidein"           # "new" or "idle"
JOB_WAIT_GLIDEIN_IDLE_S = "job.wait.glidein_idle_s"

# -- job.waiting: why a submission's idle jobs wait (frontend_hooks/waiting.py, docs/why-waiting.md)
JOB_WAITING_REASON = "job.waiting.reason"               # a value of core/waiting_reasons.py
JOB_WAITING_DETAIL = "job.waiting.detail"               # the reason in one sentence
JOB_WAITING_STATE = "job.waiting.state"                 # "current" (the period began) or "ended"
JOB_WAITING_END = "job.waiting.end"                     # ended: "reason_changed" or "no_idle_jobs"
JOB_WAITING_IDLE_JOBS = "job.waiting.idle_jobs"         # the submission's idle jobs the group saw
JOB_WAITING_JOBS = "job.waiting.jobs"                   # its first idle job per schedd, cluster.proc@schedd
JOB_WAITING_ENTRIES = "job.waiting.entries"             # the entries its jobs match
JOB_WAITING_REASON_ENTRIES = "job.waiting.reason_entries"  # the entries that give the reason
JOB_WAITING_LIMITS = "job.waiting.limits"               # limits and curbs hit at those entries
JOB_WAITING_SITES = "job.waiting.sites"                 # the GLIDEIN_Site of those entries
JOB_WAITING_QUEUED_GLIDEINS = "job.waiting.queued_glideins"    # Factory: idle in the site queue
JOB_WAITING_RUNNING_AT_SITE = "job.waiting.running_at_site"    # Factory: running at the site
JOB_WAITING_GLIDEINS_IN_POOL = "job.waiting.glideins_in_pool"  # the group's glideins there
JOB_WAITING_IDLE_GLIDEINS = "job.waiting.idle_glideins"        # counted idle by the Frontend
JOB_WAITING_UNUSABLE_RETIRING = "job.waiting.unusable.retiring"  # of those: retiring
JOB_WAITING_UNUSABLE_MEMORY = "job.waiting.unusable.memory"      # too little free memory
JOB_WAITING_UNUSABLE_CPUS = "job.waiting.unusable.cpus"          # too few free cores
JOB_WAITING_UNUSABLE_DISK = "job.waiting.unusable.disk"          # too little free disk
JOB_WAITING_UNUSABLE_TIME = "job.waiting.unusable.time"          # too little time left
JOB_WAITING_GLIDEIN_MEMORY = "job.waiting.glidein_memory"      # most free memory (MB) of one
JOB_WAITING_GLIDEIN_CPUS = "job.waiting.glidein_cpus"          # most free cores of one
JOB_WAITING_GLIDEIN_DISK = "job.waiting.glidein_disk"          # most free disk (KiB) of one
JOB_WAITING_REQUEST_CPUS = "job.waiting.request_cpus"          # the job's RequestCpus
JOB_WAITING_REQUEST_MEMORY = "job.waiting.request_memory"      # RequestMemory (MB)
JOB_WAITING_REQUEST_DISK = "job.waiting.request_disk"          # RequestDisk (KiB)
JOB_WAITING_LAST_TODAY = "job.waiting.last_today"      # the day's span budget is spent after this one
JOB_WAITING_PART_GLIDEIN_MIN_MEMORY = "job.waiting.part_glidein_min_memory"  # the group's PartGlideinMinMemory (MB)
# the evidence of no_matching_entry and unknown (the submission's owner is JOB_OWNER)
JOB_WAITING_MATCH_EXPR = "job.waiting.match_expr"      # the group's match expression, as GlideinWMS joined it
JOB_WAITING_MATCH_ERROR = "job.waiting.match_error"    # unknown: why it could not be evaluated (ExcType: message)
JOB_WAITING_JOB_VALUES = "job.waiting.job_values"      # the job's values the match reads, "Attr=value"
JOB_WAITING_GROUP_ENTRIES = "job.waiting.group_entries"  # the entries it was tried on, "name: Attr=value, ..."
JOB_WAITING_GROUP_ENTRY_COUNT = "job.waiting.group_entry_count"  # how many (group_entries lists at most 10)

# -- The Factory's view (the Condor-G activity log) ------------------------------------------
FACTORY_SUBMIT_HOST = "factory.submit_host"
FACTORY_GRID_RESOURCE = "factory.grid_resource"
FACTORY_GRID_JOB_ID = "factory.grid_job_id"
FACTORY_EXECUTE_HOST = "factory.execute_host"
FACTORY_HOLD_REASON = "factory.hold_reason"
FACTORY_HOLD_REASON_CODE = "factory.hold_reason_code"
FACTORY_HOLD_REASON_SUBCODE = "factory.hold_reason_subcode"
FACTORY_RELEASE_REASON = "factory.release_reason"
FACTORY_RETURN_VALUE = "factory.return_value"
FACTORY_TERMINATED_NORMALLY = "factory.terminated_normally"
FACTORY_SIGNAL = "factory.signal"
FACTORY_REMOVED = "factory.removed"
FACTORY_REMOVE_REASON = "factory.remove_reason"
FACTORY_EVICTED = "factory.evicted"
FACTORY_TERMINATED = "factory.terminated"       # a value of glidein.sleep.end_source

# -- Failures (failure.py) ---------------------------------------------------------------------
ERROR_TYPE = "error.type"
GLIDEIN_FAILURE_DOMAIN = "glidein.failure.domain"
GLIDEIN_FAILURE_EVIDENCE = "glidein.failure.evidence"
JOB_FAILURE_DOMAIN = "job.failure.domain"
JOB_FAILURE_EVIDENCE = "job.failure.evidence"
# set by a VO's failure rule (glidein_tracing/failure_rules), on the root or on a job span
GLIDEIN_FAILURE_RULE = "glidein.failure.rule"
GLIDEIN_FAILURE_LABEL = "glidein.failure.label"
GLIDEIN_FAILURE_ADVICE = "glidein.failure.advice"
GLIDEIN_FAILURE_SERVICE = "glidein.failure.service"
GLIDEIN_FAILURE_DOWNTIME = "glidein.failure.downtime"
JOB_FAILURE_RULE = "job.failure.rule"
JOB_FAILURE_LABEL = "job.failure.label"
JOB_FAILURE_ADVICE = "job.failure.advice"
JOB_FAILURE_SERVICE = "job.failure.service"
JOB_FAILURE_DOWNTIME = "job.failure.downtime"

# -- Events -----------------------------------------------------------------------------------
GLIDEIN_TRACING_NOTE = "glidein_tracing.note"   # a hook's note; attribute "message"
NOTE_MESSAGE = "message"
GLIDEIN_LOG_TAIL = "glidein.log_tail"           # the failed stage's log tail
LOG_SOURCE = "log.source"
LOG_LINES = "log.lines"
LOG_NOTE = "log.note"
JOB_LOG_TAIL = "job.log_tail"                   # a failed job's own stdout/stderr tail
JOB_PHASE_MARK = "job.phase.mark"               # a phase command's mark; attribute "message"

# -- Links --------------------------------------------------------------------------------------
GLIDEIN_LINK_KIND = "glidein.link.kind"
TRACEPARENT = "traceparent"
LINK_FRONTEND_REQUEST = "frontend_request"
LINK_USER_JOB = "user_job"
LINK_GLIDEIN_JOB = "glidein_job"
LINK_USER_PHASE = "user_phase"                  # a phase in the glidein's trace -> the same in the user's
LINK_RELATED = "related"

# -- What glidein_tracing itself did to the trace (limits, input, sampling) ---------------------
GLIDEIN_TRACING_JOBS_NOT_TRACED = "glidein_tracing.jobs_not_traced"
GLIDEIN_TRACING_IDLE_NOT_TRACED = "glidein_tracing.idle_not_traced"
GLIDEIN_TRACING_JOURNAL_SKIPPED_LINES = "glidein_tracing.journal.skipped_lines"
GLIDEIN_TRACING_JOURNAL_SKIPPED = "glidein_tracing.journal.skipped"
GLIDEIN_TRACING_DROPPED_PREFIX = "glidein_tracing.dropped_"   # + attributes, links, events, spans
GLIDEIN_TRACING_DIGEST = "glidein_tracing.digest"         # every span: what the backend must hold to count it delivered
GLIDEIN_TRACING_SAMPLING_RATIO = "glidein_tracing.sampling_ratio"
GLIDEIN_TRACING_INPUT_PREFIX = "glidein_tracing.input."       # + cut_sections, cut_bytes, cut_lines
