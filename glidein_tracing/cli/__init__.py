"""The ``glidein-tracing`` command: one module per verb, each thin over the library."""
