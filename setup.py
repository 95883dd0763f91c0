"""Build script: the package is pure Python (metadata in setup.cfg); the hot modules of the
analysis reader and the forwarder (``glidein_tracing.compiled.MODULES``) are also compiled
with Cython when Cython and a C compiler are there. Each compile is optional: when it fails the module stays pure Python,
with the same results. ``GLIDEIN_TRACING_PURE_PYTHON=1`` skips compiling."""

import hashlib
import json
import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
COMPILED = ("glidein_tracing/analysis/timeline.py", "glidein_tracing/analysis/fastread.py",
            "glidein_tracing/analysis/sources.py", "glidein_tracing/journal.py", "glidein_tracing/converter.py",
            "glidein_tracing/exporters/otlp_proto.py", "glidein_tracing/span_data.py", "glidein_tracing/resources.py", "glidein_tracing/ids.py",
            "glidein_tracing/sections.py", "glidein_tracing/factory/activity.py", "glidein_tracing/factory/ledger.py",
            "glidein_tracing/factory/forwarder.py")   # the same modules as glidein_tracing.compiled.MODULES
SOURCES_FILE = HERE / "glidein_tracing" / "_compiled_sources.json"


def extension_modules():
    if os.environ.get("GLIDEIN_TRACING_PURE_PYTHON", "").strip().lower() in ("1", "true", "yes"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("setup.py: Cython is not installed; every module stays pure Python")
        return []
    # which source each binary was compiled from (glidein_tracing.compiled checks it at import)
    SOURCES_FILE.write_text(json.dumps({
        path[:-3].replace("/", "."): hashlib.sha256((HERE / path).read_bytes()).hexdigest() for path in COMPILED},
        indent=1, sort_keys=True) + "\n")
    try:
        extensions = cythonize(list(COMPILED), language_level=3, build_dir="build/cython", quiet=True,
                               nthreads=os.cpu_count() or 1,
                               compiler_directives={"annotation_typing": False})  # hints are not C types
    except Exception as exc:  # noqa: BLE001 - a module that does not translate stays pure Python
        print(f"setup.py: Cython could not translate the modules ({exc}); every module stays pure Python")
        return []
    for extension in extensions:
        extension.optional = True          # a compiler error leaves the pure-Python module
    return extensions


setup(ext_modules=extension_modules(),
      options={"build_ext": {"parallel": os.cpu_count() or 1}})   # one compiler per core
