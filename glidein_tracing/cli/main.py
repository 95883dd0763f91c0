"""Entry point of ``glidein-tracing``: dispatches to one module per verb."""

from __future__ import annotations

import argparse
import importlib
import sys

# verb -> module in glidein_tracing.cli; each module has add_arguments(parser) and run(args)
VERBS = {
    "demo": "demo",
    "show": "show",
    "trace-id": "trace_id",
    "export": "export",
    "forward": "forward",
    "factory-config": "factory_config",
    "analyze": "analyze",
    "synth": "synth",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glidein-tracing",
        description="OpenTelemetry traces of GlideinWMS glideins, from submission to cleanup.",
        epilog="GLIDEIN_TRACING_PURE_PYTHON=1 runs the modules compiled at install as plain Python "
               "(same results; --version lists them).")
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="print the version and which modules run compiled, then exit")
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


class _VersionAction(argparse.Action):
    """``--version``: computed only when asked (it imports the analysis modules)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .. import __version__, compiled
        lines = [f"glidein-tracing {__version__}"]
        lines += [f"  {module}: {state}" for module, state in compiled.status().items()]
        try:
            print("\n".join(lines), flush=True)
        except BrokenPipeError:   # e.g. `glidein-tracing --version | head -1`
            _reader_went_away()
        parser.exit()


def _reader_went_away():
    """The reader of our stdout closed it (``| head``): not an error. Point stdout at /dev/null
    so the interpreter's last flush at exit does not complain again."""
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class UserError(Exception):
    """A problem with what the user asked for: printed as one clear line, exit code 2."""
