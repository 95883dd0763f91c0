"""Convert a glidein's span journal and export it (OTLP/HTTP or the embedded store).

Runs on the worker node (bounded by --timeout) when a usable Python exists: with --ended
while the glidein runs (the stages that ended), without it at cleanup
(everything else). It also runs anywhere on a journal left behind (e.g. by a killed glidein)
or on a returned stderr file holding GlideinTracingJournal sections. What goes out, and its
record in the journal (--journal) so that no span is sent twice, is node/export.py's. Without
--endpoint or OTEL_EXPORTER_OTLP_ENDPOINT, spans go to the store. --timeout bounds the whole
command from its start: each export (the SDK exporter's request timeout and its retries)
gets only what remains of it. Messages name the endpoint without its credentials. Exit code
0 when every span was exported (or none was left to send), 1 when export failed (nothing is
lost: the journal stays where it was), 2 for unusable input, 4 when the glidein was sampled
out and nothing was sent.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..core import conventions as c
from ..node.export import SAMPLED_OUT, UNRECORDED, ExportPolicy, export_glidein
from ..core.converter import ConversionError, convert
from ..exporters.otlp import make_otlp_exporter, public_url, sdk_disabled
from ..exporters.store import JsonLinesStoreExporter
from ..core.journal import parse_lines, read_journal
from ..core.sections import JOURNAL_SECTION, journal_sections
from ..core.errors import UserError
from ..core.inputs import NotAFileError, check_input, read_input
from ..core.terminal import echo
from .main import number_in


def add_arguments(parser):
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--journal", help="journal file (journal.gtj)")
    source.add_argument("--stderr", help="a glidein's returned stderr (job.C.P.err)")
    parser.add_argument("--endpoint", default=os.environ.get("GLIDEIN_TRACING_ENDPOINT") or None,
                        help="OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (default: "
                             "$GLIDEIN_TRACING_ENDPOINT, which keeps credentials off the command line)")
    parser.add_argument("--store", help="store directory (used when there is no endpoint)")
    parser.add_argument("--timeout", type=number_in(0), default=5.0,
                        help="upper bound on the whole command, seconds (default 5)")
    parser.add_argument("--service-name", help="override service.name")
    parser.add_argument("--ended", action="store_true",
                        help="only the stages of a running glidein that ended (setup with its "
                             "validation spans, finished jobs); needs --journal")
    parser.add_argument("--skip-root", action="store_true",
                        help="leave the root span to the Factory forwarder (the node's live "
                             "exports: only the Factory knows when the glidein was submitted)")
    parser.add_argument("--sampling-ratio", type=number_in(0, 1), default=None,
                        help="override the sampling ratio the glidein ran with (its journal's "
                             "GLIDEIN_TRACING_SAMPLING_RATIO); failed glideins are always kept")


def load_events(args):
    if args.journal:
        if not Path(args.journal).exists():
            raise UserError(f"no journal at {args.journal}")
        check_input(args.journal)          # a directory, a FIFO, a device: refused
        try:
            return [read_journal(args.journal)]
        except OSError as exc:
            raise UserError(f"cannot read {args.journal}: {exc.strerror or exc}") from exc
    try:
        text = read_input(args.stderr).decode("utf-8", errors="replace")
    except NotAFileError:
        raise
    except OSError as exc:
        raise UserError(f"cannot read {args.stderr}: {exc.strerror or exc}") from exc
    out = []
    for section in journal_sections(text):
        if section.error:
            echo(f"glidein-tracing export: {args.stderr}: journal section {section.error}",
                  file=sys.stderr)
        out.append(parse_lines(section.data))
    if not out:
        raise UserError(f"no {JOURNAL_SECTION} section in {args.stderr}")
    return out


def otlp_endpoint(args):
    """Where OTLP goes, for messages (without credentials); None: to the store."""
    if args.endpoint:
        return public_url(args.endpoint)
    if not args.store and (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                           or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return "OTEL_EXPORTER_OTLP_ENDPOINT"
    return None


def run(args):
    deadline = time.monotonic() + args.timeout
    if args.ended and not args.journal:
        raise UserError("--ended needs --journal (the journal records what went out)")
    if sdk_disabled():
        echo("glidein-tracing export: OTEL_SDK_DISABLED=true, nothing exported", file=sys.stderr)
        return 0
    defaults = {c.SERVICE_NAME: args.service_name} if args.service_name else None
    glideins = load_events(args)           # unusable input refused before anything is made
    where = otlp_endpoint(args)
    store = None if where else JsonLinesStoreExporter(args.store)
    failed = 0
    total = 0
    sampled_out = 0
    policy = ExportPolicy(ended=args.ended, skip_root=args.skip_root, journal=args.journal,
                          sampling_ratio=args.sampling_ratio)

    def send(spans) -> bool:
        if store is not None:
            return store.export(spans).name == "SUCCESS"
        # one exporter per glidein: the SDK's timeout, its retries included, is what remains
        exporter = make_otlp_exporter(args.endpoint, deadline - time.monotonic())
        try:
            return exporter.export(spans).name == "SUCCESS"
        finally:
            exporter.shutdown()

    for events, report in glideins:
        if report.skipped_total:
            echo(f"glidein-tracing export: journal: {report.summary()}", file=sys.stderr)
        try:
            spans = convert(events, report, resource_defaults=defaults)
        except ConversionError as exc:
            echo(f"glidein-tracing export: {exc}", file=sys.stderr)
            failed += 1
            continue
        done = export_glidein(spans, events, policy, send, deadline)
        if done.outcome == SAMPLED_OUT:
            echo("glidein-tracing export: sampled out (GLIDEIN_TRACING_SAMPLING_RATIO)", file=sys.stderr)
            sampled_out += 1
        elif done.outcome == UNRECORDED:
            echo(f"glidein-tracing export: {done.problem}", file=sys.stderr)
        total += done.spans
        failed += done.failed
    if store is not None:
        store.shutdown()
    echo(f"glidein-tracing export: {total} spans to {where or store.directory}"
          + (f", {failed} failed" if failed else ""),
          file=sys.stderr)
    if failed:
        return 1
    return 4 if sampled_out and not total else 0
