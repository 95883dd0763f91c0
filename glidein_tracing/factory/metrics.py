"""The forwarder's Prometheus metrics (docs/metrics.md): ``/metrics`` at ``metrics_listen``,
served by prometheus-client (the Prometheus text format, and OpenMetrics when the scraper
asks for it), made at each scrape by one collector from what is on disk, never from this
process's memory, so a restart keeps every counter's meaning:

- the glidein table (table/): ended glideins by outcome and failure domain, core-seconds by
  waste category (Prometheus's base unit: analyze's core-hours x 3600), jobs by verdict,
  duration histograms with an exemplar (a trace id) per bucket. The formulas are the
  analysis's own (table/aggregates.py: the same SQL fragments), so a counter over a window
  equals ``analyze``'s number for it. Each data file is read once and kept while it stays;
  the total is kept by adding the new files and taking away those gone (compaction's
  inputs), in integers, so a scrape reads only what the passes wrote since the last one;
- the ledger: the forwarder's passes (``record_pass`` keeps their tallies there), the oldest
  output still to be read against the Factory's ``job_logs`` ``min_days`` (the data-loss
  margin), its problems' tallies, and the sizes of the ledger, the store and the table.

Label values are bounded: names from the Factory's and the Frontend's configuration, outcome,
failure domain, verdict; never a glidein's or trace's id (a trace id rides on exemplars only).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from pathlib import Path

from ..table import aggregates, layout, reader
from ..table.aggregates import sql_text
from ..table.schema import GLIDEINS_DATASET, JOBS_DATASET

log = logging.getLogger("glidein_tracing.forward")

PREFIX = "glidein_tracing_"
DAY_S = 86400.0
GLIDEIN_LABELS = ("factory", "entry", "site", "frontend", "client", "group", "outcome", "failure_domain")
# the Frontend of a client: GlideinWMS names a Frontend group's client "<frontend>.<group>"
FRONTEND = ("CASE WHEN client_group <> '' AND ends_with(client, '.' || client_group) "
            "THEN left(client, length(client) - length(client_group) - 1) ELSE client END")
N_LABELS = len(GLIDEIN_LABELS)
PLACE = ("factory", "entry", "site")
# Waste categories as analyze reports them (analysis/stats.py waste_core_hours): its glidein
# categories, idle the sum of its three idle ones, badput and goodput from the jobs
IDLE_PARTS = ("idle_before_first_job", "idle_between_jobs", "idle_tail")
GLIDEIN_WASTE = ("validation", *IDLE_PARTS, "no_job", "other")
WASTE_CATEGORIES = ("validation", "idle", "no_job", "other", "badput", "goodput")
# histogram -> the analysis's metric (aggregates.GLIDEIN_METRICS: its value and the rows it has one for)
HISTOGRAMS = {"queue_wait_seconds": "queue_wait_s", "validation_seconds": "setup_s",
              "time_to_first_job_seconds": "time_to_first_job_s", "tail_seconds": "tail_s"}
BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 172800.0)


def record_pass(ledger, stats, started: float, ended: float) -> None:
    """A pass's tallies kept in the ledger's counters, so that the metrics survive a restart;
    named ``pass.*``, apart from the problems' tallies kept there too."""
    with ledger.transaction():
        ledger.bump("pass.count")
        ledger.bump("pass.spans_sent", stats.spans_sent + stats.early_spans_sent)
        ledger.bump("pass.export_failures", stats.export_failures)
        ledger.bump("pass.quarantined", stats.quarantined)
        ledger.bump("pass.table_rows", stats.table_rows)
        ledger.set_counter("pass.last_end_ms", ended * 1000)
        ledger.set_counter("pass.last_duration_ms", (ended - started) * 1000)
        ledger.set_counter("pass.classifiers_disabled", stats.problems.get("classifier_disabled", 0))


def _glidein_sql(relation: str) -> str:
    """One scan of a day's glidein rows: count and core-seconds per waste category, per label set."""
    waste = ", ".join(f"SUM(({aggregates.WASTE[c]}) * {aggregates.CORES})" for c in (*GLIDEIN_WASTE, "lifetime"))
    return (f"SELECT COALESCE(factory, ''), COALESCE(entry, ''), COALESCE(site, ''), COALESCE({FRONTEND}, ''), "
            f"COALESCE(client, ''), "
            f"COALESCE(client_group, ''), COALESCE(outcome, 'unknown'), COALESCE(failure_domain, ''), COUNT(*), "
            f"{waste} "
            f"FROM {relation} GROUP BY ALL")


