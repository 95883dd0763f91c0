"""Entry point of ``glidein-tracing``: dispatches to one module per verb, and is the one place
that turns errors into messages and exit codes (a ``UserError`` from anywhere, see
glidein_tracing.core.errors: its message and its exit_code; a full disk: 5; a closed stdout: 141)."""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys

from .. import __version__
from ..core.errors import EXIT_CLOSED_PIPE, EXIT_NO_SPACE, EXIT_USAGE, UserError
from ..core.nospace import is_no_space
from ..core.numbers import finite_float
from ..core.terminal import echo, escape

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
    "rules": "rules",
    "table": "table",
    "why": "why",
    "serve": "serve",
}
# a module missing at run time -> the extra that installs it (setup.cfg)
EXTRA_OF_MODULE = {"htcondor2": "factory", "classad2": "factory", "htcondor": "factory", "tqdm": "factory",
                   "yaml": "factory", "re2": "factory", "numpy": "analysis", "matplotlib": "analysis", "msgspec": "factory",
                   "pyarrow": "analysis", "duckdb": "analysis", "pyspark": "spark",
                   "wrapt": "frontend", "opentelemetry.instrumentation": "frontend",
                   "waitress": "serve", "jwt": "serve", "cryptography": "serve"}


class OneLineParser(argparse.ArgumentParser):
    """Wrong flags get one line, what is wrong and where the help is, and exit 2 (argparse's
    own usage block hides the one line that matters)."""

    def error(self, message):
        self.exit(EXIT_USAGE, escape(f"{self.prog}: {message} (see {self.prog} --help)", newlines=False) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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
        return EXIT_CLOSED_PIPE
    except UserError as exc:          # its exit code says which (core/errors.py)
        echo(f"glidein-tracing {args.verb}: {exc}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        extra = _extra_for(exc.name or "")
        if extra is None:
            raise
        echo(f"glidein-tracing {args.verb}: needs {exc.name}, which this installation lacks: add the "
             f"[{extra}] extra, with the wheel built from a checkout into dist/ (docs/operators.md): "
             f"{sys.executable} -m pip install 'dist/glidein_tracing-{__version__}-py3-none-any.whl[{extra}]'",
             file=sys.stderr)
        return EXIT_USAGE
    except (OSError, sqlite3.Error) as exc:
        if not is_no_space(exc):
            raise
        where = f" under {exc.filename}" if getattr(exc, "filename", None) else ""
        echo(f"glidein-tracing {args.verb}: no space left on device{where}; nothing was lost (what "
             "could not be written waits for the next run): free space and run again", file=sys.stderr)
        return EXIT_NO_SPACE


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
    return finite_float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]


def utc_time(text: str) -> float:
    """An argparse type: a UTC date or time (2026-01-31, 2026-01-31T12:00, 2026-01-31 12:00:00)
    as epoch seconds."""
    import calendar
    import time
    for layout in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return float(calendar.timegm(time.strptime(text.strip().rstrip("Z"), layout)))
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a UTC date or time: {text!r} (e.g. 2026-01-31 or 2026-01-31T12:00)")


def whole_number(text: str) -> str:
    """An argparse type: a whole number >= 0 (an HTCondor cluster, proc), in its plain
    decimal form ("007" -> "7": the ids hash the text)."""
    if not text.strip().isdigit() or not text.strip().isascii():
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return str(int(text))


def number_in(low: float, high: float | None = None):
    """An argparse type: a finite number in [low, high] (NaN, infinity and values outside
    are refused with a message naming the range)."""
    def parse(text: str) -> float:
        try:
            value = finite_float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {text}")
        return value
    return parse


if __name__ == "__main__":   # python -m glidein_tracing.cli.main runs the command too, not nothing
    raise SystemExit(main())
