"""Failure rules: the example rules decide realistic failures, bad rules are named with their
line, a hostile pattern or log never stalls anything, a bad file keeps the last good rules,
and a VO's classifier package is found by its entry point."""

import base64
import logging
import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from glidein_tracing.core import ids
from glidein_tracing.cli.main import main as cli_main
from glidein_tracing.core.converter import convert
from glidein_tracing.failure_rules.downtimes import Downtime, Downtimes
from glidein_tracing.failure_rules.attribution import FailureAttribution
from glidein_tracing.failure_rules.rules import Facts, RuleSet
from glidein_tracing.core.journal import format_line, parse_lines
from glidein_tracing.failure_rules.classifiers import Classifiers
from glidein_tracing.failure_rules.files import RuleBook, check, parse_file

from tests.support.journal_builders import root_lines
from tests.support.table_helpers import glidein_rows

EXAMPLES = Path(__file__).resolve().parents[1] / "glidein_tracing" / "failure_rules" / "examples"
TRACE = ids.GlideinIdentity("gwms_test_factory", "gwms_test_instance", "TEST_ENTRY",
                            "schedd_glideins2@localhost", "1234", "0").trace_id


@pytest.fixture(scope="module")
def examples():
    rules = [r for path in sorted(EXAMPLES.glob("*.yaml")) for r in parse_file(path)[0]]
    return RuleSet(rules)


def job(log_tail="", **kw):
    return Facts(kind="job", domain=kw.pop("domain", "user_code"), error_type=kw.pop("error_type", "job.exit_code"),
                 log_tail=log_tail, **kw)


# job and glidein log tails as CVMFS, XRootD, gfal, Frontier, HTCondor and the kernel print them
REALISTIC = [
    ("CernVM-FS: running with credentials 990:990\nCernVM-FS: loading Fuse module... "
     "Failed to initialize root file catalog (16 - file catalog failure)\n", "cvmfs-repository-unavailable", "cvmfs"),
    ("Probing /cvmfs/oasis.opensciencegrid.org... Failed!\n", "cvmfs-repository-unavailable", "cvmfs"),
    ("+ source /cvmfs/cms.cern.ch/cmsset_default.sh\n"
     "bash: /cvmfs/cms.cern.ch/cmsset_default.sh: No such file or directory\n", "cvmfs-file-missing", "cvmfs"),
    ("ls: cannot access '/cvmfs/dune.opensciencegrid.org/products/setup': No such file or directory\n",
     "cvmfs-file-missing", "cvmfs"),
    ("[0B/0B][100%][==================================================][0B/s]\n"
     "Run: [ERROR] Server responded with an error: [3011] No servers are available to read the file.\n",
     "xrootd-no-servers", "xrootd"),
    ("[2026-07-22 06:51:15.046797 +0000][Error  ][File              ] [0x918b4c00@root://eos.example.org:1094//"
     "store/data/x.root] Fatal file state error. Message kXR_read (handle: 0x00000000, offset: 0, size: 16777216) "
     "returned with [ERROR] Operation expired\n", "xrootd-operation-expired", "xrootd"),
    ("Error in <TNetXNGFile::Open>: [ERROR] Server responded with an error: [3010] Permission denied\n",
     "xrootd-server-error", "xrootd"),
    ("gfal-copy error: 70 (Communication error on send) - globus_ftp_client: the server responded with an error\n"
     "Stage-out failed for /store/user/someone/out.root\n", "stage-out-failed", "storage"),
    ("%MSG-s FrontierConnectionManager: frontier.c:1024: Request 42 on chan 1 failed at Wed Jul 22 2026: "
     "-6 [fn-socket.c:87]: network error on connect to 10.0.0.1: Connection refused\n", "frontier-squid", "frontier"),
]


@pytest.mark.parametrize("text, rule, service", REALISTIC)
def test_the_example_rules_name_service_failures_from_realistic_logs(examples, text, rule, service):
    decision = examples.classify(job(text))
    assert (decision.rule, decision.domain, decision.service) == (rule, "service", service)
    assert decision.label


