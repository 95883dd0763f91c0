import random

from glidein_tracing.core import sections

from tests.support.fixtures import fixture_path


def test_decodes_the_real_glidein_log_sections():
    text = fixture_path("glidein-run", "success", "glidein_stderr.txt").read_text()
    found = {s.name: s for s in sections.find_sections(text)}
    assert {"MasterLog", "StartdLog", "GlideinLog"} <= set(found)
    assert all(not s.error for s in found.values())
    assert b"" != found["StartdLog"].data


def test_round_trip_and_journal_lookup():
    text = "noise\n" + sections.encode_section(sections.JOURNAL_SECTION, b"gtj1\t1\tnote\t-\n") + "tail\n"
    (section,) = sections.journal_sections(text)
    assert section.data == b"gtj1\t1\tnote\t-\n" and not section.error


def test_decompression_bomb_is_cut_at_the_cap():
    line = b"gtj1\t1\tnote\t-\t@msg=" + b"x" * 80 + b"\n"
    bomb = sections.encode_section(sections.JOURNAL_SECTION, line * (8 * 1024 * 1024 // len(line)))
    (section,) = sections.journal_sections(bomb, max_bytes=1024 * 1024)
    assert section.truncated and "cap" in section.error
    # every complete line before the cap is kept, the partial one is counted
    whole = 1024 * 1024 // len(line)
    assert section.data == line * whole
    assert section.cut_bytes == 1024 * 1024 - whole * len(line)


def test_cut_or_garbled_sections_report_errors_and_do_not_raise():
    whole = sections.encode_section(sections.JOURNAL_SECTION, random.Random(1).randbytes(5000))
    cut = whole[: len(whole) // 2]
    (section,) = sections.journal_sections(cut)
    assert section.error
    garbled = whole.replace("H4sI", "!!!!", 1)
    for s in sections.journal_sections(garbled):
        assert s.error


def test_all_sections_of_one_stderr_share_one_inflate_budget():
    line = b"gtj1\t1\tnote\t-\t@msg=" + b"x" * 80 + b"\n"
    one = sections.encode_section(sections.JOURNAL_SECTION, line * 20_000)   # ~2 MB inflated
    found = sections.journal_sections(one * 8, max_bytes=4 * 1024 * 1024, max_total_bytes=5 * 1024 * 1024)
    assert len(found) == 8
    assert sum(len(s.data) for s in found) <= 5 * 1024 * 1024
    assert [bool(s.error) for s in found] == [False, False, True, True, True, True, True, True]
    assert "budget" in found[2].error and found[2].data.endswith(b"\n")     # whole lines only
