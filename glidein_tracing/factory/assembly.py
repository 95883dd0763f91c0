"""A glidein's spans at the Factory: its Factory-side events (from the ledger), its returned
journal and its identity, as one event stream for the converter.

The Factory's identity events name the root, and the entry's GLIDEIN_Site from glideinWMS.xml
is its site (journal lines claiming another were left out: returned.held_identity); what was
cut of the journal is counted on the
root (``glidein_tracing.input.cut_*``). An untraced glidein (its output came back with no
journal and it was not asked to trace: its entry does not trace) gets ``glidein.traced=false``
on its root, whose outcome the converter makes ``untraced``: its spans are the root and the
Factory stages. Another glidein that returned no journal gets the outcome ``never_ran`` or
``no_glidein_output``. At most ``MAX_SPANS`` spans are made, whatever the journal's
``@max_spans`` asks for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..core import ids
from ..core.converter import convert
from ..core.journal import BOOL, INT, Event, typed
from .activity import identity_events
from ..core import conventions as c

MAX_SPANS = 20_000  # per glidein, whatever its journal's @max_spans (the knob allows more)


@dataclass(frozen=True)
class SpanMaker:
    """How the forwarder makes spans: ``service.name`` over the journal's, names to redact,
    each entry's site as the Factory's configuration says (``entry_sites``)."""

    resource_defaults: dict | None = None
    redact: tuple = ()
    entry_sites: dict = field(default_factory=dict)

    def glidein(self, identity: ids.GlideinIdentity, activity, journal, cut: dict, ended_at,
                stdout_facts=None, *, untraced: bool = False, identity_ignored: int = 0,
                outside_life: int = 0) -> list:
        """Every span of an ended glidein (ConversionError when there is no trace to make);
        ``stdout_facts``: GlideinWMS's reading of its returned stdout (glidein_stdout.py), on
        the root over anything the journal says of the same names; ``untraced``: its output
        came back with no journal and it was not asked to trace; ``identity_ignored``: the
        journal's claims on the root's identity left out (returned.held_identity), and
        ``outside_life``: its lines dated outside the glidein's life (clocks.within_life),
        each counted on the root."""
        events = list(activity) + list(journal)
        when = min((e.time for e in events), default=ended_at or time.time())
        if stdout_facts:
            last = max((e.time for e in events), default=when)
            events.append(Event(time=last, op="attr", key="glidein", line_no=1 << 62,
                                fields={_typed_name(k, v): str(v).lower() if isinstance(v, bool) else str(v)
                                        for k, v in stdout_facts.items()}))
        events.extend(self._factory_facts(identity, when))
        if any(cut.values()):
            events.append(Event(time=when, op="attr", key="glidein", fields={
                f"glidein_tracing.input.cut_{kind}:i": str(count) for kind, count in cut.items()}))
        for name, count in ((c.INPUT_IDENTITY_IGNORED, identity_ignored), (c.INPUT_OUTSIDE_LIFE, outside_life)):
            if count:
                events.append(Event(time=when, op="attr", key="glidein", fields={typed(name, INT): str(count)}))
        if untraced and not journal:
            events.append(Event(time=when, op="attr", key="glidein", fields={c.GLIDEIN_TRACED + ":b": "false"}))
        elif not journal:
            ran = any(e.key.startswith(c.STAGE_FACTORY_QUEUE) and e.op == "end" for e in activity)
            events.append(Event(time=when, op="attr", key="glidein", fields={
                c.GLIDEIN_OUTCOME: "no_glidein_output" if ran else "never_ran"}))
        return self._convert(events, identity)

    def factory_stages(self, identity: ids.GlideinIdentity, activity) -> list:
        """The spans a running glidein's Factory-side events make so far (its closed Factory
        stages among them, under the root's id)."""
        when = min(e.time for e in activity)
        return self._convert(list(activity) + self._factory_facts(identity, when), identity)

    def _factory_facts(self, identity: ids.GlideinIdentity, when: float) -> list:
        """The root's identity, and its site when the Factory knows it."""
        events = identity_events(identity, when)
        site = self.entry_sites.get(identity.entry)
        if site:
            events.append(Event(time=when, op="attr", key="glidein", fields={c.GLIDEIN_SITE: site}))
        return events

    def _convert(self, events, identity: ids.GlideinIdentity) -> list:
        return convert(events, resource_defaults=self.resource_defaults, redact=self.redact,
                       trace_id=identity.trace_id, span_ceiling=MAX_SPANS)


def _typed_name(name: str, value) -> str:
    """A journal field name with the type suffix of ``value`` (bool :b, int :i)."""
    if isinstance(value, bool):
        return typed(name, BOOL)
    return typed(name, INT) if isinstance(value, int) else name


def closed_factory_stages(activity) -> set:
    """Keys of the Factory stages (``factory.*``) the events have started and ended."""
    started = {e.key for e in activity if e.op == "start"}
    return {e.key for e in activity if e.op == "end" and e.key in started and e.key.startswith("factory.")}