@pytest.mark.parametrize("facts, rule, domain", [
    (job("Error: SciToken validation failed: token has expired\n"), "token-expired", "credentials"),
    (job("ERROR: VOMS proxy has expired, renew it with voms-proxy-init\n"), "proxy-expired", "credentials"),
    (job("OSError: [Errno 28] No space left on device: '/srv/out.root'\n"), "disk-full", "site"),
    (job("", error_type="job.hold", hold_reason="Job has gone over cgroup memory limit of 2048 megabytes. "
         "Last measured usage: 2110 megabytes.  Consider resubmitting with a higher request_memory.",
         hold_reason_code=34), "oom-hold", "user_code"),
    (job("[ 4242.1] Out of memory: Killed process 12345 (cmsRun) total-vm:9000000kB\n"), "oom-kill", "user_code"),
    (job("", hold_reason="Transfer output files failure at execution point slot1_1@wn.example.org using "
         "protocol https. Error: HTTP response 503", hold_reason_code=13), "htcondor-output-transfer", "service"),
])
def test_the_example_rules_on_credentials_disk_memory_and_transfers(examples, facts, rule, domain):
    decision = examples.classify(facts)
    assert (decision.rule, decision.domain) == (rule, domain)


def test_a_plain_code_bug_is_left_to_the_built_in_domain(examples):
    tail = ('Traceback (most recent call last):\n  File "analysis.py", line 12, in <module>\n'
            "    ratio = passed / total\nZeroDivisionError: division by zero\n")
    assert examples.classify(job(tail)) is None
    assert examples.classify(job("Segmentation fault (core dumped)\n", exit_code=139)) is None


def test_a_rules_file_of_another_client_does_not_apply(examples):
    demo = Facts(kind="job", domain="user_code", exit_code=66, client="vofrontend_service.main")
    assert examples.classify(demo).rule == "demo-cvmfs-input-missing"
    assert examples.classify(demo._replace(client="other_frontend.group")) is None
    assert examples.classify(demo._replace(kind="glidein")) is None          # applies_to: job


BAD = textwrap.dedent("""\
    rules:
      - name: lookahead
        match: {log_tail: 'cvmfs(?=/x)'}
        domain: service
        service: cvmfs
        label: uses a lookahead
      - name: no-service
        match: {message: 'frontier'}
        domain: service
        label: forgot the service
      - name: good
        match: {exit_code: [1]}
        domain: user_code
        label: fine
      - name: good
        match: {exit_code: [2]}
        domain: nonsense
        label: twice, and a bad domain
        colour: blue
""")


