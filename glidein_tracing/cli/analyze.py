"""Analyse the glidein table: stage percentiles, waste, failures, timeout what-if.

GlideinWMS's analyze_entries table and the compare view too, all as SQL on DuckDB over the
table's Parquet files.

TABLE is the glidein table's directory (the one holding glideins/ and jobs/), or a glob of
glidein files; several (e.g. several Factories' tables on shared storage) are analysed as
one. Prints a summary; --json and --html write the full document and a self-contained
page with sortable tables and plots. --whatif replays every glidein under a grid of
GLIDEIN_Max_Idle / Max_Tail / retire values and recommends settings (docs/analysis.md).

Examples:
  glidein-tracing analyze /var/lib/gwms-factory/glidein-table --whatif --html report.html
  glidein-tracing analyze 'table/glideins/date=2026-01-*/*.parquet' --jobs 'table/jobs/date=2026-01-*/*.parquet'
  glidein-tracing analyze TABLE --store STORE --html report.html   # trace ids link to waterfall pages
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from ..core.errors import UserError
from ..core.nospace import is_no_space
from ..core.progress import Stages, on_terminal
from ..core.terminal import echo
from .main import number_in, parse_duration, utc_time


def _number_list(text: str) -> list[float]:
    try:
        return [float(parse_duration(part)) for part in re.split(r"[,\s]+", text.strip()) if part]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of seconds: {text!r} (e.g. 300,600,20m)") from exc


def add_arguments(parser):
    parser.add_argument("table", nargs="+", help="glidein table directory, dataset directory or glob of glidein files")
    parser.add_argument("--jobs", action="append", default=[], metavar="GLOB",
                        help="job files, when TABLE is a glob of glidein files (the what-if needs them)")
    parser.add_argument("--entry", action="append", help="only this entry (repeatable)")
    parser.add_argument("--site", action="append", help="only this site (repeatable)")
    parser.add_argument("--client", action="append", help="only the glideins of this Frontend client (GLIDECLIENT_Name, "
                        "repeatable)")
    parser.add_argument("--group", action="append", help="only the glideins of this Frontend group (GLIDECLIENT_Group, "
                        "repeatable)")
    parser.add_argument("--since", type=utc_time, metavar="UTC",
                        help="only glideins that ended at or after this UTC date or time (2026-01-31, 2026-01-31T12:00)")
    parser.add_argument("--until", type=utc_time, metavar="UTC", help="only glideins that ended before this UTC time")
    parser.add_argument("--window", type=_number_list, metavar="LIST",
                        help="analyze_entries' recent periods too, back from --until or the latest glidein's end "
                             "(e.g. 2h,24h,168h as GlideinWMS's analyze_entries)")
    parser.add_argument("--json", metavar="OUT", help="write the full analysis as JSON ('-' for stdout)")
    parser.add_argument("--html", metavar="OUT", help="write a self-contained HTML report")
    parser.add_argument("--quiet", action="store_true", help="no terminal summary")
    parser.add_argument("--memory-limit", default="1GB",
                        help="DuckDB's memory limit, beyond which it spills to disk (default %(default)s)")
    parser.add_argument("--jaeger-ui", metavar="URL",
                        help="Jaeger UI base URL: trace ids in the report (and the waterfall pages) link there")
    parser.add_argument("--store", metavar="DIR",
                        help="render the report's trace ids found in this store as waterfall pages beside the "
                             "report (OUT.traces/), each linking back to it, and link the ids to them")
    parser.add_argument("--compare", nargs="+", metavar="SELECTION",
                        help="compare two populations: two selections, each COLUMN=VALUE or an SQL predicate over a "
                             "glidein row (e.g. overload_enabled=true overload_enabled=false, or 'cpus >= 8' "
                             "'cpus < 8'), or a built-in view: overload, versions")
    what = parser.add_argument_group("what-if")
    what.add_argument("--whatif", action="store_true", help="replay the glideins under candidate settings")
    what.add_argument("--max-idle", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Max_Idle values, s")
    what.add_argument("--max-tail", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Max_Tail values, s")
    what.add_argument("--retire", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Retire_Time values, s")
    for knob in ("max-idle", "max-tail", "retire"):
        what.add_argument(f"--current-{knob}", type=parse_duration, default=None,
                          help=f"the {knob} the glideins ran with (default: what the table records)")
    what.add_argument("--lost-budget", type=number_in(0, 1), default=0.001,
                      help="recommend only settings losing at most this share of jobs (default %(default)s)")


def _trace_pages(doc: dict, store_dir: str, html_path: str, jaeger_ui: str | None) -> dict:
    """Waterfall pages of the report's example trace ids that the store holds, each linking
    back to the report (and to the trace in Jaeger with ``jaeger_ui``)."""
    from ..exporters.store import Store, StoreError
    from ..viewers.waterfall import render_html
    wanted = {t for o in doc["failures"]["outages"] for t in o["examples"]}
    for key in ("top_messages", "service_outages", "top_unclassified"):
        wanted |= {t for m in doc["failures"][key] for t in m["examples"]}
    examples = doc.get("examples") or {}
    wanted |= {t for key in ("slowest_setup", "longest_idle") for t in examples.get(key, [])}
    wanted |= {t for ids in (examples.get("cut") or {}).values() for t in ids}
    folder = Path(html_path + ".traces")
    pages = {}
    try:
        store = Store(store_dir, read_only=True)
        for trace_id in sorted(wanted):
            spans = store.trace(trace_id)
            if spans:
                folder.mkdir(exist_ok=True)
                page = render_html(spans, jaeger_ui=jaeger_ui, report="../" + Path(html_path).name)
                (folder / f"{trace_id}.html").write_text(page, encoding="utf-8")
                pages[trace_id] = f"{folder.name}/{trace_id}.html"
    except (StoreError, OSError) as exc:
        raise UserError(f"cannot read the store {store_dir}: {exc}") from exc
    return pages


def _refuse_unwritable(path: str | None, flag: str) -> None:
    """A report that could not be written is refused before the analysis, not after it."""
    if not path or path == "-":
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise UserError(f"{flag} {path}: is a directory; give a file name")
    if not folder.is_dir():
        raise UserError(f"{flag} {path}: no directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"{flag} {path}: not writable by this user")


def run(args):
    import duckdb
    if args.compare and len(args.compare) > 2:
        raise UserError("--compare takes two selections (or one built-in view: overload, versions)")
    _refuse_unwritable(args.json, "--json")
    _refuse_unwritable(args.html, "--html")
    if args.store and args.html:
        from ..exporters.store import Store, StoreError
        try:
            Store(args.store, read_only=True)       # a typo is refused before the analysis
        except StoreError as exc:
            raise UserError(f"--store: {exc}") from exc
    try:
        return _run(args, verify=False)
    except duckdb.Error as exc:       # a file whose footer reads but whose data does not
        echo(f"glidein-tracing analyze: {str(exc).splitlines()[0]}; checking every file", file=sys.stderr)
    try:
        return _run(args, verify=True)
    except duckdb.Error as exc:
        raise UserError(f"cannot analyse the glidein table: {str(exc).splitlines()[0]}") from exc


def _run(args, verify: bool):
    from ..analysis import report as report_mod
    from ..analysis.dataset import DatasetError, open_dataset
    from ..analysis.html import render_html
    from ..analysis.populations import SelectionError

    quiet = args.quiet or args.json == "-"
    with Stages(1 + len(report_mod.STAGES) + bool(args.whatif), desc="analyze",
                enabled=on_terminal(quiet)) as stages:
        with stages.stage("reading the files"):
            try:
                if args.since is not None and args.until is not None and args.since >= args.until:
                    raise UserError("--since must come before --until")
                data = open_dataset(*args.table, jobs=args.jobs, entries=args.entry, sites=args.site,
                                    clients=args.client, groups=args.group, since=args.since, until=args.until,
                                    memory_limit=args.memory_limit, verify=verify)
            except DatasetError as exc:
                raise UserError(str(exc)) from exc
        try:
            doc = _analysis(args, data, stages)
        except SelectionError as exc:
            raise UserError(f"--compare: {exc}") from exc
    wrote = []
    # the files asked for first: whatever happens to stdout (`| head`), they are written
    if args.json and args.json != "-":
        _written(args.json, lambda: report_mod.write_json(doc, args.json))
        wrote.append(args.json)
    if args.html:
        pages = _trace_pages(doc, args.store, args.html, args.jaeger_ui) if args.store else {}
        _written(args.html, lambda: Path(args.html).write_text(
            render_html(doc, jaeger_ui=args.jaeger_ui, trace_pages=pages), encoding="utf-8"))
        wrote.append(args.html + (f" (and {len(pages)} trace pages in {args.html}.traces/)" if pages else ""))
    if not quiet:
        echo(report_mod.summary_text(doc))
    if args.json == "-":
        import json
        json.dump(doc, sys.stdout, indent=1, default=str)
        echo()
    if not args.quiet:
        for what in wrote:
            echo(f"glidein-tracing analyze: wrote {what}", file=sys.stderr)
    return 0


def _written(path: str, write) -> None:
    try:
        write()
    except OSError as exc:
        if is_no_space(exc):
            raise
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _analysis(args, data, stages) -> dict:
    from ..analysis import report as report_mod
    for name, reason in data.skipped:
        echo(f"glidein-tracing analyze: skipped {name}: {reason}", file=sys.stderr)
    if data.rollups.get("stale"):
        echo(f"glidein-tracing analyze: {data.rollups['stale']} files have rollups an older release wrote, read "
             "raw (same numbers, slower): `glidein-tracing table --table DIR --rollups` rewrites them", file=sys.stderr)
    if data.rollups.get("lacking"):
        echo(f"glidein-tracing analyze: {data.rollups['lacking']} files lack the rollups of the failed glideins' groups "
             "(written by an older release), read raw for those (same numbers, slower): "
             "`glidein-tracing table --table DIR --rollups` writes them", file=sys.stderr)
    current = {"max_idle": args.current_max_idle, "max_tail": args.current_max_tail, "retire": args.current_retire}
    doc = report_mod.analyze(data, current=current, whatif=args.whatif, max_idle=args.max_idle,
                             max_tail=args.max_tail, retire=args.retire, budget=args.lost_budget,
                             source={"table": args.table, "filters": {
                                 "entry": args.entry or [], "site": args.site or [], "client": args.client or [],
                                 "group": args.group or [], "since": args.since, "until": args.until}},
                             windows=args.window, until=args.until, compare=args.compare,
                             stages=stages)
    return doc
