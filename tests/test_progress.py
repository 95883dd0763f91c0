"""Long work shows its progress on a terminal, and nothing elsewhere or with --quiet: the
synthetic generator, analyze's stages, a backfill, writing rollups."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.support.analysis_helpers import write_synth_store, write_synth_table

REPO = Path(__file__).resolve().parents[1]


def on_terminal(*argv, cwd) -> tuple[int, str]:
    """(exit code, what reached the terminal) of ``argv`` run with stderr on a pseudo-terminal
    of 100 columns (stdout to a pipe, read and dropped)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    proc = subprocess.Popen([*map(str, argv)], stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL,
                            cwd=cwd, env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            proc.kill()
            raise AssertionError(f"no end: {seen[-500:]!r}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:            # the last writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=60), seen.decode("utf-8", "replace")


def piped(*argv, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*map(str, argv)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})


CLI = (sys.executable, "-m", "glidein_tracing")


def test_synth_shows_its_glideins_on_a_terminal_only(tmp_path):
    synth = (sys.executable, "-m", "bench.synth", "--glideins", "400")
    code, seen = on_terminal(*synth, "--store", tmp_path / "a", cwd=REPO)
    assert code == 0 and f"store {tmp_path / 'a'}:" in seen and "/400 [" in seen, seen
    code, seen = on_terminal(*synth, "--store", tmp_path / "b", "--quiet", cwd=REPO)
    assert code == 0 and "glidein/s" not in seen and "%|" not in seen, seen
    done = piped(*synth, "--store", tmp_path / "c", cwd=REPO)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_analyze_names_each_stage_on_a_terminal(tmp_path):
    write_synth_table(tmp_path / "table", glideins=300, seed=4, period_s=86400)
    code, seen = on_terminal(*CLI, "analyze", tmp_path / "table", "--whatif", cwd=tmp_path)
    assert code == 0, seen
    for stage in ("reading the files", "stats", "compare", "analyze_entries", "failures", "whatif"):
        assert "stage " in seen and stage in seen, (stage, seen)
    code, seen = on_terminal(*CLI, "analyze", tmp_path / "table", "--quiet", cwd=tmp_path)
    assert code == 0 and seen == "", seen


def test_backfill_and_rollups_show_progress_on_a_terminal_only(tmp_path):
    write_synth_store(tmp_path / "store", glideins=200, seed=5)
    code, seen = on_terminal(*CLI, "table", "--table", tmp_path / "t1", "--store", tmp_path / "store", cwd=tmp_path)
    assert code == 0 and "backfill: store read:" in seen, seen
    assert "200 glideins written" in seen
    shutil.rmtree(tmp_path / "t1" / "rollups", ignore_errors=True)
    for rollups in (tmp_path / "t1").rglob("rollups"):
        shutil.rmtree(rollups)
    code, seen = on_terminal(*CLI, "table", "--table", tmp_path / "t1", "--rollups", cwd=tmp_path)
    assert code == 0 and "rollups:" in seen and "file/s" in seen, seen
    done = piped(*CLI, "table", "--table", tmp_path / "t2", "--store", tmp_path / "store", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.splitlines() == [
        "glidein-tracing table: 200 glideins written, 0 already in the table, "
        f"{done.stderr.split(' spans read')[0].rsplit(' ', 1)[1]} spans read, 0 other traces"], done.stderr
    code, seen = on_terminal(*CLI, "table", "--table", tmp_path / "t3", "--store", tmp_path / "store", "--quiet",
                             cwd=tmp_path)
    assert code == 0 and "backfill" not in seen, seen


def test_reindexing_a_store_shows_the_bytes_indexed_on_a_terminal(tmp_path):
    write_synth_store(tmp_path / "store", glideins=200, seed=6)
    code, seen = on_terminal(*CLI, "show", "--reindex", "--store", tmp_path / "store", cwd=tmp_path)
    assert code == 0 and f"indexing {tmp_path / 'store'}:   0%" in seen, seen
    done = piped(*CLI, "show", "--reindex", "--store", tmp_path / "store", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
