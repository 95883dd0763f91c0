"""glidein_config read once after it last changed (gt_setup_env): the keys the hooks need are kept
in glidein_tracing/config, which later hooks read while it is newer than glidein_config; a
change to glidein_config (a knob a later script adds), even within the same clock tick, is
read again; a kept file cut short is not taken. Under bash and dash (the job wrapper's sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_lib.sh"
SHELLS = [s for s in ("bash", "dash") if shutil.which(s)]


@pytest.fixture
def work(tmp_path) -> Path:
    """A glidein's work dir after the setup hook: glidein_config (with the setup hook's keys and
    the glidein's other lines) and the journal's directory."""
    (tmp_path / "glidein_tracing").mkdir()
    journal = tmp_path / "glidein_tracing" / "journal.gtj"
    journal.touch()
    lines = [f"GLIDEIN_FILLER_{i} some value {i}" for i in range(80)]
    lines += [f"GLIDEIN_WORKSPACE_ORIG {tmp_path}", "GLIDEIN_STARTUP_PID 4242", f"GLIDEIN_TRACING_JOURNAL {journal}",
              "GLIDEIN_TRACING_TRACE_ID " + "ab" * 16, "GLIDEIN_TRACING_CLK_TCK 100", "GLIDEIN_TRACING_PAGESIZE 4096",
              "GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 50", "GLIDEIN_TRACING_EMPTY"]
    (tmp_path / "glidein_config").write_text("\n".join(lines) + "\n")
    return tmp_path


def setup_env(shell: str, work: Path, *keys: str) -> str:
    """What a hook sees: GT_HZ, the log tail knob and the journal, after gt_setup_env."""
    out = subprocess.run([shell, "-c", f'. "{LIB}"; gt_setup_env glidein_config {" ".join(keys)} || exit 3; '
                          'echo "$GT_HZ $GT_C_GLIDEIN_TRACING_JOB_LOG_TAIL_LINES $GT_JOURNAL"'],
                         cwd=work, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def kept(work: Path) -> Path:
    return work / "glidein_tracing" / "config"


def later(path: Path, than: Path, by: float = 2.0) -> None:
    """path's time set to than's plus ``by`` seconds (0: the very same time)."""
    stamp = than.stat().st_mtime_ns + int(by * 1e9)
    os.utime(path, ns=(stamp, stamp))


@pytest.mark.parametrize("shell", SHELLS)
def test_the_keys_are_kept_and_read_from_there_while_glidein_config_is_unchanged(shell, work):
    journal = work / "glidein_tracing" / "journal.gtj"
    assert setup_env(shell, work) == f"100 50 {journal}"
    text = kept(work).read_text()
    assert "GLIDEIN_FILLER_1 " not in text and text.endswith("GLIDEIN_TRACING_KEPT 1\n")
    assert "GLIDEIN_STARTUP_PID 4242\n" in text and "GLIDEIN_TRACING_EMPTY \n" in text
    # the kept file, not glidein_config, is read: a value only it holds is what the hook sees
    kept(work).write_text(text.replace("GLIDEIN_TRACING_CLK_TCK 100", "GLIDEIN_TRACING_CLK_TCK 250"))
    later(kept(work), work / "glidein_config")
    assert setup_env(shell, work) == f"250 50 {journal}"
    # unless a hook asks for more keys than those kept
    assert setup_env(shell, work, "GLIDEIN_FILLER_1") == f"100 50 {journal}"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("by", [2.0, 0.0], ids=["later", "same tick"])
def test_a_change_to_glidein_config_is_read(shell, work, by):
    setup_env(shell, work)
    with open(work / "glidein_config", "a") as config:
        config.write("GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 7\n")
    later(work / "glidein_config", kept(work), by)
    assert setup_env(shell, work).split()[1] == "7"
    assert "GLIDEIN_TRACING_JOB_LOG_TAIL_LINES 7\n" in kept(work).read_text()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_kept_file_cut_short_is_not_taken(shell, work):
    setup_env(shell, work)
    text = kept(work).read_text()
    kept(work).write_text(text[:text.index("GLIDEIN_TRACING_CLK_TCK")] + "GLIDEIN_TRACING_CLK_TCK 250\n")
    later(kept(work), work / "glidein_config")
    assert setup_env(shell, work).split()[0] == "100"


@pytest.mark.parametrize("shell", SHELLS)
def test_no_tracing_no_kept_file(shell, work):
    config = work / "glidein_config"
    config.write_text("".join(line + "\n" for line in config.read_text().splitlines()
                              if not line.startswith("GLIDEIN_TRACING_JOURNAL")))
    out = subprocess.run([shell, "-c", f'. "{LIB}"; gt_setup_env glidein_config'], cwd=work, timeout=30)
    assert out.returncode != 0 and not kept(work).exists()
