"""Timeout tuning from the glidein table: SQL on DuckDB over its Parquet files (docs/analysis.md).

One module per concept:

- ``dataset``: the table's files (chosen by table/reader.py: damaged files skipped, schema
  versions checked) as DuckDB views ``glideins`` and ``jobs``;
- ``stats``: distributions per entry and site, waste in core-hours, validation, settings seen;
- ``entries``: GlideinWMS's analyze_entries table (plain SQL, also run on Spark);
- ``failures``: failures by domain, outage windows per site, top messages;
- ``services``: from the failure rules' columns, failures by domain, service and label with
  their core-hours, services' outage windows (planned or not), messages no rule decided;
- ``compare``: which values are over-represented among failed or slow glideins;
- ``whatif``: replay of every glidein under other GLIDEIN_Max_Idle / Max_Tail / retire times;
- ``report``: the analysis document and its terminal summary; ``html``: the HTML page.

Synthetic glideins to try it on are test support: glidein_tracing/testing/.
"""
