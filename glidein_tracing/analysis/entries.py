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
- ``waste``: Lasted - JobsLasted in hours; ``time``: Lasted in hours; ``glideins``;
- ours: ``traced`` and ``untraced`` glideins among them (an untraced glidein's quantities are
  GlideinWMS's reading of its stdout, the same formulas: its entry's row is GlideinWMS's).
Percentages are 0-100. The original Python 2 tool divided the multiplier by 1000 in integer
arithmetic, which kept only the 'All' range in ``val`` and ``idle``; here every range counts
as documented.

Every column is a ratio of per-entry sums (table/aggregates.py's ``ENTRY_SUMS``, part of the
statistics' aggregate, so read from the files' rollups like the statistics). ``WASTE_TABLE_SQL``
is the same table as plain SQL over the rows (number literals in exponent form, DOUBLE on
every engine: Spark reads ``100.0`` as a DECIMAL) of a relation named ``glideins``: the text
runs on DuckDB and on Spark (tests/test_analysis_entries.py).
"""

from __future__ import annotations

from ..table.aggregates import ENTRY_SUMS, ENTRY_SUMS_OF

COLUMNS = ("entry", "strt", "fval", "0job", "val", "idle", "wst", "badp", "waste", "time", "glideins",
           "traced", "untraced")

# each column from the sums ({name}: ENTRY_SUMS' sum of that name over the entry's glideins)
RATIOS = {
    "strt": "1e2 * {condor_not_started} / {glideins}",
    "fval": "1e2 * {lasted_all_validation} / {lasted}",
    "0job": "1e2 * {no_job} / {glideins}",
    "val": "1e2 * {lasted_x_validation} / {lasted}",
    "idle": "1e2 * {lasted_x_idle} / {lasted}",
    "wst": "1e2 * ({lasted} - {jobs_lasted}) / {lasted}",
    "badp": "1e2 * ({lasted} - {jobs_goodput}) / {lasted}",
    "waste": "({lasted} - {jobs_lasted}) / 36e2",
    "time": "{lasted} / 36e2",
    "glideins": "{glideins}",
    "traced": "{glideins} - {untraced}",
    "untraced": "{untraced}",
}


def _table_sql(sums: dict, relation: str, where: str, group: str, keys: tuple = ("entry",), having: bool = False) -> str:
    """The table's SELECT with each sum's SQL (``sums``: name -> SQL) over ``relation``, a row
    per ``keys`` (none: one row); ``having``: the sums are aggregates."""
    columns = ", ".join(f"{RATIOS[c].format(**sums)} AS `{c}`" for c in COLUMNS[1:])
    return (f"SELECT {''.join(k + ', ' for k in keys)}{columns} FROM {relation} {where} {group} "
            f"{'HAVING' if group or having else 'WHERE'} {sums['lasted']} > 0 ORDER BY waste DESC"
            + "".join(f", {k}" for k in keys))


def rows_sql(keys: tuple = ("entry",), where: str = "") -> str:
    """The table as one plain SQL statement over the rows of a relation named ``glideins``, a
    row per ``keys`` (none: the total), of the glideins meeting ``where`` too."""
    return _table_sql({name: f"SUM({term})" for name, term in ENTRY_SUMS.items()}, "glideins",
                      f"WHERE {ENTRY_SUMS_OF}" + (f" AND {where}" if where else ""),
                      f"GROUP BY {', '.join(keys)}" if keys else "", keys, having=True)


WASTE_TABLE_SQL = rows_sql()


def waste_table(con, glideins) -> list[dict]:
    """The analyze_entries rows, most waste first, from the statistics' aggregate of the
    glideins (stats.aggregate_scans: rollups and the rows of the files without one)."""
    import pyarrow as pa
    sums = {name: glideins.sums(f"e_{name}")["by_entry"] for name in ENTRY_SUMS}
    entries = list(sums["glideins"])
    per_entry = pa.table({"entry": pa.array(entries, pa.string()),
                          **{name: pa.array([sums[name].get(e, 0.0) for e in entries],
                                            pa.int64() if name in ("glideins", "untraced") else pa.float64())   # counts
                             for name in ENTRY_SUMS}})
    sql = _table_sql({name: name for name in ENTRY_SUMS}, "entry_sums", "", "").replace("`", '"')
    con.register("entry_sums", per_entry)
    try:
        rows = con.execute(sql).fetchall()
    finally:
        con.unregister("entry_sums")
    return [{c: (round(v, 2) if isinstance(v, float) else v) for c, v in zip(COLUMNS, row)} for row in rows]
