"""What-if replay: each recorded glidein under other GLIDEIN_Max_Idle, Max_Tail and retire times,
in one pass over the glidein rows and their job timelines.

The model (docs/analysis.md, "What-if"), per glidein, on its condor phase (times relative to
its start; ``gap`` = idle time before a job, measured from when the earlier jobs finished):

- first job: lost when ``min(gap, I0) > I`` (it would have come after the glidein shut down
  idle); the glidein then ends ``I`` (+ its lag) after the phase started;
- any later job: lost when ``min(gap, T0) > T`` (idle since the last job longer than
  Max_Tail); the glidein ends ``T`` (+ lag) after the last kept job's cursor;
- retire: a job starting after the retire time is lost (``min(start, R0) > R``); the glidein
  stops at ``max(cursor, R)``; all jobs after a lost one are lost too;
- no job lost: the idle after the last job (or the whole phase with no job) becomes
  ``recorded + (new - current)`` when the glidein stopped on its own timeout (reason
  ``max_idle``/``daemon_shutdown`` and the idle reached the current threshold), else
  ``min(recorded, new + overshoot)``; capped by the retire time;
- with the current settings nothing is lost and every interval is the recorded one, so the
  replay of the current settings reproduces the recorded waste (``current_replay.exact``).

How it runs: whether a job is kept depends on the candidate only through three thresholds
(the glidein's first-job need against I, the prefix maximum of the tail needs against T, the
start against R), so every job and glidein is binned by its *rank* in each candidate list and
what each bin contributes is summed (kept idle, badput, jobs; the new tail for every threshold
value). Per group of days, DuckDB scans the glideins, each with its job timeline (the row's
``job_*`` lists, already by start: no join, no sort; rows of schema version 1 have them built
from the jobs dataset); numpy flattens the lists and computes the running values (cursor,
gap, running maximum of the tail-need ranks) and the grouped sums; two groups are replayed at
a time, on two threads (numpy uses one core per thread). A candidate's totals are then sums
over bins (a few thousand rows), exact, with one pass over the data for the whole grid.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..table.aggregates import CORES, JOB_FAILED, KNOBS, OWN_TIMEOUT_REASONS
from ..table.schema import GLIDEINS, TIMELINE

OWN_RULE_EPS_S = 1.0      # a recorded idle this close under the threshold still counts as "hit it"
LAG_CAP_S = 300.0         # longest startd notice delay carried over to new thresholds
DEFAULT_MAX_IDLE = (300, 600, 900, 1200, 1800, 2400, 3600)
DEFAULT_MAX_TAIL = (60, 120, 200, 300, 400, 600, 900, 1200)
DEFAULT_LOST_BUDGET = 0.001   # recommended settings may lose at most this share of jobs


@dataclass(frozen=True)
class Settings:
    max_idle: float = 1200.0
    max_tail: float = 400.0
    retire: float = 21600.0

    def as_dict(self) -> dict:
        return {k: float(v) for k, v in asdict(self).items()}


def candidate_grid(current: Settings, max_idle=None, max_tail=None, retire=None) -> list[Settings]:
    idles = sorted(set(float(x) for x in (max_idle or DEFAULT_MAX_IDLE)) | {float(current.max_idle)})
    tails = sorted(set(float(x) for x in (max_tail or DEFAULT_MAX_TAIL)) | {float(current.max_tail)})
    retires = sorted(set(float(x) for x in (retire or ())) | {float(current.retire)})
    return [Settings(i, t, r) for i in idles for t in tails for r in retires]


def _rank(x: np.ndarray, grid) -> np.ndarray:
    """How many grid values each ``x`` exceeds: kept under grid[k] iff rank <= k."""
    rank = np.zeros(len(x), np.int16)
    for value in grid:
        rank += x > value
    return rank


def _no_timeline(row: str = "") -> str:
    """A row (``row``: its table's alias and a dot) whose timeline is missing (a file of schema
    version 1) or not four lists of one length."""
    first = f"len({row}{TIMELINE[0]})"
    return f"{row}{TIMELINE[0]} IS NULL OR " + " OR ".join(f"{first} <> len({row}{n})" for n in TIMELINE[1:])


def _glideins_sql(chunk_sql: str, timeline: str = ", ".join(TIMELINE)) -> str:
    """The glideins of a pass that have a condor phase: their cell (its code in
    ``whatif_cells``: entry, Frontend client and group, half of the period), cores, phase
    length and start, whether it stopped on its own timeout, job timeline."""
    same = " AND ".join(f"glideins.{n} IS NOT DISTINCT FROM w.{n}" for n in CELL_COLUMNS)
    return f"""
    SELECT w.code AS entry, {CORES} AS c, condor_s AS L, epoch_us(condor_start_at) AS cs,
           COALESCE(shutdown_reason IN {OWN_TIMEOUT_REASONS}, false) AS own, {timeline}
    FROM glideins JOIN whatif_cells w ON {same} AND (epoch_us(condor_start_at) >= w.middle_us) = w.late
    WHERE condor_s IS NOT NULL AND condor_start_at IS NOT NULL {chunk_sql}"""


def _rebuilt_sql(chunk_sql: str, stored: bool) -> str:
    """The same rows, the timeline of a glidein whose row lacks it (``_no_timeline``; every
    row when the files have no timeline columns, ``stored`` False) built from the jobs
    dataset: a join and a GROUP BY, slower, the same jobs in any order (``_in_order`` sorts)."""
    own = ", ".join(TIMELINE) if stored else ", ".join(
        f"CAST(NULL AS {column.sql_type}) AS {column.name}" for column in GLIDEINS if column.name in TIMELINE)
    rebuilt = ", ".join(f"CASE WHEN {_no_timeline('g.')} THEN COALESCE([x.{n} FOR x IN t.jobs], []) "
                        f"ELSE g.{n} END AS {n}" for n in TIMELINE)
    return f"""
    WITH g AS ({_glideins_sql(chunk_sql, "trace_id, " + own)}),
    t AS (SELECT trace_id, list({{'job_started_at': started_at, 'job_ended_at': ended_at,
                                  'job_request_cpus': request_cpus, 'job_failed': COALESCE({JOB_FAILED}, false)}})
            AS jobs
          FROM jobs WHERE trace_id IN (SELECT trace_id FROM g WHERE {_no_timeline()}) {chunk_sql} GROUP BY trace_id)
    SELECT g.entry, g.c, g.L, g.cs, g.own, {rebuilt} FROM g LEFT JOIN t USING (trace_id)"""


def _glideins_of(con, chunk_sql: str, stored: bool):
    """One pass's glideins with their timelines (Arrow): read from their own rows when every
    row has one, else rebuilt from the jobs for those that lack it."""
    if stored:
        table = con.sql(_glideins_sql(chunk_sql)).to_arrow_table()
        if _timeline_usable(table):
            return table
    return con.sql(_rebuilt_sql(chunk_sql, stored)).to_arrow_table()


def _timeline_usable(table) -> bool:
    """Every row has its four timeline lists, of one length per row."""
    import pyarrow.compute as pc
    lengths = [pc.list_value_length(table.column(n)) for n in TIMELINE]
    if any(x.null_count for x in lengths):
        return False
    first = lengths[0].to_numpy()
    return all(np.array_equal(first, x.to_numpy()) for x in lengths[1:])


def _round_ms(x: np.ndarray) -> np.ndarray:
    """``x`` to the millisecond as SQL's ``round(x, 3)`` (halves away from zero)."""
    y = x * 1000.0
    out = np.rint(y)
    whole = np.trunc(y)
    half = np.abs(y - whole) == 0.5
    out[half] = (whole + np.sign(y))[half]
    return out / 1000.0