def test_check_names_each_bad_rule_with_its_line(tmp_path, capsys):
    path = tmp_path / "vo.yaml"
    path.write_text(BAD)
    count, problems = check(path)
    assert count == 1
    text = "\n".join(problems)
    assert f"{path}:2: rule lookahead: match.log_tail (line 3): not a pattern the non-backtracking engine" in text
    assert f"{path}:7: rule no-service: service: missing" in text
    assert f"{path}:15: rule good: domain: one of" in text
    assert f"{path}:15: rule good: unknown key 'colour'" in text
    assert f"{path}:15: rule good: name used twice" in text
    assert cli_main(["rules", "--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:7: rule no-service" in out and "1 good rule(s) in force, 5 problem(s)" in out
    assert cli_main(["rules", "--check", str(EXAMPLES)]) == 0


def test_not_yaml_is_named_with_its_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("rules:\n  - name: a\n    match: {log_tail: 'x'\n")
    (problem,) = check(path)[1]
    assert problem.startswith(f"{path}:") and "not valid YAML" in problem


def _in_thread(function, timeout_s=120):
    """Run ``function``; fail (not hang) if it does not return: a stall is what we test."""
    result = []
    worker = threading.Thread(target=lambda: result.append(function()), daemon=True)
    worker.start()
    worker.join(timeout_s)
    assert not worker.is_alive(), "matching stalled"
    return result[0]


def test_a_catastrophic_pattern_and_a_10_mb_single_line_tail_do_not_stall(tmp_path):
    path = tmp_path / "hostile.yaml"
    path.write_text(textwrap.dedent("""\
        rules:
          - name: catastrophic
            match: {log_tail: '^(a+)+$'}
            domain: site
            label: backtracking engines never return on this
          - name: nested
            match: {log_tail: '(x+x+)+y'}
            domain: site
            label: nor on this
          - name: at-the-end
            match: {log_tail: 'No space left on device$'}
            domain: site
            label: found at the very end
        """))
    rules, problems = parse_file(path)
    assert not problems
    ruleset = RuleSet(rules)
    line = "a" * (10 * 1024 * 1024) + "!"                 # one 10 MB line, no newline
    assert _in_thread(lambda: ruleset.classify(job(line))) is None
    xs = "x" * (10 * 1024 * 1024)
    assert _in_thread(lambda: ruleset.classify(job(xs))) is None
    assert _in_thread(lambda: ruleset.classify(job(xs + " No space left on device"))).rule == "at-the-end"


def test_a_bad_file_keeps_the_last_good_rules_and_says_so_once(tmp_path, caplog):
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    vo = rules_dir / "vo.yaml"
    vo.write_text("rules:\n  - name: one\n    match: {exit_code: [1]}\n    domain: site\n    label: first\n")
    (rules_dir / "other.yaml").write_text(
        "rules:\n  - name: two\n    match: {exit_code: [2]}\n    domain: grid\n    label: second\n")
    book = RuleBook(rules_dir, classifiers=False, reload_s=0.0)
    assert book.current().classify(job(exit_code=1)).rule == "one"
    vo.write_text("rules:\n  - name: one\n    match: {exit_code: [1]\n")    # broken mid-edit
    with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
        for _ in range(3):
            ruleset = book.current()
            assert ruleset.classify(job(exit_code=1)).rule == "one"     # the last good rules
            assert ruleset.classify(job(exit_code=2)).rule == "two"     # the other file is unharmed
    said = [r.getMessage() for r in caplog.records if "vo.yaml" in r.getMessage()]
    assert len(said) == 1 and "keeping its last good rules (1)" in said[0]
    vo.write_text("rules:\n  - name: one-fixed\n    match: {exit_code: [1]}\n    domain: site\n    label: fixed\n"
                  "    advice: rerun\n")
    assert book.current().classify(job(exit_code=1)).rule == "one-fixed"


def test_a_rules_file_bad_from_the_start_or_missing_gives_no_rules_and_stops_nothing(tmp_path, caplog):
    bad = tmp_path / "vo.yaml"
    bad.write_text("rules:\n  - name: x\n    match: {log_tail: '(?<=a)b'}\n    domain: site\n    label: x\n")
    with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
        assert len(RuleBook(bad, classifiers=False).current()) == 0
        assert len(RuleBook(tmp_path / "nowhere", classifiers=False).current()) == 0
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "keeping its last good rules (0)" in text and "no such file or directory" in text


CLASSIFIER = textwrap.dedent('''\
    """A VO's failure classifier, shipped as a package: every way a VO's code goes wrong."""
    import os
    import sys
    import time


    class Unreadable:
        def get(self, key):
            raise ValueError("an answer that raises when read")


    def classify(facts):
        text = facts.log_tail + facts.hold_reason
        if facts.kind == "job" and "SAM project" in facts.log_tail:
            return {"domain": "service", "service": "samweb", "label": "SAM project unavailable",
                    "rule": "sam-down"}
        if "liar" in text:
            return {"domain": "everything", "label": "a bad answer"}
        if "boom" in text:
            raise RuntimeError("the VO's bug")
        if "exit" in text:
            sys.exit(3)
        if "hang" in text:
            time.sleep(3600)
        if "unreadable" in text:
            return Unreadable()
        if "die" in text:
            os._exit(1)
        if "slow" in text:
            time.sleep(0.5)
            return None
        if "escape" in text:             # a screen clear on its stdout and stderr, an ESC in its answer
            print("\\x1b[2J\\x1b]0;owned\\x07", flush=True)
            os.write(1, b"\\x1b[2J"); os.write(2, b"\\x1b[2J")
            return {"domain": "service", "service": "sam\\x1b[31mweb", "label": "bad\\x1b[2J\\rlabel\\x9b1m",
                    "rule": "esc"}
        if "fork" in text:               # a child that outlives the answer
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "300", facts.message])
            return None
        if "signal" in text:             # its parent, and the pid it was told is the forwarder's
            tried = []
            for pid in (int(facts.message), os.getppid()):
                try:
                    os.kill(pid, 9)
                    tried.append(f"{pid} signalled")
                except OSError as exc:
                    tried.append(f"{pid} {type(exc).__name__}")
            return {"domain": "service", "service": "x", "label": ", ".join(tried), "rule": "signal"}
        if "garbled" in text:            # its own bytes on the worker's pipe: 50,000 nested lists
            from multiprocessing.connection import Connection
            Connection(int(sys.argv[1])).send_bytes(b"[" * 50000)
            return None
        return None
    ''')


@pytest.fixture
def installed_classifier(tmp_path, monkeypatch):
    """A tiny VO package with its dist-info, as pip installs one, on sys.path."""
    site = tmp_path / "site"
    (site / "vo_classifier").mkdir(parents=True)
    (site / "vo_classifier" / "__init__.py").write_text(CLASSIFIER)
    (site / "vo_exits_on_import.py").write_text("import sys\nsys.exit('no config')\n")
    info = site / "vo_classifier-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vo-classifier\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[glidein_tracing.failure_classifiers]\nexamplevo = vo_classifier:classify\n"
        "broken = vo_classifier_missing:classify\nexits = vo_exits_on_import:classify\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("vo_classifier", None)


def test_a_vo_classifier_package_is_found_by_its_entry_point(installed_classifier, caplog):
    classifiers = Classifiers(time_limit_s=1.0)
    assert classifiers.names == ["broken", "examplevo", "exits"]
    ruleset = RuleSet((), classifiers)
    try:
        classifiers.new_pass()
        with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
            decision = ruleset.classify(job("ERROR: SAM project demo_project_42 is not running\n"))
        assert (decision.rule, decision.domain, decision.service) == ("examplevo:sam-down", "service", "samweb")
        said = [r.getMessage() for r in caplog.records]
        assert any("broken does not load: ModuleNotFoundError" in m for m in said)
        assert any("exits does not load: SystemExit: no config" in m for m in said)   # exiting at import
        assert classifiers.disabled == 0                   # not loading is not a failure of this pass
    finally:
        classifiers.close()


@pytest.mark.parametrize("tail, why", [
    ("liar", "answered badly (domain: one of"), ("boom", "raised RuntimeError: the VO's bug"),
    ("exit", "raised SystemExit: 3"), ("hang", "gave no answer within 1 s"),
    ("unreadable", "raised ValueError: an answer that raises when read"), ("die", "ended its process"),
    ("garbled", "answered something that is not an answer")])
def test_a_failing_or_slow_classifier_is_disabled_for_the_pass_with_one_message(installed_classifier, caplog,
                                                                                tail, why):
    """Each way a VO's classifier fails: the answer is none, the classifier is off until the
    next pass (asked no more), one message says why, the pass counts it; the next pass asks
    it again and a good answer still comes through."""
    classifiers = Classifiers(["examplevo"], time_limit_s=1.0)
    ruleset = RuleSet((), classifiers)
    try:
        classifiers.new_pass()
        with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
            assert ruleset.classify(job(tail)) is None
            assert ruleset.classify(job(tail)) is None                         # not asked again
            assert ruleset.classify(job("SAM project x is not running")) is None   # off for the pass
        messages = [r.getMessage() for r in caplog.records if "examplevo" in r.getMessage()]
        assert len(messages) == 1 and why in messages[0] and "disabled for this pass" in messages[0]
        assert classifiers.disabled == 1
        classifiers.new_pass()
        assert classifiers.disabled == 0
        assert ruleset.classify(job("SAM project x is not running")).rule == "examplevo:sam-down"
    finally:
        classifiers.close()


def test_the_forwarder_keeps_forwarding_past_a_classifier_that_exits_or_hangs(installed_classifier, tmp_path,
                                                                            caplog):
    """Through the real forwarder: a glidein whose failure makes the VO's classifier call
    sys.exit, then one that makes it hang; both glideins are forwarded in the pass, the pass
    counts the disabled classifier once, and the next pass is not stopped either."""
    from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
    from tests.support.factory_builders import SCHEDD, T0
    from test_forwarder import make_forwarder

    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    for proc, reason in enumerate(("exit now", "hang here")):
        log.submit(300, proc, when=T0 - 120)
        log.held(300, proc, reason, code=2, when=T0 - 100)
        log.aborted(300, proc, when=T0 - 10)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: []\n")
    book = RuleBook(rules)                       # with every installed classifier, as the forwarder's
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               entry_schedds={layout.entry: SCHEDD},
                               failure_attribution=FailureAttribution(book))
    try:
        with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
            stats = forwarder.run_once()
        assert stats.glideins_done == 2 and stats.export_failures == 0
        assert stats.problems.get("classifier_disabled") == 1
        assert sum("examplevo raised SystemExit: 3" in r.getMessage() for r in caplog.records) == 1
        assert "classifier_disabled=1" in stats.summary()
        assert forwarder.run_once().problems.get("classifier_disabled") is None   # nothing left to classify
    finally:
        book.classifiers.close()


def _tail_lines(key: str, t: float, text: str):
    data = base64.b64encode(text.encode()).decode()
    return [format_line(t, "note", key, {"@log.source": f"logs/{key}.err", "@log.part": "0", "@log.parts": "1",
                                         "@log.data": data})]


def test_the_forwarders_step_re_decides_a_glidein_by_its_log_tail_and_marks_its_sites_downtime():
    lines = root_lines(1000.0, TRACE, **{"glidein.site": "Example_T2"}) + [
        format_line(1002, "start", "validation/main/check_cvmfs.sh", {"@stage": "validation",
                                                                      "@name": "main/check_cvmfs.sh"}),
        format_line(1004, "end", "validation/main/check_cvmfs.sh",
                    {"@status": "ERROR", "@failure": "VO_Config", "@detail": "repository check failed"}),
        *_tail_lines("validation/main/check_cvmfs.sh", 1004,
                     "CernVM-FS: loading Fuse module... Failed to initialize root file catalog "
                     "(16 - file catalog failure)\n"),
        format_line(1005, "end", "glidein", {"glidein.outcome": "validation_failed"})]
    events, report = parse_lines("".join(lines).encode())
    spans = convert(events, report)
    examples = RuleSet([r for p in sorted(EXAMPLES.glob("*.yaml")) for r in parse_file(p)[0]])
    downtime = Downtime("osg:1", ("example_t2",), 900.0, 2000.0, "CVMFS upgrade", True)
    out = FailureAttribution(examples, Downtimes([downtime])).apply(spans)
    root = next(s for s in out if s.attributes.get("glidein.stage") == "glidein")
    assert root.attributes["glidein.failure.domain"] == "service"
    assert root.attributes["glidein.failure.service"] == "cvmfs"
    assert root.attributes["glidein.failure.rule"] == "cvmfs-repository-unavailable"
    assert root.attributes["glidein.failure.downtime"] == "osg:1 (scheduled): CVMFS upgrade"
    assert root.context == next(s for s in spans if s.attributes.get("glidein.stage") == "glidein").context
    untouched = [s for s in out if s.attributes.get("glidein.stage") != "glidein"]
    assert all(a is b for a, b in zip(untouched, [s for s in spans if s.attributes.get("glidein.stage") != "glidein"]))
    # outside the downtime: the rule still decides, no downtime is claimed
    later = FailureAttribution(examples, Downtimes([downtime._replace(start=1500.0)]))
    root = next(s for s in later.apply(spans) if s.attributes.get("glidein.stage") == "glidein")
    assert "glidein.failure.downtime" not in root.attributes and root.attributes["glidein.failure.rule"]
    # the glidein table carries the decision (the analysis reads it from there)
    row, _ = glidein_rows(out)
    assert (row["failure_domain"], row["failure_service"], row["failure_rule"]) == \
        ("service", "cvmfs", "cvmfs-repository-unavailable")
    assert row["failure_downtime"] == "osg:1 (scheduled): CVMFS upgrade" and row["failure_label"]


def test_the_forwarders_step_re_decides_a_held_job_and_leaves_its_glidein_alone():
    lines = root_lines(1000.0, TRACE) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"}),
        format_line(1025, "end", "job/s#1.0#9", {
            "@status": "ERROR", "@error.type": "job.hold", "@error.detail": "job ended by hold",
            "job.exit_by": "hold", "job.hold_reason_code:i": "34",
            "job.hold_reason": "Job has gone over cgroup memory limit of 2048 megabytes. Last measured usage: "
                               "2300 megabytes.  Consider resubmitting with a higher request_memory."}),
        format_line(1050, "end", "condor", {}),
        format_line(1052, "end", "glidein", {"glidein.outcome": "ok"})]
    events, report = parse_lines("".join(lines).encode())
    spans = convert(events, report)
    examples = RuleSet([r for p in sorted(EXAMPLES.glob("*.yaml")) for r in parse_file(p)[0]])
    out = FailureAttribution(examples).apply(spans)
    (job_span,) = [s for s in out if s.attributes.get("glidein.stage") == "job"]
    assert job_span.attributes["job.failure.rule"] == "oom-hold"
    assert job_span.attributes["job.failure.label"] == "job used more memory than requested (OOM)"
    assert job_span.attributes["job.failure.advice"] == "resubmit with a higher request_memory"
    assert "job.failure.service" not in job_span.attributes
    root = next(s for s in out if s.attributes.get("glidein.stage") == "glidein")
    assert "glidein.failure.domain" not in root.attributes
    _, (job_row,) = glidein_rows(out)
    assert (job_row["failure_rule"], job_row["failure_domain"]) == ("oom-hold", job_span.attributes["job.failure.domain"])


