"""Print a stored trace as a tree (stage, duration, status, key attributes).

Reads the embedded store (default under the user's data dir, or --store DIR) through its
index: a trace id prefix is enough when it is unique; `--list` prints a page of the store's
traces by start time (`--limit`, `--since`: an index range, whatever the store holds); `--reindex` rebuilds the index from the store's files (it is rebuilt by itself when
missing, stale or damaged). `--html FILE` writes the trace as a waterfall page instead
(the page the analysis report links a trace id to), linking to Jaeger with `--jaeger-ui URL`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..core import conventions as c
from ..core.errors import UserError
from ..core.progress import on_terminal
from ..core.terminal import echo, escape
from ..exporters.store import Store, StoreError, default_store_dir
from ..viewers.tree import render


def add_arguments(parser):
    parser.add_argument("trace_id", nargs="?", help="trace id (or a unique prefix)")
    parser.add_argument("--store", help="store directory (default: the user's data dir)", default=None)
    parser.add_argument("--list", action="store_true",
                        help="list the store's latest traces by start time (a page: --limit, --since)")
    parser.add_argument("--since", metavar="TIME", help="with --list: the traces started from TIME on (UTC, "
                        "YYYY-MM-DD[THH:MM[:SS]]; the last time a page printed gives the next page)")
    parser.add_argument("--limit", type=int, default=100, metavar="N", help="with --list: at most N traces (default 100)")
    parser.add_argument("--reindex", action="store_true", help="rebuild the store's index from its files")
    parser.add_argument("--html", metavar="FILE", help="write the trace as a self-contained waterfall page")
    parser.add_argument("--jaeger-ui", metavar="URL",
                        help="with --html: the Jaeger UI's base URL, which the page links the trace to")


def run(args):
    import sqlite3

    directory = Path(args.store) if args.store else default_store_dir()
    try:
        Store(directory, read_only=True)      # a store already (a typo is refused, not made one)
        # only --reindex writes (the index); everything else reads and changes no file
        store = Store(directory, read_only=not args.reindex, progress=on_terminal())
        spans_of = _show(args, store)
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    except BrokenPipeError:                   # stdout's reader went away: the CLI ends quietly
        raise
    except (OSError, sqlite3.Error) as exc:   # e.g. a store this user may not lock or index
        raise UserError(f"cannot read the store {directory}: "
                        f"{exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}") from exc
    if store.indexed_in_memory:
        echo(f"glidein-tracing show: the index of {store.directory} is behind its files (a writer stopped "
             "before indexing); read from the files this time: `glidein-tracing show --reindex --store "
             f"{store.directory}` saves the index", file=sys.stderr)
    if spans_of is None:
        return 0
    trace_id, spans = spans_of
    if not args.html:
        echo(render(spans))
        return 0
    from ..viewers.waterfall import render_html
    try:
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(render_html(spans, jaeger_ui=args.jaeger_ui))
    except OSError as exc:
        raise UserError(f"cannot write {args.html}: {exc.strerror or exc}") from exc
    echo(f"wrote {args.html}: trace {trace_id}, {len(spans)} spans")
    return 0


def _since_ns(text: str | None) -> int | None:
    """--since's UTC time in ns since the epoch; UserError when it is not such a time."""
    if text is None:
        return None
    import datetime
    try:
        when = datetime.datetime.fromisoformat(text.replace(" ", "T").rstrip("Z"))
    except ValueError:
        raise UserError(f"--since wants a UTC time like 2026-11-27 or 2026-11-27T13:05:00, not {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def _show(args, store: Store):
    """What the arguments ask of the store; (trace id, its spans) for one trace to render,
    None when it was printed here (a list, a reindex)."""
    if args.reindex:
        health = store.reindex()
        echo(f"reindexed {store.directory}: {health['traces']} traces in {health['files']} files, "
              f"{health['bad_lines']} unreadable lines, {health['cut_lines']} lines cut short")
        return None
    if args.list or not args.trace_id:
        if args.limit < 1:
            raise UserError(f"--limit wants a number of traces of at least 1, not {args.limit}")
        page = store.listing(_since_ns(args.since), args.limit)
        in_flight = store.traces([row[0] for row in page if row[2] is None])   # their root has not come yet
        for trace_id, spans, name, start_ns, outcome in page:
            if name is None:
                name, start_ns = _in_flight(in_flight.get(trace_id, []))
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start_ns / 1e9)) if start_ns else "-"
            name, outcome = escape(name, newlines=False), escape(outcome or "", newlines=False)
            echo(f"{escape(trace_id, newlines=False)}  {spans:4d} spans  {when}  {name}  {outcome}".rstrip())
        return None
    matches = store.find(args.trace_id)
    if not matches:
        raise UserError(f"no trace {args.trace_id} in {store.directory}")
    if len(matches) > 1:
        raise UserError(f"{args.trace_id} matches several traces; give more digits")
    return matches[0], store.trace(matches[0])


def _in_flight(spans) -> tuple:
    """(label, first start ns) of a trace whose root has not arrived: a glidein still running,
    of which the Factory's stages went early; its entry from their resource."""
    entries = {str(s["resource"][c.GLIDEIN_ENTRY]) for s in spans if (s.get("resource") or {}).get(c.GLIDEIN_ENTRY)}
    starts = [s["start_ns"] for s in spans if s.get("start_ns")]
    label = f"glidein {', '.join(sorted(entries))} (in flight: no root yet)" if entries else "(no root)"
    return label, min(starts) if starts else None
