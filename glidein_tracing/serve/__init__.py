"""``glidein-tracing serve``: the read-only HTTP service where each user sees their own jobs
(in a browser and over REST) and operators see every glidein (docs/service.md). One module
per concept: config (the YAML settings), auth (tokens, sessions, the front proxy), access (who
sees which spans), source (the store, Jaeger, the glidein table), jobs (a submission's state
and tracking statement), api (/api/v1/), pages (HTML), app (the WSGI application)."""
