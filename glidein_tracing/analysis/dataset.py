"""The glidein table as DuckDB sees it: views ``glideins`` and ``jobs`` over Parquet files.

``open_dataset(where)`` takes the table's directory (the one holding ``glideins/`` and
``jobs/``, each hive-partitioned ``date=YYYY-MM-DD/``), a dataset directory, or a glob of
glidein files; several Factories' tables are several paths. Which files are usable is the
table's one reader's decision (table/reader.py: a damaged file, or one that is no table file,
is named in ``skipped`` and left out, the rest is analysed; a file of a newer schema version is
refused, here as ``DatasetError``); files without the columns the analysis reads are refused
too; older files lacking columns added since are read with those columns NULL
(``union_by_name``, or a NULL column when no file has one). A day with no rows, or no files,
is simply empty; a directory that is no table, a table with no glidein file, and
``entries``/``sites`` that match no glidein are refused (``DatasetError``): an empty report
would look like an answer.

For each kind of rollup (table/rollup.py: the statistics', stats.py, and the failed glideins'
groups, failure_groups.py), each dataset also has a view of its files without a usable rollup
of that kind, read raw, and one of the rows of the others' rollups (``rollup.view_names``), filtered
like the rest; ``rollups`` counts the statistics' both ways, the files whose rollup an older
release wrote (stale: read raw until they are rewritten), and those lacking a kind added since
(read raw for it until ``glidein-tracing table --rollups`` writes it).

What the sections derive from all rows, read once, is the dataset's too: the glideins counted
per entry, site, hour and host (``glidein_counts``, with the selections compare declares),
the failed rows' groups (``failure_groups``) and the jobs per hour (``job_hours``), made on
first use; the sections may run in any order.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

from ..table import reader, rollup
from ..table.aggregates import sql_text
from ..table.schema import GLIDEINS, GLIDEINS_DATASET, JOBS, JOBS_DATASET
from . import failure_groups, glidein_counts

# what the analysis reads; a file lacking one of these is no glidein table this reader understands
REQUIRED = ("schema_version", "trace_id", "entry", "site", "outcome", "node_start_at", "setup_s")
MEMORY_LIMIT = "1GB"       # DuckDB's own buffers; beyond it, it spills to its temp directory


class DatasetError(Exception):
    """The dataset cannot be analysed (nothing readable, or a schema this reader refuses)."""


class NothingMatches(DatasetError):
    """The filters keep no glidein of a readable table; ``held`` says what it holds instead
    (when its glideins ended, or the values of the column filtered on)."""

    def __init__(self, message: str, held: str):
        super().__init__(message)
        self.held = held


@dataclass
class Dataset:
    con: object                                 # duckdb connection with views glideins, jobs
    glidein_files: list
    job_files: list
    skipped: list = field(default_factory=list)  # (file, reason)
    versions: list = field(default_factory=list)
    rollups: dict = field(default_factory=dict)  # data files, those read from their rollup, those whose rollup is stale
    selections: dict = field(default_factory=dict)  # name -> SQL condition: glideins also counted per selection
    _counted: dict | None = field(default=None, init=False, repr=False)   # the selections the counts hold
    _groups: failure_groups.Groups | None = field(default=None, init=False, repr=False)
    _job_hours: str | None = field(default=None, init=False, repr=False)

    @property
    def has_jobs(self) -> bool:
        return bool(self.job_files)

    def days(self) -> list:
        """The date partitions present (for per-day passes), or [None] when unpartitioned."""
        rows = self.con.execute("SELECT DISTINCT date FROM glideins ORDER BY 1").fetchall() \
            if "date" in self.columns("glideins") else []
        return [r[0] for r in rows] or [None]

    def columns(self, view: str) -> set:
        return {r[0] for r in self.con.execute(f"DESCRIBE {view}").fetchall()}

    def declare_selections(self, selections: dict) -> None:
        """Glideins to be counted per selection too (name -> SQL condition over a glidein row:
        compare.py's), declared before the first count so that one pass counts them all; one
        declared after it is counted in another pass."""
        self.selections = {**self.selections, **selections}

    def glidein_counts(self) -> str:
        """The name of the table of all glideins counted per entry, site, hour and host, and per
        declared selection (glidein_counts.py), counted on first use."""
        if self._counted is None or not self.selections.items() <= self._counted.items():
            self._counted = dict(self.selections)
            glidein_counts.count(self.con, self._counted)
        return glidein_counts.TABLE

    def failure_groups(self) -> failure_groups.Groups:
        """The failed rows' groups (failure_groups.py), summed on first use, beside the glidein
        counts."""
        if self._groups is None:
            self.glidein_counts()
            self._groups = failure_groups.summed(self.con)
        return self._groups

    def job_hours(self) -> str:
        """The name of the table of all jobs counted per hour of their start (failure_groups.py),
        counted on first use: only a service's outage windows ask for it."""
        if self._job_hours is None:
            self._job_hours = failure_groups.count_job_hours(self.con, self.failure_groups())
        return self._job_hours


def _scan(where, dataset: str) -> reader.Scan:
    """The usable files of one dataset at ``where`` (table/reader.py decides which): the table
    directory's ``glideins/`` or ``jobs/``, a dataset directory (its table is its parent), or
    (glideins only) a glob of files."""
    path = Path(where)
    if path.is_dir():
        if (path / dataset).is_dir():
            return reader.usable_files(path, dataset)
        if path.name in (GLIDEINS_DATASET, JOBS_DATASET):
            return reader.usable_files(path.parent, dataset)
        if dataset == GLIDEINS_DATASET:
            raise DatasetError(f"{where} is not a glidein table: it has no {GLIDEINS_DATASET}/ directory (give the "
                               f"table's directory, the one holding {GLIDEINS_DATASET}/ and {JOBS_DATASET}/)")
        return reader.Scan()
    if dataset != GLIDEINS_DATASET:
        return reader.Scan()
    return reader.check_files(sorted(glob.glob(str(where), recursive=True)))


def _decoded(scan: reader.Scan) -> None:
    """Leave out (and name) the files whose footer reads but whose values do not decode."""
    import duckdb
    for path in list(scan.files):
        try:
            duckdb.execute("SELECT max(COLUMNS(*)) FROM read_parquet(?)", [str(path)]).fetchall()
        except duckdb.Error as exc:
            scan.files.remove(path)
            scan.schemas.pop(path, None)
            scan.skipped.append((path, f"damaged Parquet file: {str(exc).splitlines()[0][:200]}"))


def _usable(scans: list, verify: bool) -> reader.Scan:
    """One Scan of several (several tables, globs)."""
    out = reader.Scan()
    for scan in scans:
        out.files += scan.files
        out.versions.update(scan.versions)
        out.skipped += scan.skipped
        out.schemas.update(scan.schemas)
        out.rows.update(scan.rows)
    if verify:
        _decoded(out)
    return out


def _listing(files) -> str:
    return ", ".join(map(sql_text, files))


def _view(con, view: str, scan: reader.Scan, columns, where: str) -> None:
    """The view over ``scan``'s files. Files of several schemas are read by name, each lacking
    column NULL; that makes DuckDB read every file's footer at every query's bind (seconds per
    query over 2,000 files), so files of one schema are read as they are."""
    if scan.files:
        present = set().union(*(schema.to_arrow_schema().names for schema in scan.schemas.values()))
        added = "".join(f", CAST(NULL AS {c.sql_type}) AS {c.name}" for c in columns
                        if scan.schemas and c.name not in present)   # a column no file has yet
        con.execute(f"CREATE VIEW {view} AS SELECT *{added} FROM read_parquet([{_listing(scan.files)}], "
                    f"hive_partitioning=true, union_by_name={str(not scan.one_schema).lower()}) {where}")
    else:   # no files: an empty view with the table's columns
        cols = ", ".join(f"CAST(NULL AS {c.sql_type}) AS {c.name}" for c in columns)
        con.execute(f"CREATE VIEW {view} AS SELECT {cols}, CAST(NULL AS DATE) AS date WHERE false")


def _rollup_views(con, dataset: str, scan: reader.Scan, columns, where: str, raw_only: bool) -> tuple[int, int, int]:
    """Per kind of rollup of the dataset (rollup.py), its two views (``rollup.view_names``): the
    files without a usable rollup of that kind, and the rows of the others' rollups. Returns
    the statistics' (files read from their rollup, files whose rollup is stale) and the files
    with a statistics rollup but none of a kind added since (an older release's table).
    ``raw_only``: a filter the rollups cannot apply (their rows are per entry and site only),
    so every file is read raw."""
    counts, written = {}, {}
    for kind in rollup.kinds_of(dataset):
        rolled, stale = ({}, []) if raw_only else rollup.usable(scan.files, scan.rows, kind)
        counts[kind], written[kind] = (len(rolled), len(stale)), set(rolled) | set(stale)
        raw = [f for f in scan.files if f not in rolled]
        unrolled_view, rollups_view = rollup.view_names(dataset, kind)
        _view(con, unrolled_view, reader.Scan(files=raw, schemas={f: scan.schemas[f] for f in raw}), columns, where)
        names = ", ".join(name for name, _ in kind.columns)
        source = (f"read_parquet([{_listing(rolled.values())}], hive_partitioning=false)" if rolled else
                  "(SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {n}" for n, t in kind.columns) + " WHERE false)")
        con.execute(f"CREATE VIEW {rollups_view} AS SELECT {names} FROM {source} {'' if raw_only else where}")
    lacking = {f for f in written[rollup.STATS] if any(f not in files for files in written.values())}
    return (*counts[rollup.STATS], len(lacking))


