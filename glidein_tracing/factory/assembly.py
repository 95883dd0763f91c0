"""A glidein's spans at the Factory: its Factory-side events (from the ledger), its returned
journal and its identity, as one event stream for the converter.

The Factory's identity events name the root; what was cut of the journal is counted on the
root (``glidein_tracing.input.cut_*``); a glidein that returned no journal gets the outcome
``never_ran`` or ``no_glidein_output``. At most ``MAX_SPANS`` spans are made, whatever the
journal's ``@max_spans`` asks for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..core import ids
from ..core.converter import convert
from ..core.journal import Event
from .activity import identity_events
from ..core import conventions as c

MAX_SPANS = 20_000  # per glidein, whatever its journal's @max_spans (the knob allows more)


@dataclass(frozen=True)
class SpanMaker:
    """How the forwarder makes spans: ``service.name`` over the journal's, names to redact."""

    resource_defaults: dict | None = None
    redact: tuple = ()

    def glidein(self, identity: ids.GlideinIdentity, activity, journal, cut: dict, ended_at) -> list:
        """Every span of an ended glidein (ConversionError when there is no trace to make)."""
        events = list(activity) + list(journal)
        when = min((e.time for e in events), default=ended_at or time.time())
        events.extend(identity_events(identity, when))
        if any(cut.values()):
            events.append(Event(time=when, op="attr", key="glidein", fields={
                f"glidein_tracing.input.cut_{kind}:i": str(count) for kind, count in cut.items()}))
        if not journal:
            ran = any(e.key.startswith(c.STAGE_FACTORY_QUEUE) and e.op == "end" for e in activity)
            events.append(Event(time=when, op="attr", key="glidein", fields={
                c.GLIDEIN_OUTCOME: "no_glidein_output" if ran else "never_ran"}))
        return self._convert(events, identity)

    def factory_stages(self, identity: ids.GlideinIdentity, activity) -> list:
        """The spans a running glidein's Factory-side events make so far (its closed Factory
        stages among them, under the root's id)."""
        when = min(e.time for e in activity)
        return self._convert(list(activity) + identity_events(identity, when), identity)

    def _convert(self, events, identity: ids.GlideinIdentity) -> list:
        return convert(events, resource_defaults=self.resource_defaults, redact=self.redact,
                       trace_id=identity.trace_id, span_ceiling=MAX_SPANS)


def closed_factory_stages(activity) -> set:
    """Keys of the Factory stages (``factory.*``) the events have started and ended."""
    started = {e.key for e in activity if e.op == "start"}
    return {e.key for e in activity if e.op == "end" and e.key in started and e.key.startswith("factory.")}
