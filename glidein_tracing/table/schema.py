"""The glidein table's columns: a public contract (docs/glidein-table.md) that users' SQL
depends on. One constant per dataset; SCHEMA_VERSION changes whenever a column is renamed,
retyped or removed, or when files gain columns a reader must tell apart from absent ones
(columns added at the end keep old files readable, those columns NULL: see reader.py).
Version 2 added the glidein's job timeline (``job_*`` list columns), then ``traced`` (NULL in
the files written before it: read as traced), then ``overload_enabled``, ``resource_name`` and
``glidein_version`` (NULL in the files written before them)."""

from __future__ import annotations

from typing import NamedTuple
from ..core import conventions as c

SCHEMA_VERSION = 2

#: The datasets under the table's directory, each hive-partitioned ``date=YYYY-MM-DD/`` by
#: the UTC day the glidein ended.
GLIDEINS_DATASET = "glideins"
JOBS_DATASET = "jobs"
PARTITION_COLUMN = "date"


class Column(NamedTuple):
    name: str
    sql_type: str  # DuckDB type; every one maps to a plain Parquet type (``T[]``: a Parquet LIST of T)
    unit: str
    meaning: str


def arrow_type(sql_type: str):
    """The Arrow type of a column's DuckDB type (``T[]``: a list of T): the table's columns and
    the rollups' (rollup.py)."""
    import pyarrow as pa
    if sql_type.endswith("[]"):
        return pa.list_(arrow_type(sql_type[:-2]))
    return {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "DOUBLE": pa.float64(),
            "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us")}[sql_type]


def _c(name, sql_type, unit, meaning) -> Column:
    return Column(name, sql_type, unit, meaning)


_IDENTITY = (
    _c("schema_version", "INTEGER", "", "this table's schema version (SCHEMA_VERSION)"),
    _c("trace_id", "VARCHAR", "32 hex", "the glidein's trace id (docs/ids.md)"),
    _c("factory", "VARCHAR", "", "GLIDEIN_Factory"),
    _c("entry", "VARCHAR", "", "GLIDEIN_Entry_Name"),
    _c("site", "VARCHAR", "", "the entry's GLIDEIN_Site in glideinWMS.xml when the forwarder reads it, else as glidein_config held it when setup ended (unless the journal named two)"),
    _c("client", "VARCHAR", "", "GLIDECLIENT_Name (Frontend client)"),
    _c("client_group", "VARCHAR", "", "GLIDECLIENT_Group (Frontend group)"),
    _c("schedd", "VARCHAR", "", "CONDORG_SCHEDD: the Factory schedd that submitted it"),
    _c("cluster", "BIGINT", "", "CONDORG_CLUSTER"),
    _c("proc", "BIGINT", "", "CONDORG_SUBCLUSTER"),
    _c("multi_index", "INTEGER", "", "index among -multirestart glideins (0 when single)"),
    _c("glidein_name", "VARCHAR", "", "GLIDEIN_Name"),
    _c("uuid", "VARCHAR", "", "GLIDEIN_UUID"),
)