def test_the_verdict_on_a_users_job_is_on_the_users_span_too():
    """A job with its user's TRACEPARENT: ``job on glidein`` in the user's trace carries the
    converter's verdict (failure domain, evidence) and, once the forwarder's rules decided, the
    same rule, label and advice as the job span in the glidein's trace."""
    user = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    lines = root_lines(1000.0, TRACE) + [
        format_line(1010, "end", "setup", {"@status": "OK"}),
        format_line(1010, "start", "condor", {"@stage": "condor.start", "@name": "condor"}),
        format_line(1015, "start", "job/s#1.0#9", {"@stage": "job", "@name": "job", "@parent": "condor"},
                    links=[user]),
        format_line(1025, "end", "job/s#1.0#9", {
            "@status": "ERROR", "@error.type": "job.hold", "@error.detail": "job ended by hold",
            "job.exit_by": "hold", "job.hold_reason_code:i": "34",
            "job.hold_reason": "Job has gone over cgroup memory limit of 2048 megabytes."}),
        format_line(1050, "end", "condor", {}),
        format_line(1052, "end", "glidein", {"glidein.outcome": "ok"})]
    spans = convert(*parse_lines("".join(lines).encode()))
    (on_glidein,) = [s for s in spans if s.name == "job on glidein"]
    (job_span,) = [s for s in spans if s.name == "job"]
    assert on_glidein.attributes["job.failure.domain"] == job_span.attributes["job.failure.domain"]
    assert on_glidein.attributes["job.failure.evidence"] == job_span.attributes["job.failure.evidence"]
    examples = RuleSet([r for p in sorted(EXAMPLES.glob("*.yaml")) for r in parse_file(p)[0]])
    out = FailureAttribution(examples).apply(spans)
    (on_glidein,) = [s for s in out if s.name == "job on glidein"]
    (job_span,) = [s for s in out if s.name == "job"]
    verdict = {k: v for k, v in job_span.attributes.items() if k.startswith("job.failure.")}
    assert verdict["job.failure.rule"] == "oom-hold"
    assert {k: v for k, v in on_glidein.attributes.items() if k.startswith("job.failure.")} == verdict
    assert on_glidein.context.trace_id == 0x0af7651916cd43dd8448eb211c80319c