def _jobs_sql(relation: str) -> str:
    """One scan of a day's job rows: count, badput, goodput per (place, verdict): the job's
    failure domain when it failed (aggregates.JOB_FAILED), else ok."""
    return (f"SELECT COALESCE(factory, ''), COALESCE(entry, ''), COALESCE(site, ''), verdict, COUNT(*), "
            f"SUM(CASE WHEN failed THEN core_s ELSE 0 END), SUM(CASE WHEN failed THEN 0 ELSE core_s END) FROM ("
            f"SELECT factory, entry, site, {aggregates.JOB_FAILED} AS failed, "
            f"CASE WHEN {aggregates.JOB_FAILED} THEN COALESCE(failure_domain, 'unknown') ELSE 'ok' END AS verdict, "
            f"wall_s * {aggregates.JOB_CORES} AS core_s FROM {relation}) GROUP BY ALL")


def _histogram_sql(relation: str) -> str:
    """One scan of the rows' values of every histogram per (name, place, bucket): count, sum,
    and the latest glidein's trace id and value (the bucket's exemplar)."""
    bucket = ("CASE " + " ".join(f"WHEN v <= {le} THEN {i}" for i, le in enumerate(BUCKETS))
              + f" ELSE {len(BUCKETS)} END")
    values = " UNION ALL ".join(
        f"SELECT {sql_text(name)} AS name, factory, entry, site, trace_id, ended_at, {expr} AS v FROM rows "
        f"WHERE {cond} AND isfinite({expr})"
        for name, (expr, cond) in ((name, aggregates.GLIDEIN_METRICS[metric]) for name, metric in HISTOGRAMS.items()))
    return (f"WITH rows AS (SELECT * FROM {relation}) SELECT name, COALESCE(factory, ''), COALESCE(entry, ''), "
            f"COALESCE(site, ''), {bucket}, COUNT(*), SUM(v), arg_max(trace_id, ended_at), arg_max(v, ended_at), "
            f"epoch(max(ended_at)) FROM ({values}) GROUP BY ALL")


SETTLE_NS = 2_000_000_000     # a day directory changed this recently is listed again
MICRO = 1_000_000     # sums are kept in integer millionths: exact to add and take away


def _micro(value) -> int:
    return int(round((value or 0.0) * MICRO))


class Counts:
    """What some rows of the table add to the metrics, in integers (counts, millionths of a
    second or core-second), so that totals are exact: a total never moves backwards by a
    rounding, which Prometheus would take for a counter reset."""

    def __init__(self):
        self.glideins: dict = {}     # GLIDEIN_LABELS values -> [count, core-us per GLIDEIN_WASTE..., lifetime]
        self.jobs: dict = {}         # (place, verdict) -> [count, badput, goodput] (core-us)
        self.histograms: dict = {}   # (name, place, bucket) -> [count, sum us, trace id, value, at]

    def read(self, con, relation: str, dataset: str) -> None:
        """The counts of ``relation``'s rows of ``dataset``."""
        if dataset == GLIDEINS_DATASET:
            for row in con.execute(_glidein_sql(relation)).fetchall():
                self.glideins[tuple(row[:N_LABELS])] = [row[N_LABELS]] + [_micro(v) for v in row[N_LABELS + 1:]]
            for row in con.execute(_histogram_sql(relation)).fetchall():
                self.histograms[(row[0], tuple(row[1:4]), row[4])] = [row[5], _micro(row[6]), *row[7:10]]
        else:
            for row in con.execute(_jobs_sql(relation)).fetchall():
                self.jobs[tuple(row[:4])] = [row[4]] + [_micro(v) for v in row[5:]]

    def add(self, other: Counts, sign: int = 1) -> None:
        """``other``'s counts added (``sign`` -1: taken away). An exemplar is the latest
        glidein's of either; one taken away stays until a later one replaces it."""
        for mine, theirs in ((self.glideins, other.glideins), (self.jobs, other.jobs)):
            for key, values in theirs.items():
                into = mine.setdefault(key, [0] * len(values))
                mine[key] = [a + sign * b for a, b in zip(into, values)]
        for key, (count, summed, trace_id, value, at) in other.histograms.items():
            have = self.histograms.setdefault(key, [0, 0, None, None, None])
            have[0] += sign * count
            have[1] += sign * summed
            if sign > 0 and at is not None and (have[4] is None or at > have[4]):
                have[2:] = [trace_id, value, at]


