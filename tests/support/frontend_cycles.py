"""Frontend cycles for tests: the element stand-in run under the real instrumentor, its spans
in an InMemorySpanExporter through the real OTel SDK, and, for the `why` tests, in a store."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import frontend_hooks.instrumentor as instrumentor_module
from frontend_hooks import GlideinFrontendInstrumentor
from glidein_tracing.exporters.store import Store
from tests.support import frontend_standin as standin
from tests.support import frontend_standin_interface as interface
from tests.support import frontend_standin_lib as lib


def instrumented(sampler=None, **kwargs):
    """(instrumentor, exporter): the stand-in's modules instrumented afresh."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = GlideinFrontendInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor_module.FAILURES.clear()
    instrumentor.instrument(tracer_provider=provider, element_module=standin, interface_module=interface,
                            lib_module=lib, watch_main=False, **kwargs)
    return instrumentor, exporter


def cycle(tmp_path, world):
    """One group cycle of the element stand-in over ``world`` (tests/support/waiting_world.py)."""
    element = standin.glideinFrontendElement(1, str(tmp_path), "main", "run", world=world)
    assert element.main() == 0
    return element


def stored_cycles(tmp_path, *worlds) -> Path:
    """One instrumented cycle per world, in order; their spans in the store ``tmp_path/store``.
    A world may be given as a function that makes it, to write its files (the queue's ads) only
    once the cycles before it have run."""
    instrumentor, exporter = instrumented()
    try:
        for world in worlds:
            cycle(tmp_path, world() if callable(world) else world)
    finally:
        instrumentor.uninstrument()
    store = Path(tmp_path) / "store"
    Store(store).append(exporter.get_finished_spans())
    return store
