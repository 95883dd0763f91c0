"""Timeout tuning from glidein traces (docs/analysis.md).

One module per concept:

- ``sources``: read spans from the embedded store, OTLP JSON files or Jaeger's query API and
  group them into traces with bounded memory;
- ``timeline``: one compact ``GlideinTimeline`` per trace, and the columnar ``TimelineTable``
  of many (numpy arrays, no span dicts kept);
- ``stats``: percentiles per entry and site, waste in core-hours, validation scripts;
- ``whatif``: replay of every glidein under other GLIDEIN_Max_Idle / Max_Tail / retire times;
- ``report``: terminal summary, JSON, self-contained HTML with plots;
- ``synth``: a seeded generator of realistic synthetic glidein traces.
"""
