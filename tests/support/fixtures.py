"""Where the shared real-data fixtures are (../shared/fixtures); tests skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("GLIDEIN_TRACING_SHARED",
                             Path(__file__).resolve().parents[3] / "shared"))
FIXTURES = SHARED / "fixtures"
GLIDEIN_RUN = FIXTURES / "glidein-run"
HTCONDOR = FIXTURES / "htcondor"
GWMS_FRONTEND = FIXTURES / "gwms-frontend"   # a Frontend configuration GlideinWMS wrote


def fixture_path(*parts) -> Path:
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent")
    return path
