"""The docs' install commands, run as written: the wheel built from a checkout
(docs/operators.md, section 1) and installed into fresh environments, with only the host paths
(/opt/..., /usr/bin/python3) moved under the test's directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# what a checkout holds that is not the project: virtualenvs, builds, caches, git
NOT_THE_CHECKOUT = shutil.ignore_patterns(".venv*", ".git", "dist", "build", "*.egg-info", "__pycache__",
                                          ".pytest_cache")
PIP_TIMEOUT_S = 900      # a cold pip cache downloads pyarrow, duckdb, htcondor, ...


def shell_blocks(doc: str, heading: str) -> list[str]:
    """The ```sh blocks (dedented, as a list item holds them) of the section of ``doc`` whose
    heading begins with ``heading``, up to the next heading of its level or above."""
    text = (DOCS / doc).read_text()
    start = text.index(heading)
    body = text.index("\n", start)
    level = len(heading.split(" ", 1)[0])
    end = re.search(r"^#{1,%d} " % level, text[body:], re.M)
    section = text[start:body + end.start()] if end else text[start:]
    return [textwrap.dedent(body) for _, body in re.findall(r"^( *)```sh\n(.*?)^\1```", section, re.M | re.S)]


def run_block(block: str, cwd: Path, replacements: dict) -> subprocess.CompletedProcess:
    """Run a docs block with bash, each key of ``replacements`` replaced (host paths); fails
    the test with the output when a command fails."""
    for old, new in replacements.items():
        assert old in block, f"{old!r} is not in the docs' block:\n{block}"
        block = block.replace(old, new)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=PIP_TIMEOUT_S)
    assert done.returncode == 0, f"{block}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def copy_checkout(target: Path) -> Path:
    """The project's files, as a fresh clone has them (no virtualenv, build or cache)."""
    shutil.copytree(ROOT, target, ignore=NOT_THE_CHECKOUT, symlinks=True)
    return target


def fresh_python(target: Path) -> Path:
    """The python of a new virtualenv of the interpreter running the tests: a stand-in for a
    host's own python3 (Python 3.9 in CI's 3.9 run, as on EL9)."""
    venv.EnvBuilder(with_pip=True).create(target)
    return target / "bin" / "python"


def quoted(path) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def this_python() -> str:
    """The interpreter running the tests, for the docs' ``python3``."""
    return quoted(sys.executable)
