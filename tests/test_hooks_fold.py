"""The sampler's folded readings (gconditional_TRACING_stages.sh, gt_fold): driven by the real
shell functions with the readings and stage boundaries of a glidein, the folded journal gives
every stage the same glidein.resource.* figures as the same readings written one line each,
in far fewer lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

from glidein_tracing.core.converter import convert
from glidein_tracing.core.ids import GlideinIdentity
from glidein_tracing.core.journal import format_line, read_journal
from tests.support.journal_builders import root_lines

HOOKS = Path(__file__).resolve().parents[1] / "glidein_tracing" / "node" / "hooks"
IDENTITY = GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                           "schedd_glideins2@localhost", 1234, 0)
MARK = "# --- Last Script values ---"

# the sampler's loop, one command a line: R (a reading: boundary check, then fold), L (another
# hook appends a journal line), M (glidein_startup.sh marks glidein_config), E (the sampler stops)
DRIVER = r'''
. "$HOOKS/gconditional_TRACING_lib.sh"; . "$HOOKS/gconditional_TRACING_stages.sh"
gt_fold_watch
while IFS=' ' read -r cmd rest; do
    case $cmd in
        R) ! gt_fold_boundary || gt_fold_flush
           read -r t GT_R_UT GT_R_ST GT_R_RSS GT_R_N GT_R_L1 GT_R_DF GT_R_HWM <<< "$rest"
           GT_R_MPEAK=
           gt_fold "$t" ;;
        L) printf '%s\n' "$rest" >> "$GT_JOURNAL" ;;
        M) printf '%s\n' "$MARK" >> "$GT_CONFIG" ;;
        E) gt_fold_flush ;;
    esac
done
'''


def reading(t: float, i: int) -> dict:
    """A plausible reading at time t (the i-th): CPU climbing, memory and load moving."""
    return {"r.utime": f"{0.3 * i:.2f}", "r.stime": f"{0.05 * i:.2f}",
            "r.rss": str(40_000_000 + (i * 7919) % 30_000_000), "r.procs:i": str(5 + i % 4),
            "r.load1": f"{(i * 37 % 400) / 100:.2f}", "r.disk_free": str(80_000_000_000 - (i * 104729) % 900_000_000),
            "r.hwm": str(70_000_000 + (i * 7919) % 30_000_000)}


def glidein_events(period: float = 30.0):
    """(time, kind, payload) of a glidein: setup until 1300, two jobs, teardown at 4300."""
    stage_lines = [
        (1300.0, "M", None),
        (1400.0, "L", format_line(1400.0, "start", "job/1.0", {"@parent": "condor", "@name": "job", "@stage": "job"})),
        (2500.0, "L", format_line(2500.0, "end", "job/1.0", {"@status": "OK"})),
        (2600.0, "L", format_line(2600.0, "start", "job/2.0", {"@parent": "condor", "@name": "job", "@stage": "job"})),
        (4000.0, "L", format_line(4000.0, "end", "job/2.0", {"@status": "OK"})),
    ]
    readings = [(1015.0 + period * i, "R", reading(1015.0 + period * i, i))
                for i in range(int((4300 - 1015) // period) + 1)]
    return sorted(stage_lines + readings, key=lambda e: e[0])


def closing_lines():
    """What cleanup writes at the end (records date setup; condor from its record)."""
    return [format_line(1300.0, "end", "setup", {"@status": "OK"}),
            format_line(1300.0, "start", "condor", {"@name": "condor", "@stage": "condor.start"}),
            format_line(4300.0, "end", "condor", {"@status": "OK"}),
            format_line(4300.0, "start", "teardown", {"@name": "teardown", "@stage": "teardown"}),
            format_line(4301.0, "sample", "-", reading(4301.0, 200)),
            format_line(4302.0, "end", "teardown", {"@status": "OK", **reading(4302.0, 201)}),
            format_line(4302.0, "end", "glidein", {"@status": "OK"})]


def folded_journal(tmp_path: Path, events) -> Path:
    journal, config = tmp_path / "folded.gtj", tmp_path / "glidein_config"
    journal.write_text("\n".join(root_lines(1000.0, IDENTITY.trace_id)) + "\n")
    config.write_text("GLIDEIN_Name x\n")
    commands = []
    for t, kind, payload in events:
        if kind == "R":
            r = payload
            commands.append(" ".join(["R", str(t), r["r.utime"], r["r.stime"], r["r.rss"], r["r.procs:i"],
                                      r["r.load1"], r["r.disk_free"], r["r.hwm"]]))
        elif kind == "L":
            commands.append("L " + payload)
        else:
            commands.append(kind)
    commands.append("E")
    env = {"HOOKS": str(HOOKS), "GT_JOURNAL": str(journal), "GT_CONFIG": str(config), "MARK": MARK,
           "PATH": "/usr/bin:/bin"}
    subprocess.run(["bash", "-c", DRIVER], input="\n".join(commands) + "\n", text=True, env=env,
                   check=True, timeout=120)
    with open(journal, "a") as out:
        out.write("\n".join(closing_lines()) + "\n")
    return journal


def raw_journal(tmp_path: Path, events) -> Path:
    lines = root_lines(1000.0, IDENTITY.trace_id)
    for t, kind, payload in events:
        if kind == "R":
            lines.append(format_line(t, "sample", "-", payload))
        elif kind == "L":
            lines.append(payload)
    path = tmp_path / "raw.gtj"
    path.write_text("\n".join(lines + closing_lines()) + "\n")
    return path


def resources_by_span(path: Path) -> dict:
    events, report = read_journal(path)
    out = {}
    for span in convert(events, report):
        key = (span.attributes["glidein.stage"], span.start_time)
        out[key] = {k: v for k, v in span.attributes.items() if k.startswith("glidein.resource.")}
    return out


def test_folded_readings_give_every_stage_the_figures_of_the_raw_readings(tmp_path):
    events = glidein_events()
    folded, raw = folded_journal(tmp_path, events), raw_journal(tmp_path, events)
    got, want = resources_by_span(folded), resources_by_span(raw)
    assert got.keys() == want.keys()
    stages = {stage for stage, _ in want}
    assert {"setup", "condor.start", "idle", "job", "teardown", "glidein"} <= stages
    for key in want:
        assert got[key] == want[key], key
    # the stages that hold readings got figures, the kernel-kept peak among them
    root = next(v for (stage, _), v in got.items() if stage == "glidein")
    assert root["glidein.resource.max_rss_source"] == "proc.vmhwm"
    assert root["glidein.resource.cpu_user_s"] > 0 and "glidein.resource.load1_max" in root
    # one line per run: boundaries (setup's end, 2 job starts and ends) and every 600 s
    samples = [e for e in read_journal(folded)[0] if e.op == "sample"]
    raw_samples = [e for e in read_journal(raw)[0] if e.op == "sample"]
    assert len(raw_samples) > 100 and len(samples) <= 5 + (4300 - 1000) // 600 + 2
    assert all(int(e.fields.get("a.n:i", 1)) <= 600 // 30 + 1 for e in samples)


def test_a_line_still_being_written_is_read_whole_at_the_next_step(tmp_path):
    """The sampler may read the journal while another hook's line is half written."""
    journal, config = tmp_path / "j.gtj", tmp_path / "glidein_config"
    journal.write_text("")
    config.write_text("")
    line = format_line(5.0, "start", "job/1.0", {"@parent": "condor"})
    script = DRIVER.split("while IFS")[0] + f'''
printf %s ${line[:20]!r} >> "$GT_JOURNAL"; gt_fold_boundary && echo early
printf '%s\\n' ${line[20:]!r} >> "$GT_JOURNAL"; gt_fold_boundary && echo whole
gt_fold_boundary || echo once
'''
    env = {"HOOKS": str(HOOKS), "GT_JOURNAL": str(journal), "GT_CONFIG": str(config), "MARK": MARK,
           "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", script], text=True, env=env, capture_output=True, timeout=30)
    assert out.stdout.split() == ["whole", "once"]
