"""``glidein-tracing why``: why a job is not running yet (docs/why-waiting.md)."""