def test_the_forwarder_configured_with_rules_and_a_downtime_feed_decides_a_held_glidein(tmp_path, caplog):
    """The settings' failure_rules and downtimes, through the forwarder, on a real Condor-G
    activity log: a glidein held at the CE for an expired proxy and removed is credentials,
    not grid, and its entry's declared downtime is named."""
    from glidein_tracing.factory import build
    from glidein_tracing.factory.settings import ForwarderSettings
    from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout
    from glidein_tracing.exporters.store import read_store
    from tests.support.factory_builders import SCHEDD, T0, identity
    from test_forwarder import make_forwarder

    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    log = CondorGLog(layout)
    log.submit(300, 0, when=T0 - 120)
    log.held(300, 0, "Globus error 131: the user proxy expired (job is still running)", code=2, when=T0 - 100)
    log.aborted(300, 0, when=T0 - 10)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "factory.yaml").write_text(textwrap.dedent("""\
        rules:
          - name: ce-proxy-expired
            applies_to: glidein
            match: {hold_reason: '(?i)proxy expired', hold_reason_code: [2]}
            domain: credentials
            label: the glidein's proxy expired at the CE
        """))
    feed = tmp_path / "downtimes.csv"
    feed.write_text("target,start,end,reason,class\n"
                    f"DEMO_ENTRY,{int(T0 - 3600)},{int(T0 + 3600)},CE upgrade,scheduled\n"
                    "DEMO_ENTRY,2026-07-21 10:00,2026-07-21 11:00,no zone,\n")
    conf = ForwarderSettings(failure_rules=str(rules), downtimes=(str(feed),), state=str(tmp_path / "ledger.sqlite"))
    with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
        attribution = build.failure_attribution_of(conf)
    assert any(f"{feed}:3: no time zone" in r.getMessage() for r in caplog.records)
    forwarder = make_forwarder(layout, tmp_path / "store", tmp_path / "ledger.sqlite",
                               entry_schedds={layout.entry: SCHEDD}, failure_attribution=attribution)
    assert forwarder.run_once().glideins_done == 1
    spans = read_store(tmp_path / "store")[identity(layout, 300, 0).trace_id]
    (root,) = [s for s in spans if s["attributes"]["glidein.stage"] == "glidein"]
    assert root["attributes"]["glidein.failure.domain"] == "credentials"
    assert root["attributes"]["glidein.failure.rule"] == "ce-proxy-expired"
    assert root["attributes"]["glidein.failure.downtime"] == f"{feed}:2 (scheduled): CE upgrade"
    assert build.failure_attribution_of(ForwarderSettings()) is None


