"""The analyze verb over the glidein table and its reports; bad input (damaged files, other
schema versions, empty days); the HTML report and a trace's waterfall page rendered in headless
Chromium."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from glidein_tracing.analysis.dataset import DatasetError, open_dataset
from glidein_tracing.table import rollup
from glidein_tracing.table.writer import VERSION_KEY
from glidein_tracing.cli.main import main
from glidein_tracing.exporters.store import Store

from glidein_tracing.core import conventions
from glidein_tracing.viewers.waterfall import render_html
from tests.support.browser import WATERFALL_PROBE, browser as browser_path, dom, screenshot
from tests.support.analysis_helpers import (glidein_row, simple_glidein, trace_id, write_rows, write_synth_store,
                                            write_synth_table)



@pytest.fixture(scope="module")
def table(tmp_path_factory):
    directory = tmp_path_factory.mktemp("synth-report")
    write_synth_table(directory, glideins=3000, seed=31, period_s=3 * 86400)
    return directory


def test_analyze_prints_a_summary_and_writes_json(table, tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", str(table), "--whatif", "--json", str(out), "--max-idle", "600,900,1200",
                 "--max-tail", "120 200 400", "--retire", "6h,8h"]) == 0
    text = capsys.readouterr().out
    for needle in ("glideins 3,000", "core-hours:", "time to first job", "analyze_entries", "Pareto front",
                   "RECOMMENDATIONS", "Factory-wide", "reproduces", "compare failed:"):
        assert needle in text, needle
    doc = json.loads(out.read_text())
    assert doc["stats"]["glideins"] == 3000 and doc["entries"] and doc["compare"]["failed"]["dimensions"]
    settings = {tuple(p["settings"].values()) for p in doc["whatif"]["candidates"]}
    assert (900.0, 200.0, 28800.0) in settings and (1200.0, 400.0, 21600.0) in settings
    assert doc["whatif"]["current_replay"]["exact"]


def test_two_runs_write_the_same_bytes(table, tmp_path):
    """Every list and mapping of the document has a fixed order (not DuckDB's parallel
    grouping's), and SOURCE_DATE_EPOCH fixes its date: the same table, the same file."""
    outs = [tmp_path / f"run{n}.json" for n in range(3)]
    for out in outs:          # separate processes: each DuckDB schedules its threads anew
        subprocess.run([sys.executable, "-m", "glidein_tracing", "analyze", str(table), "--whatif", "--quiet",
                        "--window", "2h,24h", "--compare", "overload", "--json", str(out)],
                       check=True, env={**os.environ, "SOURCE_DATE_EPOCH": "1790000000"})
    first = outs[0].read_bytes()
    assert all(out.read_bytes() == first for out in outs[1:])
    doc = json.loads(first)
    assert doc["generated_at"] == "2026-09-21T14:13:20Z"
    assert list(doc["stats"]["metrics"]["by_site"]) == sorted(doc["stats"]["metrics"]["by_site"])
    assert list(doc["failures"]["by_entry"]) == sorted(doc["failures"]["by_entry"])
    assert doc["windows"]["periods"] and doc["populations"] and doc["examples"]["slowest_setup"] and doc["frontends"]


def test_entry_and_site_filters(table, tmp_path):
    con = open_dataset(table).con
    entry, want = con.execute("SELECT entry, COUNT(*) FROM glideins GROUP BY 1 ORDER BY 1 LIMIT 1").fetchone()
    out = tmp_path / "e.json"
    assert main(["analyze", str(table), "--entry", entry, "--json", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["stats"]["glideins"] == want and set(doc["stats"]["metrics"]["by_entry"]) == {entry}
    site = con.execute("SELECT min(site) FROM glideins").fetchone()[0]
    assert main(["analyze", str(table), "--site", site, "--json", str(out), "--quiet"]) == 0
    assert set(json.loads(out.read_text())["stats"]["metrics"]["by_site"]) == {site}


def test_json_to_stdout(table, capsys):
    assert main(["analyze", str(table), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["glideins"] == 3000


def test_a_glob_of_days_with_its_job_files(table, capsys):
    days = sorted(p.name for p in (table / "glideins").iterdir())[:2]
    want = open_dataset(table).con.execute(
        f"SELECT COUNT(*), SUM(jobs) FROM glideins WHERE CAST(date AS VARCHAR) IN ({', '.join(repr(d.split('=')[1]) for d in days)})"
        ).fetchone()
    glideins = [str(table / "glideins" / d / "*.parquet") for d in days]
    jobs = [a for d in days for a in ("--jobs", str(table / "jobs" / d / "*.parquet"))]
    assert main(["analyze", *glideins, *jobs, "--whatif", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["stats"]["glideins"], doc["stats"]["jobs"]) == want
    assert doc["whatif"]["current_replay"]["exact"] and doc["whatif"]["total_jobs"] == want[1]


def test_unusable_input_is_a_user_error(tmp_path, capsys):
    assert main(["analyze", str(tmp_path / "missing" / "*.parquet")]) == 2
    assert "no glidein table files" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", str(tmp_path), "--whatif", "--max-tail", "abc"])
    assert exit_info.value.code == 2 and "not a list of seconds" in capsys.readouterr().err


def test_a_damaged_file_is_named_and_skipped_and_the_rest_analysed(tmp_path, capsys):
    write_synth_table(tmp_path, glideins=500, seed=2, period_s=86400)
    victim = sorted((tmp_path / "glideins").rglob("*.parquet"))[0]
    good = pq.read_metadata(victim).num_rows
    data = victim.read_bytes()
    damaged = tmp_path / "glideins" / victim.parent.name / "part-damaged.parquet"
    damaged.write_bytes(data[: len(data) // 2])                # cut short: no footer
    (tmp_path / "glideins" / victim.parent.name / "part-garbage.parquet").write_bytes(b"not parquet at all")
    inside = bytearray(data)                                    # the footer reads, the data does not
    inside[1000: len(data) // 2] = b"\xab" * (len(data) // 2 - 1000)
    (tmp_path / "glideins" / victim.parent.name / "part-bad-data.parquet").write_bytes(bytes(inside))
    out = tmp_path / "d.json"
    assert main(["analyze", str(tmp_path), "--json", str(out), "--quiet", "--whatif"]) == 0
    err = capsys.readouterr().err
    assert "part-damaged.parquet" in err and "part-garbage.parquet" in err and "part-bad-data.parquet" in err
    doc = json.loads(out.read_text())
    assert {Path(s["file"]).name for s in doc["dataset"]["skipped"]} == {"part-damaged.parquet", "part-garbage.parquet",
                                                                         "part-bad-data.parquet"}
    assert doc["stats"]["glideins"] == 500 >= good and doc["whatif"]["current_replay"]["exact"]


def test_schema_versions_an_older_file_is_read_a_newer_refused(tmp_path):
    row, jobs = glidein_row("a" * 32)
    write_rows(tmp_path, "glideins", [row])
    write_rows(tmp_path, "jobs", jobs)
    # an older file: written before the last columns existed -> read, those columns NULL
    older = pa.table({"schema_version": pa.array([1], pa.int32()), "trace_id": ["b" * 32], "entry": ["E1"],
                      "site": ["S1"], "outcome": ["ok"], "node_start_at": pa.array([0], pa.timestamp("us")),
                      "setup_s": [12.0]}).replace_schema_metadata({VERSION_KEY: b"1"})   # as the writer stamps it
    pq.write_table(older, tmp_path / "glideins" / "date=2026-01-01" / "part-older.parquet")
    data = open_dataset(tmp_path)
    assert data.con.execute("SELECT COUNT(*), COUNT(trace_kept) FROM glideins").fetchone() == (2, 0)
    newer = older.replace_schema_metadata({VERSION_KEY: b"99"})
    (tmp_path / "glideins" / "date=2026-01-02").mkdir()
    pq.write_table(newer, tmp_path / "glideins" / "date=2026-01-02" / "part-newer.parquet")
    with pytest.raises(DatasetError, match="schema version 99, newer than this glidein_tracing reads"):
        open_dataset(tmp_path)
    foreign = tmp_path / "foreign"
    (foreign / "glideins" / "date=2026-01-01").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), foreign / "glideins" / "date=2026-01-01" / "part-x.parquet")
    with pytest.raises(DatasetError, match="not a glidein table file"):
        open_dataset(foreign)


def test_an_empty_day_and_a_table_of_empty_files_are_fine(tmp_path, capsys):
    row, jobs = glidein_row("a" * 32, jobs=((10, 500, False),))
    write_rows(tmp_path, "glideins", [row])
    write_rows(tmp_path, "jobs", jobs)
    write_rows(tmp_path, "glideins", [], day="2026-01-02", name="empty")      # a day with no rows
    (tmp_path / "glideins" / "date=2026-01-03").mkdir()                        # a day with no file
    assert main(["analyze", str(tmp_path), "--whatif", "--quiet", "--json", str(tmp_path / "o.json")]) == 0
    assert json.loads((tmp_path / "o.json").read_text())["stats"]["glideins"] == 1
    empty = tmp_path / "empty"
    write_rows(empty, "glideins", [], day="2026-01-02", name="part-empty")     # a table with no rows yet
    assert main(["analyze", str(empty), "--whatif", "--html", str(tmp_path / "e.html")]) == 0
    assert "glideins 0" in capsys.readouterr().out and "No glidein rows" in (tmp_path / "e.html").read_text()


def test_html_is_a_page_of_sortable_tables_beside_plots(table, tmp_path):
    out = tmp_path / "r.html"
    assert main(["analyze", str(table), "--whatif", "--html", str(out), "--quiet"]) == 0
    page = out.read_text()
    # no raw dump: the only preformatted text is the <attr> lines to paste
    assert page.count("<pre") == page.count("<pre class='paste'>") and page.count("class='sortable'") >= 8
    assert page.count("data:image/svg+xml;base64,") == 6
    for figure in ("distributions", "shutdowns", "waste", "validation", "tradeoff", "trend"):
        assert f"id='plot-{figure}'" in page
    for header in ("p90", "strt (%)", "badp (%)", "lift (x)", "saved core-hours", "core-hours",
                   "net core-hours / month"):
        assert f"<th>{header}</th>" in page, header
    for header in ("queue wait p50", "setup p50", "to 1st job p50"):     # durations: the unit in the header
        assert any(f"<th>{header} ({unit})</th>" in page for unit in ("s", "min", "h")), header
    assert "http://" not in page and "https://" not in page    # nothing fetched from anywhere


# after load: every image's size, then a click on the first table's "core-hours" header, and the
# first column's order after it
REPORT_PROBE = """<script>
window.addEventListener('load', function () {
  var out = {images: []};
  document.querySelectorAll('img').forEach(function (e) {
    var r = e.getBoundingClientRect();
    out.images.push({id: e.id, width: Math.round(r.width), height: Math.round(r.height), natural: e.naturalWidth});
  });
  var t = Array.from(document.querySelectorAll('table.sortable')).find(function (x) {    // a numeric 2nd column
    return x.tBodies[0].rows.length > 3 && x.tBodies[0].rows[0].cells[1].dataset.v !== undefined;
  }), th = t.querySelectorAll('th')[1];
  th.click();
  out.sorted = Array.from(t.tBodies[0].rows).map(function (r) { return parseFloat(r.cells[1].dataset.v); });
  out.links = Array.from(document.querySelectorAll('a')).map(function (a) { return a.getAttribute('href'); });
  var rec = document.getElementById('recommendations'), rows = rec ? rec.nextElementSibling.nextElementSibling : null;
  out.first = {summary: document.getElementById('summary').getBoundingClientRect().top,
               recommendations: rec ? rec.getBoundingClientRect().top : null,
               table: rows && rows.querySelector('tbody tr') ? rows.querySelector('tbody tr').getBoundingClientRect().bottom : null,
               heading: document.querySelector('h2').id};
  var pre = document.createElement('pre');
  pre.textContent = 'PRO' + 'BE:' + JSON.stringify(out) + ':EB' + 'ORP';
  document.body.appendChild(pre);
});
</script>"""


def test_html_report_renders_in_headless_chromium_sorts_and_links_waterfall_pages(tmp_path):
    browser = browser_path()
    store, tbl = tmp_path / "store", tmp_path / "table"
    write_synth_store(store, glideins=60, seed=4, validation_failure_rate=0.5)
    write_synth_table(tbl, glideins=2000, seed=4, period_s=86400)
    # the table's failed glideins get the trace ids of the store's failed glideins (as a backfill
    # of that store would write them), so the report's examples are traces the store holds
    failed = [t for t, *_ in Store(store).summaries() if Store(store).trace(t)[0]["status_code"] == 2
              or any(s["status_code"] == 2 for s in Store(store).trace(t))]
    files = sorted((tbl / "glideins").rglob("*.parquet"))
    rows = pq.read_table(files[0], partitioning=None)
    ids = rows.column("trace_id").to_pylist()
    flags = [m is not None for m in rows.column("failure_message").to_pylist()]
    targets = iter(failed)
    ids = [next(targets, i) if f else i for i, f in zip(ids, flags)]
    pq.write_table(rows.set_column(rows.column_names.index("trace_id"), "trace_id", pa.array(ids)), files[0])
    rollup.remove(files[0])         # rewritten: its rollups (the failed groups' examples) no longer describe it
    html_path = tmp_path / "report.html"
    jaeger = "https://jaeger.example.org:16686"
    assert main(["analyze", str(tbl), "--whatif", "--html", str(html_path), "--quiet", "--store", str(store),
                 "--jaeger-ui", jaeger]) == 0
    found = dom(browser, html_path, tmp_path, REPORT_PROBE)
    plots = {e["id"]: e for e in found["images"]}
    assert set(plots) == {"plot-distributions", "plot-shutdowns", "plot-waste", "plot-validation", "plot-tradeoff",
                          "plot-trend"}
    for element in plots.values():
        assert element["width"] > 100 and element["height"] > 100 and element["natural"] > 100, element
    for name in ("plot-distributions", "plot-tradeoff", "plot-trend"):     # wide enough to read
        assert plots[name]["width"] >= 600, plots[name]
    # the first screen (1400 x 1000) opens with the summary and the recommendations, a row of them in sight
    first = found["first"]
    assert first["heading"] == "recommendations" and first["summary"] < first["recommendations"] < 1000
    assert first["table"] is not None and first["table"] < 1000
    # the trade-off plot's labels are inside the image and its tick labels signed
    labels = _svg_texts(html_path.read_text(), "tradeoff")
    assert any(t.startswith("-") and t[1:].replace(",", "").isdigit() for t in labels), labels
    assert any("net core-hours saved" in t for t in labels) and any("recommended" in t for t in labels)
    assert found["sorted"] == sorted(found["sorted"]) and len(found["sorted"]) > 3    # clicked: ascending
    pages = [h for h in found["links"] if h.startswith("report.html.traces/")]
    assert pages, found["links"]
    waterfall = html_path.parent / pages[0]
    assert waterfall.exists()
    page = dom(browser, waterfall, tmp_path, WATERFALL_PROBE)
    assert page["rows"] > 5 and any(b["err"] for b in page["bars"])      # a failed glidein: a red bar
    assert all(b["width"] >= 1 for b in page["bars"]) and max(b["width"] for b in page["bars"]) > 400
    # a time axis: ticks from 0, left to right, over the bars
    assert len(page["ticks"]) >= 3 and page["ticks"][0]["label"] == "0"
    assert [t["left"] for t in page["ticks"]] == sorted(t["left"] for t in page["ticks"])
    assert min(b["left"] for b in page["bars"]) >= page["ticks"][0]["left"] - 1
    # the verdict and the failed script's log tail in plain sight, not folded away
    shown = dict(page["verdict"])
    assert shown["failure domain"] and shown["evidence"] and page["failedRows"] >= 1
    # links back to the report and on to the trace in Jaeger
    trace = waterfall.stem
    assert page["links"] == {"report": "../report.html", "jaeger": f"{jaeger}/trace/{trace}"}
    assert (waterfall.parent / page["links"]["report"]).resolve() == html_path.resolve()
    assert screenshot(browser, waterfall, tmp_path / "waterfall.png", tmp_path).stat().st_size > 10_000


def _svg_texts(page: str, plot: str) -> list:
    """The texts of a plot's SVG as the page embeds it (tick labels, axis labels, legend), each
    checked to be placed inside the image."""
    import base64
    import html as html_mod
    import re
    data = page.split(f"id='plot-{plot}'", 1)[1].split("base64,", 1)[1].split("'", 1)[0]
    svg = base64.b64decode(data).decode()
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    texts = []
    for tag, text in re.findall(r"(<text[^>]*>)([^<]*)</text>", svg):
        x, y = (float(re.search(f' {a}="([-\\d.]+)"', tag).group(1)) for a in ("x", "y"))
        assert 0 <= x <= width and 0 <= y <= height, (text, x, y, width, height)
        texts.append(html_mod.unescape(text.strip()))
    return [t for t in texts if t]


def test_show_html_writes_a_waterfall_page(tmp_path, capsys):
    write_synth_store(tmp_path / "store", glideins=5, seed=3)
    trace_id = next(iter(Store(tmp_path / "store").summaries()))[0]
    out = tmp_path / "w.html"
    assert main(["show", "--store", str(tmp_path / "store"), trace_id[:12], "--html", str(out)]) == 0
    assert f"trace {trace_id}" in capsys.readouterr().out
    page = out.read_text()
    spans = Store(tmp_path / "store").trace(trace_id)
    assert page.count("<tr class='span") == len(spans) and "http" not in page
    for span in spans:
        assert f">{span['name']}<" in page or f">{span['name']}<details" in page


def test_the_waterfall_shows_a_failed_stages_and_a_failed_jobs_log_tails_escaped():
    spans = simple_glidein(trace_id(9), jobs=((100, 1000, 1),))
    script = next(s for s in spans if s["name"] == "main/a.sh")
    job = next(s for s in spans if s["attributes"][conventions.STAGE] == conventions.STAGE_JOB)
    script["events"] = [{"name": conventions.GLIDEIN_LOG_TAIL, "time_ns": script["end_ns"],
                         "attributes": {conventions.LOG_LINES: "check <failed> on node"}}]
    job["events"] = [{"name": conventions.JOB_LOG_TAIL, "time_ns": job["end_ns"],
                      "attributes": {conventions.LOG_LINES: "cvmfs: file not found"}}]
    page = render_html(spans)
    for text in ("check &lt;failed&gt; on node", "cvmfs: file not found"):
        tail = f"<pre class='tail'>{text}</pre>"
        assert page.count(tail) == 2        # in "What failed" and under the span's name
        assert page.index(tail) < page.index("<details>")   # not folded away


def test_the_synth_script_writes_a_store_and_a_table(tmp_path, capsys):
    script = [sys.executable, "-m", "bench.synth"]
    done = subprocess.run(script + ["--glideins", "25", "--seed", "3", "--store", str(tmp_path / "s"),
                                    "--table", str(tmp_path / "t")], capture_output=True, text=True)
    assert done.returncode == 0 and "wrote 25 glideins" in done.stdout, done.stderr
    assert main(["show", "--store", str(tmp_path / "s"), "--list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 25
    assert main(["analyze", str(tmp_path / "t")]) == 0
    assert "glideins 25" in capsys.readouterr().out
    bad = subprocess.run(script + ["--glideins", "5", "--table", str(tmp_path / "t"), "--kill-rate", "2"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--kill-rate must be between 0 and 1" in bad.stderr


@pytest.mark.parametrize("seconds, labels", [
    (1.5, ["0", "0.2s", "0.4s", "0.6s", "0.8s", "1s", "1.2s", "1.4s"]),
    (75, ["0", "10s", "20s", "30s", "40s", "50s", "60s", "70s"]),
    (7.5 * 3600, ["0", "1h", "2h", "3h", "4h", "5h", "6h", "7h"]),
    (3 * 86400, ["0", "12h", "24h", "36h", "48h", "60h"])])
def test_the_waterfalls_time_axis_has_round_ticks_a_reader_can_count(seconds, labels):
    from glidein_tracing.viewers.waterfall import time_axis
    _, ticks = time_axis(int(seconds * 1e9))
    assert [label for _, label in ticks] == labels
    assert all(0 <= pos <= 95 for pos, _ in ticks)
