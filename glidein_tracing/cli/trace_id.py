"""Print the deterministic trace id of a glidein (docs/ids.md).

The same id that the glidein's hooks, the Factory and the Frontend compute from the
glidein's identity; with --span KEY, the id of that span (e.g. setup, condor, teardown).
"""

from __future__ import annotations

from ..core.ids import GlideinIdentity, span_id
from ..core.terminal import echo
from .main import whole_number


def add_arguments(parser):
    parser.add_argument("--factory", required=True, help="GLIDEIN_Factory")
    parser.add_argument("--name", required=True, help="GLIDEIN_Name (the Factory instance name)")
    parser.add_argument("--entry", required=True, help="GLIDEIN_Entry_Name")
    parser.add_argument("--schedd", required=True, help="CONDORG_SCHEDD / GLIDEIN_Schedd")
    parser.add_argument("--cluster", required=True, type=whole_number, help="CONDORG_CLUSTER / GLIDEIN_ClusterId")
    parser.add_argument("--proc", required=True, type=whole_number, help="CONDORG_SUBCLUSTER / GLIDEIN_ProcId")
    parser.add_argument("--index", default="0", type=whole_number, help="multi-glidein index (default 0)")
    parser.add_argument("--span", metavar="KEY", help="print the id of this span key instead")


def run(args):
    identity = GlideinIdentity(args.factory, args.name, args.entry, args.schedd,
                               args.cluster, args.proc, args.index)
    echo(span_id(identity.trace_id, args.span) if args.span else identity.trace_id)
    return 0
