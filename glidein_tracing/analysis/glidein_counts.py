"""The glideins counted once: per entry, site, hour of meeting the site and host (CPU model, OS,
glidein version), how many there were, how many failed, and how many
fell in each of compare's selections. Only traced glideins are counted: an untraced one (its
entry does not trace) has no failure, no node facts and no services to count.

At 30M glideins each scan of the glidein files costs seconds, and every part of the analysis
that needs all glideins (not only the failed ones) needs no more than these counts: the
failures' totals per site and entry and the outage windows' hourly denominators
(failures.py), the services' attempts per hour (services.py), and every count of the compare
view (compare.py, its hour of day being the hour's). So the glidein files are read once per
dataset for all of them (dataset.py owns the table: ``Dataset.glidein_counts``), with the
selections declared before the first count.
"""

from __future__ import annotations

from ..table.failed_groups import HOUR
HOST_COLUMNS = ("cpu_model", "os_description", "glidein_version")
TABLE = "glidein_counts"
TRACED = "COALESCE(traced, true)"     # untraced glideins (no journal) are no part of failure statistics


def count(con, selections: dict) -> str:
    """Count the connection's traced glideins into the counts table (made again if it exists):
    columns entry, site, b (the hour), HOST_COLUMNS, n, failed, and
    ``sel_<name>`` per selection (name -> SQL condition over a glidein row)."""
    keys = ["entry", "site", f"{HOUR} AS b", *HOST_COLUMNS]
    sums = [f"COUNT(*) FILTER (WHERE {cond}) AS sel_{name}" for name, cond in selections.items()]
    con.execute(f"CREATE OR REPLACE TEMP TABLE {TABLE} AS SELECT {', '.join(keys)}, COUNT(*) AS n, "
                f"COUNT(*) FILTER (WHERE failure_domain IS NOT NULL) AS failed{''.join(', ' + s for s in sums)} "
                f"FROM glideins WHERE {TRACED} GROUP BY ALL")
    return TABLE
