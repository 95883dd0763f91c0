"""The recent periods GlideinWMS's analyze_entries shows (2 h, 24 h, 168 h back), from the rows:
per period, its totals and the analyze_entries table (entries.py) of the glideins that ended
in it. The periods end at the end of the data (``--until``, else the latest glidein's end), so
a table of past days reads the same on any day; only the day partitions a period covers are
read.
"""

from __future__ import annotations

import time

from .entries import COLUMNS, rows_sql


def _rows(con, keys: tuple, where: str) -> list[dict]:
    return [{c: (round(v, 2) if isinstance(v, float) else v) for c, v in zip(keys + COLUMNS[1:], row)}
            for row in con.execute(rows_sql(keys, where).replace("`", '"')).fetchall()]  # DuckDB 1.4 (3.9's) has no backquotes


def windows_section(con, periods_s: list, end: float | None = None, partitioned: bool = True) -> dict:
    """Per period (seconds, the order given): its start and end (epoch seconds), the totals
    and the analyze_entries rows, most waste first; ``partitioned``: the files have the day
    partition column (the days outside a period are then not read)."""
    if end is None:
        latest = con.execute("SELECT epoch(max(ended_at)) FROM glideins").fetchone()[0]
        end = float(latest) if latest is not None else time.time()
    out = []
    for seconds in periods_s:
        start = end - float(seconds)
        where = (f"ended_at >= make_timestamp({int(start * 1e6)}) AND ended_at < make_timestamp({int(end * 1e6) + 1})"
                 + (f" AND date >= CAST(make_timestamp({int(start * 1e6)}) AS DATE)" if partitioned else ""))
        total = _rows(con, (), where)
        out.append({"hours": round(seconds / 3600.0, 3), "start": start, "end": end,
                    "total": total[0] if total else None, "entries": _rows(con, ("entry",), where)})
    return {"end": end, "periods": out}


def daily_trend(con, partitioned: bool) -> list[dict]:
    """Per UTC day the glideins ended: glideins, Lasted and its waste (Lasted - JobsLasted) in
    hours, and efficiency (JobsGoodput x GLIDEIN_CPUS / Lasted x cores), GlideinWMS's
    per-glidein quantities: the trend over the period, one scan."""
    day = "date" if partitioned else "CAST(ended_at AS DATE)"
    rows = con.execute(f"""SELECT CAST({day} AS VARCHAR), COUNT(*), SUM(gwms_lasted_s) / 3600,
        SUM(gwms_lasted_s - gwms_jobs_lasted_s) / 3600, SUM(gwms_jobs_goodput_s * COALESCE(cpus, 1)),
        SUM(gwms_lasted_s * COALESCE(cpus, 1))
        FROM glideins WHERE gwms_lasted_s IS NOT NULL AND ended_at IS NOT NULL GROUP BY 1 ORDER BY 1""").fetchall()
    return [{"day": d, "glideins": int(n), "lasted_h": round(lasted or 0, 2), "waste_h": round(waste or 0, 2),
             "waste_pct": round(100 * waste / lasted, 2) if lasted else None,
             "efficiency_pct": round(100 * good / life, 2) if life else None}
            for d, n, lasted, waste, good, life in rows]
