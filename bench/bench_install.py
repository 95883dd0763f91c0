"""Benchmark: installing the package with no C compiler, into fresh virtualenvs.

Makes two virtualenvs in a temporary directory, hides every compiler (PATH holds only a
directory of links to `sh`, `env` and `uname`), and times `pip install SPEC` of this checkout
for the core (`.`) and for what the demo needs (`.[factory,frontend]`); then says whether the
core pulled any of the heavy libraries.

    python -m bench.bench_install [--quick]   # --quick: the core only
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from bench import quick

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "matplotlib", "htcondor", "duckdb")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", nargs="+", default=[".", ".[factory,frontend]"], help="what to install")
    args = quick.parse_args(parser, specs=["."])
    with tempfile.TemporaryDirectory(prefix="gt-bench-install-") as tmp:
        tools = Path(tmp) / "bin"
        tools.mkdir()
        for tool in ("sh", "env", "uname"):
            (tools / tool).symlink_to(shutil.which(tool))
        env = dict(os.environ, PATH=str(tools))
        assert not any(shutil.which(cc, path=env["PATH"]) for cc in ("cc", "gcc", "clang"))
        for number, spec in enumerate(args.specs):
            target = Path(tmp) / f"venv{number}"
            venv.create(target, with_pip=True)
            started = time.perf_counter()
            done = subprocess.run([str(target / "bin" / "python"), "-m", "pip", "install", "-q", spec],
                                  cwd=REPO, env=env, capture_output=True, text=True)
            took = time.perf_counter() - started
            listed = subprocess.run([str(target / "bin" / "python"), "-m", "pip", "list"],
                                    capture_output=True, text=True).stdout.lower()
            heavy = [h for h in HEAVY if h in listed]
            print(f"{spec:22s} exit {done.returncode}, {took:.1f} s, heavy libraries: {', '.join(heavy) or 'none'}")
            if done.returncode:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
