"""The one way a forwarder is put together from its settings: where spans go (an OTLP endpoint
or the store), how to ask what arrived (Jaeger's query API or the store's index), its ledger,
its glidein table, its failure rules and downtimes, its metrics listener. ``forward``, the demo, the tests and the
benches all build it here, so none of them assembles a forwarder that the others would not.
"""

from __future__ import annotations

import logging

from ..core.sections import DEFAULT_MAX_BYTES
from .settings import ForwarderSettings

DERIVED = object()      # an argument of build_forwarder left to the settings


def build_forwarder(settings: ForwarderSettings, *, facts=None, exporter=None, ledger=None, reconcile=DERIVED,
                    failure_attribution=DERIVED, progress: bool = False, settle_s: float = 5.0,
                    max_section_bytes: int = DEFAULT_MAX_BYTES):
    """The forwarder ``settings`` describe. What is given replaces what the settings would
    make: ``facts`` (the Factory's, when the caller has read them: settings.factory_facts),
    ``exporter`` (any SDK span exporter, e.g. the demo's summarising one), ``ledger`` (one
    shared with another forwarder), ``reconcile`` (None: ask nothing) and
    ``failure_attribution``. ``settle_s`` and ``max_section_bytes`` are not settings: tests
    shorten them."""
    from .forwarder import Forwarder
    from .ledger import Ledger
    from .sink import table_sink
    if facts is None:
        facts = settings.factory_facts()
    if exporter is None:
        exporter = exporter_of(settings)
    if ledger is None:
        ledger = Ledger(settings.ledger_path())
    if reconcile is DERIVED:
        reconcile = reconcile_of(settings, exporter)
    if failure_attribution is DERIVED:
        failure_attribution = failure_attribution_of(settings)
    return Forwarder(settings, facts, exporter, ledger, reconcile=reconcile,
                     table=table_sink(settings.table, ledger.path, ledger),
                     failure_attribution=failure_attribution, progress=progress, settle_s=settle_s,
                     max_section_bytes=max_section_bytes)


def exporter_of(settings: ForwarderSettings):
    """Where the settings send spans: their OTLP endpoint (or the standard variables'), else
    the embedded store, bounded by its days and size."""
    from ..exporters.otlp import make_otlp_exporter
    from ..exporters.store import JsonLinesStoreExporter
    if settings.sends_to_collector():
        return make_otlp_exporter(settings.endpoint, settings.timeout, settings.max_request_bytes,
                                  headers=settings.headers, certificate=settings.certificate,
                                  compression=settings.compression)
    max_bytes = None if settings.store_max_gb is None else int(settings.store_max_gb * 1e9)
    return JsonLinesStoreExporter(settings.store, max_days=settings.store_max_days, max_bytes=max_bytes)


def reconcile_of(settings: ForwarderSettings, exporter):
    """How to ask what arrived: the store's index when the exporter writes a store, else
    Jaeger's query API when the settings name one, else nothing."""
    from .delivery import jaeger_span_ids, store_span_ids
    directory = getattr(exporter, "directory", None)
    if directory is not None:
        return store_span_ids(directory)
    return jaeger_span_ids(settings.query) if settings.query else None


def failure_attribution_of(settings: ForwarderSettings):
    """The failure rules and declared downtimes the settings name (None when neither): a
    downtime file's bad entries are logged, the rest used."""
    if not settings.failure_rules and not settings.downtimes:
        return None
    from ..failure_rules.attribution import FailureAttribution
    from ..failure_rules.downtimes import read_downtimes
    from ..failure_rules.files import RuleBook
    from .preflight import downtime_cache_of
    cache = downtime_cache_of(settings) if settings.downtimes else None
    downtimes, problems = read_downtimes(settings.downtimes, cache)
    for problem in problems:
        logging.getLogger("glidein_tracing.failure_rules.downtimes").warning("downtime %s", problem)
    rules = RuleBook(settings.failure_rules) if settings.failure_rules else None
    return FailureAttribution(rules, downtimes)


def metrics_server_of(settings: ForwarderSettings, forwarder):
    """The ``/metrics`` listener (factory/metrics.py) at ``metrics_listen`` of ``forwarder``
    (build_forwarder's), serving its table, ledger and store; None when the setting is unset."""
    if not settings.metrics_listen:
        return None
    from .metrics import ForwarderCollector, MetricsServer
    from .settings import listen_address
    from .sink import table_dir
    collector = ForwarderCollector(forwarder.facts.name, table_dir(settings.table, forwarder.ledger.path),
                                   forwarder.ledger.path, forwarder.facts.log_retention,
                                   getattr(forwarder.sender.exporter, "directory", None))
    return MetricsServer(collector, listen_address(settings.metrics_listen))
