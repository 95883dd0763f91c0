"""The failure sections' one pass over each view: the glideins and the jobs summed into small
tables that failures.py and services.py answer every question from.

At 30M glideins every scan of the glidein files costs seconds, so each view is read once per
dataset (per connection: its views are fixed once opened). A group is a site, an entry and an
hour of meeting the site (a job's: of its start); a failed row's group also holds its domain,
error type, service, label, declared downtime, whether a rule decided it, and its message. Each
group keeps its rows' count, their core-hours and its failed rows' first trace ids in order:
the first ``EXAMPLES`` of a union of groups are the first of their groups' firsts. The
messages are normalised once per distinct text (``messages``), not once per failed row.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from ..table.aggregates import CORES, NODE_LIFE

EXAMPLES = 3
BUCKET_S = 3600
MET_SITE = "epoch(COALESCE(node_start_at, submitted_at))"   # when the glidein met its site
RULE_COLUMNS = ("failure_service", "failure_label", "failure_rule", "failure_downtime")
GLIDEIN_CORE_H = f"GREATEST(COALESCE({NODE_LIFE}, 0), 0) * {CORES} / 3600.0"
JOB_CORE_H = "wall_s * COALESCE(NULLIF(request_cpus, 0), 1) / 3600.0"   # NULL without a wall time

# (RE2 pattern, replacement): what differs between glideins, in this order
NORMALISE = (
    (r"\b[0-9a-fA-F]{8,}\b", "<id>"),
    (r"(^|[^\w.-])(/[\w.@+-]+)+/?", r"\1<path>"),
    (r"\b[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+\.[a-zA-Z]{2,}\b(:\d+)?", "<host>"),
    (r"\b\d+(\.\d+)?\b", "<n>"),
    # each run of whitespace one space (RE2's \s is [\t\n\f\r ]); a lone space is left as it
    # is, which makes this a quarter faster than replacing \s+
    (r"\s\s+|[\t\n\f\r]", " "),
)


@dataclass(frozen=True)
class Groups:
    """A connection's failure groups: its tables' names, and which views have the rule columns."""
    glideins: str = "failure_groups_glideins"
    jobs: str = "failure_groups_jobs"
    messages: str = "failure_groups_messages"
    rules: frozenset = frozenset()


_SUMMED: WeakKeyDictionary = WeakKeyDictionary()     # connection -> its Groups


def normalised_sql(column: str) -> str:
    expr = column
    for pattern, token in NORMALISE:
        expr = f"regexp_replace({expr}, '{pattern}', '{token}', 'g')"
    return f"trim({expr})"


def of(con) -> Groups:
    """The connection's failure groups, summed on its first use (its views are fixed once opened)."""
    if con not in _SUMMED:
        names = Groups()
        rules = frozenset(view for view in ("glideins", "jobs") if set(RULE_COLUMNS) <= _columns(con, view))
        con.execute(_glideins_sql(names.glideins, "glideins" in rules))
        con.execute(_jobs_sql(names.jobs, "jobs" in rules))
        con.execute(f"CREATE TEMP TABLE {names.messages} AS SELECT failure_message, "
                    f"{normalised_sql('failure_message')} AS m FROM (SELECT DISTINCT failure_message "
                    f"FROM {names.glideins} WHERE failure_message IS NOT NULL)")
        _SUMMED[con] = Groups(rules=rules)
    return _SUMMED[con]


def _columns(con, view: str) -> set:
    """Files written before the failure rules lack their columns (read NULL when some have them)."""
    return {r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()}


def _failed_only(column: str) -> str:
    return f"CASE WHEN failure_domain IS NOT NULL THEN {column} END"


def _rule_column(column: str, rules: bool) -> str:
    return _failed_only(column) if rules else "CAST(NULL AS VARCHAR)"


def _glideins_sql(table: str, rules: bool) -> str:
    """The glidein groups: site, entry, b (hour of meeting the site, NULL if unknown),
    failure_domain, failure_type, failure_service, failure_label, failure_downtime, unruled,
    failure_message (all NULL for the rows that did not fail), n, core_h, examples."""
    return f"""CREATE TEMP TABLE {table} AS
        SELECT site, entry, CAST(floor({MET_SITE} / {BUCKET_S}) AS BIGINT) AS b, failure_domain,
               {_failed_only('failure_type')} AS failure_type, {_rule_column('failure_service', rules)} AS failure_service,
               {_rule_column('failure_label', rules)} AS failure_label,
               {_rule_column('failure_downtime', rules)} AS failure_downtime,
               {_failed_only("COALESCE(failure_rule, '') = ''") if rules else 'true'} AS unruled,
               {_failed_only('failure_message')} AS failure_message, COUNT(*) AS n, SUM({GLIDEIN_CORE_H}) AS core_h,
               min(trace_id, {EXAMPLES}) FILTER (WHERE failure_domain IS NOT NULL) AS examples
        FROM glideins GROUP BY ALL"""


def _jobs_sql(table: str, rules: bool) -> str:
    """The job groups: b (hour of the start, NULL if unknown), failure_domain, failure_service,
    failure_label, failure_downtime, n, core_h (NULL when no row has a wall time), and the
    first trace ids of its failed rows blamed on a service (examples)."""
    keys = ("b", "failure_domain", "failure_service", "failure_label", "failure_downtime")
    hour = f"CAST(floor(epoch(started_at) / {BUCKET_S}) AS BIGINT) AS b"
    # the examples from a second, filtered read: reading every job's trace id costs more
    blamed = (f"SELECT {hour}, {', '.join(keys[1:])}, min(trace_id, {EXAMPLES}) AS examples FROM jobs "
              "WHERE failure_domain IS NOT NULL AND COALESCE(failure_service, '') <> '' GROUP BY ALL"
              if rules else f"SELECT {', '.join('NULL AS ' + k for k in keys)}, NULL AS examples WHERE false")
    return f"""CREATE TEMP TABLE {table} AS
        WITH counts AS (SELECT {hour}, failure_domain, {_rule_column('failure_service', rules)} AS failure_service,
                               {_rule_column('failure_label', rules)} AS failure_label,
                               {_rule_column('failure_downtime', rules)} AS failure_downtime,
                               COUNT(*) AS n, SUM({JOB_CORE_H}) AS core_h FROM jobs GROUP BY ALL),
             blamed AS ({blamed})
        SELECT counts.*, blamed.examples FROM counts LEFT JOIN blamed ON
            {' AND '.join(f'counts.{k} IS NOT DISTINCT FROM blamed.{k}' for k in keys)}"""


def first_examples(lists: str) -> str:
    """SQL: the first ``EXAMPLES`` trace ids of an aggregate's groups' example lists."""
    return f"list_sort(flatten(list({lists})))[1:{EXAMPLES}]"