def test_a_directory_is_one_rule_book_in_file_order_with_names_unique_across_files(tmp_path, capsys, caplog):
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    rule = "rules:\n  - name: {name}\n    match: {{exit_code: [{code}]}}\n    domain: {domain}\n    label: {label}\n"
    (rules_dir / "10-cms.yaml").write_text(rule.format(name="cms-exit-8020", code=8020, domain="site",
                                                       label="CMS file open error"))
    (rules_dir / "90-common.yaml").write_text(rule.format(name="cms-exit-8020", code=8020, domain="grid",
                                                          label="the same name again")
                                              + rule.format(name="generic", code=8020, domain="grid",
                                                            label="never reached for 8020")[7:])
    (rules_dir / "README.txt").write_text("not a rules file")
    count, problems = check(rules_dir)
    assert count == 2 and problems == [                  # the rules in force, as the forwarder holds them
        f"{rules_dir / '90-common.yaml'}:2: rule cms-exit-8020: name already used at {rules_dir / '10-cms.yaml'}:2"]
    with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
        ruleset = RuleBook(rules_dir, classifiers=False).current()
    assert ruleset.classify(job(exit_code=8020)).rule == "cms-exit-8020"
    assert ruleset.classify(job(exit_code=8020)).domain == "site"         # the first file's
    assert [r.name for r in ruleset.rules] == ["cms-exit-8020", "generic"]
    assert any("name already used" in r.getMessage() for r in caplog.records)
    assert cli_main(["rules", "--check", str(rules_dir), "--list"]) == 1
    out = capsys.readouterr().out
    assert "cms-exit-8020\tsite\tCMS file open error\t" in out and "generic\tgrid\t" in out
    assert "the same name again" not in out                              # not tried: not listed


