"""Print a stored trace as a tree (stage, duration, status, key attributes).

Reads the embedded store (default under the user's data dir, or --store DIR). A trace id
prefix is enough when it is unique; `--list` prints the traces in the store.
"""

from __future__ import annotations

from ..exporters.store import default_store_dir, read_store
from ..tree import render
from .main import UserError


def add_arguments(parser):
    parser.add_argument("trace_id", nargs="?", help="trace id (or a unique prefix)")
    parser.add_argument("--store", help="store directory (default: %(default)s)",
                        default=None)
    parser.add_argument("--list", action="store_true", help="list the traces in the store")


def run(args):
    store = args.store or default_store_dir()
    traces = read_store(store)
    if args.list or not args.trace_id:
        for trace_id, spans in sorted(traces.items()):
            root = next((s for s in spans if s["attributes"].get("glidein.stage") == "glidein"), None)
            outcome = root["attributes"].get("glidein.outcome", "") if root else "(no root)"
            print(f"{trace_id}  {len(spans):4d} spans  {outcome}")
        return 0
    wanted = args.trace_id.lower()
    matches = [t for t in traces if t.startswith(wanted)]
    if not matches:
        raise UserError(f"no trace {args.trace_id} in {store}")
    if len(matches) > 1:
        raise UserError(f"{args.trace_id} matches {len(matches)} traces; give more digits")
    print(render(traces[matches[0]]))
    return 0
