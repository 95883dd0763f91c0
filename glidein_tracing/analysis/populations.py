"""Compare two populations of glideins (``analyze --compare A B``): each a selection by a
column's value (``column=value``) or an SQL predicate over a glidein row. For each: glideins,
waste per category (core-hours per glidein, stats.py's categories), efficiency (goodput /
lifetime, in core-hours), jobs per glidein whose HTCondor ran, and failure rate; then each
difference (A - B) with its interval (normal approximation: a mean's standard error from the
per-glidein values' sums of squares; the efficiency, a ratio of sums, by the delta method), 95 %
for the family of measures (Bonferroni: each at 1 - 0.05 / measures), and whether it is
significant (the interval excludes 0): two populations that do not differ show no significant
difference in 95 % of comparisons, whichever measure. One scan of the rows.

Built-in views: ``overload`` (GlideinOverloadEnabled true against false: the ``overload_enabled``
column) and ``versions`` (the two most common ``glidein_version`` values: the md5 of the
glidein_startup.sh that ran).
"""

from __future__ import annotations

import math
import re
import threading

from ..table.aggregates import CORES, NODE_LIFE, WASTE, sql_text

FAMILY_LEVEL = 0.05
COLUMN_VALUE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
# per glidein: core-hours of each waste category and of its life, goodput core-hours (GlideinWMS's
# JobsGoodput, per core, times the cores), and the values whose means are compared
VALUES = {**{f"waste_{k}": f"COALESCE({WASTE[k]}, 0) * {CORES} / 3600"
             for k in ("validation", "idle_before_first_job", "idle_between_jobs", "idle_tail", "no_job")},
          "life": f"COALESCE({NODE_LIFE}, 0) * {CORES} / 3600",
          "goodput": f"COALESCE(gwms_jobs_goodput_s, 0) * {CORES} / 3600",
          "failed": "CASE WHEN COALESCE(failed, false) THEN 1.0 ELSE 0.0 END"}
JOBS = "CASE WHEN condor_s IS NOT NULL THEN COALESCE(jobs, 0) END"


class SelectionError(ValueError):
    """A selection that is not ``column=value`` of a column the table has, nor a usable predicate."""


def predicate(text: str, columns: set) -> str:
    """The SQL condition of a selection: ``column=value`` (the column's value as text, ``null``
    for NULL, true/false for a boolean) or an SQL predicate as given, one expression."""
    match = COLUMN_VALUE.match(text)
    if match and "'" not in text and not re.search(r"[<>!]", text):
        column, value = match.groups()
        if column not in columns:
            raise SelectionError(f"no column {column} in the table (e.g. entry, site, client_group, overload_enabled)")
        if value.lower() == "null":
            return f"{column} IS NULL"
        return f"CAST({column} AS VARCHAR) = {sql_text(value.lower() if value.lower() in ('true', 'false') else value)}"
    _one_expression(text)
    return f"({text})"


def _one_expression(text: str) -> None:
    """SelectionError unless ``text`` is one expression: no statement separator, no comment,
    and no parenthesis closed that it did not open (``true) UNION SELECT ...``), by DuckDB's
    own tokenizer (a parenthesis inside a string is not one)."""
    import duckdb
    tokens = duckdb.tokenize(text)
    if not tokens or text[:tokens[0][0]].strip():
        raise SelectionError(f"{text!r}: a comment in a predicate" if tokens else "an empty predicate")
    depth = 0
    for (start, kind), (end, _) in zip(tokens, tokens[1:] + [(len(text), None)]):
        piece = text[start:end]     # the token and what follows it up to the next (a comment, on 1.x)
        if kind == duckdb.token_type.comment or (kind != duckdb.token_type.string_const and not piece.startswith('"')
                                                 and ("--" in piece or "/*" in piece)):
            raise SelectionError(f"{text!r}: a comment in a predicate")
        if kind != duckdb.token_type.operator:
            continue
        for char in piece:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == ";" or depth < 0:
                raise SelectionError(f"{text!r} is not one expression")
    if depth:
        raise SelectionError(f"{text!r}: unbalanced parentheses")


def builtin(name: str, con) -> tuple:
    """The two selections of a built-in view (the dataset's views have every column of the
    schema: NULL where its files lack one)."""
    if name == "overload":
        if not con.execute("SELECT COUNT(overload_enabled) FROM glideins").fetchone()[0]:
            raise SelectionError("no glidein records GlideinOverloadEnabled (overload_enabled): files written before "
                                 "the column, or a Factory whose submit file does not list it in "
                                 "job_ad_information_attrs")
        return ("overload_enabled=true", "overload_enabled=false")
    if name == "versions":
        top = [r[0] for r in con.execute("SELECT glidein_version FROM glideins WHERE glidein_version IS NOT NULL "
                                         "GROUP BY 1 ORDER BY COUNT(*) DESC, 1 LIMIT 2").fetchall()]
        if len(top) < 2:
            raise SelectionError("fewer than two glidein versions in the table")
        return tuple(f"glidein_version={v}" for v in top)
    raise SelectionError(f"no built-in view {name!r} (overload, versions)")


