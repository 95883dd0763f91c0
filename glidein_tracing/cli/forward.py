"""Forward glidein spans from the Factory: returned journals + Condor-G activity logs.

Reads the Factory's client log tree (user_*/glidein_<instance>/entry_<entry>/ with
condor_activity_*.log and job.C.P.err), remembers what it has read and sent in a ledger
(restart-safe), and exports every span exactly once: to --endpoint (OTLP/HTTP), else to the
embedded store. Settings come from flags, a YAML file (--config, default
/etc/glidein-tracing/forwarder.yaml; factory_config/forwarder.yaml shows every key) and the
standard OTEL_EXPORTER_OTLP_* variables, in that order. `--follow` keeps running as a service
(factory_config/glidein-tracing-forwarder.service).
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from ..core.errors import ConfigError, UserError
from ..core.terminal import echo, log_to_stderr
from ..factory import settings


def add_arguments(parser):
    parser.add_argument("logs", nargs="*", help="Factory client log directories (or entry dirs); "
                        "config key `logs`")
    parser.add_argument("--config", help="YAML settings file, a key for every setting (default "
                        f"{settings.DEFAULT_CONFIG} when present); flags override it")
    parser.add_argument("--check-config", action="store_true",
                        help="check the settings (file, flags) and exit: 0 when good, 2 with each problem")
    parser.add_argument("--factory", help="the Factory's name (GLIDEIN_Factory)")
    parser.add_argument("--schedd", help="the schedd of every entry not named otherwise (part of "
                        "trace ids; journals claiming another are rejected)")
    parser.add_argument("--factory-config", metavar="GLIDEINWMS_XML",
                        help="the Factory's glideinWMS.xml: each entry's schedd_name and GLIDEIN_Site")
    parser.add_argument("--entry-schedd", action="append", default=[], metavar="ENTRY=SCHEDD",
                        help="schedd of one entry (repeatable)")
    parser.add_argument("--endpoint", help="OTLP/HTTP base URL (else OTEL_EXPORTER_OTLP_ENDPOINT, else the store)")
    parser.add_argument("--store", help="store directory (when there is no endpoint)")
    parser.add_argument("--state", help="ledger file (default: <store or user data dir>/forwarder.sqlite)")
    parser.add_argument("--table", help="glidein table directory (default: glidein-table beside the ledger; "
                        "'none': write no table)")
    parser.add_argument("--query", help="Jaeger query API base URL, to reconcile after a crash")
    parser.add_argument("--timeout", type=float, help="export timeout, seconds (default: "
                        "OTEL_EXPORTER_OTLP_TIMEOUT, else 10)")
    parser.add_argument("--max-request-bytes", type=int,
                        help="OTLP requests are split to stay under this size (default 4 MiB)")
    parser.add_argument("--retry-quarantined", action="store_true",
                        help="give quarantined glideins (failed alone repeatedly) new tries")
    parser.add_argument("--grace", type=float,
                        help="seconds to wait for a glidein's output after it ended (default 600)")
    parser.add_argument("--sampling-ratio", type=float,
                        help="override the sampling ratio each glidein ran with (its journal's "
                             "GLIDEIN_TRACING_SAMPLING_RATIO); failed glideins are always kept")
    parser.add_argument("--follow", action="store_true", help="keep running")
    parser.add_argument("--interval", type=float, help="seconds between passes with --follow (default 60)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def settings_of(args) -> dict:
    """Every setting, from the flags, the config file and the defaults; ConfigError naming
    each problem (with its line in the file) otherwise."""
    path, config = settings.load_config(args.config)
    entry_schedds = settings.parse_entry_schedds(args.entry_schedd)
    flags = {"logs": args.logs, "factory": args.factory, "schedd": args.schedd,
             "factory_config": args.factory_config, "endpoint": args.endpoint, "store": args.store,
             "state": args.state, "table": args.table, "query": args.query, "timeout": args.timeout,
             "max_request_bytes": args.max_request_bytes, "grace": args.grace,
             "sampling_ratio": args.sampling_ratio, "follow": args.follow, "interval": args.interval}
    problems = [f"--{key.replace('_', '-')}: {problem}" for key, value in flags.items()
                if (problem := settings.check(key, value))]
    if problems:
        raise ConfigError(problems, heading="bad option")
    out = settings.resolve(config, flags)
    out["entry_schedds"] = {**out["entry_schedds"], **entry_schedds}
    out["factory"] = settings.factory_of(out)
    if not out["logs"]:
        raise ConfigError(["no Factory log directory: give it on the command line or as `logs:` in the config"],
                          heading=None)
    out["config_file"] = str(path) if path else None
    return out


def failure_problems(conf: dict) -> list[str]:
    """What --check-config finds wrong with the failure rules and downtime feeds the settings
    name, read by the functions the run reads them with (the same bounds, the same cache)."""
    from ..failure_rules.downtimes import read_downtimes
    from ..failure_rules.files import check
    problems = check(conf["failure_rules"])[1] if conf["failure_rules"] else []
    if conf["downtimes"]:
        problems += read_downtimes(conf["downtimes"], downtime_cache_of(conf))[1]
    return problems


def downtime_cache_of(conf: dict) -> Path:
    """Where parsed downtime feeds are kept (beside the ledger), so a large feed is parsed once."""
    return settings.ledger_path_of(conf).parent / "downtime-cache"


def failure_attribution_of(conf: dict):
    """The failure rules and declared downtimes the settings name (None when neither): a
    downtime file's bad entries are logged, the rest used."""
    if not conf["failure_rules"] and not conf["downtimes"]:
        return None
    from ..failure_rules.downtimes import read_downtimes
    from ..failure_rules.attribution import FailureAttribution
    from ..failure_rules.files import RuleBook
    downtimes, problems = read_downtimes(conf["downtimes"], downtime_cache_of(conf) if conf["downtimes"] else None)
    for problem in problems:
        logging.getLogger("glidein_tracing.failure_rules.downtimes").warning("downtime %s", problem)
    rules = RuleBook(conf["failure_rules"]) if conf["failure_rules"] else None
    return FailureAttribution(rules, downtimes)


