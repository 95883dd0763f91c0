"""GlideinWMS's ``analyze_entries`` table (factory/tools/analyze_entries), per entry, from the
glidein table's GlideinWMS columns, so operators can put it beside the tool they already run.

Columns, GlideinWMS's names and definitions (sums over the entry's completed glideins; the
tool reads the same sums from the Factory's Log_Completed* monitoring files):

- ``strt``: FailedNr / Glideins, glideins whose HTCondor never started (``gwms_condor_started``);
- ``fval``: the Lasted of glideins whose validation waste is in the 'All' range (> 998 per
  mille) / Lasted;
- ``0job``: glideins that ran no job (the JobsNr 'None' range) / Glideins;
- ``val``, ``idle``: Lasted weighted by the waste per mille range's multiplier (None 0, 5m 5,
  25m 25, 100m 100, 250m 250, 500m 500, Most 750, All 1000; the ranges of
  glideFactoryMonitoring.getMillRange) / 1000 / Lasted;
- ``wst``: (Lasted - JobsLasted) / Lasted; ``badp``: (Lasted - JobsGoodput) / Lasted;
- ``waste``: Lasted - JobsLasted in hours; ``time``: Lasted in hours; ``glideins``.
Percentages are 0-100. The original Python 2 tool divided the multiplier by 1000 in integer
arithmetic, which kept only the 'All' range in ``val`` and ``idle``; here every range counts
as documented. ``WASTE_TABLE_SQL`` is plain SQL (number literals in exponent form, DOUBLE on
every engine: Spark reads ``100.0`` as a DECIMAL) over a relation named ``glideins``: the same
text runs on DuckDB and on Spark (tests/test_analysis_spark.py).
"""

from __future__ import annotations

COLUMNS = ("entry", "strt", "fval", "0job", "val", "idle", "wst", "badp", "waste", "time", "glideins")
UNITS = ("", "%", "%", "%", "%", "%", "%", "%", "h", "h", "")


def _multiplier(column: str) -> str:
    """getMillRange's range of a per-mille value, as analyze_entries' multiplier."""
    return (f"CASE WHEN {column} < 2 THEN 0 WHEN {column} < 15 THEN 5 WHEN {column} < 60 THEN 25 "
            f"WHEN {column} < 180 THEN 100 WHEN {column} < 400 THEN 250 WHEN {column} < 700 THEN 500 "
            f"WHEN {column} > 998 THEN 1000 ELSE 750 END")


WASTE_TABLE_SQL = f"""
SELECT entry,
       1e2 * SUM(CASE WHEN gwms_condor_started THEN 0 ELSE 1 END) / COUNT(*) AS strt,
       1e2 * SUM(CASE WHEN waste_validation_mill > 998 THEN gwms_lasted_s ELSE 0 END) / SUM(gwms_lasted_s) AS fval,
       1e2 * SUM(CASE WHEN gwms_jobs_nr = 0 THEN 1 ELSE 0 END) / COUNT(*) AS `0job`,
       1e2 * SUM(gwms_lasted_s * {_multiplier('waste_validation_mill')} / 1e3) / SUM(gwms_lasted_s) AS val,
       1e2 * SUM(gwms_lasted_s * {_multiplier('waste_idle_mill')} / 1e3) / SUM(gwms_lasted_s) AS idle,
       1e2 * (SUM(gwms_lasted_s) - SUM(gwms_jobs_lasted_s)) / SUM(gwms_lasted_s) AS wst,
       1e2 * (SUM(gwms_lasted_s) - SUM(gwms_jobs_goodput_s)) / SUM(gwms_lasted_s) AS badp,
       (SUM(gwms_lasted_s) - SUM(gwms_jobs_lasted_s)) / 36e2 AS waste,
       SUM(gwms_lasted_s) / 36e2 AS time,
       COUNT(*) AS glideins
FROM glideins
WHERE gwms_lasted_s IS NOT NULL
GROUP BY entry
HAVING SUM(gwms_lasted_s) > 0
ORDER BY waste DESC, entry
"""


def waste_table(con) -> list[dict]:
    """The analyze_entries rows, most waste first."""
    sql = WASTE_TABLE_SQL.replace("`0job`", '"0job"')     # backquotes are Spark's; DuckDB quotes with "
    return [{c: (round(v, 2) if isinstance(v, float) else v) for c, v in zip(COLUMNS, row)}
            for row in con.execute(sql).fetchall()]