GLIDEINS: tuple[Column, ...] = _IDENTITY + (
    # times: instants are UTC, durations are the matching spans' durations
    _c("submitted_at", "TIMESTAMP", "UTC", "start of factory.submit (Factory activity log)"),
    _c("queue_wait_s", "DOUBLE", "s", "sum of the factory.queue spans (waiting at the site)"),
    _c("held_s", "DOUBLE", "s", "sum of the factory.held spans"),
    _c("node_start_at", "TIMESTAMP", "UTC", "start of setup: glidein_startup.sh started on the node"),
    _c("setup_s", "DOUBLE", "s", "the setup span"),
    _c("validation_main_s", "DOUBLE", "s", "sum of the validation spans of the main lists"),
    _c("validation_entry_s", "DOUBLE", "s", "sum of the validation spans of the entry list"),
    _c("validation_client_s", "DOUBLE", "s", "sum of the validation spans of the client lists"),
    _c("validation_client_group_s", "DOUBLE", "s", "sum of the validation spans of the client group lists"),
    _c("validation_scripts", "INTEGER", "", "number of validation spans (per-script records)"),
    _c("condor_start_at", "TIMESTAMP", "UTC", "start of the condor span (condor_startup.sh)"),
    _c("condor_s", "DOUBLE", "s", "the condor span"),
    _c("idle_before_first_job_s", "DOUBLE", "s", "idle span of kind before_first_job"),
    _c("idle_between_jobs_s", "DOUBLE", "s", "sum of idle spans of kind between_jobs"),
    _c("idle_tail_s", "DOUBLE", "s", "idle span of kind tail (after the last job)"),
    _c("idle_no_job_s", "DOUBLE", "s", "idle span of kind no_job (HTCondor ran, no job came)"),
    _c("jobs", "INTEGER", "", "job spans in the trace (rows in the jobs dataset)"),
    _c("jobs_wall_s", "DOUBLE", "s", "sum of the job spans"),
    _c("teardown_s", "DOUBLE", "s", "the teardown span"),
    _c("post_failure_sleep_s", "DOUBLE", "s", "the post_failure_sleep span"),
    _c("started_at", "TIMESTAMP", "UTC", "start of the root span (submission, else node start)"),
    _c("ended_at", "TIMESTAMP", "UTC", "end of the root span; its UTC day is the partition"),
    _c("glidein_s", "DOUBLE", "s", "the root span: the whole life"),
    # outcome
    _c("outcome", "VARCHAR", "", "glidein.outcome (ok, validation_failed, terminated, incomplete, killed, removed, never_ran, no_glidein_output, untraced)"),
    _c("failed", "BOOLEAN", "", "root in error or outcome not ok, and traced (the sampling rule's 'failed')"),
    _c("failure_domain", "VARCHAR", "", "glidein.failure.domain (docs/failures.md)"),
    _c("failure_evidence", "VARCHAR", "", c.GLIDEIN_FAILURE_EVIDENCE),
    _c("failure_stage", "VARCHAR", "", "name of the first span in error (the failed script, condor, factory.held, glidein)"),
    _c("failure_type", "VARCHAR", "", "error.type of that span (WN_Resource, VO_Config, removed, ...)"),
    _c("failure_message", "VARCHAR", "", "its status description, redacted, at most 1000 characters"),
    _c("failure_rule", "VARCHAR", "", "glidein.failure.rule: the VO's failure rule that decided the domain (docs/failures.md)"),
    _c("failure_label", "VARCHAR", "", c.GLIDEIN_FAILURE_LABEL),
    _c("failure_service", "VARCHAR", "", "glidein.failure.service: the failed service (domain service)"),
    _c("failure_downtime", "VARCHAR", "", "glidein.failure.downtime: the declared downtime it fell in"),
    _c("shutdown_reason", "VARCHAR", "", "glidein.shutdown.reason of the condor span"),
    _c("exit_code", "INTEGER", "", "glidein.exit_code (teardown)"),
    _c("incomplete", "BOOLEAN", "", "the converter closed stages a killed glidein left open"),
    # GlideinWMS's own quantities (factory/glideFactoryMonitoring.py), integer seconds
    _c("gwms_condor_started", "BOOLEAN", "", "GlideinWMS's condor_started: the condor phase ran"),
    _c("gwms_lasted_s", "BIGINT", "s", "Lasted: the glidein's duration as GlideinWMS counts it"),
    _c("gwms_validation_s", "BIGINT", "s", "validation_duration: node start to the last script's start"),
    _c("gwms_condor_lasted_s", "BIGINT", "s", "CondorLasted: HTCondor's run"),
    _c("gwms_jobs_nr", "BIGINT", "", "JobsNr: user jobs started"),
    _c("gwms_jobs_lasted_s", "BIGINT", "s", "JobsLasted: the jobs' run times summed (real, not divided by cpus)"),
    _c("gwms_jobs_goodput_s", "BIGINT", "s / cpus", "JobsGoodput: run time of jobs that exited 0, divided by GLIDEIN_CPUS"),
    _c("gwms_jobs_terminated_s", "BIGINT", "s / cpus", "JobsTerminated: JobsGoodput + run time of jobs that exited non-zero / GLIDEIN_CPUS"),
    _c("waste_validation_mill", "DOUBLE", "per mille", "Waste validation"),
    _c("waste_idle_mill", "DOUBLE", "per mille", "Waste idle"),
    _c("waste_nosuccess_mill", "DOUBLE", "per mille", "Waste nosuccess"),
    _c("waste_badput_mill", "DOUBLE", "per mille", "Waste badput"),
    # the settings in force and the host
    _c("max_idle_s", "DOUBLE", "s", "GLIDEIN_Max_Idle as glidein_config held it when setup ended"),
    _c("max_tail_s", "DOUBLE", "s", "GLIDEIN_Max_Tail"),
    _c("retire_time_s", "DOUBLE", "s", "GLIDEIN_Retire_Time"),
    _c("retire_time_spread_s", "DOUBLE", "s", "GLIDEIN_Retire_Time_Spread"),
    _c("max_walltime_s", "DOUBLE", "s", "GLIDEIN_Max_Walltime"),
    _c("job_max_time_s", "DOUBLE", "s", "GLIDEIN_Job_Max_Time"),
    _c("graceful_shutdown_s", "DOUBLE", "s", "GLIDEIN_Graceful_Shutdown"),
    _c("cpus", "INTEGER", "cores", "GLIDEIN_CPUS (glidein.cpus)"),
    _c("gatekeeper", "VARCHAR", "", "GLIDEIN_Gatekeeper"),
    _c("host_name", "VARCHAR", "", "host.name of the worker node"),
    _c("cpu_model", "VARCHAR", "", c.HOST_CPU_MODEL_NAME),
    _c("cpu_logical_count", "INTEGER", "", c.HOST_CPU_LOGICAL_COUNT),
    _c("memory_bytes", "BIGINT", "bytes", c.HOST_MEMORY_TOTAL_BYTES),
    _c("os_description", "VARCHAR", "", c.OS_DESCRIPTION),
    _c("os_version", "VARCHAR", "", "os.version (kernel release)"),
    _c("sampling_ratio", "DOUBLE", "", "glidein_tracing.sampling_ratio the glidein ran with (null: none in the journal)"),
    _c("trace_kept", "BOOLEAN", "", "the forwarder kept the trace (sampling); false: the row is the only record"),
    # the job timeline: one element per job span, in the order of their starts (then ends, then
    # span ids); the same values as the jobs' rows (NULL: a file of schema version 1)
    _c("job_started_at", "TIMESTAMP[]", "UTC", "each job's start (the jobs' started_at)"),
    _c("job_ended_at", "TIMESTAMP[]", "UTC", "each job's end (the jobs' ended_at)"),
    _c("job_request_cpus", "INTEGER[]", "cores", "each job's request_cpus"),
    _c("job_failed", "BOOLEAN[]", "", "each job failed: a failure domain, a non-zero exit code, a signal, or removed, held or evicted"),
    _c("implausible_values", "INTEGER", "", "values the node reported for the glidein and its jobs that were refused "
       "(not finite, negative, beyond its lifetime or a node's physical bounds): stored NULL, a duration its span's length"),
    # added later in version 2: NULL in files written before, read as traced (COALESCE(traced, true))
    _c("traced", "BOOLEAN", "", "false: an untraced glidein (its output came back with no journal and it was not asked to trace: its entry does not trace), recorded from the Factory's view, never failed"),
    # added later in version 2: NULL in files written before
    _c("overload_enabled", "BOOLEAN", "", "GlideinOverloadEnabled: the Factory ran the glidein overloaded (its "
       "job ad, and the activity log's events with job_ad_information_attrs)"),
    _c("resource_name", "VARCHAR", "", "GLIDEIN_ResourceName as glidein_config held it (OSG's resource: the "
       "accounting's join key)"),
    _c("glidein_version", "VARCHAR", "", "the md5 of the glidein_startup.sh that ran (its script_checksum line in "
       "the returned stdout): one value per release of the Factory's glidein scripts"),
)

