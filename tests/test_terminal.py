"""Terminal escapes: nothing a span carries (names, attributes, log tails, entry names) reaches
a terminal as a control sequence, through `show`, `show --list` or `analyze`'s summary."""

import base64
import re

import pytest

from glidein_tracing.core import log_tail
from glidein_tracing.cli.main import main
from glidein_tracing.exporters.store import Store
from glidein_tracing.core.terminal import escape

from tests.support.analysis_helpers import glidein_row, simple_glidein, trace_id, write_rows

# what a terminal would act on: C0 controls but tab and newline, DEL, C1, bidirectional controls
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TITLE = "\x1b]0;owned\x07"          # OSC: retitles the window
CSI_8BIT = "\u009b2J"               # one-character CSI: clears the screen
OSC_8BIT = "\u009d0;owned\u009c"    # one-character OSC, ended by ST


@pytest.mark.parametrize("text, shown", [
    ("plain text\tand a tab\nnext line", "plain text\tand a tab\nnext line"),
    (TITLE, "\\x1b]0;owned\\x07"),
    (CSI_8BIT + OSC_8BIT, "\\x9b2J\\x9d0;owned\\x9c"),
    ("a\rb\x7f", "a\\x0db\\x7f"),
    ("bidi \u202eevil\u2066", "bidi \\u202eevil\\u2066"),
])
def test_escape_makes_every_control_visible(text, shown):
    assert escape(text) == shown


def test_escape_without_newlines_keeps_a_value_on_its_line():
    assert escape("one\nfake line", newlines=False) == "one\\x0afake line"


def hostile_store(directory):
    """A store holding one glidein whose name, entry, attributes and log tail carry escapes."""
    trace = trace_id(7)
    spans = simple_glidein(trace)
    root = spans[0]
    root["name"] = f"glidein{TITLE}"
    root["attributes"]["glidein.entry"] = f"ENTRY{CSI_8BIT}"
    root["attributes"]["glidein.outcome"] = f"ok{OSC_8BIT}\nfake line"
    for span in spans:
        span["resource"] = dict(span["resource"], **{"glidein.entry": f"ENTRY{CSI_8BIT}"})
    failed = next(s for s in spans if s["name"] == "main/a.sh")
    failed["name"] = f"main/a.sh\x1b[8m"
    failed["status_code"] = 2
    failed["events"] = [{"name": log_tail.LOG_TAIL_EVENT, "time_ns": failed["end_ns"], "attributes": {
        "log.source": "logs/x.err", "log.lines": f"before\n\x1b[2J{OSC_8BIT}cleared\nafter"}}]
    Store(directory).append_span_dicts([spans])
    return trace


def assert_nothing_raw(text):
    assert RAW_CONTROL.search(text) is None, repr(RAW_CONTROL.search(text).group())


def test_show_prints_escapes_visibly_and_each_span_on_one_line(tmp_path, capsys):
    trace = hostile_store(tmp_path)
    assert main(["show", "--store", str(tmp_path), trace]) == 0
    out = capsys.readouterr().out
    assert_nothing_raw(out)
    assert "glidein\\x1b]0;owned\\x07 [glidein]" in out
    assert "glidein.entry=ENTRY\\x9b2J" in out and "\\x0afake line" in out
    assert "| \\x1b[2J\\x9d0;owned\\x9ccleared" in out
    assert not any(line.startswith("fake line") for line in out.splitlines())


def test_show_list_prints_escapes_visibly(tmp_path, capsys):
    hostile_store(tmp_path)
    assert main(["show", "--store", str(tmp_path), "--list"]) == 0
    out = capsys.readouterr().out
    assert_nothing_raw(out)
    assert len(out.splitlines()) == 1 and "glidein\\x1b]0;owned\\x07" in out


def test_analyze_summary_prints_escapes_visibly(tmp_path, capsys):
    row, jobs = glidein_row(trace_id(7), jobs=((100, 1000, False),), entry=f"ENTRY{CSI_8BIT}",
                            failure_domain="site", failure_message=f"mount failed{OSC_8BIT}\nfake line")
    write_rows(tmp_path, "glideins", [row])
    write_rows(tmp_path, "jobs", jobs)
    assert main(["analyze", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert_nothing_raw(out)
    assert "mount failed\\x9d<n>;owned\\x9c fake line" in out      # normalised: digits, line breaks
    assert not any(line.startswith("fake line") for line in out.splitlines())


def test_log_tails_replace_8bit_csi_and_osc():
    data = base64.b64encode(f"red {CSI_8BIT} title {OSC_8BIT} \x1b[31m end".encode()).decode()
    got = log_tail.assemble([{"@log.part": "0", "@log.parts": "1", "@log.data": data}])
    assert got["log.lines"] == "red ?2J title ?0;owned? ?[31m end"
    assert got["log.note"] == "4 non-text characters shown as '?'"


def test_rules_list_shows_a_rule_files_escapes_made_visible(tmp_path, capsys):
    """A rules file is the VO's text: its labels reach the terminal escaped too."""
    pytest.importorskip("re2")
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - name: exit-8020\n    match: {exit_code: [8020]}\n    domain: site\n'
                     '    label: "file open \\e]0;owned\\a error"\n')
    assert main(["rules", "--check", str(rules), "--list"]) == 0
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out)
    assert "exit-8020\tsite\tfile open \\x1b]0;owned\\x07 error\t" in out
