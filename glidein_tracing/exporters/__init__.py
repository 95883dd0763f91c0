"""Span exporters. Each is an OTel SDK ``SpanExporter`` that also says what it delivered
(result.py: ``Delivery``): OTLP/HTTP (otlp.py) and the embedded store of OTLP JSON Lines files
(store.py); otlp_json.py is the JSON encoding they share. jaeger_query.py is the one client
of Jaeger's query API: what a backend already holds, and its traces read back."""