#: the glidein row's job timeline (version 2): parallel lists, one element per job
TIMELINE = ("job_started_at", "job_ended_at", "job_request_cpus", "job_failed")

JOBS: tuple[Column, ...] = (
    _IDENTITY[0], _IDENTITY[1],
    _c("span_id", "VARCHAR", "16 hex", "the glidein's job span"),
    _c("factory", "VARCHAR", "", "the glidein's GLIDEIN_Factory"),
    _c("entry", "VARCHAR", "", "the glidein's entry"),
    _c("site", "VARCHAR", "", "the glidein's site"),
    _c("glidein_name", "VARCHAR", "", "the glidein's GLIDEIN_Name"),
    _c("job_global_id", "VARCHAR", "", "job.global_id (GlobalJobId)"),
    _c("job_cluster", "BIGINT", "", c.JOB_CLUSTER_ID),
    _c("job_proc", "BIGINT", "", c.JOB_PROC_ID),
    _c("owner", "VARCHAR", "", c.JOB_OWNER),
    _c("accounting_group", "VARCHAR", "", c.JOB_ACCOUNTING_GROUP),
    _c("request_cpus", "INTEGER", "cores", c.JOB_REQUEST_CPUS),
    _c("request_memory_mb", "BIGINT", "MB", c.JOB_REQUEST_MEMORY_MB),
    _c("slot", "VARCHAR", "", c.JOB_SLOT),
    _c("started_at", "TIMESTAMP", "UTC", "start of the job span"),
    _c("ended_at", "TIMESTAMP", "UTC", "end of the job span; its UTC day is NOT the partition (the glidein's is)"),
    _c("wall_s", "DOUBLE", "s", "the job span"),
    _c("remote_wall_s", "DOUBLE", "s", "job.wall_s (RemoteWallClockTime of the final job ad)"),
    _c("wait_s", "DOUBLE", "s", "job.wait: submission (QDate) to start on the glidein"),
    _c("idle_before_s", "DOUBLE", "s", "the glidein's idle span that ended when this job started"),
    _c("exit_code", "INTEGER", "", c.JOB_EXIT_CODE),
    _c("exit_signal", "INTEGER", "", c.JOB_EXIT_SIGNAL),
    _c("exit_by", "VARCHAR", "", "job.exit_by (exit, remove, hold, evict)"),
    _c("gwms_class", "VARCHAR", "", "GlideinWMS's StarterLog class: goodZ, goodNZ, badSignal, badOther"),
    _c("failure_domain", "VARCHAR", "", c.JOB_FAILURE_DOMAIN),
    _c("failure_rule", "VARCHAR", "", c.JOB_FAILURE_RULE),
    _c("failure_label", "VARCHAR", "", c.JOB_FAILURE_LABEL),
    _c("failure_service", "VARCHAR", "", c.JOB_FAILURE_SERVICE),
    _c("failure_downtime", "VARCHAR", "", c.JOB_FAILURE_DOWNTIME),
    _c("hold_reason", "VARCHAR", "", "job.hold_reason, redacted"),
    _c("num_job_starts", "INTEGER", "", c.JOB_NUM_JOB_STARTS),
    _c("cpu_user_s", "DOUBLE", "s", "RemoteUserCpu (glidein.resource.cpu_user_s of the job span)"),
    _c("cpu_system_s", "DOUBLE", "s", "RemoteSysCpu"),
    _c("rss_bytes", "BIGINT", "bytes", c.JOB_RSS_BYTES),
    _c("user_traceparent", "VARCHAR", "", "job.user_traceparent: the user's own context"),
)

DATASETS = {GLIDEINS_DATASET: GLIDEINS, JOBS_DATASET: JOBS}


def names(columns) -> list[str]:
    return [c.name for c in columns]
