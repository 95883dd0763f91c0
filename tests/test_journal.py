import subprocess
import sys

from glidein_tracing.core import journal


def line(*fields):
    return "\t".join(fields) + "\n"


def test_reads_good_lines_with_fields_and_links():
    data = (line("gtj1", "100.5", "start", "job/x", "@stage=job", "job.owner=alice",
                 "@link=00-aa-bb-01", "@link=00-cc-dd-01")
            + line("gtj1", "101", "end", "job/x", "@status=OK", "note=a=b=c")).encode()
    events, report = journal.parse_lines(data)
    assert [e.op for e in events] == ["start", "end"]
    assert events[0].time == 100.5 and events[0].fields["job.owner"] == "alice"
    assert events[0].links == ["00-aa-bb-01", "00-cc-dd-01"]
    assert events[1].fields["note"] == "a=b=c"
    assert report.skipped_total == 0


def test_bad_lines_are_skipped_counted_and_explained():
    data = (line("gtj1", "100", "start", "glidein")
            + "garbage line\n"
            + line("gtj9", "100", "start", "x")
            + line("gtj1", "soon", "start", "x")
            + line("gtj1", "100", "explode", "x")
            + b"\xff\xfe\tbinary\n".decode("latin-1")
            + line("gtj1", "100", "end", "glidein")
            + "gtj1\t101\tend\tset").encode("latin-1")
    events, report = journal.parse_lines(data)
    assert [(e.op, e.key) for e in events] == [("start", "glidein"), ("end", "glidein")]
    assert report.skipped["truncated last line"] == 1
    assert report.skipped["bad time"] == 1
    assert report.skipped["unknown op"] == 1
    assert report.skipped["unknown tag"] >= 2
    assert "truncated last line" in report.summary()


def test_missing_journal_is_empty_not_an_error(tmp_path):
    events, report = journal.read_journal(tmp_path / "nope.gtj")
    assert events == [] and report.skipped["missing journal"] == 1


def test_writer_output_reads_back_and_values_cannot_break_lines():
    text = journal.format_line(5.0, "attr", "glidein", {"a": "x\ty\nz", "bad name": "v"})
    events, report = journal.parse_lines(text.encode())
    assert events[0].fields == {"a": "x y z"}
    assert text.count("\n") == 1


def test_concurrent_appends_keep_every_line_whole(tmp_path):
    path = tmp_path / "j.gtj"
    code = (
        "import sys\n"
        "from glidein_tracing.core import journal\n"
        "for i in range(400):\n"
        "    journal.append(sys.argv[1], journal.format_line(1.0 + i, 'sample', '-',"
        " {'writer': sys.argv[2], 'pad': 'x' * 300}))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(w)]) for w in range(6)]
    assert all(p.wait() == 0 for p in procs)
    events, report = journal.read_journal(path)
    assert len(events) == 2400 and report.skipped_total == 0
    assert all(len(e.fields["pad"]) == 300 for e in events)
