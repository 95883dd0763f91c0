"""Journal appends from the shell library are atomic: many writers at once (job slots, the
exit hook, the sampler) never cut or interleave lines, under bash and under dash."""

import subprocess

import pytest

from glidein_tracing.core.journal import read_journal
from tests.support.hook_support import HOOKS, SHELLS

LIB = HOOKS / "gconditional_TRACING_lib.sh"


@pytest.mark.parametrize("shell", SHELLS)
def test_parallel_appends_keep_every_line_intact(tmp_path, shell):
    journal = tmp_path / "journal.gtj"
    writers, lines = 8, 500
    script = (f'. "{LIB}"; GT_JOURNAL="{journal}"; w=$1; pad=$2; i=0; '
              f'while [ $i -lt {lines} ]; do '
              'gt_emit "1795318561.$i" sample - "w:i=$w" "n:i=$i" "p1=$pad" "p2=$pad" "p3=$pad" || exit 1; '
              'i=$((i + 1)); done')
    procs = [subprocess.Popen([shell, "-c", script, "sh", str(w), chr(65 + w) * (100 + 130 * w)])
             for w in range(writers)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    events, report = read_journal(journal)
    assert report.skipped_total == 0, report.summary()
    assert len(events) == writers * lines
    seen = {(int(e.fields["w:i"]), int(e.fields["n:i"])) for e in events}
    assert seen == {(w, i) for w in range(writers) for i in range(lines)}
    for e in events:
        w = int(e.fields["w:i"])
        for name in ("p1", "p2", "p3"):   # lines up to ~3100 bytes, all whole
            assert e.fields[name] == chr(65 + w) * (100 + 130 * w)


@pytest.mark.parametrize("shell", SHELLS)
def test_values_are_cleaned_and_capped(tmp_path, shell):
    journal = tmp_path / "journal.gtj"
    script = (f'. "{LIB}"; GT_JOURNAL="{journal}"; '
              'gt_emit 1795318561.5 attr glidein "a=x$(printf "\\t")y$(printf "\\r")z" '
              '"b=$(printf "line1\\nline2")" "big=$1" "empty=" "c=ü€" && echo ok')
    big = "é" * 3000          # 6000 bytes of 2-byte characters
    out = subprocess.run([shell, "-c", script, "sh", big], capture_output=True, text=True,
                         env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "ok"
    raw = journal.read_bytes()
    assert raw.count(b"\n") == 1 and len(raw) <= 4000
    events, report = read_journal(journal)
    assert report.skipped_total == 0
    f = events[0].fields
    assert f["a"] == "x y z" and f["b"] == "line1 line2" and f["c"] == "ü€"
    assert "empty" not in f
    assert len(f["big"].encode()) <= 1024 and set(f["big"]) == {"é"}
