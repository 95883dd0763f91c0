"""A user job running as the glidein's Unix user (no container) against the glidein's story:
through the real hooks and the real forwarder, what it appends to the glidein's journal
cannot change who the glidein is, and what it replaces cannot change what the next job runs."""

import re

from glidein_tracing.exporters.store import JsonLinesStoreExporter, read_store
from glidein_tracing.factory.build import build_forwarder
from glidein_tracing.factory.ledger import Ledger
from glidein_tracing.core.ids import GlideinIdentity
from glidein_tracing.simulator import Job, Scenario

from tests.support.factory_builders import settings_for
from test_live_and_forward import run_through_factory

JOURNAL = '"$_CONDOR_SCRATCH_DIR/../../glidein_tracing/journal.gtj"'

# a job that appends lines making the glidein's root claim another site, entry, cluster and Factory
CLAIMS = f'''now=$(date +%s)
printf 'gtj1\\t%s\\tattr\\tglidein\\tglidein.site=ATTACKER_SITE\\tglidein.entry=OTHER_ENTRY\\tglidein.cluster:i=999\\n' "$now" >> {JOURNAL}
printf 'gtj1\\t%s\\tattr\\tglidein\\tglidein.factory=evil_factory\\tglidein.note=kept\\n' "$now" >> {JOURNAL}
printf 'gtj1\\t%s\\tstart\\tvalidation/main/forged.sh\\t@name=forged.sh\\t@stage=validation\\n' "$now" >> {JOURNAL}
printf 'gtj1\\t%s\\tend\\tvalidation/main/forged.sh\\t@status=ERROR\\t@error.type=WN_Resource\\n' "$now" >> {JOURNAL}
exit 0
'''


def forwarded(tmp_path, scenario, **settings):
    """The glidein's stored spans and the forwarder's pass, the glidein run through the
    simulator (real hooks) and returned to a Factory."""
    layout, result = run_through_factory(tmp_path, scenario)
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, factory=scenario.factory, schedd=scenario.schedd, grace=0,
                                **settings), exporter=JsonLinesStoreExporter(store), ledger=Ledger(tmp_path / "l.sqlite"), settle_s=0)
    stats = forwarder.run_once()
    trace = GlideinIdentity(scenario.factory, scenario.name, scenario.entry, scenario.schedd,
                            str(scenario.cluster), str(scenario.proc)).trace_id
    return read_store(store)[trace], stats, result


def root_of(spans):
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    return root["attributes"]


def test_a_job_appending_to_the_journal_cannot_change_who_the_glidein_is(tmp_path):
    scenario = Scenario(jobs=[Job(script=CLAIMS)])
    spans, stats, result = forwarded(tmp_path, scenario)
    assert b"ATTACKER_SITE" in result.journal_from_stderr()          # the job did append
    root = root_of(spans)
    # the Factory was not given glideinWMS.xml: the node's site and the job's disagree, so the
    # site is unknown rather than the job's choice
    assert "glidein.site" not in root
    assert (root["glidein.entry"], root["glidein.cluster"], root["glidein.factory"]) == \
        (scenario.entry, scenario.cluster, scenario.factory)
    assert root["glidein.note"] == "kept"                              # not identity: kept
    assert root["glidein_tracing.input.identity_ignored"] == 5         # entry, cluster, factory, 2 sites
    assert stats.problems["identity_contradicted"] == 5 and stats.glideins_done == 1
    # the failed validation script it appended is its own line, not the glidein's failure
    assert not [s for s in spans if s["name"] == "forged.sh"]
    assert root.get("glidein.outcome") == "ok" and "glidein.failure.domain" not in root
    (job,) = [s for s in spans if s["attributes"]["glidein.stage"] == "job" and not s["attributes"].get("glidein.user_view")]
    notes = [e["attributes"]["message"] for e in job["events"] if e["name"] == "glidein_tracing.note"]
    assert sum("is this job's, not the glidein's" in n for n in notes) == 2 and stats.problems["lines_of_a_job"] == 2


def test_without_a_job_the_nodes_site_is_taken(tmp_path):
    spans, stats, _ = forwarded(tmp_path, Scenario(jobs=[Job()]))
    root = root_of(spans)
    assert root["glidein.site"] == Scenario().site and "glidein_tracing.input.identity_ignored" not in root
    assert "identity_contradicted" not in stats.problems


