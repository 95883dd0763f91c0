"""Test support shipped beside the product, not part of it: seeded synthetic glideins as
traces (``synth``) and as glidein-table rows (``synth_table``), for the tests, the benchmarks
and ``python -m bench.synth``."""
