"""The per-(entry, site) aggregate the analysis's statistics are made of: one SQL statement
over glidein rows and one over job rows, each one row per (entry, site) of sums, counts and
fine log-binned histograms, then unpivoted into long rows (``long_rows``: entry, site, name,
key, label, value), which add up: the aggregate of two sets of rows is the sum of theirs per
(entry, site, name, key, label). The writer stores it per merged file (rollup.py); the
analysis runs it over the files without one and sums all (analysis/stats.py): the same SQL
either way, so the numbers are the same either way. Plain SQL fragments over one row (DuckDB
and Spark read them alike) are shared with the analysis's other sections.

A value v > 0 falls in bin ``floor(log10(v) * BINS_PER_DECADE)`` (analysis/histograms.py reads
the bins back: 1.006 % wide); the bin key is ``OFFSET + bin`` for v > 0, 0 for v = 0 and
``-(OFFSET + bin of -v)`` for v < 0, so keys order as the values do.
"""

from __future__ import annotations

from .schema import GLIDEINS_DATASET, JOBS_DATASET, arrow_type

BINS_PER_DECADE = 230
OFFSET = 1_000_000

OWN_TIMEOUT_REASONS = ("max_idle", "daemon_shutdown")
CORES = "COALESCE(NULLIF(cpus, 0), cpu_logical_count, 1)"
NODE_LIFE = "(epoch(ended_at) - epoch(node_start_at))"
VALIDATION_FAILED = "(outcome = 'validation_failed')"
FAILED_EXITS = ("remove", "hold", "evict")   # how a job ended that counts as failed (exit_by)
JOB_CORES = "COALESCE(NULLIF(request_cpus, 0), 1)"   # a job's cores (its badput and goodput)
JOB_FAILED = ("(failure_domain IS NOT NULL OR COALESCE(exit_code, 0) <> 0 OR exit_signal IS NOT NULL "
              f"OR exit_by IN {FAILED_EXITS})")

# metric -> (expression, the rows it has a value for)
GLIDEIN_METRICS = {
    "queue_wait_s": ("queue_wait_s", "true"),
    "setup_s": ("setup_s", "true"),
    "time_to_first_job_s": ("epoch(condor_start_at) - epoch(node_start_at) + idle_before_first_job_s", "jobs > 0"),
    "idle_before_first_job_s": ("idle_before_first_job_s", "jobs > 0"),
    "idle_between_jobs_s": ("idle_between_jobs_s", "jobs > 1"),
    "tail_s": ("idle_tail_s", "jobs > 0"),
    "no_job_s": ("idle_no_job_s", "jobs = 0"),
    "jobs_per_glidein": ("jobs", "condor_s IS NOT NULL"),
    "lifetime_s": (NODE_LIFE, "true"),
}
WASTE = {   # category -> seconds x cores of one glidein row
    "validation": f"CASE WHEN {VALIDATION_FAILED} THEN GREATEST({NODE_LIFE}, setup_s) ELSE setup_s END",
    "idle_before_first_job": "CASE WHEN jobs > 0 THEN idle_before_first_job_s END",
    "idle_between_jobs": "CASE WHEN jobs > 0 THEN idle_between_jobs_s END",
    "idle_tail": "CASE WHEN jobs > 0 THEN idle_tail_s END",
    "no_job": "CASE WHEN jobs = 0 THEN idle_no_job_s END",
    "other": f"CASE WHEN NOT {VALIDATION_FAILED} THEN GREATEST({NODE_LIFE} - setup_s - COALESCE(condor_s, 0), 0) END",
    "lifetime": NODE_LIFE,
}

COUNTED = "jobs_per_glidein"     # whole numbers: its histogram counts the values themselves (exact)
LOG_METRICS = {name: metric for name, metric in GLIDEIN_METRICS.items() if name != COUNTED}
VALIDATION_GROUPS = ("main", "entry", "client", "client_group")
KNOBS = {"max_idle": "max_idle_s", "max_tail": "max_tail_s", "retire": "retire_time_s"}
OWN_TIMEOUT = f"shutdown_reason IN {OWN_TIMEOUT_REASONS}"
# where timeout shutdowns cluster: the seconds idle of the glideins that stopped on their own timeout
THRESHOLD_VALUES = {"max_idle": ("idle_no_job_s", f"jobs = 0 AND {OWN_TIMEOUT}"),
                    "max_tail": ("idle_tail_s", f"jobs > 0 AND {OWN_TIMEOUT}")}