def _seconds(values, cs: np.ndarray) -> np.ndarray:
    """Timestamps (Arrow, NULL allowed: NaN) in seconds since ``cs`` (epoch microseconds), to
    the millisecond, as epoch seconds subtracted: the jobs' timestamps relative to the phase."""
    import pyarrow as pa
    import pyarrow.compute as pc
    epoch_s = np.asarray(pc.divide(pc.cast(values, pa.int64()), 1e6).to_numpy(zero_copy_only=False), float)
    return _round_ms(epoch_s - cs / 1e6)


def _job_rows(table) -> dict:
    """The replay's rows of one pass's glideins: one per job in the order of its glidein's
    timeline (one per glidein without jobs, at time 0), relative to the condor phase: start
    clipped to [0, L], end to [start, L] (a missing one skipped, as SQL's GREATEST/LEAST do),
    cores the job's request_cpus (0 or NULL: 1) at most the glidein's."""
    import pyarrow.compute as pc
    glidein = {n: table.column(n).to_numpy() for n in ("entry", "c", "L", "own")}
    lists = {n: table.column(n).combine_chunks() for n in TIMELINE}
    n_jobs = pc.list_value_length(lists["job_started_at"]).to_numpy(zero_copy_only=False)
    has_jobs = n_jobs > 0
    runs = np.where(has_jobs, n_jobs, 1)
    is_job = np.repeat(has_jobs, runs)
    rows = {n: np.repeat(v, runs) for n, v in glidein.items()}
    rows.update(gid=np.repeat(np.arange(len(runs)), runs), has_jobs=is_job)
    flat = {n: pc.list_flatten(v) for n, v in lists.items()}
    start, end = (np.full(len(is_job), np.nan) for _ in range(2))
    cs = np.repeat(table.column("cs").to_numpy(), n_jobs)
    start[is_job], end[is_job] = _seconds(flat["job_started_at"], cs), _seconds(flat["job_ended_at"], cs)
    cpus = np.zeros(len(is_job), np.int64)
    cpus[is_job] = flat["job_request_cpus"].fill_null(0).to_numpy(zero_copy_only=False)
    rows["failed"] = np.zeros(len(is_job), bool)
    rows["failed"][is_job] = flat["job_failed"].fill_null(False).to_numpy(zero_copy_only=False)
    rows["s"] = np.fmin(np.fmax(start, 0.0), rows["L"])
    rows["e"] = np.fmin(np.fmax(end, rows["s"]), rows["L"])
    rows["jc"] = np.minimum(np.where(cpus == 0, 1, cpus), rows["c"])
    return _in_order(rows)


