"""Shared test helpers (journal and Factory builders, the hooks' glidein work dir, a loopback
OTLP receiver, the Jaeger harness, the fixtures' location), imported by the tests and the
benchmarks as ``tests.support.NAME``; the repository root is on ``sys.path`` for both
(pytest's ``pythonpath``; benchmarks run as ``python -m bench.NAME``)."""