def _fenced():
    from glidein_tracing.failure_rules.classifiers import fence
    if not fence():
        pytest.skip("no unprivileged user namespaces here: classifiers are not fenced (docs/operators.md)")


def _asked(text, message="", **kw):
    """A classifier asked about one job failure, then the pass ended; its messages."""
    classifiers = Classifiers(["examplevo"], **kw)
    ruleset = RuleSet((), classifiers)
    classifiers.new_pass()
    try:
        decision = ruleset.classify(job(text, message=message))
    finally:
        classifiers.close()
    return decision, classifiers


def test_a_classifier_under_its_answer_limit_spends_its_pass_budget_then_is_disabled(installed_classifier, caplog):
    """Issue 42: one just under its 2 s answer limit made a pass 10x slower. Each answer is
    within the limit; together they spend the classifier's budget for the pass, and then it
    is asked no more until the next pass."""
    classifiers = Classifiers(["examplevo"], time_limit_s=5.0, pass_budget_s=1.2)
    ruleset = RuleSet((), classifiers)
    try:
        classifiers.new_pass()
        with caplog.at_level(logging.WARNING, logger="glidein_tracing"):
            for _ in range(10):
                assert ruleset.classify(job("slow")) is None
        messages = [r.getMessage() for r in caplog.records if "examplevo" in r.getMessage()]
        assert len(messages) == 1 and "spent its 1.2 s for this pass" in messages[0]
        assert classifiers.disabled == 1 and classifiers.spent["examplevo"] <= 5.0 + 1.2
        classifiers.new_pass()
        assert ruleset.classify(job("SAM project x is not running")).rule == "examplevo:sam-down"
    finally:
        classifiers.close()


