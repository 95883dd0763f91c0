"""Forward glidein spans from the Factory: returned journals + Condor-G activity logs.

Reads the Factory's client log tree (user_*/glidein_<instance>/entry_<entry>/ with
condor_activity_*.log and job.C.P.err), remembers what it has read and sent in a ledger
(restart-safe), and exports every span exactly once: to --endpoint (OTLP/HTTP), else to the
embedded store. `--follow` keeps running as a service (see factory_config/
glidein-tracing-forwarder.service).
"""

from __future__ import annotations

import logging
import signal
import sys


def add_arguments(parser):
    parser.add_argument("logs", nargs="+", help="Factory client log directories (or entry dirs)")
    parser.add_argument("--factory", required=True, help="the Factory's name (GLIDEIN_Factory)")
    parser.add_argument("--schedd", help="the schedd of every entry not named otherwise (part of "
                        "trace ids; journals claiming another are rejected)")
    parser.add_argument("--factory-config", metavar="GLIDEINWMS_XML",
                        help="the Factory's glideinWMS.xml: each entry's schedd_name")
    parser.add_argument("--entry-schedd", action="append", default=[], metavar="ENTRY=SCHEDD",
                        help="schedd of one entry (repeatable)")
    parser.add_argument("--endpoint", help="OTLP/HTTP base URL (else the store)")
    parser.add_argument("--store", help="store directory (when there is no endpoint)")
    parser.add_argument("--state", help="ledger file (default: <store or user data dir>/forwarder.sqlite)")
    parser.add_argument("--query", help="Jaeger query API base URL, to reconcile after a crash")
    parser.add_argument("--timeout", type=float, default=10.0, help="export timeout, seconds")
    parser.add_argument("--max-request-bytes", type=int, default=4 * 1024 * 1024,
                        help="OTLP requests are split to stay under this size (default 4 MiB)")
    parser.add_argument("--retry-quarantined", action="store_true",
                        help="give quarantined glideins (failed alone repeatedly) new tries")
    parser.add_argument("--grace", type=float, default=600.0,
                        help="seconds to wait for a glidein's output after it ended (default 600)")
    parser.add_argument("--sampling-ratio", type=float, default=None,
                        help="override the sampling ratio each glidein ran with (its journal's "
                             "GLIDEIN_TRACING_SAMPLING_RATIO); failed glideins are always kept")
    parser.add_argument("--redact", default="", help="comma-separated attribute names to redact")
    parser.add_argument("--batch-spans", type=int, default=2000)
    parser.add_argument("--service-name", help="override service.name of glidein spans")
    parser.add_argument("--follow", action="store_true", help="keep running")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between passes with --follow")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args):
    from pathlib import Path

    from ..exporters.otlp import make_otlp_exporter
    from ..exporters.store import JsonLinesStoreExporter, default_store_dir
    from ..factory.forwarder import Forwarder, jaeger_span_ids, store_span_ids
    from ..factory.ledger import Ledger
    from .main import UserError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s glidein-tracing forward: %(message)s",
                        stream=sys.stderr)
    entry_schedds = {}
    if args.factory_config:
        from ..factory.config import entry_schedds as configured_schedds
        try:
            entry_schedds.update(configured_schedds(args.factory_config))
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    for item in args.entry_schedd:
        entry, sep, schedd = item.partition("=")
        if not sep:
            raise UserError(f"--entry-schedd wants ENTRY=SCHEDD, not {item!r}")
        entry_schedds[entry] = schedd
    if args.sampling_ratio is not None and not 0.0 <= args.sampling_ratio <= 1.0:
        raise UserError("--sampling-ratio must be between 0 and 1")
    for path in args.logs:
        if not Path(path).is_dir():
            raise UserError(f"{path} is not a directory")
    if args.endpoint:
        exporter = make_otlp_exporter(args.endpoint, args.timeout, args.max_request_bytes)
        reconcile = jaeger_span_ids(args.query) if args.query else None
        state = Path(args.state) if args.state else default_store_dir().parent / "forwarder.sqlite"
    else:
        exporter = JsonLinesStoreExporter(args.store)
        reconcile = store_span_ids(exporter.directory)
        state = Path(args.state) if args.state else exporter.directory / "forwarder.sqlite"
    ledger = Ledger(state)
    if args.retry_quarantined:
        with ledger.transaction():
            released = ledger.release_quarantined()
        print(f"glidein-tracing forward: {released} quarantined glideins released", file=sys.stderr)
    forwarder = Forwarder(
        args.logs, exporter, ledger, args.factory, schedd=args.schedd,
        entry_schedds=entry_schedds, grace_s=args.grace, sampling_ratio=args.sampling_ratio,
        redact=[n for n in args.redact.split(",") if n.strip()], batch_spans=args.batch_spans,
        reconcile=reconcile, progress=not args.no_progress and sys.stderr.isatty(),
        service_name=args.service_name)
    if args.follow:
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        forwarder.follow(args.interval, stop=lambda: bool(stopping))
        return 0
    stats = forwarder.run_once()
    print(f"glidein-tracing forward: {stats.summary()}", file=sys.stderr)
    return 1 if stats.export_failures else 0