_OPEN: weakref.WeakSet = weakref.WeakSet()     # every TableCounts, closed before a fork


def _close_before_fork():
    for counts in list(_OPEN):
        counts.close()


os.register_at_fork(before=_close_before_fork)


class TableCounts:
    """The glidein table's counts: each data file read once (DuckDB, the analysis's SQL) and
    kept while its name, size and modification time stay; the total kept up to date by
    adding the new files' counts and taking away those of the files gone (a compaction's
    inputs), so a scrape reads only the files written since the last one."""

    def __init__(self, table_dir):
        self.table_dir = Path(table_dir)
        self.files: dict = {}    # (dataset, path) -> ((size, mtime ns), Counts)
        self.listings: dict = {}  # day directory -> (its mtime ns, {data file: (size, mtime ns)})
        self.total = Counts()
        self.bytes = 0
        self.lock = threading.Lock()     # held by a scrape (they come in threads of their own) while it reads the total
        self.con = None                  # DuckDB, made at first use (a new one costs ~20 ms)
        _OPEN.add(self)

    def refresh(self) -> Counts:
        """The total over the table's files now (call it holding ``lock``), read under the
        table's lock: a compaction half done (its inputs gone, its merged file not yet listed)
        would lower a counter."""
        with layout.locked(self.table_dir):
            return self._refresh()

    def close(self) -> None:
        """Let go of the DuckDB connection (before a fork: a child inheriting one hangs or
        crashes when it lets go of it; table/rollup.py does the same)."""
        with self.lock:
            if self.con is not None:
                self.con.close()
                self.con = None

    def _day_files(self, day_dir: Path) -> dict:
        """{data file: (size, mtime ns)} of a day directory, listed again only when the
        directory changed (the writer adds and removes files by renames, never rewrites one),
        or changed in the last SETTLE_NS (a file system's coarse clock may give two changes
        one time)."""
        try:
            changed = day_dir.stat().st_mtime_ns
        except OSError:
            return {}
        kept = self.listings.get(day_dir)
        if kept is not None and kept[0] == changed and time.time_ns() - changed > SETTLE_NS:
            return kept[1]
        files = {}
        for path in layout.part_files(day_dir):
            try:
                stat = path.stat()
            except OSError:       # removed meanwhile
                continue
            files[path] = (stat.st_size, stat.st_mtime_ns)
        self.listings[day_dir] = (changed, files)
        return files

    def _refresh(self) -> Counts:
        listed, days = {}, set()
        for dataset in (GLIDEINS_DATASET, JOBS_DATASET):
            for day_dir in layout.day_dirs(self.table_dir, dataset):
                days.add(day_dir)
                listed.update(((dataset, path), signature) for path, signature in self._day_files(day_dir).items())
        for gone in set(self.listings) - days:
            del self.listings[gone]
        self.bytes = sum(size for size, _ in listed.values())
        for key in [key for key, (signature, _) in self.files.items() if listed.get(key) != signature]:
            self.total.add(self.files.pop(key)[1], -1)
        new = [key for key in listed if key not in self.files]
        if new and self.con is None:
            import duckdb
            self.con = duckdb.connect()
            self.con.execute("SET threads=1")    # a pass's new files are small: threads cost more than they save
        for key in new:
            counts = self._read_file(self.con, *key)
            if counts is not None:
                self.files[key] = (listed[key], counts)
                self.total.add(counts)
        return self.total

    def _read_file(self, con, dataset: str, path: Path) -> Counts | None:
        """A file's counts, when the table's reader finds it usable and it reads whole; else
        None, named in the log (tried again at the next scrape)."""
        import duckdb
        try:
            scan = reader.check_files([path])
        except reader.TableError as exc:
            log.warning("metrics: %s", exc)
            return None
        for problem in scan.problems:
            log.warning("metrics: %s", problem)
        if not scan.files:
            return None
        counts = Counts()
        try:
            counts.read(con, f"read_parquet({sql_text(path)}, hive_partitioning=false)", dataset)
        except duckdb.Error as exc:
            log.warning("metrics: %s cannot be read: %s", path, str(exc).splitlines()[0][:300])
            return None
        return counts


