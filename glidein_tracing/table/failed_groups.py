"""The failed glideins' groups: the glidein rows that failed, summed by site, entry, hour of
meeting the site, domain, error type, service, label, declared downtime, whether no rule
decided the message, and the message once normalised; each group with its rows' count, their
core-hours and their first trace ids (``EXAMPLES``).

Groups add up: the groups of two sets of rows are their groups summed per key (``summed_sql``),
each group's examples the first of the two lists' firsts. So the writer keeps them as a rollup
of each merged file (rollup.py), and the failure sections (analysis/failure_groups.py) read a
few hundred groups per file instead of decoding every failed row's message and trace id and
normalising the message with RE2 at each run. The same SQL makes them from rows either way,
so the numbers are the same either way.
"""

from __future__ import annotations

from .aggregates import CORES, NODE_LIFE

BUCKET_S = 3600
MET_SITE = "epoch(COALESCE(node_start_at, submitted_at))"   # when the glidein met its site
HOUR = f"CAST(floor({MET_SITE} / {BUCKET_S}) AS BIGINT)"      # its hour (NULL if unknown)
EXAMPLES = 3
RULE_COLUMNS = ("failure_service", "failure_label", "failure_downtime", "failure_rule")
GLIDEIN_CORE_H = f"GREATEST(COALESCE({NODE_LIFE}, 0), 0) * {CORES} / 3600.0"

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

KEYS = (("site", "VARCHAR"), ("entry", "VARCHAR"), ("b", "BIGINT"), ("failure_domain", "VARCHAR"),
        ("failure_type", "VARCHAR"), ("failure_service", "VARCHAR"), ("failure_label", "VARCHAR"),
        ("failure_downtime", "VARCHAR"), ("unclassified", "BOOLEAN"), ("m", "VARCHAR"))
COLUMNS = KEYS + (("n", "BIGINT"), ("core_h", "DOUBLE"), ("examples", "VARCHAR[]"))
_KEY_NAMES = ", ".join(name for name, _ in KEYS)


def normalised_sql(column: str) -> str:
    """SQL: ``column`` (a message) with what differs between glideins replaced (NORMALISE)."""
    expr = column
    for pattern, token in NORMALISE:
        expr = f"regexp_replace({expr}, '{pattern}', '{token}', 'g')"
    return f"trim({expr})"


def groups_sql(relation: str, rules: bool) -> str:
    """SQL: the failed glidein rows of ``relation`` as their groups (COLUMNS); ``rules``: it has
    the failure rules' columns (files written before the rules lack them: NULL). Each message
    is normalised in the same read, once per failed row that has it: most texts differ (ids,
    hosts, numbers), and finding the distinct ones first costs a grouping by text about as dear
    as the normalising."""
    unclassified = "COALESCE(failure_rule, '') = '' AND failure_message <> ''" if rules else "failure_message <> ''"
    return f"""SELECT site, entry, {HOUR} AS b, failure_domain, failure_type,
               {rule_column('failure_service', rules)} AS failure_service, {rule_column('failure_label', rules)} AS failure_label,
               {rule_column('failure_downtime', rules)} AS failure_downtime,
               COALESCE({unclassified}, false) AS unclassified, {normalised_sql('failure_message')} AS m,
               COUNT(*) AS n, SUM({GLIDEIN_CORE_H}) AS core_h, min(trace_id, {EXAMPLES}) AS examples
        FROM {relation} WHERE failure_domain IS NOT NULL GROUP BY ALL"""


def summed_sql(relation: str) -> str:
    """SQL: the groups of ``relation`` (groups of several sets of rows) summed per key."""
    return (f"SELECT {_KEY_NAMES}, SUM(n)::BIGINT AS n, SUM(core_h) AS core_h, "
            f"{first_examples('examples')} AS examples FROM {relation} GROUP BY ALL")


def first_examples(lists: str) -> str:
    """SQL: the first ``EXAMPLES`` trace ids of an aggregate's groups' example lists."""
    return f"list_sort(flatten(list({lists})))[1:{EXAMPLES}]"


def has_rule_columns(con, relation: str) -> bool:
    """Whether ``relation`` (a view, a table) has the failure rules' columns: files written
    before the rules lack them."""
    return set(RULE_COLUMNS) <= {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}


def rule_column(column: str, rules: bool) -> str:
    """SQL: a failure rules' column, NULL where the rows lack the rules' columns (``rules``)."""
    return column if rules else "CAST(NULL AS VARCHAR)"


def of_rows(con, relation: str):
    """The groups of the glidein rows in ``relation`` (Arrow)."""
    return con.sql(groups_sql(relation, has_rule_columns(con, relation))).to_arrow_table()


def of_groups(con, relation: str):
    """The groups in ``relation`` (several files' groups) summed (Arrow)."""
    return con.sql(summed_sql(relation)).to_arrow_table()
