"""Entry point of ``glidein-tracing``: dispatches to one module per verb."""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

# verb -> module in glidein_tracing.cli; each module has add_arguments(parser) and run(args)
VERBS = {
    "demo": "demo",
    "show": "show",
    "trace-id": "trace_id",
    "export": "export",
    "forward": "forward",
    "status": "status",
    "factory-config": "factory_config",
    "analyze": "analyze",
}
# a module missing at run time -> the extra that installs it (setup.cfg)
EXTRA_OF_MODULE = {"htcondor2": "factory", "classad2": "factory", "htcondor": "factory", "tqdm": "factory",
                   "yaml": "factory", "numpy": "analysis", "matplotlib": "analysis", "duckdb": "analysis",
                   "pyarrow": "analysis", "pyspark": "spark",
                   "wrapt": "frontend", "opentelemetry.instrumentation": "frontend"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glidein-tracing",
        description="OpenTelemetry traces of GlideinWMS glideins, from submission to cleanup.")
    parser.add_argument("--version", action="version", version=f"glidein-tracing {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for verb, module_name in VERBS.items():
        module = importlib.import_module(f"glidein_tracing.cli.{module_name}")
        doc = (module.__doc__ or "").strip().splitlines()[0]
        verb_parser = sub.add_parser(verb, help=doc, description=module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _reader_went_away()
        return 0
    except UserError as exc:
        print(f"glidein-tracing {args.verb}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        extra = _extra_for(exc.name or "")
        if extra is None:
            raise
        print(f"glidein-tracing {args.verb}: needs {exc.name}, which this installation lacks: "
              f"pip install 'glidein_tracing[{extra}]'", file=sys.stderr)
        return 2


def _extra_for(module: str) -> str | None:
    """The extra that installs ``module`` (or its package), if it is one of ours."""
    for name, extra in EXTRA_OF_MODULE.items():
        if module == name or module.startswith(name + "."):
            return extra
    return None


def _reader_went_away():
    """The reader of our stdout closed it (``| head``): not an error. Point stdout at /dev/null
    so the interpreter's last flush at exit does not complain again."""
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``20m``, ``12h``, ``2d``, ``1w``; ValueError otherwise."""
    import re
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhdw]?)\s*", text)
    if not match:
        raise ValueError(text)
    return float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]


class UserError(Exception):
    """A problem with what the user asked for: printed as one clear line, exit code 2."""