# a failed validation's script and error type as one label (NULL as empty: the report shows both alike)
SCRIPT_SEPARATOR = "\x1f"
FAILING_SCRIPT = f"COALESCE(failure_stage, '') || chr({ord(SCRIPT_SEPARATOR)}) || COALESCE(failure_type, '')"
# one group per (entry, site), keyed by their 64-bit hash: DuckDB turns each histogram() into a
# GROUP BY of its keys and the value, and an integer key costs a quarter less than two strings
PAIR_KEY = "hash(entry, site)"
PAIR = "first(entry) AS entry, first(site) AS site"


def sql_text(value) -> str:
    """``value`` (text, a path) as an SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def mill_range_multiplier(column: str) -> str:
    """SQL: GlideinWMS's range of a per-mille value (glideFactoryMonitoring.getMillRange: None,
    5m, 25m, 100m, 250m, 500m, Most, All) as analyze_entries' multiplier."""
    return (f"CASE WHEN {column} < 2 THEN 0 WHEN {column} < 15 THEN 5 WHEN {column} < 60 THEN 25 "
            f"WHEN {column} < 180 THEN 100 WHEN {column} < 400 THEN 250 WHEN {column} < 700 THEN 500 "
            f"WHEN {column} > 998 THEN 1000 ELSE 750 END")


# analyze_entries' sums (analysis/entries.py makes its columns of them): one glidein row's term of
# each, summed over the glideins whose Lasted is known, untraced ones too (GlideinWMS's own view)
ENTRY_SUMS_OF = "gwms_lasted_s IS NOT NULL"
ENTRY_SUMS = {
    "glideins": "1",
    "untraced": "CASE WHEN traced = false THEN 1 ELSE 0 END",     # NULL (older files): traced
    "condor_not_started": "CASE WHEN gwms_condor_started THEN 0 ELSE 1 END",
    "no_job": "CASE WHEN gwms_jobs_nr = 0 THEN 1 ELSE 0 END",
    "lasted": "gwms_lasted_s",
    "lasted_all_validation": "CASE WHEN waste_validation_mill > 998 THEN gwms_lasted_s ELSE 0 END",
    "lasted_x_validation": f"gwms_lasted_s * {mill_range_multiplier('waste_validation_mill')} / 1e3",
    "lasted_x_idle": f"gwms_lasted_s * {mill_range_multiplier('waste_idle_mill')} / 1e3",
    "jobs_lasted": "gwms_jobs_lasted_s",
    "jobs_goodput": "gwms_jobs_goodput_s",
}


def bin_sql(value: str) -> str:
    """SQL: the bin key of ``value`` (a finite number or NULL; the positive case first: the
    cheapest CASE for DuckDB, which evaluates a branch only for the rows that reach it)."""
    def magnitude(v: str) -> str:
        return f"{OFFSET} + CAST(floor(log10({v}) * {BINS_PER_DECADE}) AS INTEGER)"
    return (f"CASE WHEN {value} > 0 THEN {magnitude(value)} WHEN {value} < 0 THEN -({magnitude('-' + value)}) "
            f"WHEN {value} = 0 THEN 0 END")


def _finite(expr: str, cond: str) -> str:
    return f"CASE WHEN {cond} AND isfinite({expr}) THEN {expr} END"


def glidein_sql(relation: str) -> str:
    """DuckDB SQL: one scan of the glidein rows of ``relation``, per (entry, site), of every
    sum, count and histogram the statistics need."""
    values = {f"m_{name}": _finite(expr, cond) for name, (expr, cond) in LOG_METRICS.items()}
    values.update({f"v_{g}": _finite(f"validation_{g}_s", "true") for g in VALIDATION_GROUPS})
    sums = {f"w_{c}": f"({expr}) * {CORES} / 3600.0" for c, expr in WASTE.items()}
    inner = ", ".join([f"{expr} AS {name}" for name, expr in {**values, **sums}.items()] + [
        "jobs", "CASE WHEN {1} THEN {0} END AS n_{2}".format(*GLIDEIN_METRICS[COUNTED], COUNTED),
        f"{VALIDATION_FAILED} AS failed_validation", "condor_s IS NOT NULL AS ran_condor", "outcome",
        f"CASE WHEN {VALIDATION_FAILED} THEN {FAILING_SCRIPT} END AS failing_script",
        "shutdown_reason", *KNOBS.values(), "gwms_lasted_s", "gwms_condor_started", "gwms_jobs_nr",
        "gwms_jobs_lasted_s", "gwms_jobs_goodput_s", "waste_validation_mill", "waste_idle_mill", "traced"] + [
        f"CASE WHEN {cond} AND {expr} > 0 AND isfinite({expr}) THEN floor({expr}) END AS t_{knob}"
        for knob, (expr, cond) in THRESHOLD_VALUES.items()])
    aggregates = ", ".join(
        ["COUNT(*) AS glideins", "SUM(jobs) AS jobs",
         "COUNT(*) FILTER (WHERE failed_validation) AS validation_failed",
         "COUNT(*) FILTER (WHERE ran_condor AND jobs = 0) AS without_jobs",
         f"histogram(n_{COUNTED}) AS h_{COUNTED}",
         "histogram(outcome) AS h_outcome",
         "histogram(CASE WHEN ran_condor THEN shutdown_reason END) AS h_shutdown_reason",
         "histogram(failing_script) AS h_failing_script"]
        + [f"SUM({name}) AS s_{name}, histogram({bin_sql(name)}) AS h_{name}" for name in values]
        + [f"SUM({name}) AS s_{name}" for name in sums]
        + [f"SUM(CASE WHEN {ENTRY_SUMS_OF} THEN {term} END) AS e_{name}" for name, term in ENTRY_SUMS.items()]
        + [f"histogram({column}) AS h_{knob}" for knob, column in KNOBS.items()]
        + [f"histogram(t_{knob}) AS h_t_{knob}" for knob in THRESHOLD_VALUES])
    return f"SELECT {PAIR}, {aggregates} FROM (SELECT entry, site, {inner} FROM {relation}) GROUP BY {PAIR_KEY}"