def _time_condition(since: float | None, until: float | None, partitioned: bool) -> list:
    """Glideins that ended in [since, until) (epoch seconds), and (``partitioned``: files of
    day partitions) only the days that can hold them (a row's day is its end's UTC day), so
    the others are not read."""
    out = []
    for bound, op, day_op in ((since, ">=", ">="), (until, "<", "<=")):
        if bound is not None:
            at = f"make_timestamp({int(bound * 1e6)})"
            out += [f"ended_at {op} {at}"] + ([f"date {day_op} CAST({at} AS DATE)"] if partitioned else [])
    return out


def open_dataset(*paths, jobs=(), entries=None, sites=None, clients=None, groups=None, since: float | None = None,
                 until: float | None = None, memory_limit: str = MEMORY_LIMIT, verify: bool = False) -> Dataset:
    """Views over the readable files of ``paths`` (see the module doc); ``jobs``: globs of job
    files (for ``paths`` that are globs of glidein files); ``entries``/``sites``/``clients``
    (Frontend clients)/``groups`` (Frontend groups) keep only those, ``since``/``until`` (epoch
    seconds) the glideins that ended in [since, until) (both views: a job is kept with its
    glidein). ``verify``: decode every value of every file first (slow; for a dataset whose
    footers read but whose data does not, to find and skip the damaged files)."""
    import duckdb
    try:
        glideins = _usable([_scan(p, GLIDEINS_DATASET) for p in paths], verify)
        job_scans = [_scan(p, JOBS_DATASET) for p in paths]
        job_scans += [reader.check_files(sorted(glob.glob(str(pattern), recursive=True))) for pattern in jobs]
        jobs_found = _usable(job_scans, verify)
    except reader.TableError as exc:
        raise DatasetError(str(exc)) from exc
    glidein_files = [str(f) for f in glideins.files]
    job_files = [str(f) for f in jobs_found.files]
    skipped = [(str(f), why) for f, why in glideins.skipped + jobs_found.skipped]
    if not glidein_files and glideins.skipped:
        raise DatasetError(f"no usable glidein table file at {', '.join(map(str, paths))}: "
                           + "; ".join(f"{f}: {why}" for f, why in skipped[:3]))
    if not glidein_files:
        raise DatasetError(f"no glidein table files at {', '.join(map(str, paths))}")
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit=?", [memory_limit])
    except duckdb.Error as exc:
        raise DatasetError(f"not a memory limit: {memory_limit!r} (e.g. 1GB, 512MB)") from exc
    con.execute("SET preserve_insertion_order=false")
    # every query over the views binds them, reading each file's footer again unless DuckDB
    # keeps them (it checks each file's modification time before reusing one)
    con.execute("SET parquet_metadata_cache=true")
    con.execute("SET enable_progress_bar=false")
    # an SQL predicate naming a function of an extension not built in (--compare 'cpus >>= 8')
    # made DuckDB try to download and load it: the analysis fetches and loads nothing (Parquet,
    # JSON and ICU are built in), and the predicate is refused naming its function
    con.execute("SET autoinstall_known_extensions=false")
    con.execute("SET autoload_known_extensions=false")
    filters = {"entry": entries, "site": sites, "client": clients, "client_group": groups}
    conditions = [f"{column} IN (" + ", ".join(map(sql_text, values)) + ")" for column, values in filters.items() if values]
    glidein_only = bool(clients or groups) or since is not None or until is not None   # columns the jobs lack
    conditions += _time_condition(since, until, all("date=" in f for f in glidein_files))
    where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
    rollups = {"files": len(glidein_files) + len(job_files), "used": 0, "stale": 0, "lacking": 0}
    for dataset, scan, columns in ((GLIDEINS_DATASET, glideins, GLIDEINS), (JOBS_DATASET, jobs_found, JOBS)):
        if dataset == JOBS_DATASET and glidein_only:    # the jobs of the glideins kept
            where = " AND ".join(["WHERE trace_id IN (SELECT trace_id FROM glideins)"]
                                 + [c for c in conditions if c.startswith(("entry ", "site "))])
        _view(con, dataset, scan, columns, where)
        used, stale, lacking = _rollup_views(con, dataset, scan, columns, where, raw_only=glidein_only)
        rollups["used"] += used
        rollups["stale"] += stale
        rollups["lacking"] += lacking
    data = Dataset(con, glidein_files, job_files, skipped, rollups=rollups)
    present = data.columns("glideins")
    missing = [c for c in REQUIRED if c not in present]
    if missing:
        raise DatasetError(f"the glidein files lack {', '.join(missing)}: not a glidein table this version reads")
    data.versions = sorted(set(glideins.versions.values()))
    if conditions and not con.execute("SELECT 1 FROM glideins LIMIT 1").fetchall():   # fetched whole: the connection goes on
        raise NothingMatches(*_nothing_matches(con, glideins, filters, since, until, paths))
    _only_its_own_files(con, glidein_files + job_files)
    return data


