"""The analyze verb (on stores the synthetic generator writes) and the reports; the HTML report
rendered in headless Chromium."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from glidein_tracing.analysis import report, synth
from glidein_tracing.analysis.sources import load_table
from glidein_tracing.cli.main import main

from tests.support.analysis_helpers import write_synth_store

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
INSTALL_HINT = "apt-get update && apt-get install -y chromium"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("synth-report")
    write_synth_store(directory, glideins=1500, seed=31)
    return directory


def test_the_synth_script_writes_a_store_that_show_and_analyze_read(tmp_path, capsys):
    script = [sys.executable, "-m", "bench.synth"]
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(script + ["--glideins", "25", "--seed", "3", "--store", str(tmp_path)],
                          capture_output=True, text=True, cwd=repo)
    assert done.returncode == 0 and "wrote 25 glideins" in done.stdout, done.stderr
    assert main(["show", "--store", str(tmp_path), "--list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 25
    assert main(["analyze", "--store", str(tmp_path)]) == 0
    assert "glideins 25" in capsys.readouterr().out
    bad = subprocess.run(script + ["--glideins", "5", "--store", str(tmp_path), "--kill-rate", "2"],
                         capture_output=True, text=True, cwd=repo)
    assert bad.returncode == 2 and "--kill-rate must be between 0 and 1" in bad.stderr


def test_analyze_prints_a_summary_and_writes_json(store, tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", "--store", str(store), "--whatif", "--json", str(out), "--max-idle", "600,900,1200",
                 "--max-tail", "120 200 400", "--retire", "6h,8h"]) == 0
    text = capsys.readouterr().out
    for needle in ("glideins 1,500", "core-hours:", "time to first job", "validation script", "Pareto front",
                   "recommended", "reproduces"):
        assert needle in text, needle
    doc = json.loads(out.read_text())
    assert doc["stats"]["glideins"] == 1500
    settings = {tuple(p["settings"].values()) for p in doc["whatif"]["candidates"]}
    assert (900.0, 200.0, 28800.0) in settings and (1200.0, 400.0, 21600.0) in settings
    assert doc["whatif"]["current_replay"]["exact"]


def test_entry_and_site_filters(store, tmp_path, capsys):
    table = load_table(store=store)
    entry = table.names["entry"][0]
    want = int((table.g["entry"] == 0).sum())
    out = tmp_path / "e.json"
    assert main(["analyze", "--store", str(store), "--entry", entry, "--json", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["stats"]["glideins"] == want and set(doc["stats"]["metrics"]["by_entry"]) == {entry}
    site = table.names["site"][0]
    assert main(["analyze", "--store", str(store), "--site", site, "--json", str(out), "--quiet"]) == 0
    assert set(json.loads(out.read_text())["stats"]["metrics"]["by_site"]) == {site}
    assert main(["analyze", "--store", str(store), "--entry", "NO_SUCH_ENTRY", "--html", str(tmp_path / "x.html"),
                 "--whatif", "--quiet"]) == 0
    assert "No glidein traces" in (tmp_path / "x.html").read_text()


def test_analyze_errors_are_user_errors(tmp_path, capsys):
    assert main(["analyze", "--store", str(tmp_path / "missing")]) == 2
    assert "no store directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", "--store", str(tmp_path), "--whatif", "--max-tail", "abc"])
    assert exit_info.value.code == 2
    assert "not a list of seconds" in capsys.readouterr().err


def test_json_to_stdout(store, capsys):
    assert main(["analyze", "--store", str(store), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["glideins"] == 1500


def test_html_is_self_contained_with_embedded_plots(store, tmp_path):
    table = load_table(store=store)
    doc = report.analyze(table, whatif=True)
    page = report.render_html(doc, table)
    assert page.count("data:image/png;base64,") == 5
    for figure in ("distributions", "shutdowns", "waste", "validation", "tradeoff"):
        assert f"id='plot-{figure}'" in page
    assert "http://" not in page and "https://" not in page    # nothing fetched from anywhere


def _browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


PROBE = """<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('img, svg').forEach(function (e) {
    var r = e.getBoundingClientRect();
    out.push({tag: e.tagName, id: e.id, width: Math.round(r.width), height: Math.round(r.height),
              natural: e.naturalWidth || 0, complete: e.complete === undefined ? true : e.complete});
  });
  var pre = document.createElement('pre');
  pre.id = 'layout-probe';
  pre.textContent = 'PRO' + 'BE:' + JSON.stringify(out) + ':EB' + 'ORP';
  document.body.appendChild(pre);
});
</script>"""


def test_html_report_renders_in_headless_chromium_with_visible_plots(store, tmp_path):
    browser = _browser()
    if browser is None:
        message = f"headless Chromium is not installed (CI must install it: {INSTALL_HINT})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    html_path = tmp_path / "report.html"
    assert main(["analyze", "--store", str(store), "--whatif", "--html", str(html_path), "--quiet"]) == 0
    probed = tmp_path / "probed.html"
    probed.write_text(html_path.read_text().replace("</body>", PROBE + "</body>"))
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2000"]
    dom = subprocess.run(flags + ["--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=180)
    assert "PROBE:" in dom.stdout, dom.stderr[-2000:]
    elements = json.loads(dom.stdout.split("PROBE:", 1)[1].split(":EBORP", 1)[0].replace("&amp;", "&"))
    plots = [e for e in elements if e["id"].startswith("plot-")]
    assert {e["id"] for e in plots} == {"plot-distributions", "plot-shutdowns", "plot-waste", "plot-validation",
                                        "plot-tradeoff"}
    for element in plots:
        assert element["width"] > 100 and element["height"] > 100, element
        assert element["natural"] > 100, element      # the PNG decoded
    shot = tmp_path / "report.png"
    subprocess.run(flags + [f"--screenshot={shot}", html_path.as_uri()], capture_output=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 10_000
    from PIL import Image
    image = Image.open(shot).convert("L")
    low, high = image.getextrema()
    assert high - low > 100          # not a blank page