def run(args):
    from ..exporters.otlp import make_otlp_exporter
    from ..exporters.store import JsonLinesStoreExporter
    from ..factory.delivery import jaeger_span_ids, store_span_ids
    from ..factory.forwarder import Forwarder
    from ..factory import ledger_lock
    from ..factory.ledger import Ledger
    from ..table.sink import table_sink

    conf = settings_of(args)
    if args.check_config:
        problems = settings.path_problems(conf) + failure_problems(conf)
        if problems:
            raise ConfigError(problems)
        echo(f"glidein-tracing forward: settings good ({conf['config_file'] or 'no config file'})")
        return 0
    log_to_stderr("%(asctime)s glidein-tracing forward: %(message)s")
    entry_schedds = settings.entry_schedds_of(conf)
    for path in conf["logs"]:
        if not Path(path).is_dir():
            raise UserError(f"{path} is not a directory")
    if settings.sends_to_collector(conf):
        exporter = make_otlp_exporter(conf["endpoint"], conf["timeout"], conf["max_request_bytes"],
                                      headers=conf["headers"], certificate=conf["certificate"],
                                      compression=conf["compression"])
        reconcile = jaeger_span_ids(conf["query"]) if conf["query"] else None
    else:
        exporter = JsonLinesStoreExporter(conf["store"])
        reconcile = store_span_ids(exporter.directory)
    ledger_lock.hold(settings.ledger_path_of(conf))      # for this process's life: one forwarder per ledger
    ledger = Ledger(settings.ledger_path_of(conf))
    table = table_sink(conf["table"], settings.ledger_path_of(conf), ledger)
    if args.retry_quarantined:
        with ledger.transaction():
            released = ledger.release_quarantined()
        echo(f"glidein-tracing forward: {released} quarantined glideins released", file=sys.stderr)
    forwarder = Forwarder(
        conf["logs"], exporter, ledger, conf["factory"], schedd=conf["schedd"],
        entry_schedds=entry_schedds, entry_sites=settings.entry_sites_of(conf), grace_s=conf["grace"],
        sampling_ratio=conf["sampling_ratio"],
        redact=[n for n in conf["redact"] if n.strip()], batch_spans=conf["batch_spans"],
        reconcile=reconcile, progress=not args.no_progress and sys.stderr.isatty(),
        service_name=conf["service_name"], failure_attribution=failure_attribution_of(conf),
        table=table)
    if conf["follow"]:
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        forwarder.follow(conf["interval"], stop=lambda: bool(stopping))
        return 0
    stats = forwarder.run_once()
    echo(f"glidein-tracing forward: {stats.summary()}", file=sys.stderr)
    return 1 if stats.export_failures else 0
