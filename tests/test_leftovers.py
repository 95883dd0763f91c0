"""No process outlives the suite: the session's end lists what a test left behind, kills it
and fails the run (tests/conftest.py, tests/support/leftovers.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

INNER = '''
import subprocess

def test_leaves_an_orphan_behind(tmp_path):
    # its parent exits at once and its environment lacks the session's mark: only its working
    # directory (the session's temporary one) says whose it is
    subprocess.run(["sh", "-c", "sleep 600 & echo $! > orphan.pid"], cwd=tmp_path,
                   env={"PATH": "/usr/bin:/bin"}, check=True)
    (tmp_path.parent / "orphan").write_text(str(tmp_path / "orphan.pid"))

def test_leaves_a_child_behind(tmp_path):
    child = subprocess.Popen(["sleep", "601"], cwd="/")
    (tmp_path.parent / "child").write_text(str(child.pid))
'''


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the check reads /proc")
def test_a_session_that_leaves_processes_behind_fails_and_names_them(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    base = tmp_path / "base"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--basetemp", str(base), str(tmp_path / "test_inner.py")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    orphan = int(Path((base / "orphan").read_text()).read_text())
    child = int((base / "child").read_text())
    assert "processes the test session left behind (now killed):" in done.stdout
    for pid, command in ((orphan, "sleep 600"), (child, "sleep 601")):
        assert any(line.startswith(f"  pid {pid} ") and line.endswith(command) for line in done.stdout.splitlines()), \
            done.stdout
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