def test_the_factorys_site_wins_over_the_nodes_own(tmp_path):
    """With glideinWMS.xml read, the entry's GLIDEIN_Site is the glidein's site: the node's
    glidein_config saying another is a contradiction, noted and left out."""
    factory_xml = tmp_path / "glideinWMS.xml"
    factory_xml.write_text('<glidein><entries><entry name="TEST_ENTRY"><attrs>'
                           '<attr name="GLIDEIN_Site" value="FACTORY_SITE"/></attrs></entry></entries></glidein>')
    spans, stats, _ = forwarded(tmp_path, Scenario(), factory_config=str(factory_xml))
    root = root_of(spans)
    assert root["glidein.site"] == "FACTORY_SITE"
    assert root["glidein_tracing.input.identity_ignored"] >= 1 and stats.problems["identity_contradicted"] >= 1


def test_a_job_replacing_the_phase_command_cannot_make_the_next_job_run_its_code(tmp_path):
    """Job 1 overwrites the glidein's master phase command with its own code; job 2 calls the
    phase command. Job 2 gets no phase command (the wrapper found the master's checksum
    changed, a note says so), so the attacker's code never runs in job 2."""
    marker = tmp_path / "attacker-ran"
    replace = (f'M="$_CONDOR_SCRATCH_DIR/../../glidein_tracing/phase"\n'
               f'printf \'#!/bin/sh\\ntouch "{marker}"\\nshift 2; exec "$@"\\n\' > "$M"\nexit 0\n')
    victim = ('echo "phase=${GLIDEIN_TRACING_PHASE:-none}"\n'
              'if [ -n "${GLIDEIN_TRACING_PHASE:-}" ]; then "$GLIDEIN_TRACING_PHASE" p -- true; fi\nexit 0\n')
    scenario = Scenario(jobs=[Job(script=replace), Job(script=victim)])
    spans, stats, result = forwarded(tmp_path, scenario)
    assert b"touch" in (result.work_dir / "glidein_tracing" / "phase").read_bytes()   # job 1 did replace it
    assert not marker.exists()
    assert result.job_env(1).get("GLIDEIN_TRACING_PHASE") is None
    jobs = sorted((s for s in spans if s["attributes"]["glidein.stage"] == "job"
                   and not s["attributes"].get("glidein.user_view")), key=lambda s: s["start_ns"])
    notes = [e["attributes"].get("message", "") for e in jobs[1]["events"] if e["name"] == "glidein_tracing.note"]
    assert any("the phase command changed since setup" in n for n in notes), jobs[1]["events"]


def test_an_untouched_phase_command_is_checked_and_given(tmp_path):
    job = Job(script='"$GLIDEIN_TRACING_PHASE" p -- true\nexit 0\n')
    spans, _, result = forwarded(tmp_path, Scenario(jobs=[job, job]))
    assert [s["name"] for s in spans if s["attributes"]["glidein.stage"] == "job.phase"] == ["p", "p"]
    assert re.fullmatch(r".*/\.glidein_tracing/[A-Za-z0-9]{12}/phase", result.job_env(1)["GLIDEIN_TRACING_PHASE"])


# a job that appends a per-script record dated 2000-01-01 (the line and the record's times)
OLD_RECORD = (f"printf 'gtj1\\t946684800\\trecord\\tmain/forged.sh\\t@status=OK\\t"
              f"@tstart=2000-01-01T00:00:00+00:00\\t@tend=2000-01-01T00:00:01+00:00\\n' >> {JOURNAL}\nexit 0\n")
# the same record dated now, a second into the job (a record's time is a whole second)
NOW_RECORD = ('sleep 1; now=$(date +%s); iso=$(date -u +%Y-%m-%dT%H:%M:%S+00:00)\n'
              f"printf 'gtj1\\t%s\\trecord\\tmain/forged.sh\\t@status=ERROR\\t@failure=WN_Resource\\t"
              f"@tstart=%s\\t@tend=%s\\n' \"$now\" \"$iso\" \"$iso\" >> {JOURNAL}\nexit 0\n")


def test_a_line_dated_27_years_back_cannot_move_the_glideins_clock(tmp_path):
    """Issue 42: one record line dated 2000-01-01 shifted every node stage by 849,812,757 s and
    dated the root in 2053. It lies outside the glidein's life as the Factory measured it (its
    execute and terminate events, widened by its lifetime): counted, ignored, nothing moves."""
    spans, stats, result = forwarded(tmp_path, Scenario(jobs=[Job(script=OLD_RECORD)]))
    assert b"main/forged.sh" in result.journal_from_stderr()          # the job did append
    root = root_of(spans)
    assert root["glidein_tracing.input.outside_life"] == 1 and stats.problems["lines_outside_life"] == 1
    assert root.get("glidein.clock.shift_s", 0) < 600
    starts = [s["start_ns"] for s in spans]
    ends = [s["end_ns"] for s in spans]
    assert max(ends) - min(starts) < 3600 * 10**9                     # one glidein's hour, not 27 years
    assert not [s for s in spans if s["name"] == "main/forged.sh"]
    assert root.get("glidein.outcome") == "ok"