def test_a_classifiers_output_never_reaches_the_forwarders_and_its_answer_is_cleaned(installed_classifier, capfd):
    decision, _ = _asked("escape")
    out, err = capfd.readouterr()
    assert "\x1b" not in out and "\x1b" not in err                  # its stdout and stderr are closed
    assert (decision.label, decision.service) == ("bad[2Jlabel1m", "sam[31mweb")   # no control byte left


def test_a_classifiers_children_are_killed_at_the_end_of_the_pass(installed_classifier, tmp_path):
    _fenced()
    marker = f"gt-classifier-child-{tmp_path.name}"
    _asked("fork", marker)

    def alive():
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                found.append(marker.encode() in cmdline.read_bytes())
            except OSError:
                pass
        return any(found)
    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive()


@pytest.mark.parametrize("fenced", [True, False], ids=["namespaces", "no_namespaces"])
def test_a_classifier_cannot_signal_the_forwarder(installed_classifier, monkeypatch, fenced):
    """Issue 42: ``os.kill(os.getppid(), SIGKILL)`` killed the forwarder on every pass. In its
    own PID namespace its parent is 0 (its own process group, in a session of its own) and no
    pid outside can be named: the forwarder (this test's process, whose pid the classifier is
    told) lives. Without namespaces its parent is a shell: killing that harms nobody, but a
    pid it learns it can signal (docs/operators.md), so that attack is not tried here."""
    from glidein_tracing.failure_rules import classifiers as module
    if fenced:
        _fenced()
    else:
        monkeypatch.setattr(module, "fence", lambda: module.GRANDCHILD)
    target = os.getpid() if fenced else 2 ** 22 + 1     # without namespaces: a pid that cannot exist
    decision, _ = _asked("signal", str(target))
    assert decision.label.startswith(f"{target} ProcessLookupError, ")
    assert decision.label.endswith(", 0 signalled" if fenced else " signalled")   # its parent: 0, or the shell
