"""A glidein drawn as it ran: scripts in record order, every span lasting, the node's stages
after the Factory's execute event, children within their parents (docs/span-conventions.md,
Times)."""

import math

import pytest

from glidein_tracing.core.converter import convert
from glidein_tracing.core.converter.record_times import place_records
from glidein_tracing.core.journal import format_line, parse_lines

from tests.support.fixtures import fixture_path
from tests.support.journal_builders import iso_epoch, parse_otr_records, record_lines, root_lines
from tests.support.span_nesting import outside_parent


def convert_lines(lines):
    return convert(*parse_lines("".join(lines).encode()))


def stage(spans, name):
    return [s for s in spans if s.attributes["glidein.stage"] == name]


@pytest.mark.parametrize("run", ["success", "fail", "sigterm"])
def test_real_records_are_drawn_in_their_order_each_inside_its_own_seconds(run):
    records = parse_otr_records(fixture_path("glidein-run", run, "otr_outlist.list").read_text())
    start = iso_epoch(records[0]["tstart"]) + 0.83           # glidein_startup.sh's measured start
    lines = root_lines(start) + record_lines(records)
    lines.append(format_line(iso_epoch(records[-1]["tend"]) + 5, "end", "glidein", {}))
    spans = convert_lines(lines)
    scripts = [r for r in records if r["id"] != "condor_startup.sh"]
    validations = sorted(stage(spans, "validation"), key=lambda s: s.start_time)
    assert [s.name for s in validations] == [r["id"] for r in scripts]      # start order = record order
    previous_end = 0
    for span, record in zip(validations, scripts):
        assert span.end_time > span.start_time >= previous_end
        previous_end = span.end_time
        for placed, recorded in ((span.start_time, record["tstart"]), (span.end_time, record["tend"])):
            second = iso_epoch(recorded)
            assert second * 1e9 <= placed < (second + 1) * 1e9     # inside the second it names
        assert span.attributes["glidein.time.placed"] == "record_order"
        recorded_s = iso_epoch(record["tend"]) - iso_epoch(record["tstart"])
        assert span.attributes["glidein.script.max_duration_s"] == recorded_s + 1
    assert validations[0].start_time >= start * 1e9       # not before the glidein began
    assert outside_parent(spans, 0) == []


def test_a_placement_depends_only_on_the_records_before_it():
    """The node exports setup live with part of the records; the Factory converts them all:
    the scripts they share are placed alike."""
    recorded = [(100, 100), (100, 100), (100, 101), (101, 101), (101, 101), (103, 103)]
    whole = place_records(recorded, floor=100.4)
    for cut in range(1, len(recorded)):
        assert place_records(recorded[:cut], floor=100.4) == whole[:cut]
    assert all(end > start for start, end in whole)
    assert all(b[0] >= a[1] for a, b in zip(whole, whole[1:]))
    assert whole[0][0] == 100.4 and all(math.floor(s) in (100, 101, 103) for s, _ in whole)
    # any number of events fits in one second, in order
    many = place_records([(200, 200)] * 500)
    assert all(200 <= s < e < 201 for s, e in many) and all(b[0] >= a[1] for a, b in zip(many, many[1:]))


def _factory_and_node(node_start, exported=False):
    lines = [format_line(900, "start", "glidein", {"@name": "glidein", "@stage": "glidein"}),
             format_line(900, "start", "factory.submit", {"@stage": "factory.submit", "@name": "factory.submit"}),
             format_line(901, "end", "factory.submit", {}),
             format_line(901, "start", "factory.queue", {"@stage": "factory.queue", "@name": "factory.queue"}),
             format_line(1000, "end", "factory.queue", {})]
    lines += root_lines(node_start)
    lines += [format_line(node_start + 5, "end", "setup", {"@status": "OK"}),
              format_line(node_start + 5, "start", "teardown", {"@stage": "teardown", "@name": "teardown"}),
              format_line(node_start + 6, "end", "teardown", {"glidein.outcome": "ok"})]
    if exported:
        lines.append(format_line(node_start + 5, "export", "-", {"@state": "sent", "@spans": "0123456789abcdef"}))
    lines.append(format_line(1020, "end", "glidein", {}))
    return convert_lines(lines)


def test_node_stages_before_the_execute_event_move_after_it_and_the_root_says_by_how_much():
    spans = _factory_and_node(node_start=997.5)       # the node's clock 2.5 s behind
    (queue,) = stage(spans, "factory.queue")
    (setup,) = stage(spans, "setup")
    (root,) = stage(spans, "glidein")
    # right after the execute event: 1 us after, so Jaeger's critical path reaches the queue
    # (docs/span-conventions.md, Times); teardown starts 1 us after setup ends
    assert setup.start_time - 1000 == queue.end_time == 1000 * 10**9
    assert setup.end_time - setup.start_time == 5 * 10**9 - 1000     # its duration is the node's
    assert root.attributes["glidein.clock.node_early_s"] == 2.5
    assert root.attributes["glidein.clock.shift_s"] == 2.5
    assert outside_parent(spans, 0) == []
    # clocks that agree: nothing moves, nothing said
    spans = _factory_and_node(node_start=1000.2)
    (setup,) = stage(spans, "setup")
    (root,) = stage(spans, "glidein")
    assert setup.start_time == 1000200000000 and "glidein.clock.shift_s" not in root.attributes


def test_spans_the_node_sent_live_keep_its_clock_and_the_root_says_how_far_off_it_was():
    spans = _factory_and_node(node_start=997.5, exported=True)
    (setup,) = stage(spans, "setup")
    (root,) = stage(spans, "glidein")
    assert setup.start_time == 997500000000
    assert root.attributes["glidein.clock.node_early_s"] == 2.5
    assert "glidein.clock.shift_s" not in root.attributes


def test_a_span_measured_as_lasting_nothing_lasts_a_microsecond_and_says_so():
    lines = root_lines(1000.0) + [format_line(1001, "start", "teardown", {"@stage": "teardown", "@name": "teardown"}),
                                  format_line(1001, "end", "teardown", {}),
                                  format_line(1002, "end", "glidein", {})]
    (teardown,) = stage(convert_lines(lines), "teardown")
    assert teardown.end_time - teardown.start_time == 1000
    assert teardown.attributes["glidein.time.placed"] == "min_duration"
