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

from ..core.errors import ConfigError
from ..factory import preflight
from ..core.terminal import echo, log_to_stderr
from . import setting_flags
from .setting_flags import add_setting_flags


def add_arguments(parser):
    add_setting_flags(parser)
    parser.add_argument("--check-config", action="store_true",
                        help="check the settings (file, flags) and exit: 0 when good, 2 with each problem")
    parser.add_argument("--retry-quarantined", action="store_true",
                        help="give quarantined glideins (failed alone repeatedly) new tries")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def settings_of(args) -> tuple:
    """(config file or None, ForwarderSettings) of a forwarder that can start: it has a
    Factory name and log directories; ConfigError naming each problem otherwise."""
    path, conf = setting_flags.settings_of(args)
    conf.factory_name()
    if not conf.logs:
        raise ConfigError(["no Factory log directory: give it on the command line or as `logs:` in the config"],
                          heading=None)
    return path, conf


def failure_attribution_of(conf):
    """The failure rules and declared downtimes the settings name (None when neither): a
    downtime file's bad entries are logged, the rest used."""
    if not conf.failure_rules and not conf.downtimes:
        return None
    from ..failure_rules.downtimes import read_downtimes
    from ..failure_rules.attribution import FailureAttribution
    from ..failure_rules.files import RuleBook
    cache = preflight.downtime_cache_of(conf) if conf.downtimes else None
    downtimes, problems = read_downtimes(conf.downtimes, cache)
    for problem in problems:
        logging.getLogger("glidein_tracing.failure_rules.downtimes").warning("downtime %s", problem)
    rules = RuleBook(conf.failure_rules) if conf.failure_rules else None
    return FailureAttribution(rules, downtimes)


def run(args):
    from ..exporters.otlp import make_otlp_exporter
    from ..exporters.store import JsonLinesStoreExporter
    from ..factory.delivery import jaeger_span_ids, store_span_ids
    from ..factory.forwarder import Forwarder
    from ..factory import ledger_lock
    from ..factory.ledger import Ledger
    from ..factory.sink import table_sink

    config_file, conf = settings_of(args)
    if args.check_config:
        preflight.refuse(conf, dry_run=True)
        echo(f"glidein-tracing forward: settings good ({config_file or 'no config file'})")
        return 0
    preflight.refuse(conf)         # what --check-config finds, but the dry run's own checks
    log_to_stderr("%(asctime)s glidein-tracing forward: %(message)s")
    if conf.sends_to_collector():
        exporter = make_otlp_exporter(conf.endpoint, conf.timeout, conf.max_request_bytes, headers=conf.headers,
                                      certificate=conf.certificate, compression=conf.compression)
        reconcile = jaeger_span_ids(conf.query) if conf.query else None
    else:
        exporter = JsonLinesStoreExporter(conf.store, max_days=conf.store_max_days,
                                          max_bytes=None if conf.store_max_gb is None else int(conf.store_max_gb * 1e9))
        reconcile = store_span_ids(exporter.directory)
    ledger_lock.hold(conf.ledger_path())      # for this process's life: one forwarder per ledger
    ledger = Ledger(conf.ledger_path())
    table = table_sink(conf.table, conf.ledger_path(), ledger)
    if args.retry_quarantined:
        with ledger.transaction():
            released = ledger.release_quarantined()
        echo(f"glidein-tracing forward: {released} quarantined glideins released", file=sys.stderr)
    forwarder = Forwarder(conf, exporter, ledger, reconcile=reconcile, table=table,
                          failure_attribution=failure_attribution_of(conf),
                          progress=not args.no_progress and sys.stderr.isatty())
    if conf.follow:
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        forwarder.follow(conf.interval, stop=lambda: bool(stopping))
        return 0
    stats = forwarder.run_once()
    echo(f"glidein-tracing forward: {stats.summary()}", file=sys.stderr)
    return 1 if stats.export_failures else 0