def _interval(diff: float, se: float, z: float) -> dict:
    low, high = diff - z * se, diff + z * se
    return {"difference": round(diff, 6), "low": round(low, 6), "high": round(high, 6),
            "significant": bool(low > 0 or high < 0)}


TIME_LIMIT_S = 120.0    # the predicates' queries together (an unbounded range() ran past a minute)


def compare_populations(con, columns: set, a: str, b: str, time_limit_s: float = TIME_LIMIT_S) -> dict:
    """The comparison of the glideins selected by ``a`` and ``b`` (selections as ``predicate``
    reads them), interrupted after ``time_limit_s``. The connection reads only the dataset's
    files (dataset.py): a predicate can reach no other."""
    conds = {"a": predicate(a, columns), "b": predicate(b, columns)}
    parts = []
    for p, cond in conds.items():
        parts.append(f"COUNT(*) FILTER (WHERE {cond})")
        for name, value in {**VALUES, "jobs": JOBS}.items():
            parts += [f"SUM({value}) FILTER (WHERE {cond})", f"SUM(({value}) * ({value})) FILTER (WHERE {cond})",
                      f"COUNT({value}) FILTER (WHERE {cond})"]
        parts.append(f"SUM(({VALUES['goodput']}) * ({VALUES['life']})) FILTER (WHERE {cond})")
    import duckdb
    timer = threading.Timer(time_limit_s, con.interrupt)
    timer.start()
    try:
        for p, cond in conds.items():      # a predicate that does not run is the user's to fix, named
            try:
                con.execute(f"SELECT COUNT(*) FROM glideins WHERE {cond} AND false").fetchall()
            except duckdb.InterruptException:
                raise
            except duckdb.Error as exc:
                raise SelectionError(f"{(a, b)[p == 'b']!r} is no predicate over a glidein row: "
                                     f"{str(exc).splitlines()[0]}") from exc
        row = iter(con.execute(f"SELECT {', '.join(parts)} FROM glideins").fetchone())
    except duckdb.InterruptException:
        raise SelectionError(f"the selections took more than {time_limit_s:g} s: stopped") from None
    finally:
        timer.cancel()
    sums = {}
    for p in conds:
        n = int(next(row) or 0)
        values = {name: (float(next(row) or 0), float(next(row) or 0), int(next(row) or 0)) for name in (*VALUES, "jobs")}
        sums[p] = (n, values, float(next(row) or 0))
    out = {"selections": {p: {"given": text, "sql": conds[p]} for p, text in (("a", a), ("b", b))}, "populations": {},
           "differences": {}}
    estimates = {}
    for p, (n, values, cross) in sums.items():
        est = {}
        for name, (total, squares, count) in values.items():
            if name in ("life", "goodput"):
                continue
            mean = total / count if count else None
            var = (squares / count - mean * mean) * count / (count - 1) if count > 1 else None
            est[name] = (mean, math.sqrt(max(var, 0.0) / count) if var is not None else None)
        g, g2, _ = values["goodput"]
        life, life2, _ = values["life"]
        ratio = g / life if life else None
        se = math.sqrt(max(g2 - 2 * ratio * cross + ratio * ratio * life2, 0.0)) / life if life else None
        est["efficiency"] = (ratio, se)
        estimates[p] = est
        out["populations"][p] = {"glideins": n, "lifetime_core_hours": round(life, 3),
                                 "goodput_core_hours": round(g, 3),
                                 **{k: (None if v[0] is None else round(v[0], 6)) for k, v in est.items()}}
    from statistics import NormalDist
    z = NormalDist().inv_cdf(1 - FAMILY_LEVEL / (2 * len(estimates["a"])))
    out["interval"] = {"family_level": 1 - FAMILY_LEVEL, "measures": len(estimates["a"]), "z": round(z, 4)}
    for name in estimates["a"]:
        (ma, sa), (mb, sb) = estimates["a"][name], estimates["b"][name]
        if ma is None or mb is None or sa is None or sb is None:
            out["differences"][name] = None
            continue
        out["differences"][name] = _interval(ma - mb, math.sqrt(sa * sa + sb * sb), z)
    for p, (n, _, _) in sums.items():
        if not n:
            raise SelectionError(f"{(a, b)[p == 'b']!r} selects no glidein")
    out["significant"] = sorted(k for k, v in out["differences"].items() if v and v["significant"])
    return out
