"""The Frontend stand-ins laid out as GlideinWMS's package (glideinwms/frontend/...), so that a
group process runs as GlideinWMS starts it (``frontend/glideinFrontend.py``, ``spawn_group``):
``python .../glideinFrontendElement.py PPID WORK_DIR GROUP ACTION``, the element class defined
in ``__main__``, the library imported as ``glideinwms.frontend.glideinFrontendLib``."""

from __future__ import annotations

import shutil
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
FILES = {"frontend_standin_interface.py": "glideinFrontendInterface.py",
         "frontend_standin_lib.py": "glideinFrontendLib.py",
         "frontend_standin.py": "glideinFrontendElement.py"}


def lay_out(dest: Path) -> tuple:
    """(the directory to put on PYTHONPATH, the element script) of a package under ``dest``."""
    package = dest / "glideinwms" / "frontend"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    for source, name in FILES.items():
        shutil.copy(SUPPORT / source, package / name)
    return dest, package / "glideinFrontendElement.py"
