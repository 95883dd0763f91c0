"""Build the glidein table (docs/glidein-table.md) from the store or from Jaeger's query API.

One Parquet row per glidein and per user job, from traces that already exist: the embedded
store, or Jaeger's query API a day at a time.

The Factory forwarder writes the table as it finishes glideins; this verb fills it for what
was traced before. Glideins the table already holds are left out, so it can be run again
(after an interruption, or on a store that grew). `--check` reads the table back: rows per
dataset, files that are damaged (named, left out) and schema versions. `--rollups` writes the
rollups (docs/glidein-table.md: the statistics' aggregate, the failed glideins' groups) the
files lack.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from ..core.progress import on_terminal
from .main import UserError


def add_arguments(parser):
    parser.add_argument("--table", required=True, help="the glidein table's directory")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--store", help="build from this embedded store (default: the user's data dir)")
    source.add_argument("--jaeger", metavar="URL", help="build from Jaeger's query API at URL (e.g. "
                        "http://localhost:16686), a day at a time from --since to --until")
    source.add_argument("--check", action="store_true", help="read the table back and report")
    source.add_argument("--rollups", action="store_true", help="write the rollups (statistics, failed glideins' "
                        "groups) the table's files lack (a table written before they existed, or whose rollups/ was "
                        "deleted)")
    parser.add_argument("--since", metavar="YYYY-MM-DD", help="with --jaeger: first day (UTC) of trace starts")
    parser.add_argument("--until", metavar="YYYY-MM-DD", help="with --jaeger: last day (default: today)")
    parser.add_argument("--service", default="glidein", help="with --jaeger: the glideins' service.name")
    parser.add_argument("--timeout", type=float, default=30.0, help="with --jaeger: seconds per request")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (there is none off a terminal)")


def _day(text: str | None, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text) if text else dt.datetime.now(dt.timezone.utc).date()
    except ValueError:
        raise UserError(f"{name}: not a day (YYYY-MM-DD): {text!r}") from None


def run(args):
    from ..table import backfill, reader

    if args.check:
        if not Path(args.table).is_dir():
            raise UserError(f"{args.table}: no such table directory")
        return _check(args.table)
    progress = on_terminal(args.quiet)
    if args.rollups:
        return _rollups(args.table, progress)
    if args.jaeger:
        if not args.since:
            raise UserError("--jaeger needs --since YYYY-MM-DD (the first day to read)")
        since, until = _day(args.since, "--since"), _day(args.until, "--until")
        if until < since:
            raise UserError(f"--until {until} is before --since {since}")
        report = backfill.from_jaeger(args.jaeger, args.table, since, until, service=args.service,
                                      timeout=args.timeout, progress=progress)
    else:
        from ..exporters.store import default_store_dir
        store = args.store or default_store_dir()
        if not Path(store).is_dir():
            raise UserError(f"{store}: no such store directory")
        try:
            report = backfill.from_store(store, args.table, progress=progress)
        except reader.TableError as exc:
            raise UserError(str(exc)) from None
    for problem in report.problems:
        print(f"glidein-tracing table: {problem}", file=sys.stderr)
    print(f"glidein-tracing table: {report.glideins} glideins written, {report.already} already in the "
          f"table, {report.spans} spans read, {report.not_glideins} other traces", file=sys.stderr)
    return 1 if report.problems else 0


def _rollups(table, progress: bool) -> int:
    from ..table import backfill, reader
    if not Path(table).is_dir():
        raise UserError(f"{table}: no such table directory")
    try:
        written, kept, problems = backfill.missing_rollups(table, progress)
    except reader.TableError as exc:
        raise UserError(str(exc)) from None
    for problem in problems:
        print(f"glidein-tracing table: {problem}", file=sys.stderr)
    print(f"glidein-tracing table: rollups written for {written} files, {kept} files had theirs", file=sys.stderr)
    return 1 if problems else 0


def _check(table) -> int:
    from ..table import layout, reader
    from ..table.schema import DATASETS
    quarantined = layout.quarantined_files(table)
    for path in quarantined:
        print(f"glidein-tracing table: {path}: damaged, moved aside by compaction; its rows are not in the "
              "table (inspect it, then delete it)", file=sys.stderr)
    problems = len(quarantined)
    for dataset in DATASETS:
        try:
            rows, scan = reader.read_rows(table, dataset, ["trace_id"])
        except reader.TableError as exc:
            raise UserError(str(exc)) from None
        for problem in scan.problems:
            print(f"glidein-tracing table: {problem}", file=sys.stderr)
        problems += len(scan.problems)
        versions = sorted(set(scan.versions.values()))
        print(f"{dataset}: {rows.num_rows} rows in {len(scan.files)} files, "
              f"{len(set(rows.column('date').to_pylist()))} days, schema versions {versions or '-'}")
    return 1 if problems else 0
