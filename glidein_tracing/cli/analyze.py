"""Analyse glidein traces: stage percentiles, waste in core-hours, timeout what-if.

Reads the embedded store (--store DIR, default the user's store), OTLP JSON files
(--otlp-json FILE..., JSON Lines of ExportTraceServiceRequest or one JSON document) or
Jaeger's query API (--jaeger URL --service NAME --since/--until). Prints a summary; --json
and --html write the full document and a self-contained report with plots. --whatif replays
every glidein under a grid of GLIDEIN_Max_Idle / Max_Tail / retire values and recommends
settings (docs/analysis.md explains every number and the model's limits).

Examples:
  glidein-tracing analyze --store ./store --whatif --html report.html
  glidein-tracing analyze --jaeger http://127.0.0.1:16686 --service glidein --since 2d --json out.json
  glidein-tracing analyze --otlp-json 'traces/*.jsonl' --entry ENTRY_A --whatif --max-tail 120,200,300
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from ..core.errors import UserError
from ..core.terminal import echo
from .main import number_in, parse_duration


def _number_list(text: str) -> list[float]:
    try:
        return [float(parse_duration(part)) for part in re.split(r"[,\s]+", text.strip()) if part]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of seconds: {text!r} (e.g. 300,600,20m)") from exc


def _when(text: str | None, now: float) -> float | None:
    """Epoch seconds from '2d' (ago), an epoch number, or an ISO 8601 date/time."""
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"[0-9]*\.?[0-9]+[smhdw]", text):
        return now - parse_duration(text)
    if re.fullmatch(r"[0-9]{9,}(\.[0-9]+)?", text):
        return float(text)
    from datetime import datetime, timezone
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise UserError(f"not a time: {text!r} (use e.g. 2d, an epoch, or 2026-01-31T12:00Z)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def add_arguments(parser):
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--store", help="store directory (default: the user's store)")
    source.add_argument("--otlp-json", nargs="+", metavar="FILE", help="OTLP JSON files, globs or directories")
    source.add_argument("--jaeger", metavar="URL", help="Jaeger query base URL, e.g. http://127.0.0.1:16686")
    parser.add_argument("--service", default="glidein", help="service name in Jaeger (default %(default)s)")
    parser.add_argument("--since", help="Jaeger window start: 2d (ago), an epoch or ISO time (default 1d)")
    parser.add_argument("--until", help="Jaeger window end (default now)")
    parser.add_argument("--entry", action="append", help="only this entry (repeatable)")
    parser.add_argument("--site", action="append", help="only this site (repeatable)")
    parser.add_argument("--json", metavar="OUT", help="write the full analysis as JSON ('-' for stdout)")
    parser.add_argument("--html", metavar="OUT", help="write a self-contained HTML report with plots")
    parser.add_argument("--quiet", action="store_true", help="no terminal summary")
    parser.add_argument("--jaeger-ui", metavar="URL",
                        help="Jaeger UI base URL: trace ids in the HTML report link to their trace there")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes reading store/OTLP files in parallel (default: every core, at most 4; "
                             "1 reads in one process)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not use or write the store's compact cache (<store>/.analysis-cache): "
                             "read every file")
    what = parser.add_argument_group("what-if")
    what.add_argument("--whatif", action="store_true", help="replay the glideins under candidate settings")
    what.add_argument("--max-idle", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Max_Idle values, s")
    what.add_argument("--max-tail", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Max_Tail values, s")
    what.add_argument("--retire", type=_number_list, metavar="LIST", help="candidate GLIDEIN_Retire_Time values, s")
    what.add_argument("--current-max-idle", type=parse_duration, default=1200.0,
                      help="GLIDEIN_Max_Idle the traces were recorded with (default %(default)s)")
    what.add_argument("--current-max-tail", type=parse_duration, default=400.0,
                      help="GLIDEIN_Max_Tail the traces were recorded with (default %(default)s)")
    what.add_argument("--current-retire", type=parse_duration, default=21600.0,
                      help="GLIDEIN_Retire_Time the traces were recorded with (default %(default)s)")
    what.add_argument("--lost-budget", type=number_in(0, 1), default=0.001,
                      help="recommend only settings losing at most this share of jobs (default %(default)s)")


def run(args):
    import numpy as np

    from ..analysis import report as report_mod
    from ..analysis.sources import ReadReport, load_table
    from ..analysis.whatif import Settings
    from ..exporters.store import default_store_dir

    read = ReadReport()
    now = time.time()
    if args.jaeger:
        source = {"kind": "jaeger", "where": args.jaeger, "service": args.service}
        kwargs = {"jaeger": args.jaeger, "service": args.service,
                  "since": _when(args.since or "1d", now), "until": _when(args.until, now) or now}
    elif args.otlp_json:
        source = {"kind": "otlp-json", "where": " ".join(args.otlp_json)}
        kwargs = {"otlp_files": args.otlp_json, "workers": args.workers}
    else:
        store = args.store or str(default_store_dir())
        source = {"kind": "store", "where": store}
        cache_stats: dict = {}
        kwargs = {"store": store, "workers": args.workers, "cache": not args.no_cache, "cache_stats": cache_stats}
        if not args.no_cache:
            source["cache"] = cache_stats

    keep = None
    if args.entry or args.site:
        def keep(table):
            mask = np.ones(len(table), dtype=bool)
            if args.entry:
                codes = [i for i, name in enumerate(table.names["entry"]) if name in set(args.entry)]
                mask &= np.isin(table.g["entry"], codes)
            if args.site:
                codes = [i for i, name in enumerate(table.names["site"]) if name in set(args.site)]
                mask &= np.isin(table.g["site"], codes)
            return mask
        source["filters"] = {"entry": args.entry or [], "site": args.site or []}
    try:
        table = load_table(keep=keep, report=read, **kwargs)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from exc
    if args.jaeger and read.errors and not read.spans:
        raise UserError(f"Jaeger gave nothing: {read.errors[0]}")

    current = Settings(args.current_max_idle, args.current_max_tail, args.current_retire)
    doc = report_mod.analyze(table, current=current, whatif=args.whatif, max_idle=args.max_idle,
                             max_tail=args.max_tail, retire=args.retire, budget=args.lost_budget,
                             source=source, read=read.as_dict())
    # the files asked for first: whatever happens to stdout (`| head`), they are written
    if args.json and args.json != "-":
        report_mod.write_json(doc, args.json)
    if args.html:
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(report_mod.render_html(doc, table, jaeger_ui=args.jaeger_ui))
    if not args.quiet and args.json != "-":
        echo(report_mod.summary_text(doc))
    if args.json == "-":
        import json
        json.dump(doc, sys.stdout, indent=1, default=report_mod._json_default)
        echo()
    return 0