def _in_order(rows: dict) -> dict:
    """The rows by glidein and start, as the replay needs them. A stored timeline is in that
    order already (the table writes it by start, then end; rounding and clipping keep it),
    unless a job's start is missing (read as 0); one rebuilt from the jobs is not. Rows of one
    start may come in any order of their ends: each one after the first has no gap, the same
    bins."""
    gid, s, e = rows["gid"], rows["s"], rows["e"]
    if not np.any((s[1:] < s[:-1]) & (gid[1:] == gid[:-1])):
        return rows
    order = np.lexsort((e, s, gid))
    return {n: v[order] for n, v in rows.items()}


def _running_max(segment: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The maximum of ``x`` so far within each run of equal ``segment`` values (sorted):
    numpy orders complex numbers by real part, then imaginary part, so the segment number
    in the real part restarts the running maximum at each glidein, exactly."""
    pairs = np.empty(len(x), complex)
    pairs.real, pairs.imag = segment, x
    return np.maximum.accumulate(pairs).imag


def _running_max_rank(segment: np.ndarray, rank: np.ndarray, top: int) -> np.ndarray:
    """The highest ``rank`` (0..top) so far within each glidein: the segment number as the
    high digit restarts it at each glidein."""
    base = segment * (top + 1)
    return (np.maximum.accumulate(base + rank) - base).astype(np.int16)


def _shifted(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The previous row's ``x`` within the glidein, 0 on its first row."""
    out = np.empty_like(x)
    out[1:] = x[:-1]
    out[first] = 0
    return out


def _replay_rows(rows: dict, cur: Settings, grids) -> dict:
    """Per row: cursor (end of the earlier jobs), gap, run, lag, the ranks of the glidein's
    first-job need, of the running maximum of the tail needs (and the previous job's), of
    the start (and the previous job's) against the candidate lists; first and last flags."""
    I, T, R = grids
    I0, T0, R0 = float(cur.max_idle), float(cur.max_tail), float(cur.retire)
    gid, s, e = rows.pop("gid"), rows["s"], rows["e"]
    first = np.ones(len(gid), bool)
    first[1:] = gid[1:] != gid[:-1]
    last = np.ones(len(gid), bool)
    last[:-1] = first[1:]
    segment = np.cumsum(first) - 1
    runs = np.diff(np.append(np.flatnonzero(first), len(first)))
    ends = _running_max(segment, e)
    cursor = _shifted(ends, first)
    gap = np.maximum(s - cursor, 0.0)
    rp = _running_max_rank(segment, _rank(np.where(first, 0.0, np.minimum(gap, T0)), T), len(T))
    cend = np.repeat(ends[last], runs)
    bi = np.repeat(np.minimum(s[first], I0), runs)
    lag = np.where(rows["own"], np.minimum(np.maximum(rows["L"] - cend - T0, 0.0), LAG_CAP_S), 0.0)
    return {**{k: rows[k] for k in ("entry", "c", "L", "own", "has_jobs", "jc", "failed")},
            "first": first, "last": last, "gap": gap, "cursor": cursor, "run": e - s, "lag": lag, "cend": cend,
            "ri": _rank(bi, I), "rp": rp, "rn": _rank(np.minimum(s, R0), R), "rpp": _shifted(rp, first),
            "rnp": _rank(np.minimum(_shifted(s, first), R0), R)}


@dataclass
class Bins:
    """The grouped contributions of all glideins (numpy columns, a few thousand rows)."""

    kept: dict       # per (entry, rI, rP, rN): before, between, bad, good, n, core_s
    first_cut: dict  # per (entry, rI, rN) of first jobs: the new no-job idle per (I, R)
    later_cut: dict  # per (entry, rI, rPprev, rNprev, rP, rN): the new tail per (T, R)
    glideins: dict   # per (entry, has_jobs, rI, rP, rN): count, recorded idle, new tail per (thr, R)


BIN_TABLES = ("kept", "first_cut", "later_cut", "glideins")


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _joined(parts: list) -> Bins:
    """The bins of several parts of the glideins as one (bins add up)."""
    return Bins(*(_concat([getattr(p, f) for p in parts]) for f in BIN_TABLES))


SLICE_GLIDEINS = 200_000   # glideins replayed at once: the numpy arrays of one slice, about 80 MB


def _bins_of_pass(glideins, cur: Settings, grids, n_entries: int) -> Bins:
    """The bins of one pass's glideins (with their timelines): the numpy replay, a slice of
    SLICE_GLIDEINS glideins at a time (Arrow slices, no copy; bins add up), so the replay's
    memory does not grow with the pass."""
    return _joined([_bins(_replay_rows(_job_rows(glideins.slice(at, SLICE_GLIDEINS)), cur, grids), cur, grids,
                          n_entries) for at in range(0, max(glideins.num_rows, 1), SLICE_GLIDEINS)])


def _on_two_threads(work, items, connect) -> list:
    """``work(connection, item)`` for every item, two at a time, each thread with its own
    DuckDB connection (``connect()``) to the same views: numpy's replay runs on one core per
    thread (it releases the GIL over whole arrays) and the reads overlap; at most two passes
    are held at once."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    local, opened = threading.local(), []

    def run(item):
        if not hasattr(local, "con"):
            local.con = connect()
            opened.append(local.con)
        return work(local.con, item)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(run, items))
    finally:
        for con in opened:
            con.close()


DENSE_GROUPS = 1 << 16   # key combinations up to which a GROUP BY uses a lookup table


def _group(rows: dict, keys: dict, sums: dict) -> dict:
    """GROUP BY the ``keys`` columns of ``rows`` (name -> how many values, small integers from
    0): the keys, the row count ``n`` and the sum of each array of ``sums``."""
    code = np.zeros(len(next(iter(rows.values()))), np.int64)
    for name, size in keys.items():
        code = code * size + rows[name]
    span = math.prod(keys.values())
    if span <= DENSE_GROUPS:     # a lookup table instead of a sort
        codes = np.flatnonzero(np.bincount(code, minlength=span))
        lookup = np.zeros(span, np.int64)
        lookup[codes] = np.arange(len(codes))
        inverse = lookup[code]
    else:
        codes, inverse = np.unique(code, return_inverse=True)
    groups = len(codes)
    out = {}
    for name, size in reversed(keys.items()):
        codes, out[name] = np.divmod(codes, size)
    out = {name: out[name] for name in keys}
    out["n"] = np.bincount(inverse, minlength=groups)
    out.update({name: np.bincount(inverse, weights=values, minlength=groups) for name, values in sums.items()})
    return out


def _subset(rows: dict, mask: np.ndarray, names: str) -> dict:
    at = np.flatnonzero(mask)
    return {name: rows[name].take(at) for name in names.split()}


def _bins(rows: dict, cur: Settings, grids, n_entries: int) -> Bins:
    """The four grouped contributions of a chunk's replayed rows (see Bins)."""
    I, T, R = grids
    size = {"entry": max(n_entries, 1), "has_jobs": 2, "ri": len(I) + 1, "rp": len(T) + 1, "rn": len(R) + 1,
            "rpp": len(T) + 1, "rnp": len(R) + 1}
    keys = lambda *names: {n: size[n] for n in names}  # noqa: E731
    k = _subset(rows, rows["has_jobs"], "entry ri rp rn c gap first failed run jc")
    idle, work = k["c"] * k["gap"], k["run"] * k["jc"]
    kept = _group(k, keys("entry", "ri", "rp", "rn"), {
        "before": np.where(k["first"], idle, 0.0), "between": np.where(k["first"], 0.0, idle),
        "bad": np.where(k["failed"], work, 0.0), "good": np.where(k["failed"], 0.0, work), "core_s": work})
    f = _subset(rows, rows["has_jobs"] & rows["first"] & ((rows["ri"] > 0) | (rows["rn"] > 0)), "entry ri rn c lag")
    first_cut = _group(f, keys("entry", "ri", "rn"), {
        f"v_{a}_{r}": f["c"] * np.where(f["ri"] > a, np.where(f["rn"] > r, np.minimum(i + f["lag"], rv), i + f["lag"]), rv)
        for a, i in enumerate(I) for r, rv in enumerate(R)})
    c = _subset(rows, ~rows["first"] & ((rows["rp"] > 0) | (rows["rn"] > 0)) & (rows["rpp"] < len(T))
                & (rows["rnp"] < len(R)) & (rows["ri"] < len(I)), "entry ri rpp rnp rp rn c lag cursor")
    later_cut = _group(c, keys("entry", "ri", "rpp", "rnp", "rp", "rn"), {
        f"v_{b}_{r}": _cut_tail(c, b, t, r, rv) for b, t in enumerate(T) for r, rv in enumerate(R)})
    columns = "entry has_jobs ri rp rn c L cend own"
    glideins = [_glidein_bins(_subset(rows, rows["last"] & (rows["has_jobs"] == has), columns), has, cur, grids, keys)
                for has in (True, False)]
    return Bins(kept, first_cut, later_cut, _concat(glideins))


def _cut_tail(c: dict, b: int, t: float, r: int, rv: float) -> np.ndarray:
    """The new tail of a glidein cut at this job: T (+ lag) after the last kept job's cursor,
    or the retire time, whichever comes first (0 where neither cuts here)."""
    end = np.minimum(np.where(c["rp"] > b, t + c["lag"], np.inf),
                     np.where(c["rn"] > r, np.maximum(rv - c["cursor"], 0.0), np.inf))
    return np.where(np.isinf(end), 0.0, c["c"] * end)


def _glidein_bins(g: dict, has_jobs: bool, cur: Settings, grids, keys) -> dict:
    """Per glidein with (or without) jobs, from its last row, whose ranks are the glidein's
    highest: the recorded tail (or no-job idle) and the new one for every threshold value
    (t_b_r: Max_Tail T[b], n_a_r: Max_Idle I[a]; retire R[r])."""
    I, T, R = grids
    I0, T0, R0 = float(cur.max_idle), float(cur.max_tail), float(cur.retire)
    c, L, cend = g["c"], g["L"], g["cend"]
    tail_rec, thr0 = L - cend, (T0 if has_jobs else I0)
    ruled = g["own"] & (tail_rec >= thr0 - OWN_RULE_EPS_S)
    kept_tail = np.maximum(tail_rec - thr0, 0.0)
    cap = lambda rv: np.maximum(cend, rv + np.maximum(L - R0, 0.0)) - cend  # noqa: E731

    def new_tail(thr: float, rv: float) -> np.ndarray:
        own = np.maximum(tail_rec - thr0 + thr, 0.0)
        return c * np.minimum(np.where(ruled, own, np.minimum(tail_rec, thr + kept_tail)), cap(rv))
    changed, fixed = (("t", T), ("n", I)) if has_jobs else (("n", I), ("t", T))
    sums = {"tail_rec": c * tail_rec if has_jobs else np.zeros(len(c)), "no_job_rec": np.zeros(len(c)) if has_jobs else c * L}
    for x, thr in enumerate(changed[1]):
        for r, rv in enumerate(R):
            new = new_tail(thr, rv)
            sums[f"{changed[0]}_{x}_{r}"] = new
            sums[f"a{changed[0]}_{x}_{r}"] = (np.abs(new - c * tail_rec) > 0.5).astype(float)   # its idle changes
    out = _group(g, keys("entry", "has_jobs", "ri", "rp", "rn"), sums)
    out.update({f"{a}{fixed[0]}_{x}_{r}": np.zeros(len(out["n"])) for x in range(len(fixed[1])) for r in range(len(R))
                for a in ("", "a")})
    return out


CHUNK_GLIDEINS = 500_000   # glideins per pass (days grouped up to this many)
# a day of more glideins than this (about 90 MB of Arrow with their timelines) is cut into
# shares of at most this many; a smaller day is read whole (each share reads the whole day's
# files again)
SPLIT_GLIDEINS = 1_200_000


@dataclass(frozen=True)
class Chunk:
    """One pass of the replay: some days (``(None,)``: a dataset not partitioned by day), or,
    for a day of more than SPLIT_GLIDEINS glideins, share ``part`` of ``parts`` of its glideins
    (by their trace id's hash, the same for a glidein and its jobs)."""

    days: tuple
    part: int = 0
    parts: int = 1

    def sql(self) -> str:
        """The condition (``AND ...``) on a glideins or jobs row of this pass."""
        out = ("AND date IN (" + ", ".join(f"DATE '{d}'" for d in self.days) + ")") if self.days[0] is not None else ""
        return out + (f" AND hash(trace_id) % {self.parts} = {self.part}" if self.parts > 1 else "")


def chunks(con, days: list) -> list[Chunk]:
    """The passes: consecutive day partitions in groups of about CHUNK_GLIDEINS glideins, a day
    (or an unpartitioned dataset) of more than SPLIT_GLIDEINS cut into shares of its glideins:
    memory stays bounded however many glideins a day holds."""
    if days == [None]:
        counts = {None: con.execute("SELECT COUNT(*) FROM glideins").fetchone()[0]}
    else:
        counts = dict(con.execute("SELECT date, COUNT(*) FROM glideins GROUP BY date").fetchall())
    out, group, size = [], [], 0
    for day in days:
        n = counts.get(day, 0)
        if n > SPLIT_GLIDEINS:
            parts = math.ceil(n / SPLIT_GLIDEINS)
            out += [Chunk((day,), part, parts) for part in range(parts)]
            continue
        if group and size + n > CHUNK_GLIDEINS:
            out.append(Chunk(tuple(group)))
            group, size = [], 0
        group.append(day)
        size += n
    return out + [Chunk(tuple(group))] if group else out


CELL_COLUMNS = ("entry", "client", "client_group")   # a cell: these, and the half of the period


@dataclass
class Cells:
    """What the replay sums each glidein into: its entry, Frontend client and group, and the
    half of the period its condor phase started in (for the split-half check); ``values``:
    per (entry, client, group), the glideins and each lifetime knob's values with their counts
    (the settings the table records); ``first_us``/``last_us``: the earliest and latest condor
    start (epoch microseconds)."""

    keys: list        # (entry, client, client_group, late), in the order of their codes
    values: dict
    first_us: int
    last_us: int

    @property
    def middle_us(self) -> int:
        return (self.first_us + self.last_us) // 2

    @property
    def days(self) -> float:
        """The period the glideins' condor phases started in, at least an hour."""
        return max(self.last_us - self.first_us, 3600e6) / 86400e6


def cells_of(con) -> Cells:
    """The cells of the glideins with a condor phase, from one scan."""
    knobs = ", ".join(f"histogram({column})" for column in KNOBS.values())
    rows = con.execute(f"SELECT {', '.join(CELL_COLUMNS)}, COUNT(*), min(epoch_us(condor_start_at)), "
                       f"max(epoch_us(condor_start_at)), {knobs} FROM glideins "
                       "WHERE condor_s IS NOT NULL AND condor_start_at IS NOT NULL GROUP BY ALL ORDER BY ALL").fetchall()
    keys = [(*row[:3], late) for row in rows for late in (False, True)]
    values = {row[:3]: {"glideins": int(row[3]), **{knob: {float(k): int(v) for k, v in (h or {}).items() if k is not None}
                                                     for knob, h in zip(KNOBS, row[6:])}} for row in rows}
    first = min((row[4] for row in rows), default=0)
    return Cells(keys, values, int(first), int(max((row[5] for row in rows), default=first)))


def collect_bins(data, current: Settings, grids, cells: Cells) -> Bins:
    """The grouped contributions, one pass per chunk (memory bounded by the chunk), per cell
    (coded by its position in ``cells.keys``)."""
    import pyarrow as pa
    columns = list(zip(*cells.keys)) or [()] * 4
    codes = pa.table({**{n: pa.array(columns[i], pa.string()) for i, n in enumerate(CELL_COLUMNS)},
                      "late": pa.array(columns[3], pa.bool_()),
                      "middle_us": pa.array([cells.middle_us] * len(cells.keys), pa.int64()),
                      "code": np.arange(len(cells.keys), dtype=np.int32)})
    stored = set(TIMELINE) <= data.columns("glideins")

    def connect():
        con = data.con.cursor()
        con.register("whatif_cells", codes)
        return con

    def replay(con, chunk):
        return _bins_of_pass(_glideins_of(con, chunk.sql(), stored), current, grids, len(cells.keys))
    return _joined(_on_two_threads(replay, chunks(data.con, data.days()), connect))


class Grid:
    """Candidate totals from the bins: every sum is over the bins a candidate keeps."""

    def __init__(self, bins: Bins, grids, entry_codes: np.ndarray):
        """``entry_codes``: the sorted entry codes present in the bins; totals per entry follow them."""
        self.b, self.grids = bins, grids
        self.entries = entry_codes
        self.codes = {f: np.searchsorted(entry_codes, getattr(bins, f)["entry"]) for f in BIN_TABLES}

    def _by_entry(self, table: str, weights, mask) -> np.ndarray:
        return np.bincount(self.codes[table][mask], weights=np.asarray(weights, dtype=float)[mask],
                           minlength=len(self.entries))

    def totals(self, a: int, b: int, r: int) -> dict:
        """Core-seconds and counts of candidate (I[a], T[b], R[r]), overall and per entry."""
        K, F, C, G = self.b.kept, self.b.first_cut, self.b.later_cut, self.b.glideins
        keep = (K["ri"] <= a) & (K["rp"] <= b) & (K["rn"] <= r)
        first = (F["ri"] > a) | (F["rn"] > r)
        later = (C["ri"] <= a) & (C["rpp"] <= b) & (C["rnp"] <= r) & ((C["rp"] > b) | (C["rn"] > r))
        has = G["has_jobs"].astype(bool)
        uncut = has & (G["ri"] <= a) & (G["rp"] <= b) & (G["rn"] <= r)
        idle_parts = [("kept", K["before"] + K["between"], keep), ("later_cut", C[f"v_{b}_{r}"], later),
                      ("glideins", G[f"t_{b}_{r}"], uncut)]
        no_job_parts = [("first_cut", F[f"v_{a}_{r}"], first), ("glideins", G[f"n_{a}_{r}"], ~has)]
        idle_e = sum(self._by_entry(t, w, m) for t, w, m in idle_parts)
        no_job_e = sum(self._by_entry(t, w, m) for t, w, m in no_job_parts)
        lost_e = self._by_entry("kept", K["n"], ~keep)
        cut_e = self._by_entry("glideins", G["n"], has & ~uncut)
        affected_e = (cut_e + self._by_entry("glideins", G[f"at_{b}_{r}"], uncut)
                      + self._by_entry("glideins", G[f"an_{a}_{r}"], ~has))
        return {"affected_by_entry": affected_e, "idle": float(idle_e.sum()), "no_job": float(no_job_e.sum()), "bad": float(K["bad"][keep].sum()),
                "lost_jobs": int(round(lost_e.sum())), "lost_core_s": float(K["core_s"][~keep].sum()),
                "cut": int(round(cut_e.sum())), "waste_by_entry": idle_e + no_job_e, "lost_by_entry": lost_e,
                "cut_by_entry": cut_e}

    def recorded(self) -> dict:
        K, G = self.b.kept, self.b.glideins
        all_k, all_g = np.ones(len(K["n"]), bool), np.ones(len(G["n"]), bool)
        idle_e = self._by_entry("kept", K["before"] + K["between"], all_k) + self._by_entry("glideins", G["tail_rec"], all_g)
        no_job_e = self._by_entry("glideins", G["no_job_rec"], all_g)
        return {"idle": float(idle_e.sum()), "no_job": float(no_job_e.sum()), "bad": float(K["bad"].sum()),
                "waste_by_entry": idle_e + no_job_e, "jobs": int(K["n"].sum()),
                "jobs_by_entry": self._by_entry("kept", K["n"], all_k),
                "glideins_by_entry": self._by_entry("glideins", G["n"], all_g)}


def pareto_front(points: list[dict]) -> list[dict]:
    """Candidates no other beats on both jobs lost (fewer) and core-hours saved (more)."""
    ordered = sorted(points, key=lambda p: (p["lost_jobs"], -p["saved_core_hours"]))
    front, best = [], -math.inf
    for point in ordered:
        if point["saved_core_hours"] > best + 1e-9:
            front.append(point)
            best = point["saved_core_hours"]
    return front


def replacement_core_hours(con) -> float:
    """What one replacement glidein costs before its first job: the median setup + wait."""
    value = con.execute(f"SELECT median((setup_s + idle_before_first_job_s) * {CORES} / 3600.0) FROM glideins "
                        "WHERE jobs > 0").fetchone()[0]
    return float(value or 0.0)


def evaluate_grid(data, current: Settings, candidates: list[Settings], *,
                  budget: float = DEFAULT_LOST_BUDGET) -> dict:
    """Replay every candidate; totals, the Pareto front, the check that the current settings
    reproduce the recorded waste, and the recommendations per entry and per Frontend group
    (recommend.py), each checked on both halves of the period."""
    from .recommend import recommendations
    candidates = list(candidates) + ([current] if current not in candidates else [])
    grids = tuple(sorted({float(getattr(c, k)) for c in candidates}) for k in ("max_idle", "max_tail", "retire"))
    cells = cells_of(data.con)
    bins = collect_bins(data, current, grids, cells)
    present = np.unique(np.concatenate([getattr(bins, f)["entry"] for f in BIN_TABLES]))
    grid = Grid(bins, grids, present)
    rec = grid.recorded()
    rec_total = rec["idle"] + rec["no_job"]
    replacement = replacement_core_hours(data.con)
    h = 1 / 3600.0
    points, per_cell, reproduction = [], [], None
    for s in candidates:
        t = grid.totals(*(g.index(float(getattr(s, k))) for g, k in zip(grids, ("max_idle", "max_tail", "retire"))))
        saved = (rec_total - t["idle"] - t["no_job"]) * h
        point = {"settings": s.as_dict(), "waste_core_hours": round((t["idle"] + t["no_job"]) * h, 3),
                 "idle_core_hours": round(t["idle"] * h, 3), "no_job_core_hours": round(t["no_job"] * h, 3),
                 "saved_core_hours": round(saved, 3) + 0.0, "lost_jobs": t["lost_jobs"],
                 "lost_job_share": round(t["lost_jobs"] / rec["jobs"], 6) if rec["jobs"] else 0.0,
                 "glideins_cut_short": t["cut"], "lost_job_core_hours": round(t["lost_core_s"] * h, 3),
                 "replacement_core_hours": round(t["cut"] * replacement, 3)}
        point["net_saved_core_hours"] = round(point["saved_core_hours"] - point["replacement_core_hours"], 3)
        points.append(point)
        per_cell.append(t)
        if s == current:
            reproduction = {"recorded_idle_core_hours": round(rec["idle"] * h, 6),
                            "replayed_idle_core_hours": round(t["idle"] * h, 6),
                            "recorded_no_job_core_hours": round(rec["no_job"] * h, 6),
                            "replayed_no_job_core_hours": round(t["no_job"] * h, 6),
                            "recorded_badput_core_hours": round(rec["bad"] * h, 6),
                            "replayed_badput_core_hours": round(t["bad"] * h, 6), "lost_jobs": t["lost_jobs"]}
            reproduction["exact"] = bool(abs(rec["idle"] - t["idle"]) * h < 1e-3
                                         and abs(rec["no_job"] - t["no_job"]) * h < 1e-3 and t["lost_jobs"] == 0)
    return {"current": current.as_dict(), "recorded_waste_core_hours": round(rec_total * h, 3),
            "total_jobs": rec["jobs"], "lost_budget": budget, "replacement_core_hours_per_glidein": round(replacement, 4),
            "candidates": points, "pareto_front": pareto_front(points), "current_replay": reproduction,
            "recommendations": recommendations([cells.keys[code] for code in present], cells, candidates, per_cell, rec,
                                               current, budget, replacement)}