class ForwarderCollector:
    """The collector prometheus-client calls at each scrape: the table's counts (TableCounts)
    and the ledger's (opened read-only for the scrape: the HTTP server's thread is not the
    pass's)."""

    def __init__(self, factory: str, table_dir, ledger_path, log_retention: dict, store_dir=None):
        self.factory = factory
        self.table = TableCounts(table_dir) if table_dir else None
        self.ledger_path = Path(ledger_path)
        self.min_days = log_retention["job_logs"]["min_days"]
        self.store_dir = Path(store_dir) if store_dir else None

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        if self.table is None:
            yield from self._table_families(Counts())
        else:
            with self.table.lock:
                families = self._table_families(self.table.refresh())
            yield from families
        yield from self._ledger_families()
        sizes = GaugeMetricFamily(PREFIX + "forwarder_bytes", "bytes on disk of the forwarder's files",
                                  labels=("factory", "what"))
        for what, size in (("ledger", self._ledger_bytes()), ("store", self._store_bytes()),
                           ("table", self.table.bytes if self.table else None)):
            if size is not None:
                sizes.add_metric((self.factory, what), size)
        yield sizes

    def _table_families(self, total: Counts) -> list:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
        from prometheus_client.samples import Exemplar
        glideins = CounterMetricFamily(PREFIX + "glideins", "glideins ended, in the glidein table, by outcome "
                                       "and failure domain", labels=GLIDEIN_LABELS)
        waste = CounterMetricFamily(PREFIX + "waste_core_seconds", "core-seconds (analyze's core-hours x 3600) by "
                                    "GlideinWMS's waste category, analyze's definitions", labels=(*PLACE, "category"))
        lifetime = CounterMetricFamily(PREFIX + "glidein_core_seconds", "core-seconds of the glideins' whole node "
                                       "life", labels=PLACE)
        jobs = CounterMetricFamily(PREFIX + "jobs", "user jobs the glideins ran, by verdict (ok, or the failed "
                                   "job's failure domain)", labels=(*PLACE, "verdict"))
        counted, by_verdict, by_place = {}, {}, {}
        for key, values in total.glideins.items():
            if values[0]:
                named = self._named(key)
                counted[named] = counted.get(named, 0) + values[0]
                place = by_place.setdefault(named[:3], {})
                for category, value in zip((*GLIDEIN_WASTE, "lifetime"), values[1:]):
                    place[category] = place.get(category, 0) + value
        for key, (count, badput, goodput) in total.jobs.items():
            if count:
                named = self._named(key)
                by_verdict[named] = by_verdict.get(named, 0) + count
                place = by_place.setdefault(named[:3], {})
                place["badput"] = place.get("badput", 0) + badput
                place["goodput"] = place.get("goodput", 0) + goodput
        for named, count in sorted(counted.items()):
            glideins.add_metric(named, count)
        for named, count in sorted(by_verdict.items()):
            jobs.add_metric(named, count)
        for named, sums in sorted(by_place.items()):
            sums["idle"] = sum(sums.get(part, 0) for part in IDLE_PARTS)
            for category in WASTE_CATEGORIES:
                waste.add_metric((*named, category), sums.get(category, 0) / MICRO)
            lifetime.add_metric(named, sums.get("lifetime", 0) / MICRO)
        families = [glideins, waste, lifetime, jobs]
        buckets: dict = {}
        for (name, place, bucket), values in total.histograms.items():
            if values[0]:
                buckets.setdefault(name, {}).setdefault(self._named(place), {})[bucket] = values
        for name in HISTOGRAMS:
            family = HistogramMetricFamily(PREFIX + "glidein_" + name, f"glideins' {name[:-len('_seconds')]} "
                                           "(seconds; the analysis's definition)", labels=PLACE)
            for place, got in sorted(buckets.get(name, {}).items()):
                cumulative, rows = 0, []
                for index, le in enumerate((*BUCKETS, float("inf"))):
                    one = got.get(index)
                    cumulative += one[0] if one else 0
                    bound = "+Inf" if index == len(BUCKETS) else f"{le:g}"
                    rows.append((bound, cumulative, Exemplar({"trace_id": one[2]}, one[3], one[4]))
                                if one and one[2] else (bound, cumulative))
                family.add_metric(place, rows, sum(b[1] for b in got.values()) / MICRO)
            families.append(family)
        return families

    def _named(self, key: tuple) -> tuple:
        """Label values with the Factory's own name for rows that lack one."""
        return (key[0] or self.factory, *key[1:])

    def _ledger_families(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        from .ledger import Ledger, LedgerError
        try:
            ledger = Ledger(self.ledger_path, read_only=True)
        except (LedgerError, OSError) as exc:
            log.warning("metrics: the ledger cannot be read: %s", exc)
            return
        try:
            counters, oldest = ledger.counters(), ledger.oldest_waiting()
        finally:
            ledger.close()
        factory = (self.factory,)

        def gauge(name, text, value):
            family = GaugeMetricFamily(PREFIX + name, text, labels=("factory",))
            family.add_metric(factory, value)
            return family

        def counter(name, text, value):
            family = CounterMetricFamily(PREFIX + name, text, labels=("factory",))
            family.add_metric(factory, value)
            return family
        if "pass.count" in counters:
            yield gauge("forwarder_last_pass_timestamp_seconds", "when the forwarder's last pass ended (epoch s)",
                        counters["pass.last_end_ms"] / 1000)
            yield gauge("forwarder_last_pass_duration_seconds", "how long the last pass took",
                        counters["pass.last_duration_ms"] / 1000)
            yield gauge("forwarder_classifiers_disabled", "failure classifiers the last pass disabled",
                        counters.get("pass.classifiers_disabled", 0))
        yield counter("forwarder_passes", "passes the forwarder made", counters.get("pass.count", 0))
        yield counter("forwarder_spans_sent", "spans sent (Factory stages of running glideins included)",
                      counters.get("pass.spans_sent", 0))
        yield counter("forwarder_export_failures", "exports that failed (retried at the next pass)",
                      counters.get("pass.export_failures", 0))
        yield counter("forwarder_table_rows", "glideins the passes wrote to the glidein table",
                      counters.get("pass.table_rows", 0))
        yield counter("forwarder_glideins_quarantined", "glideins whose spans failed to export alone while others "
                      "went through (kept for forward --retry-quarantined)", counters.get("pass.quarantined", 0))
        problems = CounterMetricFamily(PREFIX + "forwarder_problems", "problems the passes met, by kind",
                                       labels=("factory", "kind"))
        for kind, value in sorted(counters.items()):
            if not kind.startswith("pass."):
                problems.add_metric((self.factory, kind), value)
        yield problems
        age = max(0.0, time.time() - oldest) if oldest is not None else 0.0
        yield gauge("forwarder_oldest_unread_output_age_seconds", "how long ago the longest-waiting ended glidein "
                    "not yet forwarded ended (0: none waits)", age)
        yield gauge("forwarder_data_loss_margin_seconds", "the Factory's job_logs min_days less that age: "
                    "below 0, GlideinWMS may have deleted an output before it was read", self.min_days * DAY_S - age)

    def _ledger_bytes(self) -> int:
        return sum(os.path.getsize(p) for p in (self.ledger_path, Path(f"{self.ledger_path}-wal"))
                   if p.exists())

    def _store_bytes(self) -> int | None:
        if self.store_dir is None:
            return None
        from ..exporters.store import store_files
        return sum(p.stat().st_size for p in store_files(self.store_dir) if p.exists())


class MetricsServer:
    """``/metrics`` on ``address`` (host, port) until ``stop``."""

    def __init__(self, collector: ForwarderCollector, address: tuple):
        from prometheus_client import CollectorRegistry, start_http_server
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        host, port = address
        try:
            self.server, self.thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            from ..core.errors import ConfigError
            raise ConfigError([f"metrics_listen: cannot listen on {host}:{port}: {exc.strerror or exc}"],
                              heading=None) from exc
        self.port = self.server.server_port

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
