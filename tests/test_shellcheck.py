"""Every shell script the project ships passes ShellCheck: the hooks a glidein runs (and the
files they source), the simulator's stand-ins for GlideinWMS's scripts, and the test and CI
runners. The project's settings are .shellcheckrc's; a finding the code is right about is
disabled on its line with the reason beside it. tests/run.sh installs shellcheck when missing;
without it (CI=true) the test fails instead of skipping."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shipped_shell_scripts() -> list:
    """Every file in the repository (as git lists it) that is a shell script: a .sh name, or a
    shell shebang."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    out = []
    for name in files.decode().split("\0"):
        path = REPO / name
        if not name or not path.is_file() or name.startswith("docs/"):
            continue
        with path.open("rb") as handle:
            first = handle.readline()
        if name.endswith(".sh") or (first.startswith(b"#!") and first.rstrip().endswith((b"sh", b"bash"))):
            out.append(name)
    return sorted(out)


def test_every_shipped_shell_script_passes_shellcheck():
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("shellcheck is not installed (tests/run.sh installs it)")
        pytest.skip("shellcheck is not installed (tests/run.sh installs it)")
    scripts = shipped_shell_scripts()
    assert {"glidein_tracing/node/hooks/gconditional_TRACING_setup.sh", "tests/run.sh",
            "glidein_tracing/simulator/glidein_startup_sim.sh"} <= set(scripts)
    done = subprocess.run(["shellcheck", "--format=gcc", *scripts], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr


def test_a_finding_fails_the_check(tmp_path):
    """The check is live: a script with an unquoted expansion is a finding."""
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    script = tmp_path / "bad.sh"
    script.write_text('#!/bin/bash\nrm -rf $1/tmp\n')
    done = subprocess.run(["shellcheck", "--format=gcc", str(script)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0 and "SC2086" in done.stdout
