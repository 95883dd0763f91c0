"""Serve traces over HTTP, read-only: each user their own jobs, operators everything.

A YAML config (--config, default /etc/glidein-tracing/serve.yaml; factory_config/serve.yaml
shows every key) says where to listen, what to read (the store, or Jaeger's query API, and
the glidein table), the token issuers trusted (WLCG / SciTokens JWTs checked against each
issuer's JWKS file) and the operators' groups. Users sign in with the token jobsub_lite's
htgettoken gives them; pages at /jobs, the REST API at /api/v1/ (/api/v1/openapi.json).
`--check-config` checks the file and exits: 0 when good, 2 with one line per problem.
Runs as a service (factory_config/glidein-tracing-serve.service); docs/service.md.
"""

from __future__ import annotations

from ..core.terminal import echo, log_to_stderr


def add_arguments(parser):
    parser.add_argument("--config", metavar="FILE", help="the service's YAML settings (default "
                        "/etc/glidein-tracing/serve.yaml)")
    parser.add_argument("--check-config", action="store_true",
                        help="check the settings and exit: 0 when good, 2 with each problem")


def run(args):
    from ..serve.config import load_config
    from ..serve.source import Source
    path, config = load_config(args.config)
    Source(config)                 # the store is one (a typo is refused here, not at the first request)
    if args.check_config:
        echo(f"glidein-tracing serve: settings good ({path})")
        return 0
    from ..serve.app import serve
    log_to_stderr("%(asctime)s glidein-tracing serve: %(message)s")
    serve(config)
    return 0