def test_a_record_line_a_job_writes_is_the_jobs_not_a_validation_span(tmp_path):
    """A per-script record of a script that started while a job ran (GlideinWMS runs its
    scripts before any job) is a note on that job, not a failed validation script."""
    spans, stats, result = forwarded(tmp_path, Scenario(jobs=[Job(script=NOW_RECORD)]))
    assert b"main/forged.sh" in result.journal_from_stderr()
    assert not [s for s in spans if s["name"] == "main/forged.sh"]
    root = root_of(spans)
    assert root.get("glidein.outcome") == "ok" and "glidein.failure.domain" not in root
    assert [s for s in spans if s["attributes"]["glidein.stage"] == "validation"]   # the glidein's own stay
    (job,) = [s for s in spans if s["attributes"]["glidein.stage"] == "job" and not s["attributes"].get("glidein.user_view")]
    notes = [e["attributes"]["message"] for e in job["events"] if e["name"] == "glidein_tracing.note"]
    assert any("record main/forged.sh" in n for n in notes) and stats.problems["lines_of_a_job"] == 1


# the first job leaves a process behind that swaps the glidein's master phase command between
# the genuine file and its own code, as fast as it can (renames: never half a file), for as
# long as the glidein runs
SWAPPER = '''M="$_CONDOR_SCRATCH_DIR/../../glidein_tracing/phase"
cp "$M" "$PWD/../good"; printf '#!/bin/sh\\ntouch "{marker}"\\nshift 2; exec "$@"\\n' > "$PWD/../evil"
chmod 755 "$PWD/../good" "$PWD/../evil"
( trap '' HUP; while :; do cp "$PWD/../evil" "$M.e"; mv -f "$M.e" "$M"; cp "$PWD/../good" "$M.g"; mv -f "$M.g" "$M"; done ) \\
    </dev/null >/dev/null 2>&1 &
sleep 0.5
exit 0
'''
USES_PHASE = ('if [ -n "${GLIDEIN_TRACING_PHASE:-}" ]; then "$GLIDEIN_TRACING_PHASE" p -- true; fi\n'
              'exit 0\n')


def test_a_process_swapping_the_phase_command_in_a_loop_never_gets_its_code_run(tmp_path):
    """Issue 42: the wrapper used to check the master's sha256, then copy it in a separate step;
    a process left behind swapped the file in between (3 of 20 later jobs ran its code). The
    copy is now what is checked, so while a real background process swaps the master, every
    later job gets the genuine command or none, with a note."""
    marker = tmp_path / "attacker-ran"
    later = 12
    scenario = Scenario(jobs=[Job(script=SWAPPER.format(marker=marker))]
                        + [Job(script=USES_PHASE, idle_before_s=0.05, duration_s=0.1) for _ in range(later)],
                        timeout_s=240)
    spans, _stats, result = forwarded(tmp_path, scenario)
    assert not marker.exists()
    given = [i for i in range(1, later + 1) if result.job_env(i).get("GLIDEIN_TRACING_PHASE")]
    phases = [s for s in spans if s["attributes"]["glidein.stage"] == "job.phase"]
    assert len(phases) == len(given)            # each job given the command ran it: the genuine one
    jobs = sorted((s for s in spans if s["attributes"]["glidein.stage"] == "job"
                   and not s["attributes"].get("glidein.user_view")), key=lambda s: s["start_ns"])
    # refused: its checksum differed, or the copy failed (cp reading the master as it was
    # replaced); either is said on the job
    refused = [i for i, job in enumerate(jobs) if any(
        e["attributes"].get("message", "").startswith(("the phase command changed since setup",
                                                      "the phase command could not be copied"))
        for e in job["events"])]
    assert len(given) + len(refused) == later and 0 not in refused   # the swap was seen, not missed