def jobs_sql(relation: str) -> str:
    """DuckDB SQL: one scan of the job rows of ``relation``, per (entry, site): the runtimes'
    histogram, failed jobs, badput, goodput."""
    cores = JOB_CORES
    return (f"SELECT {PAIR}, SUM(wall) AS s_wall, histogram({bin_sql('wall')}) AS h_wall, "
            "COUNT(*) FILTER (WHERE failed) AS failed_jobs, "
            f"SUM(CASE WHEN failed THEN wall_s * {cores} ELSE 0 END) / 3600.0 AS badput, "
            f"SUM(CASE WHEN failed THEN 0 ELSE wall_s * {cores} END) / 3600.0 AS goodput "
            f"FROM (SELECT entry, site, wall_s, request_cpus, {_finite('wall_s', 'true')} AS wall, "
            f"{JOB_FAILED} AS failed FROM {relation}) GROUP BY {PAIR_KEY}")


SQL = {GLIDEINS_DATASET: glidein_sql, JOBS_DATASET: jobs_sql}
# the long rows: a sum or count (name, value), a histogram's bin or value (name, key, value: its
# count) or a label's count (name, label, value); LONG_FORMAT: bumped when long_rows' unpivot
# changes (a rollup's version is a digest of the SQL and of these)
LONG_FORMAT = 1
LONG_COLUMNS = (("entry", "VARCHAR"), ("site", "VARCHAR"), ("name", "VARCHAR"), ("key", "DOUBLE"),
                ("label", "VARCHAR"), ("value", "DOUBLE"))


def long_schema():
    """LONG_COLUMNS as an Arrow schema."""
    import pyarrow as pa
    return pa.schema([(name, arrow_type(sql_type)) for name, sql_type in LONG_COLUMNS])


def _long_parts(wide):
    """The long rows of each aggregate column of ``wide`` (Arrow): (name, row of each value,
    keys or None, labels or None, values)."""
    import numpy as np
    import pyarrow as pa
    for field in wide.schema:
        if field.name in ("entry", "site"):
            continue
        column = wide[field.name].combine_chunks()
        if not pa.types.is_map(field.type):
            yield field.name, np.arange(len(column)), None, None, column
            continue
        offsets = column.offsets.to_numpy()
        rows = np.repeat(np.arange(len(column)), np.diff(offsets))
        keys = column.keys.slice(offsets[0], offsets[-1] - offsets[0])
        values = column.items.slice(offsets[0], offsets[-1] - offsets[0])
        numeric = pa.types.is_integer(keys.type) or pa.types.is_floating(keys.type)
        yield field.name, rows, keys if numeric else None, None if numeric else keys, values


def long_rows(con, dataset: str, relation: str):
    """The aggregate of ``dataset``'s rows in ``relation`` (a view or table of DuckDB
    connection ``con``), as long rows (Arrow, LONG_COLUMNS)."""
    import pyarrow as pa
    schema = long_schema()
    wide = con.sql(SQL[dataset](relation)).to_arrow_table()
    entry, site = (wide[name].combine_chunks().cast(pa.string()) for name in ("entry", "site"))
    parts = []
    for name, rows, keys, labels, values in _long_parts(wide):
        n = len(rows)
        parts.append(pa.table([entry.take(rows), site.take(rows), pa.array([name] * n, pa.string()),
                               pa.nulls(n, pa.float64()) if keys is None else keys.cast(pa.float64(), safe=False),
                               pa.nulls(n, pa.string()) if labels is None else labels.cast(pa.string()),
                               values.cast(pa.float64(), safe=False)], schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()
