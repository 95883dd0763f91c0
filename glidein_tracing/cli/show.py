"""Print a stored trace as a tree (stage, duration, status, key attributes).

Reads the embedded store (default under the user's data dir, or --store DIR) through its
index: a trace id prefix is enough when it is unique; `--list` prints the traces in the
store; `--reindex` rebuilds the index from the store's files (it is rebuilt by itself when
missing, stale or damaged). `--html FILE` writes the trace as a waterfall page instead
(the page the analysis report links a trace id to when no Jaeger UI is given).
"""

from __future__ import annotations

import time

from ..core.errors import UserError
from ..core.terminal import echo, escape
from ..exporters.store import Store, StoreError
from ..factory.tree import render


def add_arguments(parser):
    parser.add_argument("trace_id", nargs="?", help="trace id (or a unique prefix)")
    parser.add_argument("--store", help="store directory (default: the user's data dir)", default=None)
    parser.add_argument("--list", action="store_true", help="list the traces in the store")
    parser.add_argument("--reindex", action="store_true", help="rebuild the store's index from its files")
    parser.add_argument("--html", metavar="FILE", help="write the trace as a self-contained waterfall page")


def run(args):
    import sqlite3

    try:
        return _show(args, Store(args.store))
    except StoreError as exc:
        raise UserError(str(exc)) from exc
    except BrokenPipeError:                   # stdout's reader went away: the CLI ends quietly
        raise
    except (OSError, sqlite3.Error) as exc:   # e.g. a store this user may not lock or index
        raise UserError(f"cannot read the store: {exc}") from exc


def _show(args, store: Store) -> int:
    if args.reindex:
        health = store.reindex()
        echo(f"reindexed {store.directory}: {health['traces']} traces in {health['files']} files, "
              f"{health['bad_lines']} unreadable lines, {health['cut_lines']} lines cut short")
        return 0
    if args.list or not args.trace_id:
        for trace_id, spans, name, start_ns, outcome in store.summaries():
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start_ns / 1e9)) if start_ns else "-"
            name, outcome = escape(name or "(no root)", newlines=False), escape(outcome or "", newlines=False)
            echo(f"{escape(trace_id, newlines=False)}  {spans:4d} spans  {when}  {name}  {outcome}".rstrip())
        return 0
    matches = store.find(args.trace_id)
    if not matches:
        raise UserError(f"no trace {args.trace_id} in {store.directory}")
    if len(matches) > 1:
        raise UserError(f"{args.trace_id} matches several traces; give more digits")
    spans = store.trace(matches[0])
    if args.html:
        from ..factory.waterfall import render_html
        with open(args.html, "w", encoding="utf-8") as handle:
            handle.write(render_html(spans))
        echo(f"wrote {args.html}: trace {matches[0]}, {len(spans)} spans")
        return 0
    echo(render(spans))
    return 0