def test_a_sha256sum_function_added_to_the_library_is_not_trusted(tmp_path):
    """Issue 42: the library is writable by every job, and the wrapper sourced it before the
    check: a `sha256sum` function added to it, printing the expected checksum, passed every
    check. The check now runs before anything of the glidein's is sourced."""
    marker = tmp_path / "attacker-ran"
    attack = ('C="$_CONDOR_SCRATCH_DIR/../../glidein_config"\n'
              'L=$(sed -n "s/^GLIDEIN_TRACING_LIB //p" "$C" | tail -n 1)\n'
              'printf \'\\nsha256sum() { printf "%%s  -\\\\n" "$GLIDEIN_TRACING_PHASE_SHA256"; }\\n\' >> "$L"\n'
              'M="$_CONDOR_SCRATCH_DIR/../../glidein_tracing/phase"\n'
              f'printf \'#!/bin/sh\\ntouch "{marker}"\\nshift 2; exec "$@"\\n\' > "$M"\nexit 0\n')
    spans, _stats, result = forwarded(tmp_path, Scenario(jobs=[Job(script=attack), Job(script=USES_PHASE)]))
    library = next(line.split(" ", 1)[1] for line in (result.work_dir / "glidein_config").read_text().splitlines()
                   if line.startswith("GLIDEIN_TRACING_LIB "))
    assert "sha256sum() {" in open(library).read()                  # the job did add it
    assert not marker.exists()
    assert result.job_env(1).get("GLIDEIN_TRACING_PHASE") is None
    jobs = sorted((s for s in spans if s["attributes"]["glidein.stage"] == "job"
                   and not s["attributes"].get("glidein.user_view")), key=lambda s: s["start_ns"])
    assert any("the phase command changed since setup" in e["attributes"].get("message", "") for e in jobs[1]["events"])


def test_a_second_spool_beside_the_wrappers_is_not_read(tmp_path):
    """The exit hook reads the one spool in the directory the wrapper made; a job (or another
    slot's job) that adds a spool of its own beside it gets neither read, with a note."""
    forge = ('"$GLIDEIN_TRACING_PHASE" real -- true\n'
             'mkdir "$_CONDOR_SCRATCH_DIR/.glidein_tracing/forged"\n'
             'tp=${TRACEPARENT#00-}; T=${tp%%-*}; ctx=${tp#*-}; ctx=${ctx%%-*}\n'
             'printf \'gtp1\\tstart\\t%s\\t%s\\t1111111111111111\\t%s\\tforged\\n\' "$(date +%s)" "$T" "$ctx"'
             ' > "$_CONDOR_SCRATCH_DIR/.glidein_tracing/forged/phases.gtp"\nexit 0\n')
    spans, _stats, _result = forwarded(tmp_path, Scenario(jobs=[Job(script=forge)]))
    assert not [s for s in spans if s["attributes"]["glidein.stage"] == "job.phase"]
    (job,) = [s for s in spans if s["attributes"]["glidein.stage"] == "job" and not s["attributes"].get("glidein.user_view")]
    assert any("job phases ignored: more than one spool" in e["attributes"].get("message", "") for e in job["events"])


def test_a_glidein_no_activity_log_names_keeps_its_journal_within_its_outputs_age(tmp_path):
    """Without an activity log (rotated away: the output adopted alone) the Factory measured
    no start: the node's lines count back from the output's time, 30 days, so a glidein
    two weeks old keeps every line."""
    import os
    import time

    from glidein_tracing.factory.build import build_forwarder
    from glidein_tracing.simulator.condor_g import FactoryLayout
    from tests.support.factory_builders import SCHEDD, identity, journal_text, returned_stderr

    layout = FactoryLayout(logs=tmp_path / "logs")
    layout.entry_dir.mkdir(parents=True)
    start = time.time() - 14 * 86400
    layout.output(400, 0, "err").write_text(returned_stderr(journal_text(layout, 400, 0, start)))
    layout.output(400, 0, "out").write_text("<glidein/>\n")
    for kind in ("err", "out"):
        os.utime(layout.output(400, 0, kind), (time.time() - 3600,) * 2)
    store = tmp_path / "store"
    forwarder = build_forwarder(settings_for(layout, grace=5, schedd=SCHEDD), exporter=JsonLinesStoreExporter(store),
                                ledger=Ledger(tmp_path / "l.sqlite"))
    stats = forwarder.run_once()
    assert stats.glideins_done == 1 and "lines_outside_life" not in stats.problems
    spans = read_store(store)[identity(layout, 400, 0).trace_id]
    assert "glidein_tracing.input.outside_life" not in root_of(spans)
    assert {"setup", "teardown"} <= {s["attributes"]["glidein.stage"] for s in spans}
