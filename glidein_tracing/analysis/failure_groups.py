"""The failure sections' passes: the failed glideins and jobs summed into small tables that
failures.py and services.py answer every question from, beside the counts of the traced glideins
(glidein_counts.py) and of all jobs per hour (counted only when a failure is blamed on a service:
its outage windows are the only question they answer, services.py).

At 30M glideins every scan of the glidein files costs seconds, so all rows of each view are
read once per dataset (dataset.py owns the tables: ``Dataset.failure_groups``), for counts only, and
the failed rows, a few percent, in a pass of their own whose filter DuckDB applies while
scanning (it keeps a few percent of the rows; the other columns' pages are decoded all the
same). The failed glideins' groups (table/failed_groups.py) are read from the files' rollups
where they have one (table/rollup.py), and made from the rows of the others: a group of failed
glideins is a site, an entry, an hour of meeting
the site, a domain, an error type, a service, a label, a declared downtime, whether it is
unclassified (a message no rule decided), and its normalised message; a group of failed jobs a
domain, a service, a label and a downtime, and a group of the jobs blamed on a service also an
hour of their start. Each group keeps its rows' count, the failed groups their core-hours, and the
failed glideins' and blamed jobs' groups their first trace ids in order: the first ``EXAMPLES`` of
a union of groups are the first of their groups' firsts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..table import failed_groups, rollup
from . import glidein_counts

JOB_CORE_H = "wall_s * COALESCE(NULLIF(request_cpus, 0), 1) / 3600.0"   # NULL without a wall time
JOB_HOUR = f"CAST(floor(epoch(started_at) / {failed_groups.BUCKET_S}) AS BIGINT)"


@dataclass(frozen=True)
class Groups:
    """A dataset's failure groups: its tables' names, and which views have the rule columns."""
    glideins: str = "failure_groups_glideins"       # the failed glideins' groups
    jobs: str = "failure_groups_jobs"               # the failed jobs' groups
    blamed_jobs: str = "failure_groups_blamed_jobs"  # those blamed on a service, per hour, with examples
    counts: str = glidein_counts.TABLE              # traced glideins: n and failed per site, entry, hour
    job_hours: str = "failure_groups_job_hours"     # all jobs: n per hour of their start (count_job_hours)
    rules: frozenset = frozenset()


def summed(con) -> Groups:
    """Sum the connection's failed rows into their groups' tables (all glideins are the counts
    table's: ``Groups.counts``, made by the dataset; all jobs per hour: ``count_job_hours``)."""
    rules = frozenset(view for view in ("glideins", "jobs") if failed_groups.has_rule_columns(con, view))
    names = Groups(rules=rules)
    con.execute(_glideins_sql(names.glideins, "glideins" in rules))
    con.execute(_jobs_sql(names.jobs, "jobs" in rules))
    con.execute(_blamed_jobs_sql(names.blamed_jobs, "jobs" in rules))
    return names


def count_job_hours(con, names: Groups) -> str:
    """Count all the connection's jobs per hour of their start into ``names.job_hours`` (b, n):
    a read of every job's start, which only a service's outage windows need (services.py)."""
    con.execute(f"CREATE TEMP TABLE {names.job_hours} AS SELECT {JOB_HOUR} AS b, COUNT(*) AS n FROM jobs GROUP BY ALL")
    return names.job_hours


def _glideins_sql(table: str, rules: bool) -> str:
    """The failed glideins' groups (table/failed_groups.py: site, entry, b, failure_domain,
    failure_type, failure_service, failure_label, failure_downtime, unclassified, m, n, core_h,
    examples): those of the files without a usable rollup of them, made from their rows, and
    those the others' rollups hold, summed."""
    unrolled, rollups = rollup.view_names("glideins", rollup.FAILED)
    return (f"CREATE TEMP TABLE {table} AS " + failed_groups.summed_sql(
        f"({failed_groups.groups_sql(unrolled, rules)} UNION ALL SELECT * FROM {rollups})"))


def _jobs_sql(table: str, rules: bool) -> str:
    """The failed jobs' groups: failure_domain, failure_service, failure_label, failure_downtime,
    n, core_h (NULL when no row has a wall time). No hour: only a service's windows ask when a
    job failed, and they read the blamed jobs (``_blamed_jobs_sql``), so the others' starts are
    not decoded."""
    return f"""CREATE TEMP TABLE {table} AS
        SELECT failure_domain, {failed_groups.rule_column('failure_service', rules)} AS failure_service,
               {failed_groups.rule_column('failure_label', rules)} AS failure_label,
               {failed_groups.rule_column('failure_downtime', rules)} AS failure_downtime,
               COUNT(*) AS n, SUM({JOB_CORE_H}) AS core_h FROM jobs WHERE failure_domain IS NOT NULL GROUP BY ALL"""


def _blamed_jobs_sql(table: str, rules: bool) -> str:
    """The failed jobs blamed on a service, grouped: b (hour of the start, NULL if unknown),
    failure_domain, failure_service, failure_label, failure_downtime, n and the first trace ids
    (examples); a read filtered to those rows (empty without the rule columns)."""
    keys = "failure_domain, failure_service, failure_label, failure_downtime"
    if not rules:
        return (f"CREATE TEMP TABLE {table} AS SELECT CAST(NULL AS BIGINT) AS b, {keys}, CAST(NULL AS BIGINT) AS n, "
                f"CAST(NULL AS VARCHAR[]) AS examples FROM jobs WHERE false")
    return f"""CREATE TEMP TABLE {table} AS
        SELECT {JOB_HOUR} AS b, {keys}, COUNT(*) AS n, min(trace_id, {failed_groups.EXAMPLES}) AS examples FROM jobs
        WHERE failure_domain IS NOT NULL AND failure_service <> '' GROUP BY ALL"""


def most(value: str, weight: str) -> str:
    """SQL: the aggregate's ``value`` of the largest ``weight``, the first by value on a tie (so
    the report is the same from run to run)."""
    return f"first({value} ORDER BY {weight} DESC, {value})"
