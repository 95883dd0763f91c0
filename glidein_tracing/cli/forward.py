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

import signal
import logging
import sys

from ..core.errors import ConfigError
from ..core.sections import DEFAULT_MAX_BYTES
from ..factory import preflight
from ..factory.name_check import FactoryNameCheck
from ..factory.settings import DEFAULT_CONFIG
from ..core.terminal import echo, log_to_stderr
from . import setting_flags
from .main import utc_time
from .setting_flags import add_setting_flags


def add_arguments(parser):
    add_setting_flags(parser)
    parser.add_argument("--check-config", action="store_true",
                        help="check the settings (file, flags) and exit: 0 when good, 2 with each problem")
    parser.add_argument("--retry-quarantined", action="store_true",
                        help="give quarantined glideins (failed alone repeatedly) new tries")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--redo", metavar="ENTRY", help="forward again ENTRY's glideins that ended from --since to "
                        "--until, recorded under a configuration since fixed (every span still once: the backend "
                        "is asked what it holds)")
    parser.add_argument("--since", type=utc_time, metavar="UTC", help="with --redo: from this UTC date or time on")
    parser.add_argument("--until", type=utc_time, metavar="UTC", help="with --redo: before this UTC date or time")


def settings_of(args) -> tuple:
    """(config file or None, ForwarderSettings) of a forwarder that can start: it has log
    directories; ConfigError naming each problem otherwise (the Factory's name: preflight)."""
    path, conf = setting_flags.settings_of(args)
    if args.redo is None and (args.since is not None or args.until is not None):
        raise ConfigError(["--since and --until go with --redo ENTRY"], heading=None)
    if args.redo is not None and (args.since is None or args.until is None):
        raise ConfigError(["--redo ENTRY wants --since and --until (UTC): the glideins that ended then"], heading=None)
    if args.redo is not None and conf.sends_to_collector() and not conf.query:
        raise ConfigError(["--redo sends to a collector only with --query (Jaeger's query API): without it, spans "
                           "already there would arrive twice"], heading=None)
    if not conf.logs:
        raise ConfigError(["no Factory log directory: give it on the command line or as `logs:` in the config"],
                          heading=None)
    return path, conf


def run(args):
    from ..factory import ledger_lock
    from ..factory.build import build_forwarder

    config_file, conf = settings_of(args)
    if args.check_config:
        facts = preflight.refuse(conf, dry_run=True)
        FactoryNameCheck(conf.logs, facts, DEFAULT_MAX_BYTES).check()     # the journals already returned
        for line in preflight.guesses(conf, facts):
            echo(f"glidein-tracing forward: guessing: {line}", file=sys.stderr)
        where = config_file or f"no config file: {DEFAULT_CONFIG}, the default, is absent"
        echo(f"glidein-tracing forward: settings good ({where})")
        return 0
    facts = preflight.refuse(conf)         # what --check-config finds, but the dry run's own checks
    log_to_stderr("%(asctime)s glidein-tracing forward: %(message)s")
    ledger_lock.hold(conf.ledger_path())      # for this process's life: one forwarder per ledger
    forwarder = build_forwarder(conf, facts=facts, progress=not args.no_progress and sys.stderr.isatty())
    for line in preflight.guesses(conf, facts):    # once it can start: a refusal stays one line
        logging.getLogger("glidein_tracing.forward").warning("guessing: %s", line)
    if args.redo is not None:
        from ..factory.redo import redo
        forwarder.name_check.check()          # a wrong name still stops before anything is written
        redone = redo(forwarder.ledger, args.redo, args.since, args.until)
        echo(f"glidein-tracing forward: {redone} glideins of {args.redo} to forward again", file=sys.stderr)
    if args.retry_quarantined:
        with forwarder.ledger.transaction():
            released = forwarder.ledger.release_quarantined()
        echo(f"glidein-tracing forward: {released} quarantined glideins released", file=sys.stderr)
    if conf.follow:
        from ..factory.build import metrics_server_of
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        metrics = metrics_server_of(conf, forwarder)
        try:
            forwarder.follow(conf.interval, stop=lambda: bool(stopping))
        finally:
            if metrics is not None:
                metrics.stop()
        return 0
    stats = forwarder.run_once()
    echo(f"glidein-tracing forward: {stats.summary()}", file=sys.stderr)
    return 1 if stats.export_failures else 0

