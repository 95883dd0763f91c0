"""Rules files and downtime feeds an operator (or a broken export job) gets wrong: bounded in
size and depth, every bad value refused with its file and line, refused alike by `rules
--check`, `forward --check-config` and the running forwarder, which never stops for them; and
a large feed parsed once."""

import os
import subprocess
import sys

import pytest

from glidein_tracing.cli.main import main as cli_main
from glidein_tracing.failure_rules import downtimes as downtimes_mod
from glidein_tracing.failure_rules.downtimes import read_downtimes
from glidein_tracing.failure_rules.files import MAX_RULES, RuleBook, check
from glidein_tracing.simulator.condor_g import CondorGLog, FactoryLayout

from tests.support.factory_builders import FACTORY, SCHEDD, T0, journal_text, returned_stderr, run_glidein

GIB2 = 2 * 1024 ** 3


def rule(i: int) -> str:
    return f"  - {{name: r{i}, match: {{exit_code: [{i}]}}, domain: site, label: rule {i}}}\n"


def sparse(path, size):
    """A file of ``size`` bytes that takes no disk (a hole): a wrong path to a huge file."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def forward(tmp_path, *extra, check_config=False):
    """The real forward command on one ended glidein, with ``extra`` settings lines."""
    layout = FactoryLayout(logs=tmp_path / "logs", instance="gwms_demo_instance", entry="DEMO_ENTRY")
    if not layout.logs.exists():
        run_glidein(CondorGLog(layout), layout, 100, 0, T0, returned_stderr(journal_text(layout, 100, 0, T0)))
    config = tmp_path / "f.yaml"
    config.write_text(f"factory: {FACTORY}\nschedd: {SCHEDD}\nlogs: [{layout.logs}]\ngrace: 5\n"
                      f"state: {tmp_path / 'ledger.sqlite'}\n" + "".join(f"{line}\n" for line in extra))
    flags = ["--check-config"] if check_config else ["--no-progress"]
    return subprocess.run([sys.executable, "-m", "glidein_tracing", "forward", "--config", str(config), *flags],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})


def test_a_deeply_nested_rules_file_is_refused_by_both_checks_and_never_stops_a_pass(tmp_path, capsys):
    deep = tmp_path / "deep.yaml"
    deep.write_text("rules:\n  - name: deep\n    match: " + "[" * 5000 + "]" * 5000 + "\n")
    count, problems = check(deep)
    (problem,) = problems            # libyaml's own bound (1,000) or ours (12), named with its line
    assert count == 0 and problem.startswith(f"{deep}:3: ") and "nest" in problem
    assert cli_main(["rules", "--check", str(deep)]) == 1
    assert problem in capsys.readouterr().out
    checked = forward(tmp_path, f"failure_rules: {deep}", check_config=True)
    assert checked.returncode == 2 and problem in checked.stderr
    ran = forward(tmp_path, f"failure_rules: {deep}")
    assert ran.returncode == 0, ran.stderr
    assert "1 glideins forwarded" in ran.stderr and problem in ran.stderr
    medium = tmp_path / "medium.yaml"                # deeper than a rule, within libyaml's bound
    medium.write_text("rules:\n  - name: deep\n    match: " + "[" * 20 + "]" * 20 + "\n")
    assert check(medium) == (0, [f"{medium}:3: nested more than 12 deep: not a rules file"])


def test_a_huge_rules_file_and_too_many_rules_are_refused_without_reading_them(tmp_path):
    huge = sparse(tmp_path / "huge.yaml", GIB2)
    assert check(huge) == (0, [f"{huge}:1: larger than 1024 KiB: not a rules file (split it)"])
    assert len(RuleBook(huge, classifiers=False).current()) == 0
    many = tmp_path / "many.yaml"
    many.write_text("rules:\n" + "".join(rule(i) for i in range(MAX_RULES + 1)))
    assert check(many) == (0, [f"{many}:2: {MAX_RULES + 1} rules, more than {MAX_RULES}: none used"])
    # a book of two files: the first MAX_RULES rules are in force, the first one left out is named
    book = tmp_path / "book"
    book.mkdir()
    (book / "a.yaml").write_text("rules:\n" + "".join(rule(i) for i in range(MAX_RULES - 1)))
    (book / "b.yaml").write_text("rules:\n" + "".join(rule(i) for i in range(MAX_RULES - 1, MAX_RULES + 2)))
    count, problems = check(book)
    assert count == MAX_RULES and len(problems) == 1
    assert problems[0].startswith(f"{book / 'b.yaml'}:3: rule r{MAX_RULES}: more than {MAX_RULES} rules in force")
    held = RuleBook(book, classifiers=False).current()
    assert [r.name for r in held.rules] == [f"r{i}" for i in range(MAX_RULES)]     # what the check counted


def test_yaml_aliases_are_refused(tmp_path):
    aliased = tmp_path / "aliases.yaml"
    aliased.write_text("rules:\n  - &one {name: a, match: {exit_code: [1]}, domain: site, label: x}\n  - *one\n")
    assert check(aliased) == (0, [f"{aliased}:3: a YAML alias (*one): write each rule out"])


BAD_JSON = """[
 {"target": "cvmfs", "start": "2026-07-21T10:00:00Z", "end": Infinity, "reason": "for ever"},
 {"target": "cvmfs", "start": NaN, "end": "2026-07-21T12:00:00Z", "reason": "since when"},
 {"target": "cvmfs", "start": 1e999, "end": 2e999, "reason": "overflow"},
 {"target": "squid", "start": 99999999999, "end": 99999999999.5, "reason": "year 5138"},
 {"target": ["a", ["b"]], "start": 1784628000, "end": 1784631600, "reason": "nested"},
 {"target": "frontier", "start": 1784628000, "end": 1784631600, "reason": "the good one"}
]
"""
BAD_XML = """<Downtimes><CurrentDowntimes>
<Downtime><ID>7</ID><ResourceName>CE_A</ResourceName>
<StartTime>Jul 21, 2026 10:00 AM +9999</StartTime><EndTime>Jul 21, 2026 11:00 AM UTC</EndTime></Downtime>
<Downtime><ID>8</ID><ResourceName>CE_A</ResourceName>
<StartTime>Jul 21, 2026 10:00 AM +1500</StartTime><EndTime>Jul 21, 2026 11:00 AM UTC</EndTime></Downtime>
<Downtime><ID>9</ID><ResourceName>CE_A</ResourceName>
<StartTime>Jul 21, 2026 10:00 AM +1400</StartTime><EndTime>Jul 21, 2026 11:00 AM UTC</EndTime></Downtime>
</CurrentDowntimes></Downtimes>
"""


def test_non_finite_or_absurd_times_and_offsets_are_refused_with_file_and_line(tmp_path):
    feed = tmp_path / "d.json"
    feed.write_text(BAD_JSON)
    osg = tmp_path / "osg.xml"
    osg.write_text(BAD_XML)
    iso = tmp_path / "d.csv"
    iso.write_text("target,start,end,reason\nxrootd,2026-07-21T10:00:00+23:59,2026-07-21T12:00:00Z,far east\n")
    downtimes, problems = read_downtimes([feed, osg, iso])
    text = "\n".join(problems)
    assert f"{feed}:2: not a finite time: 'Infinity'" in text
    assert f"{feed}:3: not a finite time: 'NaN'" in text
    assert f"{feed}:4: not a finite time: inf" in text
    assert f"{feed}:5: 99999999999 is not in the years 2000-2099" in text
    assert f"{feed}:6: target and reason are plain values" in text
    assert f"{osg}: osg:7: offset +9999 in 'Jul 21, 2026 10:00 AM +9999' is beyond +/-14:00" in text
    assert f"{osg}: osg:8: offset +1500" in text
    assert f"{iso}:2: offset beyond +/-14:00 in '2026-07-21T10:00:00+23:59'" in text
    assert sorted(d.ident for d in downtimes.entries) == [f"{feed}:7", "osg:9"]


def test_a_csv_without_its_header_a_deep_json_and_a_huge_feed_are_errors(tmp_path):
    headless = tmp_path / "headless.csv"
    headless.write_text("cvmfs,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,Stratum-1 migration\n"
                        "squid,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,reboot\n")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    huge = sparse(tmp_path / "huge.csv", GIB2)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    downtimes, problems = read_downtimes([headless, deep, huge, empty])
    assert len(downtimes) == 0
    assert problems == [
        f"{headless}:1: no header row naming target (or service, site), start and end; the first line is "
        "'cvmfs,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,Stratum-1 migration'",
        f"{deep}: nested too deeply: not a list of downtimes",
        f"{huge}: not readable: larger than {64 * 1024 * 1024} bytes",
        f"{empty}:1: no header row naming target (or service, site), start and end; the first line is ''"]


def test_check_config_names_the_feeds_problems_and_the_run_uses_the_rest(tmp_path):
    feed = tmp_path / "d.json"
    feed.write_text(BAD_JSON)
    headless = tmp_path / "headless.csv"
    headless.write_text("cvmfs,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,x\n")
    checked = forward(tmp_path, f"downtimes: [{feed}, {headless}]", check_config=True)
    assert checked.returncode == 2
    assert f"{feed}:2: not a finite time: 'Infinity'" in checked.stderr
    assert f"{headless}:1: no header row" in checked.stderr
    ran = forward(tmp_path, f"downtimes: [{feed}, {headless}]")
    assert ran.returncode == 0 and "1 glideins forwarded" in ran.stderr
    assert f"{feed}:2: not a finite time: 'Infinity'" in ran.stderr       # logged; the good entry is used


def test_a_feed_is_parsed_once_per_content(tmp_path, monkeypatch):
    feed = tmp_path / "d.csv"
    rows = "".join(f"site{i},{1784628000 + 600 * i},{1784628300 + 600 * i},work {i},scheduled\n" for i in range(1000))
    feed.write_text("target,start,end,reason,class\n" + rows + "bad,946684799,946684800,too early,\n")
    cache = tmp_path / "cache"
    first, first_problems = read_downtimes([feed], cache)
    assert len(first) == 1000 and first_problems == [f"{feed}:1002: '946684799' is not in the years 2000-2099"]
    parsed = []
    real_read_table = downtimes_mod.read_table
    monkeypatch.setattr(downtimes_mod, "read_table", lambda *a: parsed.append(a) or real_read_table(*a))
    again, again_problems = read_downtimes([feed], cache)
    assert parsed == [] and again.entries == first.entries and again_problems == first_problems
    assert again.find(["site7"], 1784628000 + 600 * 7 + 1).reason == "work 7"
    feed.write_text("target,start,end,reason\nsite1,1784628000,1784628300,changed\n")    # new content: parsed
    changed, _ = read_downtimes([feed], cache)
    assert len(parsed) == 1 and [d.reason for d in changed.entries] == ["changed"]
    (cached,) = [p for p in cache.iterdir() if p.stat().st_mtime >= os.stat(feed).st_mtime - 1 and
                 p.read_bytes() and "changed" in repr(p.read_bytes())]
    cached.write_bytes(b"damaged")                                          # a damaged cache is parsed again
    assert [d.reason for d in read_downtimes([feed], cache)[0].entries] == ["changed"] and len(parsed) == 2
    assert not [p for p in cache.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("text", ["Infinity", "NaN", "-inf", "1e999", "99999999999", "Jul 21, 2026 10:00 AM +9999",
                                  # issue 42: Python takes +00:99 as +01:39, and int() and float() fullwidth digits
                                  "2026-07-21T10:00:00+00:99", "2026-07-21T10:00:00+0099", "2026-07-21T10:00:00+00:30:99",
                                  "\uff11\uff17\uff18\uff14\uff16\uff12\uff18\uff10\uff10\uff10",
                                  "Jul \uff12\uff11, 2026 10:00 AM UTC"])
def test_parse_time_refuses_what_no_downtime_can_be(text):
    with pytest.raises(downtimes_mod.BadTime):
        downtimes_mod.parse_time(text)


def test_a_downtime_cache_of_bad_types_gives_one_line_and_the_feed_parsed_again(tmp_path):
    """Issue 42: the cache was trusted on read: a row of bad types made a traceback at start.
    It is checked as a feed is; a bad one is named in one line, the feed parsed again."""
    import marshal
    feed = tmp_path / "d.csv"
    feed.write_text("target,start,end,reason\nxrootd,1784628000,1784631600,upgrade\n")
    assert forward(tmp_path, f"downtimes: [{feed}]").returncode == 0
    (cached,) = (tmp_path / "downtime-cache").iterdir()
    cached.write_bytes(marshal.dumps(([("osg:1", "xrootd", "noon", None, 3, "maybe")], [7])))
    ran = forward(tmp_path, f"downtimes: [{feed}]")
    assert ran.returncode == 0 and "Traceback" not in ran.stderr
    (line,) = [x for x in ran.stderr.splitlines() if "damaged cache" in x]
    assert str(cached) in line and "the feed is parsed again" in line
    again, problems = read_downtimes([feed], tmp_path / "downtime-cache")
    assert [d.reason for d in again.entries] == ["upgrade"] and problems == []    # the cache rewritten whole
