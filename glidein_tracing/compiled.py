"""Which modules run compiled: the hot modules of the analysis reader and of the forwarder,
built with Cython at install.

The package is pure Python. ``setup.py`` also compiles the modules in ``MODULES`` with Cython
when it can (the same source, no type declarations, so the same behaviour; callgrind counts
~13 % fewer instructions per glidein read, ~9 % per span forwarded) and records the SHA-256 of each source it compiled in
``_compiled_sources.json``. A failed compile is not an error: the ``.py`` is used.

At import, a compiled module is used only if it was built from the ``.py`` beside it: after
an edit in an editable install, a stale binary would otherwise shadow the new source, so the
source is imported instead (``status()`` says why). ``GLIDEIN_TRACING_PURE_PYTHON=1`` always
imports the sources (a check that both give the same results, or a debugger).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

ANALYSIS_MODULES = ("glidein_tracing.analysis.timeline", "glidein_tracing.analysis.fastread",
                    "glidein_tracing.analysis.sources")
FORWARDER_MODULES = ("glidein_tracing.journal", "glidein_tracing.converter", "glidein_tracing.exporters.otlp_proto",
                     "glidein_tracing.span_data", "glidein_tracing.resources", "glidein_tracing.ids",
                     "glidein_tracing.sections", "glidein_tracing.factory.activity", "glidein_tracing.factory.ledger",
                     "glidein_tracing.factory.forwarder")
MODULES = ANALYSIS_MODULES + FORWARDER_MODULES
SOURCES_FILE = "_compiled_sources.json"
PURE_ENV = "GLIDEIN_TRACING_PURE_PYTHON"
_PACKAGE_DIR = Path(__file__).resolve().parent


def source_path(fullname: str, package_dir: Path = _PACKAGE_DIR) -> Path:
    """``glidein_tracing.analysis.timeline`` -> ``<package>/analysis/timeline.py``."""
    return package_dir.joinpath(*fullname.split(".")[1:]).with_suffix(".py")


def source_digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def compiled_path(fullname: str, package_dir: Path = _PACKAGE_DIR) -> Path | None:
    """The extension module built for ``fullname``, if there is one."""
    source = source_path(fullname, package_dir)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def pure_reason(fullname: str, package_dir: Path = _PACKAGE_DIR, environ=os.environ) -> str | None:
    """Why ``fullname`` is imported from its source, or None when its compiled build is used."""
    if environ.get(PURE_ENV, "").strip().lower() in ("1", "true", "yes"):
        return f"{PURE_ENV} is set"
    if compiled_path(fullname, package_dir) is None:
        return "not compiled (no C compiler or Cython when it was installed)"
    try:
        recorded = json.loads((package_dir / SOURCES_FILE).read_text()).get(fullname)
        current = source_digest(source_path(fullname, package_dir))
    except (OSError, ValueError, AttributeError):
        return f"no record of the source it was compiled from ({SOURCES_FILE})"
    if recorded != current:
        return "compiled from another version of its source (rebuild: pip install -e .)"
    return None


class SourceUnlessCompiledFromIt(importlib.abc.MetaPathFinder):
    """Imports a module of ``MODULES`` from its ``.py`` when ``pure_reason`` gives a reason;
    otherwise leaves it to the usual finders (which prefer the extension module)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MODULES or pure_reason(fullname) is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, SourceUnlessCompiledFromIt) for finder in sys.meta_path):
        sys.meta_path.insert(0, SourceUnlessCompiledFromIt())


def status() -> dict:
    """``{module: "compiled" | "pure Python: <why>"}`` for the modules as imported now."""
    out = {}
    for fullname in MODULES:
        module = importlib.import_module(fullname)
        loaded = Path(getattr(module, "__file__", "") or "")
        if loaded.suffix == ".py":
            out[fullname] = "pure Python: " + (pure_reason(fullname) or "imported before the finder was installed")
        else:
            out[fullname] = "compiled"
    return out


def summary(modules=MODULES) -> str:
    """One line for benchmark output: ``timeline compiled, fastread compiled, ...``."""
    states = status()
    return ", ".join(f"{name.rsplit('.', 1)[1]} {states[name]}" for name in modules)