def _only_its_own_files(con, files: list) -> None:
    """From here on the connection reads only the dataset's files and their rollups, and
    writes none: a user's SQL (``analyze --compare`` predicates) cannot read, write or list
    another file. Locked, so no SQL turns it back on."""
    allowed = sorted(set(files) | {str(rollup.path_of(f, kind)) for f in files for kind in rollup.KINDS})
    con.execute("SET allowed_paths=?", [allowed])
    con.execute("SET enable_external_access=false")
    con.execute("SET lock_configuration=true")


PLURALS = {"entry": "entries", "site": "sites", "client": "Frontend clients", "client_group": "Frontend groups"}


def _nothing_matches(con, scan: reader.Scan, filters: dict, since, until, paths) -> tuple:
    """Why the filters keep no glidein: the values asked for, and some the table holds (or
    when its glideins ended): (the whole message, what the table holds)."""
    asked = [f"{'group' if column == 'client_group' else column} {', '.join(values)}"
             for column, values in filters.items() if values]
    files = f"read_parquet([{_listing(scan.files)}], union_by_name=true)"
    when = " and ".join(f"{word} {_utc(t)}" for word, t in (("ended since", since), ("before", until)) if t is not None)
    if when:
        asked.append(f"that {when} UTC")
    column = next((column for column, values in filters.items() if values), None)
    if column is None:
        rows, first, last = con.execute(f"SELECT count(*), epoch(min(ended_at)), epoch(max(ended_at)) "
                                        f"FROM {files}").fetchone()
        held = (f"its glideins ended from {_utc(first)} to {_utc(last)} UTC" if first is not None
                else f"none of its {rows:,} glideins has an end time" if rows else "it holds no glidein")
    else:
        present = [r[0] for r in con.execute(f"SELECT DISTINCT {column} FROM {files} ORDER BY 1 LIMIT 11").fetchall()]
        held = f"its {PLURALS[column]}: " + (", ".join(map(str, present[:10])) + (", ..." if len(present) > 10 else "")
                                             or "none")
    return f"no glidein of {' and '.join(asked)} in {', '.join(map(str, paths))} ({held})", held


def _utc(epoch: float) -> str:
    import time
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))

