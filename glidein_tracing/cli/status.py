"""What the Factory's glideins are doing now: queued, held and running, per entry.

Each with the age of its glideins in that state (p50, p90, max) and the oldest ones' trace ids.

Reads the forwarder's ledger (as fresh as its last pass; nothing is changed). Settings as
for `forward` (--config, --factory, the schedds: they make the trace ids). With
`--older-than [STATE=]DURATION` (repeatable; e.g. `queued=12h`, `held=1h`, or `2d` for every
state) it exits 1 when a glidein is older than that: a check for an alert.
"""

from __future__ import annotations

import json
import sys
import time

from ..core.errors import UserError
from ..core.terminal import echo
from .main import parse_duration
from .setting_flags import add_setting_flags, settings_of


def add_arguments(parser):
    add_setting_flags(parser, ("state", "factory", "schedd", "factory_config", "entry_schedds"))
    parser.add_argument("--older-than", action="append", default=[], metavar="[STATE=]DURATION",
                        help="exit 1 when a glidein (of STATE: queued, held, running) is older (repeatable)")
    parser.add_argument("--oldest", type=int, default=3, help="trace ids listed per entry and state (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def limits_of(items) -> dict:
    """``queued=12h``, ``2d`` -> {"queued": 43200.0, "*": 172800.0}."""
    from ..factory.status import STATES
    out = {}
    for item in items:
        state, sep, text = item.rpartition("=")
        state = state if sep else "*"
        if state != "*" and state not in STATES:
            raise UserError(f"--older-than: no state {state!r} (one of {', '.join(STATES)})")
        try:
            out[state] = parse_duration(text)
        except ValueError:
            raise UserError(f"--older-than: not a duration: {text!r} (e.g. 90m, 12h, 2d)") from None
    return out


def run(args):
    from ..factory.ledger import Ledger
    from ..factory.returned import FactoryNames, identity
    from ..factory.status import STATES, age_text, crossed, glideins_now, summary

    limits = limits_of(args.older_than)
    _, conf = settings_of(args)
    facts = conf.factory_facts()
    state = conf.ledger_path()
    if not state.exists():
        raise UserError(f"no forwarder ledger at {state}: give --state (or `state:` in the config)")
    names = FactoryNames(facts.name, facts.schedd, facts.entry_schedds)
    ledger = Ledger(state, read_only=True)   # changes nothing: also for a user who may only read
    now = time.time()
    table = summary(glideins_now(ledger, lambda row: identity(names, row) if names.schedd_of(row) else None), now,
                    oldest=args.oldest)
    alerts = crossed(table, limits)
    if args.json:
        json.dump({"now": now, "ledger": str(state), "entries": table, "over_limits": alerts}, sys.stdout, indent=1)
        echo()
    else:
        echo(f"{'entry':30s} {'state':8s} {'count':>6s} {'p50':>8s} {'p90':>8s} {'max':>8s}  oldest (cluster.proc trace)")
        totals = {}
        for entry, states in table.items():
            for state_name, row in states.items():
                totals[state_name] = totals.get(state_name, 0) + row["count"]
                echo(f"{entry[:30]:30s} {state_name:8s} {row['count']:6d} {age_text(row['age_p50_s']):>8s} "
                     f"{age_text(row['age_p90_s']):>8s} {age_text(row['age_max_s']):>8s}  "
                     + "  ".join(_oldest(o) for o in row["oldest"]))
        if not table:
            echo("(no glidein queued, held or running in the ledger)")
        echo(f"Total: {sum(totals.values())} glideins; " + ", ".join(f"{totals.get(s, 0)} {s}" for s in STATES))
    for line in alerts:
        echo(f"glidein-tracing status: older than the limit: {line}", file=sys.stderr)
    return 1 if alerts else 0



def _oldest(glidein: dict) -> str:
    """One of the oldest glideins: cluster.proc, its trace id (or why none), its hold reason."""
    text = f"{glidein['glidein']} {glidein['trace_id'] or '(no schedd: no trace id)'}"
    if glidein.get("hold_reason"):
        text += f" held: {glidein['hold_reason'][:80]!r}"
    return text
